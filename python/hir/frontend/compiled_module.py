"""``hir.compile(module, example_args)``: a ``torch.nn.Module`` compiled as ``torch.compile``
users hold it: call it on any input shapes, it returns what the module returns, and it
follows the module's parameters.

* **A program per input signature** (the shapes and dtypes of the inputs): the first from the
  example inputs; a call whose signature no program takes imports and compiles another (the
  import cached on disk, :mod:`hir.frontend.import_cache`). As ``torch.compile``'s
  ``dynamic=None``: from the second signature on, the dims whose sizes differ between the
  signatures seen (a batch size, a sequence length) are imported dynamic (``?`` in the
  types), so one program serves every size of them from then on; dims whose sizes changed
  alike in every signature are one dim. Sizes 0 and 1 are specialised (a program of their
  own), as torch does; where the module's code fixes a dim (torch.export refuses it
  dynamic), each signature gets a static program, with a warning once. With ``dynamic=`` or
  ``dynamic_shapes=`` given, the dims they declare are dynamic from the start (their bounds
  enforced at the call) and a change elsewhere compiles a static program of the new shapes.
  At most ``recompile_limit`` programs (default 8, as torch's
  ``torch._dynamo.config.recompile_limit``): a call that needs one more is refused, saying
  which shapes were compiled and how to declare the varying dims dynamic.
* **Keyword inputs**: a call takes the module's arguments as ``forward`` does: a positional
  parameter by keyword (``fn(input=x)``), ``example_kwargs``' tensors by keyword or positionally
  after the others, and another set of keyword tensors (``fn(ids, attention_mask=m)`` on a module
  compiled without one) compiles a program taking them; a keyword's other values are constants of
  the program (a new value: another program).
* **Results**: what the module returns (:mod:`hir.frontend.output_tree`).
* **Parameters**: each call checks that the module's parameters and buffers are the tensors
  the programs were bound to (the same objects, on the same storage; a guard like
  ``torch.compile``'s): a replaced ``nn.Parameter``, or ``module.to(...)``, binds the new
  tensors before the call (a shape or dtype the import did not see is refused by name).
* **Gradients**: the programs do not differentiate (``hir.train_step`` runs a training
  step). A call under grad mode, where a parameter or an input requires grad, returns outputs
  whose backward raises :class:`hir.HirError` saying so, instead of leaving the parameters'
  ``.grad`` silently unset.
"""

import inspect
import sys
import warnings
from typing import Any

import torch

from hir.core import HirError
from hir.dialect.context import api_stacklevel
from hir.frontend.import_cache import cached_from_torch
from hir.frontend.output_tree import rebuild

RECOMPILE_LIMIT = 8  # programs per compiled module (torch._dynamo.config.recompile_limit's default)


class CompiledModule:
    """``hir.compile(module, example_args, ...)``; see the module docstring. ``imports`` are
    :func:`hir.from_torch`'s options, ``options`` :class:`~hir.frontend.compiled.CompiledProgram`'s."""

    def __init__(
        self,
        module: torch.nn.Module,
        example_args: tuple,
        imports: dict,
        options: dict,
        recompile_limit: int = RECOMPILE_LIMIT,
    ) -> None:
        if isinstance(recompile_limit, bool) or not isinstance(recompile_limit, int) or recompile_limit < 1:
            raise HirError(f"error: hir.compile: recompile_limit must be a positive int, got {recompile_limit!r}")
        self.module = module
        self.recompile_limit = recompile_limit
        self._imports = imports
        self._options = options
        self._declared = "dynamic" in imports or "dynamic_shapes" in imports
        self._entries: list = []  # [signature pattern, TorchProgram, CompiledProgram], in compile order
        self._found: dict = {}  # input signature -> its entry
        self._history: list = []  # the signatures that compiled a program
        self._static_only = False  # torch.export refused the dims dynamic once: a program per signature
        self._guard = _Guard(module)
        given = imports.get("example_kwargs") or {}
        self._keywords = (
            tuple(k for k, v in given.items() if isinstance(v, torch.Tensor)) if isinstance(given, dict) else ()
        )
        self._forward = inspect.signature(module.forward)
        inputs = tuple(example_args) + tuple(
            given[k] for k in self._keywords
        )  # as a call passes them: the keyword inputs last
        self._example_inputs = len(inputs)
        self._last = self._compile(inputs, _signature(inputs, self._keywords), self._imports)

    @property
    def programs(self) -> list:
        """The imported programs (:class:`~hir.frontend.torch_import.TorchProgram`), one per
        input signature compiled, in compile order."""
        return [program for _, program, _ in self._entries]

    @property
    def graph_state(self) -> Any:
        """The CUDA graph state of the program the last call ran (the first one before any call)."""
        return self._last[2].graph_state

    @property
    def kernel_compile(self) -> Any:
        """What compiling compute regions cost the program the last call ran."""
        return self._last[2].kernel_compile

    def __call__(self, *args: Any, **keyword_inputs: Any) -> Any:
        """What the module returns on ``args`` (see the module docstring); the keyword inputs
        (``example_kwargs``' tensors) by keyword, or positionally after the others."""
        keywords = (
            self._keywords if len(args) == self._example_inputs else ()
        )  # example_kwargs' tensors given positionally
        if keyword_inputs:
            args, keywords = self._with_keywords(args, keyword_inputs)
        if self._guard.stale():
            self._rebind()
        key = _signature(args, keywords)
        entry = self._found.get(key)
        if entry is None:
            entry = self._found[key] = self._entry(args, key)
        self._last = entry
        outputs = entry[2].run(*args)
        anchor = self._guard.grad_anchor(args) if torch.is_grad_enabled() else None
        if anchor is not None:
            outputs = _no_backward(outputs, anchor, type(self.module).__name__)
        return rebuild(entry[1].output_tree, outputs)

    def _with_keywords(self, args: tuple, keyword_inputs: dict) -> tuple:
        """(the inputs, the keywords of the last of them) of a call with keywords, as
        ``forward`` binds them: positional parameters named by keyword in order join ``args``
        (but ``example_kwargs``' keywords); the other keywords follow, in ``example_kwargs``' order first."""
        try:
            self._forward.bind(*args, **keyword_inputs)
        except TypeError as err:
            raise HirError(
                f"error: hir.compile({type(self.module).__name__}): {err} (the module's forward{self._forward})"
            ) from None
        rest = dict(keyword_inputs)
        given = self._imports.get("example_kwargs") or {}
        for k in [k for k, v in rest.items() if not isinstance(v, torch.Tensor)]:
            value = rest.pop(k)
            if k not in given or isinstance(given[k], torch.Tensor) or (given[k] is not value and given[k] != value):
                raise HirError(
                    f"error: hir.compile({type(self.module).__name__}): {k}={value!r}: a keyword "
                    "that is not a tensor is a constant of the compiled program (example_kwargs: "
                    f"{k}={given.get(k, '<not given>')!r}); compile another for another value"
                )
        positional = [
            p.name for p in self._forward.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        inputs = list(args)
        while (
            len(inputs) < len(positional) and positional[len(inputs)] in rest and positional[len(inputs)] not in given
        ):
            inputs.append(rest.pop(positional[len(inputs)]))
        if not rest:
            return tuple(inputs), ()
        order = [k for k in self._keywords if k in rest] + [k for k in rest if k not in self._keywords]
        return tuple(inputs) + tuple(rest[k] for k in order), tuple(order)

    def _entry(self, args: tuple, key: tuple) -> list:
        """The entry whose program takes ``args``, compiling one where none does."""
        for entry in self._entries:
            if _fits(entry[0], key):
                return entry
        if len(self._entries) >= self.recompile_limit:
            seen = "; ".join(_shapes(s) for s in self._history)
            raise HirError(
                f"error: hir.compile({type(self.module).__name__}): this call's inputs ({_shapes(key)}) need another "
                f"program, over recompile_limit={self.recompile_limit} (compiled: {seen}); declare the varying dims "
                "dynamic (dynamic={'input0': {0: 'batch', 1: 'seq'}}) or pass a larger recompile_limit"
            )
        if not self._declared and not self._static_only:
            dynamic = _changed_dims(self._history, key)
            if dynamic and all(key[i][0][axis] >= 2 for i, axes in dynamic.items() for axis in axes):
                try:
                    return self._compile(
                        args, key, {**self._imports, "dynamic": _names(dynamic, self._history, key)}, automatic=True
                    )
                except HirError as err:  # the module's code fixes a dim torch.export was asked to keep dynamic
                    self._static_only = True
                    warnings.warn(
                        f"hir.compile({type(self.module).__name__}): the dims that changed between calls "
                        "cannot be imported dynamic, so each input signature gets a program of its own (at "
                        f"most recompile_limit={self.recompile_limit}): {err.message.splitlines()[0][:300]}",
                        RuntimeWarning,
                        stacklevel=api_stacklevel(),
                    )
        return self._compile(args, key, self._imports)

    def _compile(self, args: tuple, key: tuple, imports: dict, automatic: bool = False) -> list:
        keywords = key[-1][1][1]  # the last inputs' keywords (_signature)
        if keywords or self._keywords:  # this call's keyword inputs, the example's constants
            split = len(args) - len(keywords)
            given = imports.get("example_kwargs") or {}
            constants = {k: v for k, v in given.items() if k not in self._keywords and k not in keywords}
            imports = {**imports, "example_kwargs": {**constants, **dict(zip(keywords, args[split:]))}}
            args = args[:split]
        program = cached_from_torch(self.module, args, **imports)
        entry = [
            _pattern(program, key, automatic),
            program,
            self._bind(program, self._entries[0][2] if self._entries else None),
        ]
        self._entries.append(entry)
        self._history.append(key)
        return entry

    def _bind(self, program: Any, first: Any = None) -> Any:
        """``program`` compiled with the module's current state; the module's tensors that
        ``first`` (a compiled program) placed on the device already are shared, not copied again."""
        state = program.state(self.module)
        if first is not None:
            state.update({name: t for name, t in first.state.items() if name in state})
        return program.compile(state, **self._options)

    def _rebind(self) -> None:
        """Compile every program again with the module's current parameters and buffers (all
        or none: a state the programs cannot take is refused, and refused again next call)."""
        guard = _Guard(self.module)
        bound: list = []
        for entry in self._entries:
            bound.append(self._bind(entry[1], bound[0] if bound else None))
        for entry, fn in zip(self._entries, bound):
            entry[2] = fn
        self._guard = guard


class _Guard:
    """The module's parameters and buffers as bound: each (owner's table, name, tensor, its
    storage); :meth:`stale` when any was replaced or moved."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.entries = []
        for sub in module.modules():
            for table in (sub._parameters, sub._buffers):
                for name, tensor in table.items():
                    if tensor is not None:
                        self.entries.append((table, name, tensor, tensor.data_ptr()))
        self.parameters = list(module.parameters())

    def stale(self) -> bool:
        return any(
            table.get(name) is not tensor or tensor.data_ptr() != pointer
            for table, name, tensor, pointer in self.entries
        )

    def grad_anchor(self, args: tuple) -> torch.Tensor | None:
        """A parameter or input that requires grad (None: none does)."""
        return next((t for t in (*self.parameters, *args) if isinstance(t, torch.Tensor) and t.requires_grad), None)


class _NoBackward(torch.autograd.Function):
    """The outputs as they are, with a backward that refuses: the program computed them
    without recording how (the parameters' gradients would silently stay unset)."""

    @staticmethod
    def forward(ctx: Any, what: str, anchor: torch.Tensor, *outputs: torch.Tensor) -> tuple:
        ctx.what = what
        return tuple(o.view_as(o) for o in outputs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise HirError(
            f"error: hir.compile({ctx.what}): a compiled module does not differentiate (its parameters would get no "
            "gradient); train with hir.train_step, or call the compiled module under torch.no_grad() for inference",
            _backward_caller(),
        )


def _backward_caller() -> str | None:
    """``file:line`` of the user's ``backward()`` call: the innermost frame outside torch and
    hir (None where the backward runs on an autograd thread)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.split(".")[0] not in ("torch", "hir"):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _no_backward(outputs: list, anchor: torch.Tensor, what: str) -> list:
    """``outputs`` whose floating-point tensors carry :class:`_NoBackward`."""
    index = [
        i for i, o in enumerate(outputs) if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex())
    ]
    if not index:
        return outputs
    wrapped = _NoBackward.apply(what, anchor, *[outputs[i] for i in index])
    out = list(outputs)
    for i, tensor in zip(index, wrapped):
        out[i] = tensor
    return out


def _signature(args: Any, keywords: tuple = ()) -> tuple:
    """Per input: (shape, dtype) of a tensor, the value of anything else; then the keywords
    the last inputs are passed by (a program takes one set of them)."""
    return tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else ("value", a) for a in args) + (
        ("value", ("keywords", tuple(keywords))),
    )


def _pattern(program: Any, key: tuple, automatic: bool) -> tuple:
    """The signatures ``program`` takes: per input, its signature with None for each dynamic
    dim and {dynamic axis: symbol}; ``automatic``: its dynamic dims were marked by
    :class:`CompiledModule` (sizes 0 and 1 are specialised; declared bounds the program
    checks itself)."""
    inputs = []
    for i, entry in enumerate(key):
        dims = program.dynamic_dims[i] if i < len(program.dynamic_dims) else {}
        if entry[0] == "value" or not dims:
            inputs.append((entry, {}))
        else:
            inputs.append(
                (
                    (tuple(None if axis in dims else size for axis, size in enumerate(entry[0])), entry[1]),
                    {axis: dims[axis][0] for axis in dims},
                )
            )
    return tuple(inputs), automatic


def _fits(pattern: tuple, key: tuple) -> bool:
    inputs, automatic = pattern
    if len(inputs) != len(key):
        return False
    sizes: dict = {}  # symbol -> size
    for (expected, dims), got in zip(inputs, key):
        if not dims:
            if expected != got:
                return False
            continue
        if got[0] == "value" or got[1] != expected[1] or len(got[0]) != len(expected[0]):
            return False
        if any(want is not None and want != size for want, size in zip(expected[0], got[0])):
            return False
        for axis, symbol in dims.items():
            size = got[0][axis]
            if (automatic and size < 2) or sizes.setdefault(symbol, size) != size:
                return False
    return True


def _changed_dims(history: list, key: tuple) -> dict:
    """{input: [axes]} whose sizes differ among the signatures of ``history`` and ``key``
    that have ``key``'s ranks and dtypes."""
    alike = [s for s in history if _kinds(s) == _kinds(key)] + [key]
    changed: dict = {}
    for i, entry in enumerate(key):
        if entry[0] != "value":
            axes = [axis for axis in range(len(entry[0])) if len({s[i][0][axis] for s in alike}) > 1]
            if axes:
                changed[i] = axes
    return changed


def _kinds(key: tuple) -> tuple:
    return tuple(entry if entry[0] == "value" else (len(entry[0]), entry[1]) for entry in key)


def _names(dynamic: dict, history: list, key: tuple) -> dict:
    """``dynamic=`` of the changed dims: dims whose sizes changed alike in every signature
    are one dim (a batch size shared by the ids and their mask)."""
    alike = [s for s in history if _kinds(s) == _kinds(key)] + [key]
    names: dict = {}  # sizes over the signatures -> name
    spec: dict = {}
    for i, axes in dynamic.items():
        for axis in axes:
            sizes = tuple(s[i][0][axis] for s in alike)
            spec.setdefault(f"input{i}", {})[axis] = names.setdefault(sizes, f"input{i}_dim{axis}")
    return spec


def _shapes(key: tuple) -> str:
    keywords = key[-1][1][1]
    key = key[:-1]
    named = {len(key) - len(keywords) + i: k for i, k in enumerate(keywords)}
    return ", ".join(
        (f"{named[i]}=" if i in named else "") + f"input{i} {list(entry[0])} {str(entry[1]).replace('torch.', '')}"
        if entry[0] != "value"
        else f"input{i} {entry[1]!r}"
        for i, entry in enumerate(key)
    )
