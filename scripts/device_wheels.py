"""The wheels the GPU machine lacks (Python 3.12, torch, numpy; no network): transformers and
every package it needs, plus pytest, in .device/wheels, which scripts/device-env.sh unpacks
into /tmp/site (issue 34).

    python scripts/device_wheels.py            # download, trim, check (from the project root)
    python scripts/device_wheels.py --check    # check what is there only

Downloads (``pip download --no-deps --only-binary=:all:`` for CPython 3.12 on manylinux
x86_64) the pinned set below: transformers 5.24.0 and the closure of its requirements
(tokenizers, safetensors, regex, pyyaml, pydantic-core are binary, cp312 / abi3 wheels). The
transformers wheel is trimmed to the model folders the GPU runs use (:data:`KEEP_MODELS`,
13.5 MB -> about 2 MB: the carried tree must stay under 64 MiB with the 39 MB MLIR bundle);
its RECORD keeps only what remains.

Checks, before anything is carried: every requirement (Requires-Dist, its markers evaluated
for CPython 3.12 on Linux x86_64) of every wheel is met by a wheel of the set or by what the
GPU machine has (:data:`PROVIDED`); the binary wheels import under a local python3.12 when
there is one; the trimmed transformers runs a tiny Llama and Qwen3 ``generate`` with a
static cache under this interpreter.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEELS = ROOT / ".device" / "wheels"
PINNED = [
    "transformers==5.24.0",
    "huggingface-hub==2.4.0",
    "tokenizers==0.23.3",
    "safetensors==0.8.0",
    "regex==2026.5.9",
    "pyyaml==6.0.3",
    "tqdm==4.70.1",
    "filelock==4.3.1",
    "fsspec==2026.9.0",
    "hf-xet==1.8.0",
    "httpx2==2.16.2",
    "httpcore2==2.16.2",
    "truststore==0.10.5",
    "h11==0.16.0",
    "anyio==4.16.0",
    "idna==3.20",
    "typing-extensions==4.16.0",
    "typer==0.29.2",
    "click==8.5.1",
    "rich==15.0.0",
    "pygments==2.20.0",
    "markdown-it-py==4.3.0",
    "mdurl==0.1.2",
    "shellingham==1.5.4",
    "annotated-doc==0.0.7",
    "pydantic==2.13.4",
    "pydantic-core==2.46.4",
    "annotated-types==0.7.0",
    "typing-inspection==0.4.2",
    "packaging==26.2",
    "pytest==9.0.3",
    "pluggy==1.6.0",
    "iniconfig==2.3.0",
]
PROVIDED = {"numpy", "torch"}  # on the GPU machine already (hir imports both there)
KEEP_MODELS = {"auto", "llama", "mistral", "qwen2", "qwen3", "gemma"}
TARGET = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "platform_machine": "x86_64",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "extra": "",
}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
BINARY_MODULES = ["tokenizers", "safetensors", "regex", "yaml", "pydantic_core", "hf_xet"]


def download(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            *platforms,
            "-d",
            str(dest),
            *PINNED,
        ],
        check=True,
    )


def trim_transformers(dest: Path) -> None:
    """Keep the model folders of :data:`KEEP_MODELS` only (RECORD follows)."""
    wheel = next(dest.glob("transformers-*.whl"))

    def kept(name: str) -> bool:
        parts = name.split("/")
        return not (len(parts) > 3 and parts[:2] == ["transformers", "models"] and parts[2] not in KEEP_MODELS)

    with zipfile.ZipFile(wheel) as source:
        if all(kept(n) for n in source.namelist()):
            return  # trimmed already
        trimmed = wheel.with_suffix(".trim")
        with zipfile.ZipFile(trimmed, "w", zipfile.ZIP_DEFLATED) as out:
            for info in source.infolist():
                if kept(info.filename):
                    data = source.read(info)
                    if info.filename.endswith(".dist-info/RECORD"):
                        data = "".join(
                            line for line in data.decode().splitlines(True) if kept(line.split(",")[0])
                        ).encode()
                    out.writestr(info, data)
    os.replace(trimmed, wheel)


def metadata(wheel: Path) -> tuple[str, list[str]]:
    """(normalized name, Requires-Dist lines) of ``wheel``."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(z.read(name).decode())
    return _norm(meta["Name"]), meta.get_all("Requires-Dist") or []


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def check_requirements(dest: Path) -> list[str]:
    """Unmet requirements of the set, as 'wheel needs requirement'."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    versions = {}
    requires = {}
    for wheel in dest.glob("*.whl"):
        name, reqs = metadata(wheel)
        versions[name] = Version(wheel.name.split("-")[1])
        requires[name] = reqs
    missing = []
    for name, reqs in sorted(requires.items()):
        for line in reqs:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate(TARGET):
                continue
            have = versions.get(_norm(req.name))
            if _norm(req.name) in PROVIDED:
                continue
            if have is None or (req.specifier and not req.specifier.contains(have, prereleases=True)):
                missing.append(f"{name} needs {line} (have {have})")
    return missing


def check_imports(dest: Path) -> str:
    """Import the binary wheels under python3.12, when this machine has one."""
    python = _python312()
    if python is None:
        return "no python3.12 here: binary wheels not import-checked"
    with tempfile.TemporaryDirectory() as site:
        # numpy is the GPU machine's own: a copy for this check only, never carried
        download_numpy = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            *[a for p in PLATFORMS for a in ("--platform", p)],
            "-d",
            site,
            "numpy",
        ]
        have_numpy = subprocess.run(download_numpy, capture_output=True).returncode == 0
        for wheel in list(dest.glob("*.whl")) + list(Path(site).glob("numpy-*.whl")):
            with zipfile.ZipFile(wheel) as z:
                z.extractall(site)
        code = (
            "import importlib; [importlib.import_module(m) for m in %r]; import huggingface_hub, httpx2"
            % BINARY_MODULES
        )
        if have_numpy:  # transformers itself (its models need torch, which python3.12 here lacks)
            code += "; import transformers; transformers.LlamaConfig(); transformers.Qwen3Config()"
        done = subprocess.run(
            [python, "-c", code], env={**os.environ, "PYTHONPATH": site}, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"error: the wheels do not import under {python}:\n{done.stderr[-2000:]}")
    return f"binary wheels import under {python}" + (
        ", and transformers with them" if have_numpy else " (no numpy wheel for the check: transformers not imported)"
    )


def _python312():
    """A working CPython 3.12 of this machine (a pyenv shim may exist yet refuse), or None."""
    candidates = [shutil.which("python3.12")] + sorted(
        str(p) for p in Path.home().glob(".pyenv/versions/3.12*/bin/python3.12")
    )
    for python in filter(None, candidates):
        if (
            subprocess.run(
                [python, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"], capture_output=True
            ).returncode
            == 0
        ):
            return python
    return None


def check_trimmed(dest: Path) -> str:
    """The trimmed transformers (alone, before this interpreter's own) runs the families kept."""
    with tempfile.TemporaryDirectory() as site:
        with zipfile.ZipFile(next(dest.glob("transformers-*.whl"))) as z:
            z.extractall(site)
        code = (
            "import torch, transformers\n"
            f"assert transformers.__file__.startswith({site!r})\n"
            "for family in ('Llama', 'Qwen3', 'Mistral', 'Qwen2', 'Gemma'):\n"
            "    config = getattr(transformers, family + 'Config')(vocab_size=64, "
            "hidden_size=32, num_hidden_layers=1, num_attention_heads=4,\n"
            "        num_key_value_heads=2, intermediate_size=64, head_dim=8)\n"
            "    model = getattr(transformers, family + 'ForCausalLM')(config).eval()\n"
            "    model.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=2, "
            "do_sample=False, cache_implementation='static')\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": site}, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"error: the trimmed transformers does not run:\n{done.stderr[-2000:]}")
    return f"trimmed transformers runs {', '.join(sorted(KEEP_MODELS - {'auto'}))}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="check the wheels already in .device/wheels")
    args = parser.parse_args()
    if not args.check:
        download(WHEELS)
        trim_transformers(WHEELS)
    missing = check_requirements(WHEELS)
    if missing:
        raise SystemExit("error: unmet requirements:\n  " + "\n  ".join(missing))
    print("every requirement met (provided there: " + ", ".join(sorted(PROVIDED)) + ")")
    print(check_imports(WHEELS))
    print(check_trimmed(WHEELS))
    total = sum(w.stat().st_size for w in WHEELS.glob("*.whl"))
    print(f"{len(list(WHEELS.glob('*.whl')))} wheels, {total / 1e6:.1f} MB in {WHEELS}")


if __name__ == "__main__":
    main()
