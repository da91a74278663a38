"""hookgrad.utils._python_dispatch (mirrors torch.utils._python_dispatch): ``TorchDispatchMode``, built on
hookgrad's op-level hooks (``autograd.graph.register_op_hook``).

Inside ``with Mode():`` every op PyTorch would dispatch calls ``mode.__torch_dispatch__(func, types, args,
kwargs)`` once, with ``func`` the ``torch.ops.aten`` overload (the object itself: ``func is
torch.ops.aten.mul.Tensor``):

- primitives, named from their grad_fn (``AddmmBackward0`` -> ``aten.addmm``), in-place calls as aten's in-place
  op (``fill_``, ``add_``); the overload by rule (``_overload_name``): the operands' kinds (a number given to
  add/sub/mul/div is a wrapped Tensor: ``x * 2`` is ``mul.Tensor``; ``x ** 2`` is ``pow.Tensor_Scalar``), whether
  dimensions (``sum.dim_IntList``) or a rounding mode (``div.Tensor_mode``) were given; convolutions get aten's
  nine arguments. Comparisons (``gt.Scalar``) and ``Tensor.detach`` (``aten.detach``) too;
- factories (``aten.rand.default``, ``arange.start_step``, ``randint.low``, ``empty.memory_format``, the
  ``*_like`` and ``new_*`` ones, ``torch.tensor``'s ``lift_fresh``), with the size as one list and the tensor
  options (``device``, ``pin_memory``, ``dtype`` when given);
- in backward: the seed (``ones_like``), the ops each gradient formula runs, from within its node
  (``torch._C._current_autograd_node()``): while a mode is active the formulas compute with Tensors instead of
  arrays (``op_hooks._formula_ops``); a saved output's ``detach`` (after the op, and when backward unpacks it);
  AccumulateGrad's ``detach`` (a gradient it takes), ``clone`` or ``new_empty_strided`` + ``copy_`` (one it
  copies) and ``add_`` (a later one).

A primitive has already run when the mode sees it (after its inputs were saved for backward, before its outputs
are, as in PyTorch): ``func(*args, **kwargs)`` returns its result, and the value ``__torch_dispatch__`` returns is
not used, so a mode can observe (count, log, profile) but not replace a primitive's result. Non-tensor arguments
of primitives other than those above (dims, sizes) are not passed. An operator defined through ``torch.library``
(``custom_op``) is dispatched for real: its backend kernel runs only when the mode calls ``func``, and what
``__torch_dispatch__`` returns is the result (below the autograd kernel, as in PyTorch; nested modes in turn,
innermost first). Ops that ``__torch_dispatch__`` runs itself are not dispatched again, as in PyTorch.
"""

import numpy as _np

from .. import ops as _ops
from .._tensor import Tensor as _Tensor
from ..autograd.node import AccumulateGrad as _AccumulateGrad
from ..autograd.saved import SavedTensor as _SavedTensor, _hooks_tls as _saved_hooks
from ..autograd.engine import _current_autograd_node as _current_node
from ..autograd.op_hooks import OpHook, register_op_hook, _op_tls, aten_name, _formula_ops

__all__ = ["TorchDispatchMode", "_get_current_dispatch_mode", "_get_current_dispatch_mode_stack"]

_stack = []


def _get_current_dispatch_mode():
    return _stack[-1] if _stack else None


def _get_current_dispatch_mode_stack():
    return list(_stack)


def _conv_args(cls, args, params, out, f=None):
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


def _addmm_args(cls, args, params, out, f=None):
    kw = {k: params[k] for k in ("beta", "alpha") if k in params}
    return tuple(args), kw


def _size_args(cls, args, params, out, f=None):
    """view/expand/reshape-like primitives hold the target shape as a parameter: aten passes it."""
    if len(args) == 1 and hasattr(out, "shape"):
        return (args[0], list(out.shape)), {}
    return tuple(args), {}


# aten's add/sub/mul/div take a Python number as a wrapped 0-dim Tensor (their .Scalar overloads have no Python binding)
_WRAPS_NUMBER = frozenset(("add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_"))
_KINDS = frozenset(("Tensor", "Scalar"))


def _is_number(a):
    return isinstance(a, (int, float, complex, _np.generic)) and not isinstance(a, _np.ndarray)


def _dim_given(name, inputs, params):
    """Whether the call named dimensions (``x.sum(0)``, not ``x.sum()``): a ``dim``, or ``dims`` not covering
    every dimension of the input (hookgrad's full reductions hold all of them)."""
    d = params.get("dim", params.get("dim_arg"))
    if d is not None:
        return True
    if name == "sum" and "shape" in params:     # sum_to_size (sum.dim_IntList in PyTorch)
        return inputs[0].shape != tuple(params["shape"]) if inputs and isinstance(inputs[0], _Tensor) else False
    d = params.get("dims")
    if d is None:
        return False
    n = inputs[0].dim() if inputs and isinstance(inputs[0], _Tensor) else -1
    return len(d) != n if isinstance(d, (tuple, list)) else True


def _overload_name(name, names, inputs, params):
    """The overload of aten op ``name`` (``names``: its overloads in aten's order) that PyTorch's Python binding
    reaches for this call, by rule: the first overload that fits the operands' kinds (Tensor or number; a number
    passed to add/sub/mul/div is a wrapped Tensor), whether dimensions or a rounding mode were given, and whether a
    binary form (``max.other``) has two Tensors; TorchScript's list/str/complex forms never fit."""
    kinds = ["Tensor" if isinstance(a, _Tensor) else "Scalar" for a in inputs if isinstance(a, _Tensor) or _is_number(a)]
    if "base" in params and _is_number(params["base"]):
        kinds.insert(0, "Scalar")
    if "exponent" in params and _is_number(params["exponent"]):
        kinds.append("Scalar")
    if name in _WRAPS_NUMBER and "Scalar" in kinds:
        node = _current_node()
        # the user's number is a wrapped Tensor, and so is the one the formulas of mul and div read back
        # (MulBackward0 saved it); a number in any other gradient formula is a C++ Scalar (mean's div.Scalar)
        if node is None or aten_name(type(node)) in ("mul", "div"):
            kinds = ["Tensor"] * len(kinds)
    dim = _dim_given(name, inputs, params)
    mode = params.get("rounding_mode", params.get("mode")) is not None
    ntensor = kinds.count("Tensor")
    first = None
    if "correction" in names:
        return "correction"     # var/std: Python reaches it with or without dims
    for o in names:
        if "out" in o:
            continue
        first = first or o
        if o.startswith("dim"):
            if dim:
                return o
            continue
        parts = o.split("_")
        if parts[-1] == "mode":
            if mode:
                return o
            continue
        if mode or dim:
            continue
        if all(p in _KINDS for p in parts):
            if len(parts) > 1:
                if parts == kinds[:len(parts)]:
                    return o
            elif o == "Tensor":
                if kinds and kinds[0] == "Tensor" and "Scalar" not in kinds:
                    return o
            elif "Scalar" in kinds or len(kinds) == 1:
                return o
            continue
        if o == "other":
            if ntensor == 2:
                return o
            continue
        if o in ("default", "self", "int"):
            return o
    return first or names[0]


def _number(v):
    return v.item() if isinstance(v, _np.generic) else v


_DEFAULT_TAKES_DIM = frozenset(("amax", "amin", "logsumexp"))


def _dim_args(cls, args, params, out, f=None):
    """Reductions: aten's ``dim`` (an int where the primitive holds one ``dim`` or the overload is ``dim_int``, else
    a list) and ``keepdim`` when given, only in the overloads that take them (PyTorch drops trailing defaults)."""
    x = args[0]
    overload = f._overloadname if f is not None else ""
    if not (overload.startswith("dim") or f is not None and f._opname in _DEFAULT_TAKES_DIM and
            _dim_given("", args, params)):
        return (x,), {}
    d = params.get("dim", params.get("dims"))
    if isinstance(d, (tuple, list)):
        d = d[0] if overload == "dim_int" and len(d) == 1 else list(d)
    return (x, d) + ((True,) if params.get("keepdim") else ()), {}


def _operands_args(*names):
    """Primitives holding aten's trailing arguments as parameters (``transpose``'s dims, ``clamp``'s bounds),
    trailing defaults (None) dropped."""
    def adapt(cls, args, params, out, f=None):
        extra = [_number(params.get(n)) for n in names]
        while extra and extra[-1] is None:
            extra.pop()
        return tuple(_number(a) for a in args) + tuple(list(e) if isinstance(e, tuple) else e for e in extra), {}
    return adapt


def _pow_args(cls, args, params, out, f=None):
    if "base" in params:
        return (_number(params["base"]),) + tuple(args), {}
    if "exponent" in params:
        return tuple(args) + (_number(params["exponent"]),), {}
    return tuple(args), {}


def _unsqueeze_args(cls, args, params, out, f=None):
    d = params.get("dim_arg")
    if d is None:
        shp, ins = tuple(out.shape), tuple(args[0].shape)
        d = next((i for i in range(len(shp)) if shp[i] == 1 and shp[:i] + shp[i + 1:] == ins), 0)
    return (args[0], d), {}


def _to_copy_args(cls, args, params, out, f=None):
    """``x.to(dtype)``: aten's ``_to_copy`` is told the dtype (a keyword)."""
    x = args[0]
    return (x,), ({"dtype": out.dtype} if isinstance(x, _Tensor) and out.dtype != x.dtype else {})


def _alpha_args(cls, args, params, out, f=None):
    """add/sub(.Tensor, in place too): aten's ``alpha`` keyword where it is not 1 (PyTorch drops the default)."""
    alpha = params.get("alpha", 1)
    return tuple(_number(a) for a in args), ({"alpha": _number(alpha)} if alpha != 1 else {})


_ARGS = {"convolution": _conv_args, "addmm": _addmm_args, "view": _size_args, "_unsafe_view": _size_args,
         "expand": _size_args, "reshape": _size_args, "pow": _pow_args, "unsqueeze": _unsqueeze_args,
         "transpose": _operands_args("d0", "d1"), "permute": _operands_args("dims"),
         "clamp": _operands_args("lo", "hi"), "clamp_": _operands_args("lo", "hi"), "_to_copy": _to_copy_args}
_INT64_MAX = 9223372036854775807


def _index_args(cls, args, params, out, f=None):
    """select.int (dim, index) and slice.Tensor (dim, start, end[, step]) from the basic index the primitive holds
    (``x[:, 1:3]``: one select or slice per indexed dim; an end left out is int64's maximum, as in PyTorch)."""
    x, idx = args[0], params.get("idx")
    if not isinstance(idx, tuple) or not params.get("basic", True):
        return tuple(args), {}
    for dim, e in enumerate(idx):
        if f._opname == "select" and isinstance(e, (int, _np.integer)) and not isinstance(e, bool):
            return (x, dim, int(e)), {}
        if f._opname == "slice" and isinstance(e, slice) and e != slice(None):
            step = () if e.step in (None, 1) else (int(e.step),)
            return (x, dim, 0 if e.start is None else int(e.start),
                    _INT64_MAX if e.stop is None else int(e.stop)) + step, {}
    return tuple(args), {}


# a primitive of aten's .Scalar overload holding its number as ``k`` (a parameter or the class's)
_ARGS_BY_NODE = dict.fromkeys(("MulBackward1", "DivBackward1"),
                              lambda cls, args, params, out, f=None: ((args[0], _number(params["k"] if "k" in params else cls.k)), {}))
_ARGS_BY_NODE["LerpBackward0"] = _operands_args("w")
_ARGS_BY_NODE["SelectBackward0"] = _ARGS_BY_NODE["SliceBackward0"] = _index_args
_ARGS.update(dict.fromkeys(("add", "add_", "sub", "sub_"), _alpha_args))
_ARGS.update(dict.fromkeys(("sum", "mean", "amax", "amin", "max", "min", "prod", "logsumexp", "all", "any"), _dim_args))
_FUNCS = {}


def _func(name, overload=None):
    """The overload a mode is handed for the primitive of aten name ``name`` (``torch.ops.aten.<name>.<overload>``;
    by default ``default`` where aten has one, else aten's first), or an operator of namespace ``hookgrad`` for a
    primitive aten lacks."""
    key = (name, overload)
    f = _FUNCS.get(key)
    if f is None:
        if name in _ops._aten_table():
            packet = getattr(_ops.aten, name)
            names = packet._overload_names
            f = getattr(packet, overload or ("default" if "default" in names else names[0]))
        else:
            f = _ops.OpOverloadPacket("hookgrad", name, ("default",)).default
        _FUNCS[key] = f
    return f


# The overload of primitives whose class alone tells it (PyTorch's grad_fn name of the overload)
_BY_NODE = {"SqueezeBackward1": "dim", "SqueezeBackward2": "dims", "MulBackward1": "Scalar", "DivBackward1": "Scalar",
            "LerpBackward0": "Scalar", "SumBackward1": "dim_IntList", "MeanBackward1": "dim", "ProdBackward1": "dim_int",
            "MaxBackward0": "dim", "MinBackward0": "dim"}
# aten ops whose public function is a composite calling another op, the one a mode sees: softmax.int -> _softmax
_BELOW = {"softmax": "_softmax", "log_softmax": "_log_softmax"}


def _primitive_func(cls, name, inputs, params):
    """The overload PyTorch dispatches for a call of primitive ``cls`` (aten name ``name``) on ``inputs``; an
    in-place call is aten's in-place op (``fill_``)."""
    name = _BELOW.get(name, name)
    table = _ops._aten_table()
    if _op_tls.inplace and name + "_" in table:
        name += "_"
    names = table.get(name)
    if names is None:
        return _func(name)
    o = _BY_NODE.get(cls.__name__) if cls is not None else None
    return _func(name, o or _overload_name(name, names.split(), inputs, params))


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
        cls = type(node) if node is not None else getattr(_op_tls, "cls", None) or _CLASSES.get(name)
        params = getattr(_op_tls, "params", None) or {}
        f = _primitive_func(cls, aten_name(cls) if cls is not None else aten_name(name), inputs, params)
        adapt = (_ARGS_BY_NODE.get(cls.__name__) or _ARGS.get(f._opname)) if cls is not None else None
        if adapt:
            args, kwargs = adapt(cls, inputs, params, output, f)
        else:
            args, kwargs = tuple(a.item() if isinstance(a, _np.generic) else a for a in inputs), {}
        _call(self.mode, f, lambda *a, **k: output, args, kwargs)
        if node is not None and cls.save and min(cls.save) < 0 and not _saved_hooks.stack:
            self._saved_outputs(node, output)

    def _saved_outputs(self, node, output):
        """PyTorch saves an output for backward as a detached alias (``aten.detach`` after the op), and unpacks
        it the same way in backward (in the node, before its formula's ops); not under saved-tensor hooks, which
        are handed the output itself."""
        save = type(node).save
        mask = node._save_mask() if node.save_if is not None else None
        for k, i in enumerate(save):
            if i < 0 and (mask is None or mask[k]):
                o = output if type(output) is not tuple else output[-1 - i]
                _call(self.mode, _func("detach"), lambda *a, **kw: o.detach(), (o,), {})

    def factory_post(self, name, args, kwargs, out):
        f, args, kwargs = _factory_call(name, args, kwargs, out)
        _call(self.mode, f, lambda *a, **k: out, args, kwargs)

    def backward_pre(self, node, grad_outputs):
        if type(node) is _AccumulateGrad:
            self.fresh = node.variable._grad is None
            return
        save = getattr(node, "save", None)
        if save and min(save) < 0 and not node._freed and not node._hook_packed:
            for st in node._saved:      # the saved outputs, unpacked as detached aliases (aten.detach)
                if type(st) is _SavedTensor and st._node_ref is not None and st._data is not None:
                    t = _Tensor._make(st._data)
                    _call(self.mode, _func("detach"), lambda *a, **k: t, (t,), {})

    def backward_post(self, node, grad_inputs, grad_outputs):
        """AccumulateGrad: PyTorch's takes a first gradient that only the engine holds as a detached alias
        (``aten.detach``), else copies it (``clone``, or ``new_empty_strided`` + ``copy_`` into the variable's
        layout), and adds a later one in place (``add_``)."""
        if type(node) is not _AccumulateGrad or not grad_outputs or grad_outputs[0] is None:
            return
        g = grad_outputs[0]
        grad = node.variable._grad
        if self.fresh and grad is not None:
            if grad._data is g._data:
                _call(self.mode, _func("detach"), lambda *a, **k: grad, (g,), {})
            elif g._data.flags.c_contiguous:
                _call(self.mode, _func("clone"), lambda *a, **k: grad, (g,), {})
            else:
                _call(self.mode, _func("new_empty_strided"), lambda *a, **k: grad, (g, list(g.shape),
                                                                                    list(grad.stride())), {})
                _call(self.mode, _func("copy_"), lambda *a, **k: grad, (grad, g), {})
        elif not self.fresh:
            grad = node.variable._grad
            _call(self.mode, _func("add_", "Tensor"), lambda *a, **k: grad, (grad, g), {})


_SIZED = frozenset(("rand", "randn", "zeros", "ones", "empty"))
_LIKE = frozenset(("zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "empty_like", "randint_like"))


def _factory_call(name, args, kwargs, out):
    """(func, args, kwargs) that PyTorch's mode sees for the factory ``name`` called with ``args``/``kwargs``:
    the overload by the count of numbers given (``arange.start_step``, ``randint.low``, ``eye.m``) and the
    generator, the size as one list, and the tensor options (``device``, ``pin_memory``; ``dtype`` when given)."""
    from .. import device
    gen = kwargs.get("generator") is not None
    shape = list(out.shape)
    nums = [a for a in args if _is_number(a) or isinstance(a, _Tensor) and name in ("linspace", "logspace")]
    overload = "default"
    if name == "empty":
        overload = "memory_format"
    elif name == "arange":
        overload = ("default", "start", "start_step")[min(max(len(nums), 1), 3) - 1]
    elif name == "randint":
        overload = "low" if len(nums) >= 2 else "default"
    elif name == "eye":
        overload = "m" if len(nums) >= 2 else "default"
    if gen:
        overload = "generator" if overload == "default" else overload + "_generator"
    if name == "lift_fresh":
        return _func(name), (out,), {}
    if name.startswith("new_"):
        a = (args[0], shape) + ((args[2] if len(args) > 2 else kwargs.get("fill_value"),) if name == "new_full" else ())
    elif name in _SIZED:
        a = (shape,)
    elif name == "full":
        a = (shape, args[1] if len(args) > 1 else kwargs.get("fill_value"))
    elif name == "randint":
        a = tuple(nums[:2]) + (shape,)
    else:
        a = tuple(args)
    kw = {k: kwargs[k] for k in ("dtype", "layout", "memory_format") if kwargs.get(k) is not None}
    if name not in _LIKE and not name.startswith("new_"):
        kw["device"] = device("cpu")
    kw["pin_memory"] = False
    if gen:
        kw["generator"] = kwargs["generator"]
    names = _ops._aten_table().get(name, "")
    return _func(name, overload if overload in names.split() else None), a, kw


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
        _formula_ops[0] += 1        # backward formulas compute with Tensors, so that the mode sees their ops
        _stack.append(self)
        _ops._mode_dispatch[0] = _library_dispatch
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if getattr(self, "_handle", None) is not None:
            self._handle.remove()
            self._handle = None
            _formula_ops[0] -= 1
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
