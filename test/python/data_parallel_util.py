"""The models and the hand-written step module of test_data_parallel_training.py: tiny random
Llama and GPT-2 (no download), and a step (loss, ``torch.autograd.grad``, the update in place)
whose AdamW or SGD update takes the learning rate and step as scalar inputs."""

import functools


def model_for(arch: str):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    if arch == "llama":
        return LlamaForCausalLM(
            LlamaConfig(
                vocab_size=64,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                max_position_embeddings=64,
            )
        )
    return GPT2LMHeadModel(
        GPT2Config(
            vocab_size=64,
            n_embd=32,
            n_layer=2,
            n_head=4,
            n_positions=16,
            bos_token_id=0,
            eos_token_id=0,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
        )
    )


# eps 1e-6, not torch's 1e-8: GPT-2's key bias has a gradient of exactly 0 (softmax ignores a
# shift), so what the step computes for it is rounding noise, which Adam divides by its own
# size; eps bounds that, else any other summation order (the devices' partial sums) shows
BETAS, EPS, DECAY = (0.9, 0.999), 1e-6, 0.01


def step_module(model, mode: str, optimizer: str, reshard_after_forward: bool = True):
    """The training step as a module: each parameter as the loss reads it (gathered with
    ``"fully_shard"``, and again where the backward reads it unless not
    ``reshard_after_forward``), the loss and its gradients, each gradient reduced as the update
    reads it, the update in place: SGD, or AdamW as ``torch.optim.AdamW`` computes it (its
    moments state of the step, placed as the parameters; the step's bias corrections are
    inputs, computed on the host as torch does)."""
    import torch

    from hir.frontend import data_parallel

    names = [n for n, _ in model.named_parameters()]

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            if optimizer == "adamw":
                self.exp_avg = torch.nn.Module()
                self.exp_avg_sq = torch.nn.Module()
                for i, (_, p) in enumerate(model.named_parameters()):
                    self.exp_avg.register_buffer(str(i), torch.zeros_like(p))
                    self.exp_avg_sq.register_buffer(str(i), torch.zeros_like(p))

        def forward(self, ids, labels, lr, step_size, correction):
            held = [
                functools.reduce(getattr, n.split("."), self.model) for n in names
            ]  # the tensors the export swapped in
            whole = [data_parallel.gather(mode, p, f"model.{n}") for p, n in zip(held, names)]
            with torch.enable_grad():
                for p in whole:
                    p.requires_grad_()
                with (
                    torch.nn.utils.stateless._reparametrize_module(
                        self.model, dict(zip(names, whole)), tie_weights=True
                    ),
                    data_parallel.regathering(mode, reshard_after_forward, held, whole, [f"model.{n}" for n in names]),
                ):
                    loss = self.model(ids, labels=labels).loss
                grads = torch.autograd.grad(loss, whole)
            with torch.no_grad():
                for i, (p, g, n) in enumerate(zip(held, grads, names)):
                    g = data_parallel.reduce_gradient(mode, g, f"model.{n}")
                    if optimizer == "sgd":
                        p.sub_(lr * g)
                        continue
                    m, v = getattr(self.exp_avg, str(i)), getattr(self.exp_avg_sq, str(i))
                    p.mul_(1 - lr * DECAY)
                    m.lerp_(g, 1 - BETAS[0])
                    v.mul_(BETAS[1]).addcmul_(g, g, value=1 - BETAS[1])
                    p.sub_(step_size * (m / (v.sqrt() / correction + EPS)))
            return loss.detach()

    return Step()


def scalars(lr: float, step: int) -> tuple:
    """lr, and AdamW's step size and bias correction of step ``step`` (1-based), as torch's AdamW computes them."""
    import torch

    return torch.tensor(lr), torch.tensor(lr / (1 - BETAS[0] ** step)), torch.tensor((1 - BETAS[1] ** step) ** 0.5)
