"""hookgrad.utils._python_dispatch (mirrors torch.utils._python_dispatch): ``TorchDispatchMode``, built on
hookgrad's op-level hooks (``autograd.graph.register_op_hook``).

Inside ``with Mode():`` every primitive hookgrad runs calls ``mode.__torch_dispatch__(func, types, args,
kwargs)`` once, with ``func`` the ``torch.ops.aten`` overload of the primitive (the object itself, so ``func is
torch.ops.aten.sin.default`` holds; named from its grad_fn without ``Backward0``, in snake case:
``AddmmBackward0`` -> ``aten.addmm.default``; the overload is ``default`` where aten has one, else aten's first;
convolutions get aten's nine arguments). ``Tensor.detach`` is seen as ``aten.detach.default``. A primitive has
already run when the mode sees it (after its inputs were saved for backward, before its outputs are, as in
PyTorch): ``func(*args, **kwargs)`` returns its result, and the value ``__torch_dispatch__`` returns is not
used, so a mode can observe (count, log, profile) but not replace a primitive's result. An operator defined
through ``torch.library`` (``custom_op``) is dispatched for real: its backend kernel runs only when the mode
calls ``func``, and what ``__torch_dispatch__`` returns is the result (below the autograd kernel, as in
PyTorch; nested modes in turn, innermost first). Ops that ``__torch_dispatch__`` runs itself are not
dispatched again, as in PyTorch.
"""

from .. import ops as _ops
from ..autograd.op_hooks import OpHook, register_op_hook, _op_tls, aten_name

__all__ = ["TorchDispatchMode", "_get_current_dispatch_mode", "_get_current_dispatch_mode_stack"]

_stack = []


def _get_current_dispatch_mode():
    return _stack[-1] if _stack else None


def _get_current_dispatch_mode_stack():
    return list(_stack)


def _conv_args(cls, args, params, out):
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else None
    nd = w.dim() - 2
    stride = tuple(params.get("stride", cls.stride))[:nd]
    padding = tuple(params.get("padding", cls.padding))[::2][:nd]
    dilation = tuple(params.get("dilation", cls.dilation))[:nd]
    # ConvTr (conv_transpose) is told its output size, Conv is not: both classes are named
    # ConvolutionBackward0, and without a node ``cls`` may be either
    transposed = "out_hw" in params
    output_padding = tuple(params.get("output_padding", (0,) * nd))[:nd]
    return (x, w, b, list(stride), list(padding), list(dilation), transposed, list(output_padding),
            params.get("groups", cls.groups)), {}


def _addmm_args(cls, args, params, out):
    kw = {k: params[k] for k in ("beta", "alpha") if k in params}
    return tuple(args), kw


def _size_args(cls, args, params, out):
    """view/expand/reshape-like primitives hold the target shape as a parameter: aten passes it."""
    if len(args) == 1 and hasattr(out, "shape"):
        return (args[0], list(out.shape)), {}
    return tuple(args), {}


_ARGS = {"convolution": _conv_args, "addmm": _addmm_args, "view": _size_args, "_unsafe_view": _size_args,
         "expand": _size_args, "reshape": _size_args}
_FUNCS = {}


def _func(name):
    """The overload a mode is handed for the primitive of aten name ``name`` (``torch.ops.aten.<name>.<overload>``,
    or an operator of namespace ``hookgrad`` for a primitive aten lacks)."""
    f = _FUNCS.get(name)
    if f is None:
        if name in _ops._aten_table():
            packet = getattr(_ops.aten, name)
            names = packet._overload_names
            f = getattr(packet, "default" if "default" in names else names[0])
        else:
            f = _ops.OpOverloadPacket("hookgrad", name, ("default",)).default
        _FUNCS[name] = f
    return f


def _call(mode, f, below, args, kwargs):
    """``mode.__torch_dispatch__(f, ...)`` with ``f(...)`` running ``below`` (ops.OpOverload.__call__ reads it)."""
    key = f._name
    prev = _ops._redirect.get(key)
    _ops._redirect[key] = below
    try:
        return mode.__torch_dispatch__(f, (), args, kwargs)
    finally:
        if prev is None:
            _ops._redirect.pop(key, None)
        else:
            _ops._redirect[key] = prev


class _Hook(OpHook):
    early_post = True       # sees a primitive between its saved inputs and its saved outputs (op_hooks.post_now)

    def __init__(self, mode):
        self.mode = mode

    def forward_post(self, name, inputs, output, node):
        cls = type(node) if node is not None else _CLASSES.get(name)
        f = _func(aten_name(cls) if cls is not None else aten_name(name))      # (the profiler's naming too)
        adapt = _ARGS.get(f._opname) if cls is not None else None
        params = getattr(_op_tls, "params", None) or {}
        args, kwargs = adapt(cls, inputs, params, output) if adapt else (tuple(inputs), {})
        _call(self.mode, f, lambda *a, **k: output, args, kwargs)


def _library_dispatch(f, kernel, args):
    """A defined operator's backend kernel, through the active modes (``ops._mode_dispatch``)."""
    if not _stack or _op_tls.busy:
        return kernel(*args)
    _op_tls.busy = True         # the kernel's own ops are below the modes
    try:
        return _through(f, kernel, tuple(args), {}, len(_stack) - 1)
    finally:
        _op_tls.busy = False


def _through(f, kernel, args, kwargs, depth):
    if depth < 0:
        return kernel(*args, **kwargs)
    return _call(_stack[depth], f, lambda *a, **k: _through(f, kernel, a, k, depth - 1), args, kwargs)


_CLASSES = {}


def _index_classes():
    """op name -> primitive class, for ops that recorded no node (nothing required grad)."""
    from ..autograd.node import Node
    from ..autograd.graph import op_name
    todo = list(Node.__subclasses__())
    while todo:
        c = todo.pop()
        todo.extend(c.__subclasses__())
        _CLASSES.setdefault(op_name(c), c)


class TorchDispatchMode:
    """Subclass and define ``__torch_dispatch__(self, func, types, args=(), kwargs=None)``; use the mode as
    a context manager (see the module docstring for what hookgrad's modes can do)."""

    def __init__(self, _dispatch_key=None):
        self._handle = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        if not _CLASSES:
            _index_classes()
        self._handle = register_op_hook(_Hook(self))
        _stack.append(self)
        _ops._mode_dispatch[0] = _library_dispatch
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if getattr(self, "_handle", None) is not None:
            self._handle.remove()
            self._handle = None
        if self in _stack:
            _stack.remove(self)
        if not _stack:
            _ops._mode_dispatch[0] = None

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls):
        return False
