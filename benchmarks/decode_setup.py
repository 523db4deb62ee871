"""The ~1B and tiny Llamas (or Mistrals, ``--arch mistral``) of ``benchmarks/generate.py`` and the
helpers its sections and ``benchmarks/profile_step.py`` share: the run's time budget, the model,
its inputs, the device's synchronize."""

import argparse
import time

import torch

FULL = dict(
    vocab_size=32000,
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=4096,
)
SMALL = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=512,
)


class Clock:
    """The run's time budget: optional work runs while some is left."""

    def __init__(self, seconds: float) -> None:
        self.end = time.perf_counter() + seconds
        self.skipped: list[str] = []

    def allows(self, what: str, needs: float) -> bool:
        if time.perf_counter() + needs <= self.end:
            return True
        self.skipped.append(what)
        print(f"  (skipped, out of budget: {what})", flush=True)
        return False


def make_model(args: argparse.Namespace) -> torch.nn.Module:
    import transformers

    torch.manual_seed(0)
    sizes = dict(SMALL if args.small else FULL)
    if getattr(args, "layers", None):  # (profile_step.py --layers)
        sizes["num_hidden_layers"] = args.layers
    if getattr(args, "arch", "llama") == "mistral":  # the same sizes with Mistral's real sliding window
        config = transformers.MistralConfig(
            **sizes, sliding_window=4096, bos_token_id=0, eos_token_id=None, pad_token_id=0
        )
        model_class = transformers.MistralForCausalLM
    else:
        config = transformers.LlamaConfig(**sizes, bos_token_id=0, eos_token_id=None, pad_token_id=0)
        model_class = transformers.LlamaForCausalLM
    with torch.device(args.device):
        model = model_class(config)
    return model.eval().to(args.dtype)


def sync_of(device: str):
    return torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)


def inputs(args: argparse.Namespace, batch: int, tokens: int, start: int) -> tuple:
    g = torch.Generator().manual_seed(batch * 1000 + tokens)
    ids = torch.randint(0, SMALL["vocab_size"] if args.small else FULL["vocab_size"], (batch, tokens), generator=g)
    return ids.to(args.device), torch.arange(start, start + tokens, device=args.device)


def warm(fn, sync) -> float:
    """Seconds of the first three calls (compile and capture happen there)."""
    start = time.perf_counter()
    for _ in range(3):
        fn()
    sync()
    return time.perf_counter() - start


GENERATE_ENGINES = {"generate": "hir.generate", "hf-generate": "HF generate (static cache)"}


def generate_call(
    engine: str, model: torch.nn.Module, prompt: torch.Tensor, new: int, compile_options: dict | None = None
):
    """One greedy ``generate`` call of ``new`` tokens after ``prompt``, as a callable:
    ``hir.generate`` (``engine`` "generate", with ``compile_options``) or HF ``generate`` with
    its static cache ("hf-generate": HF compiles its decode step on CUDA; on the CPU too here,
    ``CompileConfig._compile_all_devices``, so that a CPU run has the GPU's phases)."""
    length: dict = {"max_new_tokens": new, "min_new_tokens": new, "do_sample": False}
    if engine == "generate":
        import hir

        return lambda: hir.generate(model, prompt, compile_options=compile_options, **length)
    from transformers import CompileConfig

    if prompt.device.type == "cpu":
        length["compile_config"] = CompileConfig()
        length["compile_config"]._compile_all_devices = True  # (a class attribute, not a field)
    return lambda: model.generate(
        prompt, attention_mask=torch.ones_like(prompt), cache_implementation="static", **length
    )
