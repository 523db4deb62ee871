"""What compiling a compute region costs before inductor's own work (lowering, scheduling,
codegen, the C++ / Triton compile), by the two routes :mod:`hir.interpreter.inductor_graph`
has: hir's functional trace then inductor's joint-graph passes (``direct``, the default), and
``make_fx`` then ``compile_fx`` (``aot``: AOT autograd's metadata run, cache key and second
trace, then the same passes; the fallback). The region: the first ``hir.train_step`` of a small
Llama (as ``benchmarks/train_first_step.py`` builds it), captured at its first call, which then
runs op by op. Inductor's work after the passes is cut off (its ``_compile_fx_inner`` returns at
once), so both routes stop at the same point; each is timed ``--repeats`` times, alternating,
after one untimed warm-up each (inductor's pattern tables), in process CPU seconds.

    python benchmarks/region_front.py --device cpu
    python benchmarks/region_front.py --device cuda --layers 16 --hidden 2048
"""

import argparse
import json
import statistics
import time

import torch
import transformers

import hir
import hir.interpreter.inductor_graph as inductor_graph


def capture_region(args: argparse.Namespace) -> tuple:
    """The (function, tensors, options) of the train step's first compiled region."""
    captured: list = []

    def capture(fn, tensors, options):
        captured.append((fn, tensors, options))
        return (lambda a: fn(*a)), set()

    inductor_graph.compile_graph = capture  # kernels.py imports it at compile time
    heads = args.hidden // 64
    config = transformers.LlamaConfig(
        vocab_size=1024 if args.hidden < 1024 else 32000,
        hidden_size=args.hidden,
        intermediate_size=4 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 4 if args.hidden >= 1024 else heads // 2),
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=True)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device=args.device)
    labels = ids.clone()
    step = hir.train_step(
        model, optimizer, lambda m, i, lab: m(i, labels=lab).loss, (ids, labels), compile_kernels=True
    )
    step(ids, labels)
    return captured[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    fn, tensors, options = capture_region(args)

    import torch._inductor.compile_fx as compile_fx
    from torch._inductor import config

    compile_fx._compile_fx_inner = lambda gm, *a, **k: lambda inputs: None  # stop before inductor's own work
    compile_fx._compile_fx_inner._boxed_call = True

    def direct() -> None:
        mode, fakes = inductor_graph.fake_inputs(tensors)
        with config.patch(options), torch.no_grad():
            assert inductor_graph._direct(fn, mode, fakes) is not None, "the region is not one the direct route takes"

    def aot() -> None:
        _, fakes = inductor_graph.fake_inputs(tensors)
        with config.patch(options), torch.no_grad():
            inductor_graph._through_aot_autograd(fn, fakes)

    routes = {"direct": direct, "aot": aot}
    seconds: dict = {name: [] for name in routes}
    for run in range(args.repeats + 1):
        for name, route in routes.items():
            start = time.process_time()
            route()
            if run:
                seconds[name].append(time.process_time() - start)
    result = {
        "region_inputs": len(tensors),
        **{f"{name}_cpu_s": round(statistics.median(s), 2) for name, s in seconds.items()},
        **{f"{name}_all": [round(x, 2) for x in s] for name, s in seconds.items()},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
