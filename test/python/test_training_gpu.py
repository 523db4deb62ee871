"""hir.train_step on CUDA: a tiny random Llama (grouped-query heads) under bf16 autocast with
``AdamW(fused=True)``, as the 1B benchmark runs it: the step's attention is SDPA's flash
kernel (``hir.flash_attention`` and its backward in the program, no materialized mask), and
every step's loss and the final parameters equal eager PyTorch within bf16's precision, for
the ops run one by one and for the default compile (CUDA graph, compiled regions)."""

import copy

import pytest
import torch

import hir

BF16 = {"rtol": 2e-2, "atol": 2e-2}


def loss_fn(model, ids, labels):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return model(ids, labels=labels).loss


@pytest.mark.gpu
@pytest.mark.parametrize("options", [{"graph": False, "compile_kernels": False}, {}], ids=["eager", "default"])
def test_llama_step_uses_flash_and_equals_eager_on_cuda(options):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=128,
            hidden_size=128,
            intermediate_size=256,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
        )
    ).cuda()
    ref = copy.deepcopy(model)
    opt, ref_opt = (torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.1, fused=True) for m in (model, ref))
    g = torch.Generator().manual_seed(1)
    batches = [(ids, ids.clone()) for ids in (torch.randint(0, 128, (2, 64), generator=g).cuda() for _ in range(4))]
    step = hir.train_step(model, opt, loss_fn, batches[0], **options)
    text = str(next(iter(step.programs.values())).module)
    assert text.count('"torch.hir.flash_attention"') == 2 and text.count('"torch.hir.flash_attention_backward"') == 2
    assert "efficient_attention" not in text
    for i, batch in enumerate(batches):
        got = step(*batch)
        want = loss_fn(ref, *batch)
        want.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        torch.testing.assert_close(got, want.detach(), **BF16, msg=lambda m, i=i: f"step {i + 1}: {m}")
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), **BF16, msg=lambda m, name=name: f"{name}: {m}")
