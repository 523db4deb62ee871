"""Tiny random models, batches and the eager PyTorch reference of a training step, for the
hir.train_step tests (test_training*.py)."""

import copy

import torch

TOL = {"rtol": 1e-5, "atol": 1e-6}
# Adam's update lr * m / (sqrt(v) + eps) normalizes the gradient: where a gradient is
# small (near eps, or a sum that cancels) its last bits, which differ because the exported
# backward orders its sums (softmax, norms, embedding rows) otherwise than eager autograd,
# move the parameter by lr times their relative size. The tests use eps = 1e-6 and
# lr = 1e-4: those differences stay below the tolerance while every parameter moves ~1e-3
# in 10 steps (with eps = 1e-8 and lr = 1e-2, or lr = 1e-3 on the tiny Llama, single
# elements differ by 2e-6 to 3e-6).
ADAM_EPS = 1e-6
ADAM_LR = 1e-4


class MLP(torch.nn.Module):
    """Linear, LayerNorm, ReLU, Linear."""

    def __init__(self, features: int = 8, hidden: int = 16, classes: int = 4) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(features, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.fc2 = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


def classify_loss(model, x, y):
    return torch.nn.functional.cross_entropy(model(x), y)


def lm_loss(model, ids, labels):
    return model(ids, labels=labels).loss


VOCAB = 64


class ResidualMLP(torch.nn.Module):
    """x + down(relu(up(x))), 8 -> 16 -> 8, no biases: the block the sequence-parallel tests
    train with the tokens split."""

    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(16, 8, bias=False)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


def sequence_parallel_mlp() -> torch.nn.Module:
    """Two :class:`ResidualMLP` blocks (seed 0)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(ResidualMLP(), ResidualMLP())


def make(kind: str, seed: int = 0) -> tuple:
    """(model, loss_fn, batches(count, size, seed)) of ``kind``: mlp, llama or gpt2."""
    torch.manual_seed(seed)
    if kind == "mlp":

        def batches(count, size=8, seed=1):
            g = torch.Generator().manual_seed(seed)
            return [
                (torch.randn(size, 8, generator=g), torch.randint(0, 4, (size,), generator=g)) for _ in range(count)
            ]

        return MLP(), classify_loss, batches
    if kind == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=VOCAB,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                max_position_embeddings=64,
            )
        )
    elif kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        model = GPT2LMHeadModel(
            GPT2Config(
                vocab_size=VOCAB,
                n_positions=32,
                n_embd=32,
                n_layer=2,
                n_head=4,
                resid_pdrop=0.0,
                embd_pdrop=0.0,
                attn_pdrop=0.0,
            )
        )
    else:
        raise ValueError(kind)

    def token_batches(count, size=4, seed=1):
        g = torch.Generator().manual_seed(seed)
        out = []
        for _ in range(count):
            ids = torch.randint(0, VOCAB, (size, 8), generator=g)
            out.append((ids, ids.clone()))
        return out

    return model, lm_loss, token_batches


def optimizer(kind: str, model: torch.nn.Module, **overrides) -> torch.optim.Optimizer:
    """adamw (weight decay), adamw-fused, adamw-foreach, adam (L2 weight decay), adam-fused, sgd
    (momentum, dampening, weight decay) or nesterov (SGD)."""
    if kind == "adamw":
        return torch.optim.AdamW(
            model.parameters(), **{"lr": ADAM_LR, "weight_decay": 0.1, "eps": ADAM_EPS, **overrides}
        )
    if kind.startswith("adamw-"):  # torch's fused kernel or its foreach kernels (hir.adam_update runs the same)
        flag = kind.removeprefix("adamw-")
        return torch.optim.AdamW(
            model.parameters(), **{"lr": ADAM_LR, "weight_decay": 0.1, "eps": ADAM_EPS, flag: True, **overrides}
        )
    if kind in ("adam", "adam-fused"):
        fused = {"fused": True} if kind == "adam-fused" else {}
        return torch.optim.Adam(
            model.parameters(), **{"lr": ADAM_LR, "weight_decay": 0.01, "eps": ADAM_EPS, **fused, **overrides}
        )
    if kind == "sgd":
        return torch.optim.SGD(
            model.parameters(), **{"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01, **overrides}
        )
    if kind == "nesterov":
        return torch.optim.SGD(model.parameters(), **{"lr": 0.05, "momentum": 0.9, "nesterov": True, **overrides})
    raise ValueError(kind)


def eager_step(model, opt, loss_fn, batch, accumulate: int = 1, max_grad_norm=None) -> torch.Tensor:
    """One eager training step as a user writes it: backward per micro-batch (loss / K),
    clip, step; returns the mean loss."""
    opt.zero_grad()
    total = None
    for micro in zip(*(x.chunk(accumulate) for x in batch)) if accumulate > 1 else [batch]:
        part = loss_fn(model, *micro) / accumulate if accumulate > 1 else loss_fn(model, *micro)
        part.backward()
        total = part.detach() if total is None else total + part.detach()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    opt.step()
    return total


def steps_equal_eager(
    step, loss_fn, batches, model, opt, ref, ref_opt, label: str, moment=None, tol: dict | None = None
) -> str:
    """Run ``step`` on each batch (a tuple of ``loss_fn``'s arguments) beside
    :func:`eager_step` of ``ref`` with ``ref_opt``: "" when every loss, then every final
    parameter (and its optimizer state ``moment``, if named) equals eager's (within ``tol``,
    by default :data:`TOL`), else the first difference, prefixed ``label`` (multi-rank
    workers report strings, not raise)."""
    tol = tol or TOL
    for i, batch in enumerate(batches):
        loss = step(*batch)
        want = eager_step(ref, ref_opt, loss_fn, batch)
        try:
            torch.testing.assert_close(loss, want, **tol)
        except AssertionError as err:
            return f"{label}: step {i}: {err}"
    for (name, got), want in zip(model.named_parameters(), ref.parameters()):
        try:
            torch.testing.assert_close(got, want, **tol)
            if moment:
                torch.testing.assert_close(opt.state[got][moment], ref_opt.state[want][moment], **tol)
        except AssertionError as err:
            return f"{label}: final {name}: {err}"
    return ""


def twins(model_kind: str, opt_kind: str, **overrides) -> tuple:
    """Two equal models (hir's, eager's), an optimizer of each, the loss and batches."""
    model, loss_fn, batches = make(model_kind)
    ref = copy.deepcopy(model)
    return model, optimizer(opt_kind, model, **overrides), ref, optimizer(opt_kind, ref, **overrides), loss_fn, batches


def assert_same_training(model, opt, ref, ref_opt) -> None:
    """Parameters and optimizer state (every tensor of ``state_dict()``) equal."""
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), **TOL, msg=lambda m, name=name: f"{name}: {m}")
    mine, theirs = opt.state_dict(), ref_opt.state_dict()
    assert mine["state"].keys() == theirs["state"].keys()
    for index, state in theirs["state"].items():
        assert mine["state"][index].keys() == state.keys()
        for key, value in state.items():
            torch.testing.assert_close(
                mine["state"][index][key], value, **TOL, msg=lambda m, index=index, key=key: f"state {index} {key}: {m}"
            )
