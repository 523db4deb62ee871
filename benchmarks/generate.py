"""A Llama through hir's documented API against Hugging Face eager and ``torch.compile``
(issue 34), in one invocation: per-step times, the first call from fresh processes, and
``hir.generate`` against HF ``generate``.

    python benchmarks/generate.py                      # GPU: the ~1B Llama (d 2048, 16 layers, 32/8 heads, bf16)
    python benchmarks/generate.py --small --device cpu # a tiny Llama, every section, on the CPU
    python benchmarks/generate.py --small --sections loop --device cpu   # the CPU decode-loop table

Weights are random from a config (no download), seed 0. Sections (``--sections``):

- ``steps``: ms per call of a ``StaticCacheStep`` (cache ``--cache`` positions) at decode
  batch 1 and 8 and a prefill of 512 tokens: HF eager, ``torch.compile(mode=
  "reduce-overhead")``, hir eager (``compile(graph=False, compile_kernels=False)``), hir
  default (``program.compile(state)``) and ``static_outputs=True`` (no copy-out). Rows take
  turns, best of ``--repeat`` x ``--number`` synchronized calls; the error is the largest
  |difference| from HF eager's logits; "ready in" is building the row plus its first
  three calls (import, compile, capture). The prefill's rows run what each engine runs for
  a prompt from an empty cache: HF eager is HF's step (which skips the mask there: SDPA
  over the prompt's own tokens, causal), torch.compile compiles that step (a mask over
  every cache position: torch < 2.14 cannot skip it), hir's rows run ``hir.generate``'s
  prefill program, imported from ``StaticCachePrefill(step)`` (HF eager's attention,
  explicitly; imported for the case's shape here, with a dynamic token count there).
- ``first``: the first call end to end, each in a fresh process with empty caches: hir
  (``hir.compile(step, example)``: import, lowering, plan, inductor, graph capture) against
  ``torch.compile(step, mode="reduce-overhead")`` (tracing, inductor, capture), to the first
  result and until the graph replays (three calls); ``hir.generate`` against HF ``generate``
  (static cache; ``--prompt``, ``--new``: the first call, and through a second); later, a
  second process of each on the first one's caches (hir's import cache and both inductor caches).
- ``generate``: tokens per second of ``hir.generate`` against HF ``generate`` with a static
  cache (``cache_implementation="static"``: HF compiles its decode step on CUDA), greedy,
  ``--new`` tokens after a ``--prompt``-token prompt, and whether their tokens agree; with
  ``--generate-kernels``, also ``hir.generate`` under those ``HIR_DECODE_KERNELS`` values, timed
  in turns with the default (each a mechanism's before/after in tokens per second).
- options (after the sections above, while the budget lasts): the A/B of hir's mechanisms
  on the decode cases (autotune on the prefill too), timed in turns with torch.compile and hir default again: without
  grouped attention (``from_torch(grouped_attention=False)``: HF's repeated KV heads),
  without fused projections (``fused_projections=False``: q, k, v one GEMM each) and
  with inductor's max-autotune (``autotune=True``); then the second processes and the
  other ``--generate-batches``.
- bandwidth: every decode row's achieved weight+KV bandwidth, the fewest bytes its step must
  read (every weight once, the input embedding's looked-up rows only, and the keys and values
  of the cache's used positions) over its time, and that bandwidth's share of ``--peak-tbps``
  (4.8: an H200); a row that reads more (the whole static cache) is still charged the fewest.
  The options' rows ``no decode kernels``, ``kernels without their mechanisms`` and those
  leaving one out plan the program under ``HIR_DECODE_KERNELS`` (:mod:`hir.interpreter.decode_kernels`;
  without ``norm-residual`` they import it under that too: :mod:`hir.frontend.fx_fusions`);
  ``no SwiGLU op`` imports without :func:`hir.frontend.fx_rewrites.fuse_swiglu` (gate and up two
  products and an elementwise kernel, as before that rewrite).
- ``--cases`` (``decode1,decode8,prefill``), ``--rows`` and ``--option-rows`` (``;``-separated
  row names) pick what the steps and options sections build.
- ``loop`` (CPU acceptance): the documented decode loop (docs/from-pytorch.md: a compiled
  one-token program called per token with host tensors, argmax read back) against the same
  loop over HF's eager step and HF ``generate`` per token.

``--budget`` seconds (default 420) bounds the whole run: optional work (the options, the
second processes, more generate batches) is skipped, and said so, once it is spent.
``--json FILE`` writes every number.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from unittest import mock

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from decode_setup import Clock, inputs, make_model, sync_of, warm  # noqa: E402
from generate_sections import FIRST_ROWS, first_call, first_rows, first_section, generate_section, loop_section  # noqa: E402
from generate_tables import print_steps  # noqa: E402
from timing import best  # noqa: E402


class Case:
    """One shape of the step (batch, tokens) with its rows: built, warmed up, checked
    against HF eager's logits, then timed in turns."""

    def __init__(self, model, args: argparse.Namespace, name: str, batch: int, tokens: int, start: int) -> None:
        from hir.frontend.hf_decode import StaticCachePrefill, StaticCacheStep

        self.args, self.name, self.tokens = args, name, tokens
        self.sync = sync_of(args.device)
        self.step = StaticCacheStep(model, batch, args.cache)
        # hir's rows: the prompt from an empty cache through hir.generate's prefill module
        self.hir_module = StaticCachePrefill(self.step) if start == 0 and tokens > 1 else self.step
        self.ids, self.pos = inputs(args, batch, tokens, start)
        with torch.no_grad():
            self.want = self.step(self.ids, self.pos).float()
        self.rows: dict = {}  # row -> (fn, ready seconds, error)
        self.failed: list = []
        self.program = None

    def add(self, row: str, build) -> None:
        """Build the row's callable, warm it up and check it; a failure is reported and the
        run goes on (one GPU call has to bring every number back)."""
        try:
            start = time.perf_counter()
            with torch.no_grad():
                fn = build()
                warm(fn, self.sync)
                out = fn()
                self.sync()
            seconds = time.perf_counter() - start
            error = (out.float() - self.want).abs().max().item()
        except Exception as err:  # noqa: BLE001 - reported in the table
            self.failed.append({"row": row, "error": f"{type(err).__name__}: {str(err)[:300]}"})
            print(f"  {self.name}: {row} FAILED: {self.failed[-1]['error']}", flush=True)
            return
        self.rows[row] = (fn, seconds, error)
        print(f"  {self.name}: {row} ready in {seconds:.1f} s (error {error:.3g})", flush=True)

    def hir_row(
        self,
        grouped_attention: bool = True,
        fused_projections: bool = True,
        decode_kernels: str | None = None,
        decode_kernels_but: str | None = None,
        swiglu_op: bool = True,
        **options,
    ):
        """A row calling ``program.compile(state, **options)`` of ``hir_module`` (the default
        import made once; ``grouped_attention`` / ``fused_projections`` off: an import of its own;
        ``decode_kernels``: ``HIR_DECODE_KERNELS`` while the program is planned, and imported
        where it leaves ``norm-residual`` out, which the import's fusions follow;
        ``decode_kernels_but``: every kernel and mechanism but that one; ``swiglu_op``
        off: an import without ``fuse_swiglu``)."""
        import hir
        import hir.frontend.export as export
        from hir.interpreter import decode_kernels as kernels

        if not swiglu_op:
            with mock.patch.object(export, "fuse_swiglu", lambda graph, parameters: 0):
                program = hir.from_torch(self.hir_module, (self.ids, self.pos))
            fn = program.compile(program.state(self.hir_module), device=self.args.device, **options)
            return lambda: fn(self.ids, self.pos)

        if decode_kernels_but is not None:
            decode_kernels = ",".join(k for k in kernels.KERNELS + kernels.MECHANISMS if k != decode_kernels_but)
        if decode_kernels is not None:
            saved = os.environ.get("HIR_DECODE_KERNELS")
            os.environ["HIR_DECODE_KERNELS"] = decode_kernels
            try:
                return self.hir_row(grouped_attention, fused_projections, **options)
            finally:
                if saved is None:
                    del os.environ["HIR_DECODE_KERNELS"]
                else:
                    os.environ["HIR_DECODE_KERNELS"] = saved

        if not (grouped_attention and fused_projections):
            program = hir.from_torch(
                self.hir_module,
                (self.ids, self.pos),
                grouped_attention=grouped_attention,
                fused_projections=fused_projections,
            )
        elif not kernels.enabled("norm-residual"):  # the default import fuses them: one of its own
            program = hir.from_torch(self.hir_module, (self.ids, self.pos))
        else:
            if self.program is None:
                self.program = hir.from_torch(self.hir_module, (self.ids, self.pos))
            program = self.program
        fn = program.compile(program.state(self.hir_module), device=self.args.device, **options)
        return lambda: fn(self.ids, self.pos)

    def build_main_rows(self, names: list) -> None:
        step, ids, pos = self.step, self.ids, self.pos
        builders = {
            "HF eager": lambda: lambda: step(ids, pos),
            "torch.compile reduce-overhead": lambda: (lambda compiled: lambda: compiled(ids, pos))(
                torch.compile(step, mode="reduce-overhead")
            ),
            "hir eager": lambda: self.hir_row(graph=False, compile_kernels=False),
            "hir default": lambda: self.hir_row(),
            "hir + static outputs": lambda: self.hir_row(static_outputs=True),
        }
        self.add("HF eager", builders["HF eager"])  # the reference the errors are taken against
        for name in names:
            if name != "HF eager":
                self.add(name, builders[name])

    def bytes_read(self, model) -> int:
        """The fewest bytes a decode step must read: every weight once (the input
        embedding's looked-up rows only, unless the output projection shares it) and the keys
        and values of the cache's used positions."""
        embedding = model.get_input_embeddings().weight
        tied = any(p is embedding for p in model.get_output_embeddings().parameters())
        weights = sum(p.numel() * p.element_size() for p in model.parameters() if p is not embedding or tied)
        if not tied:
            weights += self.ids.numel() * embedding.shape[1] * embedding.element_size()
        used = int(self.pos[-1]) + 1
        return weights + self.kv_bytes(used)

    def kv_bytes(self, used: int) -> int:
        """Bytes of the keys and values of ``used`` positions of every layer's cache."""
        total = 0
        for i in range(len(self.step.cache.layers)):
            for kind in ("key", "value"):
                tensor = getattr(self.step, f"{kind}_cache_{i}")
                total += tensor.numel() // tensor.shape[2] * used * tensor.element_size()
        return total

    def time(self, names: list) -> dict:
        """{"case", "rows": [...], "failed"}: ``names``' rows timed in turns."""
        rows = [(n, *self.rows[n]) for n in names if n in self.rows]
        with torch.no_grad():
            rounds = [
                [best(fn, 1, self.args.number, self.sync) for _, fn, _, _ in rows] for _ in range(self.args.repeat)
            ]
        times = [min(r[i] for r in rounds) for i in range(len(rows))]
        result = {
            "case": self.name,
            "rows": [{"row": n, "ms": t * 1e3, "ready_s": c, "error": e} for (n, _, c, e), t in zip(rows, times)],
            "failed": self.failed,
        }
        if self.tokens == 1:
            result["bytes"] = self.bytes_read(self.step.model)
        return result


MAIN_ROWS = ["HF eager", "torch.compile reduce-overhead", "hir eager", "hir default", "hir + static outputs"]
OPTION_ROWS = {  # row -> hir_row options (the A/B of issue 34's mechanisms, after the main table)
    "hir default, HF's repeated KV heads": {"grouped_attention": False},
    "hir default, one GEMM per projection": {"fused_projections": False},
    "hir + static outputs + autotune": {"static_outputs": True, "autotune": True},
    # the decode kernels (hir.interpreter.decode_kernels): none, without their mechanisms, all but one mechanism
    "hir default, no decode kernels": {"decode_kernels": "none"},
    "hir default, kernels without their mechanisms": {"decode_kernels": "attention,linear,swiglu"},
    "hir default, attention's combine apart": {"decode_kernels_but": "fused-combine"},
    "hir default, no split-K": {"decode_kernels_but": "split-k"},
    "hir default, no one-row GEMV": {"decode_kernels_but": "gemv"},
    "hir default, norm and residual apart": {"decode_kernels_but": "norm-residual"},
    "hir default, no inductor PDL": {"decode_kernels_but": "inductor-pdl"},
    "hir default, no PDL in hir's kernels": {"decode_kernels_but": "kernel-pdl"},
    "hir default, no inductor combo kernels": {"decode_kernels_but": "inductor-combo"},
    "hir default, no SwiGLU op": {"swiglu_op": False},  # gate and up apart (hir.frontend.fx_rewrites.fuse_swiglu)
}
CASES = ("decode1", "decode8", "prefill")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="a tiny Llama in float32 (CPU testing)")
    parser.add_argument(
        "--arch", choices=["llama", "mistral"], default="llama", help="mistral: the same sizes with sliding_window=4096"
    )
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    parser.add_argument(
        "--sections",
        default=None,
        help="comma-separated: steps,first,generate,loop (default: steps,first,generate; --small on CPU: loop)",
    )
    parser.add_argument("--cache", type=int, default=None, help="static cache positions (default 1024; --small 64)")
    parser.add_argument("--prefill", type=int, default=None, help="prefill tokens (default 512; --small 16)")
    parser.add_argument("--prompt", type=int, default=None, help="generate: prompt tokens (default 128; --small 8)")
    parser.add_argument("--new", type=int, default=None, help="generate / loop: new tokens (default 128; --small 32)")
    parser.add_argument("--generate-batches", default="1,8")
    parser.add_argument(
        "--generate-kernels",
        default="",
        help="generate: also hir.generate under each of these HIR_DECODE_KERNELS values (';'-separated), "
        "timed in turns with the default",
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--number", type=int, default=30)
    parser.add_argument("--generate-repeat", type=int, default=3)
    parser.add_argument(
        "--budget", type=float, default=420.0, help="seconds for the whole run (optional rows are skipped past it)"
    )
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--cases", default=",".join(CASES), help=f"steps: comma-separated cases of {','.join(CASES)}")
    parser.add_argument(
        "--rows", default=";".join(MAIN_ROWS), help="steps: main rows, ';'-separated (HF eager always: the reference)"
    )
    parser.add_argument(
        "--option-rows",
        default=";".join(OPTION_ROWS),
        help="option rows, ';'-separated (while the budget lasts; '' for none)",
    )
    parser.add_argument(
        "--peak-tbps",
        type=float,
        default=4.8,
        help="the GPU's memory bandwidth the decode rows' share is of (H200: 4.8 TB/s)",
    )
    parser.add_argument("--first-rows", type=first_rows, default=list(FIRST_ROWS), help="first: rows, comma-separated")
    parser.add_argument("--child", choices=FIRST_ROWS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    args.dtype = torch.float32 if args.small else torch.bfloat16
    args.cache = args.cache or (64 if args.small else 1024)
    args.prefill = args.prefill or (16 if args.small else 512)
    args.prompt = args.prompt or (8 if args.small else 128)
    args.new = args.new or (32 if args.small else 128)
    args.generate_batches = [int(b) for b in args.generate_batches.split(",") if b]
    args.generate_kernels = [v for v in args.generate_kernels.split(";") if v]
    args.cases = args.cases.split(",") if args.cases else []
    args.rows, args.option_rows = (v.split(";") if v else [] for v in (args.rows, args.option_rows))
    for given, known, what in (
        (args.cases, CASES, "--cases"),
        (args.rows, MAIN_ROWS, "--rows"),
        (args.option_rows, OPTION_ROWS, "--option-rows"),
    ):
        if set(given) - set(known):
            parser.error(
                f"{what}: unknown {', '.join(sorted(set(given) - set(known)))}; choose from {', '.join(known)}"
            )
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(first_call(args, args.child)))
        return
    default = "loop" if args.small and args.device == "cpu" else "steps,first,generate"
    sections = (args.sections or default).split(",")
    clock = Clock(args.budget)
    print(
        f"{'tiny' if args.small else '~1B'} {args.arch.capitalize()}, {args.dtype}, {args.device}"
        f"{' (' + torch.cuda.get_device_name() + ')' if args.device.startswith('cuda') else ''}, torch "
        f"{torch.__version__}, cache {args.cache}",
        flush=True,
    )
    model = (
        make_model(args) if set(sections) - {"first"} else None
    )  # the first calls make their own, in their processes
    args.scratch = tempfile.mkdtemp(prefix="hir-generate-bench-")  # the first processes' caches
    results: dict = {"device": args.device, "small": args.small, "skipped": clock.skipped}

    def record(section: str, value) -> None:
        results[section] = value
        if args.json:  # after every section: a run cut short keeps what it measured
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)

    cases: list = []
    if "steps" in sections:
        small_batch = 2 if args.small else 8
        shapes = {
            "decode1": ("decode, batch 1", 1, 1, args.cache // 2),
            "decode8": (f"decode, batch {small_batch}", small_batch, 1, args.cache // 2),
            "prefill": (f"prefill, {args.prefill} tokens", 1, args.prefill, 0),
        }
        steps = []
        for key in args.cases:
            case = Case(model, args, *shapes[key])
            case.build_main_rows(args.rows)
            cases.append(case)
            steps.append(case.time(MAIN_ROWS))
            record("steps", steps)
        print_steps(steps, peak=args.peak_tbps)
    if "first" in sections:
        record("first", first_section(args, clock, second=False))
    if "generate" in sections:
        record("generate", generate_section(model, args, clock, args.generate_batches[:1]))
    # optional, while the budget lasts: second processes, the option rows, more batches
    if "first" in sections:
        record("first", results["first"] + first_section(args, clock, second=True))
    options = []
    for row, flags in ((r, OPTION_ROWS[r]) for r in args.option_rows):
        for case in (
            c for c in cases if c.tokens == 1 or flags.get("autotune")
        ):  # autotune's GEMM templates may pay at prefill
            if clock.allows(f"{case.name}: {row}", 150 if flags.get("autotune") else 60):
                case.add(row, lambda case=case, flags=flags: case.hir_row(**flags))
    for case in (c for c in cases if any(r in c.rows for r in OPTION_ROWS)):
        options.append(
            case.time(["torch.compile reduce-overhead", "hir default", "hir + static outputs", *OPTION_ROWS])
        )
        record("options", options)
    if options:
        print_steps(options, "hir's options, ms per call", args.peak_tbps)
    if "generate" in sections and args.generate_batches[1:]:
        record("generate", results["generate"] + generate_section(model, args, clock, args.generate_batches[1:]))
    if "loop" in sections:
        record("loop", loop_section(model, args))
    shutil.rmtree(args.scratch, ignore_errors=True)
    if clock.skipped:
        print("skipped (budget): " + "; ".join(clock.skipped))


if __name__ == "__main__":
    main()
