"""The optimizer rules of :func:`hir.train_step`: one per ``torch.optim`` class, each the
update that class's single-tensor implementation makes (``torch/optim/sgd.py``,
``torch/optim/adam.py``), written with tensor hyper-parameters so that it traces into the
step's program instead of being baked into it.

A rule says which state a parameter has (created as torch creates it, so
``optimizer.state_dict()`` round-trips with eager torch), which hyper-parameters of a param
group the program reads (each a 0-d float64 state entry of the step, refreshed from
``optimizer.param_groups`` before every call: an LR scheduler is honoured), which group
settings shape the program itself (:meth:`Rule.structure`: a change imports another
program), and refuses the settings it does not implement with an :class:`hir.HirError`.

Scalars are computed in float64 from the hyper-parameters and the step count, then cast to
the parameter's dtype where they meet a tensor, as torch casts a Python number there.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch

from hir.core import HirError

FIRST_STEP = "hir_first_step"  # SGD: 1 until the momentum buffers hold a gradient


@dataclass(frozen=True)
class Rule:
    """How one optimizer class updates a param group (see the module docstring)."""

    hyper: tuple[str, ...]  # param-group values read by the program (floats; betas as beta1, beta2)
    state: Callable[[dict], tuple[str, ...]]  # group -> a parameter's state keys
    init: Callable[[torch.Tensor, dict], dict]  # (param, group) -> its state before its first step
    update: Callable[[list, list, list, dict, dict], None]  # (params, grads, states, hyper tensors, group)
    unsupported: dict[str, object]  # group setting -> the only value supported
    extra: tuple[str, ...] = ()  # the program's own per-group state (0-d float64)

    def structure(self, group: dict) -> tuple:
        """The group settings the program is built for (a change means another program):
        which terms of the update exist, not their values."""
        terms = tuple(
            (key, bool(group[key]))
            for key in ("momentum", "nesterov", "weight_decay", "decoupled_weight_decay")
            if key in group
        )
        return terms + tuple(
            (key, group.get(key)) for key in ("foreach", "fused")
        )  # which implementation hir.adam_update runs

    def check(self, optimizer: torch.optim.Optimizer) -> None:
        """Refuse the settings this rule does not implement, naming them."""
        name = type(optimizer).__name__
        for index, group in enumerate(optimizer.param_groups):
            for key, supported in self.unsupported.items():
                if bool(group.get(key, supported)) != bool(supported):
                    raise HirError(
                        f"error: hir.train_step: {name}({key}={group[key]!r}) (param group {index}) is not supported; "
                        f"hir implements {name} with {key}={supported!r}"
                    )
            tensors = [
                v for v in (group.get("lr"), *group.get("betas", ())) if isinstance(v, torch.Tensor) and v.numel() != 1
            ]
            if tensors:
                raise HirError(
                    f"error: hir.train_step: {name} param group {index}: lr and betas "
                    f"must be numbers, got a tensor of shape {tuple(tensors[0].shape)}"
                )


def _scalar(value: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A float64 scalar where torch passes a Python number: in ``like``'s dtype."""
    return value.to(like.dtype)


def _sgd_state(group: dict) -> tuple[str, ...]:
    return ("momentum_buffer",) if group["momentum"] != 0 else ()


def _sgd_init(param: torch.Tensor, group: dict) -> dict:
    return (
        {"momentum_buffer": torch.zeros_like(param, memory_format=torch.preserve_format)}
        if group["momentum"] != 0
        else {}
    )


def _sgd_update(params: list, grads: list, states: list, hyper: dict, group: dict) -> None:
    """``torch.optim.sgd._single_tensor_sgd`` (the first step's buffer is the gradient)."""
    for param, grad, state in zip(params, grads, states):
        if group["weight_decay"] != 0:
            grad = grad + param * _scalar(hyper["weight_decay"], param)
        if group["momentum"] != 0:
            buf = state["momentum_buffer"]
            later = buf * _scalar(hyper["momentum"], buf) + grad * _scalar(1 - hyper["dampening"], grad)
            buf.copy_(torch.where(hyper[FIRST_STEP] != 0, grad, later))
            grad = grad + buf * _scalar(hyper["momentum"], buf) if group["nesterov"] else buf
        param.add_(grad * _scalar(-hyper["lr"], param))
    if group["momentum"] != 0:
        hyper[FIRST_STEP].zero_()


def _adam_state(group: dict) -> tuple[str, ...]:
    return ("step", "exp_avg", "exp_avg_sq")


def _adam_init(param: torch.Tensor, group: dict) -> dict:
    """As ``Adam._init_group``: ``step`` a float32 0-d tensor, on the CPU unless fused or
    capturable."""
    on_device = group.get("fused") or group.get("capturable")
    return {
        "step": torch.zeros((), dtype=torch.float32, device=param.device if on_device else "cpu"),
        "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
        "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
    }


def _adam_update(params: list, grads: list, states: list, hyper: dict, group: dict) -> None:
    """``torch.optim.adam._single_tensor_adam`` (not capturable, not differentiable). The
    scalars (bias corrections, step sizes, each hyper-parameter in each dtype) are computed
    once for the group, the per-parameter ones as vectors over the parameters' step counts:
    the same float64 arithmetic element by element as torch's per-parameter scalars, in a
    few ops instead of a dozen 0-d ops per parameter."""
    lr, beta1, beta2, eps, decay = (hyper[k] for k in ("lr", "beta1", "beta2", "eps", "weight_decay"))
    for state in states:
        state["step"].add_(1)
    steps = torch.stack([state["step"] for state in states]).to(torch.float64)
    bias_correction1 = 1 - beta1**steps
    bias_correction2 = 1 - beta2**steps
    step_size = lr / bias_correction1
    scalars = _InDtype(
        {
            "decay": 1 - lr * decay,
            "l2": decay,
            "beta1": 1 - beta1,
            "beta2": beta2,
            "one_minus_beta2": 1 - beta2,
            "eps": eps,
            "bias_correction2_sqrt": bias_correction2**0.5,
            "neg_step_size": -step_size,
        }
    )
    decoupled = group["weight_decay"] != 0 and group.get("decoupled_weight_decay", False)
    for index, (param, grad, state) in enumerate(zip(params, grads, states)):
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        if group["weight_decay"] != 0:
            if decoupled:
                param.mul_(scalars.get("decay", param))
            else:
                grad = grad + param * scalars.get("l2", param)
        exp_avg.lerp_(grad, scalars.get("beta1", exp_avg))
        exp_avg_sq.mul_(scalars.get("beta2", exp_avg_sq)).addcmul_(grad * scalars.get("one_minus_beta2", grad), grad)
        denom = (exp_avg_sq.sqrt() / scalars.get("bias_correction2_sqrt", exp_avg_sq)[index]).add_(
            scalars.get("eps", exp_avg_sq)
        )
        param.addcdiv_(exp_avg * scalars.get("neg_step_size", exp_avg)[index], denom)


class _InDtype:
    """Float64 scalars (0-d, or one per parameter) cast to a tensor's dtype once per dtype."""

    def __init__(self, values: dict) -> None:
        self.values, self.cast = values, {}

    def get(self, name: str, like: torch.Tensor) -> torch.Tensor:
        key = (name, like.dtype)
        if key not in self.cast:
            self.cast[key] = _scalar(self.values[name], like)
        return self.cast[key]


_ADAM = Rule(
    hyper=("lr", "beta1", "beta2", "eps", "weight_decay"),
    state=_adam_state,
    init=_adam_init,
    update=_adam_update,
    unsupported={"amsgrad": False, "maximize": False, "differentiable": False, "capturable": False},
)
RULES: dict[type, Rule] = {
    torch.optim.SGD: Rule(
        hyper=("lr", "momentum", "dampening", "weight_decay"),
        state=_sgd_state,
        init=_sgd_init,
        update=_sgd_update,
        unsupported={"maximize": False, "differentiable": False},
        extra=(FIRST_STEP,),
    ),
    torch.optim.Adam: _ADAM,
    torch.optim.AdamW: _ADAM,
}


def rule_for(optimizer: object) -> Rule:
    """The rule of ``optimizer``'s class (exactly: a subclass may update otherwise), checked
    against its settings."""
    rule = RULES.get(type(optimizer))
    if rule is None or not isinstance(optimizer, torch.optim.Optimizer):  # (RULES' keys are optimizers)
        known = ", ".join(f"torch.optim.{c.__name__}" for c in RULES)
        raise HirError(
            f"error: hir.train_step: optimizer {type(optimizer).__module__}.{type(optimizer).__qualname__} "
            f"is not supported (supported: {known})"
        )
    rule.check(optimizer)
    return rule


def hyper_values(rule: Rule, group: dict) -> dict[str, float]:
    """The group's hyper-parameters as the program reads them (``betas`` as beta1, beta2)."""
    values = {}
    for key in rule.hyper:
        if key in ("beta1", "beta2"):
            value = group["betas"][0 if key == "beta1" else 1]
        else:
            value = group[key]
        values[key] = float(value)
    return values
