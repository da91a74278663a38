"""hookgrad.utils._python_dispatch (mirrors torch.utils._python_dispatch): ``TorchDispatchMode``, built on
hookgrad's op-level hooks (``autograd.graph.register_op_hook``).

Inside ``with Mode():`` every primitive hookgrad runs calls ``mode.__torch_dispatch__(func, types, args,
kwargs)`` once, with ``func`` the ``ops.aten`` overload of the primitive (its grad_fn name without
``Backward0``, in snake case: ``AddmmBackward0`` -> ``aten.addmm.default``; convolutions get aten's nine
arguments). The primitive has already run when the mode sees it: ``func(*args, **kwargs)`` returns its
result, and the value ``__torch_dispatch__`` returns is not used, so a mode can observe (count, log,
profile) but not replace results. Ops that ``__torch_dispatch__`` runs itself are not dispatched again,
as in PyTorch.
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


def _func(cls):
    f = _FUNCS.get(cls)
    if f is None:
        name = aten_name(cls)          # the one naming of primitives as aten ops (the profiler's too)
        table = _ops._aten_table()
        packet = getattr(_ops.aten, name) if name in table else \
            _ops.OpOverloadPacket("hookgrad", name, ("default",))
        f = _FUNCS[cls] = _Ran(packet, "default")
    return f


class _Ran(_ops.OpOverload):
    """The overload handed to ``__torch_dispatch__``: calling it returns the result the op produced."""

    _result = None

    def __call__(self, *args, **kwargs):
        return self._result


class _Hook(OpHook):
    def __init__(self, mode):
        self.mode = mode

    def forward_post(self, name, inputs, output, node):
        mode = self.mode
        cls = type(node) if node is not None else _CLASSES.get(name)
        if cls is None:
            return
        f = _func(cls)
        adapt = _ARGS.get(f._opname)
        params = getattr(_op_tls, "params", None) or {}
        args, kwargs = adapt(cls, inputs, params, output) if adapt else (tuple(inputs), {})
        f._result = output
        try:
            mode.__torch_dispatch__(f, (), args, kwargs)
        finally:
            f._result = None


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
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        if self in _stack:
            _stack.remove(self)

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls):
        return False
