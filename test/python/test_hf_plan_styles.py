"""Every HF tensor-parallel plan style honoured (hir.frontend.hf_plans), on 2 Gloo ranks, each
rank's results equal to the unsharded model's:

* ``styles``: one module with every style (embedding_rowwise / _colwise, sequence_parallel,
  colwise, rowwise, colwise_rep / _gather_output, rowwise_rep / _split_input, packed_colwise,
  packed_rowwise, replicate, replicated_with_grad_allreduce, all_reduce, gather,
  moe_tp_experts, local_*); no collective reads a parameter (weights never move) and no
  scatter is made (a replicated value is sliced where it lies);
* ``decode``: greedy decoding of 8 tokens through :class:`StaticCacheStep` under the Llama
  runtime plan (embedding_rowwise, colwise_gather_output on lm_head), the plan's keys
  resolving through the wrapper and the KV cache split by heads, equal to HF's
  ``generate``; per step the lowered program holds exactly one allreduce (the lookup), two
  per layer and one allgather (the logits), nothing else;
* slow: HF's full runtime plan on ``LlamaForCausalLM`` (full-vocabulary logits), Phi3 (fused
  qkv / gate_up gathered, o / down slicing their input: no weight gathered), GPT-NeoX
  (embedding_rowwise), Mixtral and Qwen3-MoE (packed_colwise experts), and a tiny Llama saved
  and loaded with ``from_pretrained(tp_plan="auto")`` (HF's own DTensor model on its
  ``(pp, fsdp, tp)`` mesh) imported as it is.

``python test_hf_plan_styles.py`` is the per-rank worker (cases from ``HIR_STYLE_CASES``).
"""

import os
import re
import sys

import pytest

from multirank_util import launch_workers, run_gloo_cases

transformers = pytest.importorskip("transformers")

FAST = ("styles", "decode")
SLOW = ("runtime_plan", "phi3", "gpt_neox", "mixtral", "qwen3_moe", "auto")
PIPELINE = "hir-convert-to-communication{backend=gloo},hir-lower"
COLLECTIVE = re.compile(
    r'"hir\.(allreduce|allgather|reduce_scatter|broadcast|scatter|gather|reduce|send_recv|send|recv|shift|all_to_all)"\((%[\w#]+)'
)
LAYERS = 2


def collectives(program) -> list[tuple[str, bool]]:
    """(kind, reads a state entry) of every collective of the lowered program."""
    state = {f"%arg{i}" for i in range(len(program.state_names))}
    return [(kind, operand in state) for kind, operand in COLLECTIVE.findall(str(program.module))]


def styled_module():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Experts(nn.Module):  # an "all_reduce" / "moe_tp_experts" container of a colwise linear
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(16, 16)

        def forward(self, x):
            return self.inner(x)

    class Styled(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.embed, self.pos = nn.Embedding(64, 16), nn.Embedding(16, 16)
            self.norm, self.q_norm = nn.LayerNorm(16), nn.LayerNorm(16)
            self.up, self.down = nn.Linear(16, 32), nn.Linear(32, 16)
            self.mix, self.proj = nn.Linear(16, 16), nn.Linear(16, 16)
            self.rep_col, self.rep_row = nn.Linear(16, 16), nn.Linear(16, 16)
            self.gate_up, self.fused_down = nn.Linear(16, 64), nn.Linear(32, 16)
            self.packed_up, self.packed_down = nn.Linear(16, 32), nn.Linear(32, 16)
            self.local_up, self.local_down = nn.Linear(16, 32), nn.Linear(32, 16)
            self.scale = nn.Linear(16, 16)
            self.reduced, self.gathered, self.experts = Experts(), Experts(), Experts()

        def forward(self, ids, positions):
            h = self.norm(self.embed(ids) + self.pos(positions))
            h = h + self.down(F.gelu(self.up(h)))
            h = h + self.proj(self.mix(h))
            h = self.q_norm(h + self.rep_row(self.rep_col(h)))
            gate, up = self.gate_up(h).chunk(2, dim=-1)
            h = h + self.fused_down(F.silu(gate) * up)
            h = h + self.packed_down(F.gelu(self.packed_up(h)))
            h = h + self.local_down(F.relu(self.local_up(h)))
            return self.scale(h) + self.reduced(h) + self.gathered(h) * self.experts(h)

    plan = {
        "embed": "embedding_rowwise",
        "pos": "embedding_colwise",
        "norm": "sequence_parallel",
        "q_norm": "replicated_with_grad_allreduce",
        "up": "colwise",
        "down": "rowwise",
        "mix": "colwise_gather_output",
        "proj": "rowwise_split_input",
        "rep_col": "colwise_rep",
        "rep_row": "rowwise_rep",
        "gate_up": "packed_colwise",
        "fused_down": "rowwise",
        "packed_up": "packed_colwise",
        "packed_down": "packed_rowwise",
        "local_up": "local_colwise",
        "local_down": "local_rowwise",
        "scale": "replicate",
        "reduced": "all_reduce",
        "reduced.inner": "colwise",
        "gathered": "gather",
        "gathered.inner": "colwise",
        "experts": "moe_tp_experts",
        "experts.inner": "local_params",
    }
    return Styled().eval(), plan


def tiny_llama():
    import torch

    T = transformers
    torch.manual_seed(0)
    config = T.LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        bos_token_id=0,
        eos_token_id=None,
        pad_token_id=0,
    )
    return T.LlamaForCausalLM(config).eval()


def tiny(family: str):
    """A tiny random model of ``family`` (MoE experts through traceable batched matmuls)."""
    import torch

    T = transformers
    torch.manual_seed(0)
    common = dict(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    config, model = {
        "phi3": (lambda: T.Phi3Config(**common), T.Phi3Model),
        "gpt_neox": (
            lambda: T.GPTNeoXConfig(
                vocab_size=128,
                hidden_size=32,
                num_hidden_layers=LAYERS,
                num_attention_heads=4,
                intermediate_size=64,
                max_position_embeddings=64,
            ),
            T.GPTNeoXModel,
        ),
        "mixtral": (lambda: T.MixtralConfig(**common, num_local_experts=4, num_experts_per_tok=2), T.MixtralModel),
        "qwen3_moe": (
            lambda: T.Qwen3MoeConfig(
                **{**common, "intermediate_size": 64},
                moe_intermediate_size=32,
                num_experts=4,
                num_experts_per_tok=2,
                head_dim=8,
            ),
            T.Qwen3MoeModel,
        ),
    }[family]
    config = config()
    config._experts_implementation = "batched_mm"
    return model(config).eval()


def _equal(name: str, rank: int, world: int, got: list, names: list, want: list) -> str:
    import torch

    for output, g, w in zip(names, got, want):
        if (
            "cache." in output or "past_key_values" in output
        ) and g.shape != w.shape:  # [B, kv heads, S, D]: this rank's kv heads
            w = w.chunk(world, 1)[rank]
        if g.shape != w.shape or not torch.allclose(g, w, rtol=1e-4, atol=1e-5):
            return (
                f"{name}: rank {rank}: {output} differs: got {tuple(g.shape)}, want "
                f"{tuple(w.shape)}, max error {(g - w).abs().max() if g.shape == w.shape else '-'}"
            )
    return ""


def run_case(name: str, rank: int, world: int) -> str:
    import torch

    import hir
    from hir.frontend.output_tree import flatten_outputs

    mesh = list(range(world))
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    if name == "styles":
        model, plan = styled_module()
        ids, positions = ids % 64, torch.arange(8).expand(2, 8)
        from torch.distributed.tensor import Replicate

        # sequence_parallel leaves the tokens split (DTensor's rules): the result gathered whole
        program = hir.from_torch(model, (ids, positions), mesh=mesh, placements={**plan, "output0": Replicate()})
        hir.lower(program.module, PIPELINE)
        found = collectives(program)
        if any(state for _, state in found) or any(kind in ("scatter", "broadcast") for kind, _ in found):
            return f"styles: rank {rank}: a collective moves a parameter, or scatters: {found}"
        with torch.no_grad():
            return _equal(
                name, rank, world, program.run(None, ids, positions, device="cpu"), ["output"], [model(ids, positions)]
            )
    if name == "decode":
        return decode_case(rank, world)
    if name in ("runtime_plan", "auto"):
        model = tiny_llama() if name == "runtime_plan" else auto_model(rank)
        program = (
            hir.from_torch(model, (ids,))
            if name == "auto"
            else hir.from_torch(model, (ids,), mesh=mesh, placements=model.tp_plan)
        )
        model = tiny_llama() if name == "auto" else model  # the unsharded reference (same seed)
        expected = ["allreduce"] * (1 + 2 * LAYERS) + ["allgather"]
    else:
        model = tiny(name)
        program = hir.from_torch(model, (ids,), mesh=mesh, placements=model.config.base_model_tp_plan)
        expected = {"phi3": ["allgather", "allreduce"] * 2 * LAYERS, "gpt_neox": ["allreduce"] * (1 + 2 * LAYERS)}.get(
            name, ["allreduce"] * 2 * LAYERS
        )
    hir.lower(program.module, PIPELINE)
    found = collectives(program)
    if [kind for kind, _ in found] != expected or any(state for _, state in found):
        return f"{name}: rank {rank}: collectives {found}, want {expected} (none reading a parameter)"
    with torch.no_grad():
        names, want = flatten_outputs(model(ids))
    return _equal(
        name, rank, world, program.run(model.state_dict() if name != "auto" else None, ids, device="cpu"), names, want
    )


def auto_model(rank: int):
    """The tiny Llama saved here (rank 0) and loaded with HF's own tensor parallelism."""
    import torch.distributed as dist

    path = os.environ["HIR_STYLE_DIR"]
    if rank == 0:
        tiny_llama().save_pretrained(path)
    dist.barrier()
    return transformers.LlamaForCausalLM.from_pretrained(path, tp_plan="auto").eval()


def decode_case(rank: int, world: int) -> str:
    import torch

    import hir
    from hir.frontend.hf_decode import StaticCacheStep
    from hir.interpreter import compile as compile_program

    model = tiny_llama()
    model.generation_config.cache_implementation = "static"
    step = StaticCacheStep(model, batch_size=1, max_cache_len=16)
    prompt = [3, 17, 42, 9]
    decode = hir.from_torch(
        step, (torch.tensor([prompt[:1]]), torch.tensor([0])), mesh=list(range(world)), placements=model.tp_plan
    )
    decode.lower(pipeline=PIPELINE)
    found = collectives(decode)
    lookup = (
        "model.embed_tokens" in model.tp_plan
    )  # split embedding: one allreduce (not in transformers 5.17's Llama plan)
    expected = ["allreduce"] * (lookup + 2 * LAYERS) + ["allgather"]
    if [kind for kind, _ in found] != expected or any(state for _, state in found):
        return f"decode: rank {rank}: collectives per step {found}, want {expected}"
    state = decode.state(step)
    for tensor in state.values():
        if tensor.dtype.is_floating_point and tensor.dim() == 4:
            tensor.zero_()  # an empty cache
    args = decode.arguments(
        state, torch.tensor([prompt[:1]]), torch.tensor([0])
    )  # this rank's heads of the cache, kept across steps
    program = compile_program(decode.module, device="cpu")
    tokens, first = list(prompt), len(decode.state_names)
    for position in range(len(prompt) + 7):
        args[first], args[first + 1] = torch.tensor([[tokens[position]]]), torch.tensor([position])
        (logits,) = program(args)
        if position >= len(prompt) - 1:
            tokens.append(int(logits[0, -1].argmax()))
    with torch.no_grad():
        want = model.generate(torch.tensor([prompt]), max_new_tokens=8, min_new_tokens=8, do_sample=False)[0].tolist()
    return "" if tokens == want else f"decode: rank {rank}: tokens {tokens}, HF greedy {want}"


def worker() -> int:
    return run_gloo_cases(os.environ["HIR_STYLE_CASES"].split(","), run_case)


def test_every_style_and_tp_decode(tmp_path):
    """The fast default: the styles module and the head-local TP decode."""
    checked, report = launch_workers(
        2,
        __file__,
        timeout_s=500,
        env={**os.environ, "HIR_STYLE_CASES": ",".join(FAST), "HIR_STYLE_DIR": str(tmp_path)},
    )
    assert checked == 2 * len(FAST), report


@pytest.mark.slow
def test_hf_models_under_their_plans(tmp_path):
    """HF's runtime plan, Phi3, GPT-NeoX, Mixtral, Qwen3-MoE and a tp_plan="auto" model."""
    pytest.importorskip("accelerate")  # from_pretrained(tp_plan=...) needs it
    checked, report = launch_workers(
        2,
        __file__,
        timeout_s=900,
        env={**os.environ, "HIR_STYLE_CASES": ",".join(SLOW), "HIR_STYLE_DIR": str(tmp_path / "tiny_llama")},
    )
    assert checked == 2 * len(SLOW), report


if __name__ == "__main__":
    sys.exit(worker())
