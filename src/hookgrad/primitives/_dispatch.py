"""Argument plumbing shared by all ops: scalars, dtype promotion, dims, in-place application."""
import numpy as np

from .. import _dtype as D
from .._errors import broadcast_error  # noqa: F401  (re-exported: ops raise it from here)
from .._tensor import Tensor, _wrap_dim
from ..autograd.grad_mode import _state

_NP_TO_DT = D._NP_TO_DT


def wrap_dim(dim, ndim):
    return _wrap_dim(dim, ndim)


def dims_of(dim, ndim):
    """Normalise a dim argument (int, sequence or None) to a sorted tuple of positive dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        return (_wrap_dim(int(dim), ndim),)
    if isinstance(dim, (str, bytes)) or not all(isinstance(d, (int, np.integer)) for d in dim):
        raise TypeError(f"received an invalid combination of arguments - got (dim={type(dim).__name__}), but "
                        "expected a dim: int or tuple of ints")
    return tuple(sorted(_wrap_dim(int(d), ndim) for d in dim))


def as_tensor_arg(x, like=None):
    """A non-Tensor operand (list, number) as a Tensor (used where an op needs a real tensor), in the array
    module of the tensor ``like`` when given (else the default module)."""
    if isinstance(x, Tensor):
        return x
    from .._creation import tensor, _in_module
    if like is None:
        return tensor(x)
    dt = D.result_type_of([like], [x]) if isinstance(x, (int, float, bool)) else None
    return _in_module(tensor(x, dtype=dt), like._xp)


def binary(cls, a, b, float_only=False, **params):
    """Apply a binary elementwise primitive with PyTorch's type promotion.

    Python scalars stay non-tensor arguments (no graph edge), converted to a NumPy scalar of the result dtype
    (``dt.type(b)``): a scalar, not an array, so it takes no array module and the ufuncs of every module
    (NumPy, CuPy, the test backend) combine it with the tensor's array into that array's type.
    """
    try:
        if isinstance(a, Tensor):
            if isinstance(b, Tensor):
                adt = a._data.dtype
                if adt is not b._data.dtype or (float_only and adt.kind != "f"):
                    dt = D.result_type_of([a, b])
                    if float_only and not dt.is_floating_point and not dt.is_complex:
                        dt = D.get_default_dtype()
                    elif dt is D.bfloat16:
                        a, b = _bf16_operands(a, b)
                    elif adt.kind == "V" or b._data.dtype.kind == "V":
                        a, b = _widened(a, dt), _widened(b, dt)
                    params["dt"] = dt.np
                return cls.apply(a, b, **params)
            dt = _scalar_result(a, b, float_only)
            if dt is not a._data.dtype:
                params["dt"] = dt
            return cls.apply(a, _number(cls, dt, b), **params)
        if isinstance(b, Tensor):
            dt = _scalar_result(b, a, float_only)
            if dt is not b._data.dtype:
                params["dt"] = dt
            return cls.apply(_number(cls, dt, a), b, **params)
    except ValueError as e:
        if isinstance(a, Tensor) and isinstance(b, Tensor) and "broadcast" in str(e):
            raise broadcast_error(a._data.shape, b._data.shape) from None
        raise
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)) or isinstance(a, np.ndarray):
        return binary(cls, as_tensor_arg(a), as_tensor_arg(b), float_only, **params)
    raise TypeError(f"unsupported operand types {type(a).__name__} and {type(b).__name__}")


def _bf16_operands(a, b):
    """A bfloat16 result from a bfloat16 tensor and an integer or a zero-dim float one: ml_dtypes' ufunc loops refuse
    an int32/int64 input and compute bfloat16 with float32 in float32, so that operand is cast first."""
    bf = D.bfloat16.np
    if a._data.dtype != bf and a._data.dtype.kind in "iuf":
        a = a.to(D.bfloat16)
    if b._data.dtype != bf and b._data.dtype.kind in "iuf":
        b = b.to(D.bfloat16)
    return a, b


def _number(cls, dt, v):
    """A Python number as the NumPy scalar of the result dtype; for a bf16/f16 result of an op computed in float32
    (``cls.opmath``), a float32 scalar: PyTorch's kernels take the number at float32 ("opmath") precision."""
    return np.float32(v) if cls.opmath and D.is_reduced(dt) and not isinstance(v, complex) else dt.type(v)


def _widened(t, dt):
    """A bfloat16 operand of a float32 (float64, complex) result, cast first: ml_dtypes' ufunc loops refuse to cast
    it to the result dtype themselves."""
    return t.to(dt) if t._data.dtype.kind == "V" else t


def _scalar_result(t, s, float_only):
    tdt = t._data.dtype
    k = tdt.kind
    if isinstance(s, Tensor):  # pragma: no cover
        raise TypeError
    if isinstance(s, (bool, np.bool_)):
        res = tdt
    elif isinstance(s, (int, np.integer)):
        res = tdt if k != "b" else np.dtype(np.int64)
    elif isinstance(s, (float, np.floating)):
        res = tdt if k == "f" or k == "c" or k == "V" else D.get_default_dtype().np     # V: bfloat16
    elif isinstance(s, (complex, np.complexfloating)):
        res = D.result_type_of((t,), (complex(s),)).np
    else:
        raise TypeError(f"unsupported operand type {type(s).__name__} for a tensor operation")
    if float_only and res.kind != "f" and res.kind != "c" and res.kind != "V":
        res = D.get_default_dtype().np
    return res


def unary_float(t):
    """Integer inputs of float-valued functions (exp, sin, ...) compute in the default float dtype."""
    return t


def apply_inplace(self, cls, *args, **params):
    """Run ``cls`` out of place on the current value, then write the result into ``self``.

    Records the op as self's new grad_fn (PyTorch's rebase): hooks registered before stay on the old
    node, a retained grad moves to the new one, and the version counter is bumped.
    """
    from ._inplace import inplace_apply
    return inplace_apply(self, cls, args, params)


# ------------------------------------------------------------------ PyTorch's argument parser (error path only)
# The __torch_function__ protocol for hookgrad's public functions, dispatched in ``checked`` below (the one
# wrapper every public function has): an argument (or an element of a list/tuple argument) that is no Tensor and
# whose type defines ``__torch_function__`` gets the call, as torch.fx's Proxy needs. Such objects count themselves
# in ``torch_function_objects`` while they live (fx.Proxy does), so that a call pays one global read otherwise.
torch_function_objects = 0


def _overloaded_args(args, kwargs):
    found = []
    for a in (*args, *kwargs.values()):
        for b in (a if type(a) in (list, tuple) else (a,)):
            t = type(b)
            if getattr(t, "__torch_function__", None) is not None and not isinstance(b, Tensor) and t not in \
                    [type(f) for f in found]:
                found.append(b)
    return found


def torch_function(public, args, kwargs):
    """``public(*args, **kwargs)`` answered by the ``__torch_function__`` of its overloaded arguments, left to
    right, or NotImplemented when none has one."""
    found = _overloaded_args(args, kwargs)
    if not found:
        return NotImplemented
    types = tuple(type(a) for a in found)
    for a in found:
        out = type(a).__torch_function__(public, types, args, kwargs)
        if out is not NotImplemented:
            return out
    raise TypeError(f"no implementation found for 'torch.{public.__name__}' on types that implement "
                    f"__torch_function__: {list(types)}")


def checked(fn, fname=None, python_level=False, method=False):
    """``fn`` whose failures on arguments of the wrong type become the TypeError of PyTorch's argument parser
    (``clone(): argument 'input' (position 1) must be Tensor, not int``). A call that succeeds costs one frame;
    the arguments are looked at only after ``fn`` raised (see _errors.parser_error). While objects that use
    ``__torch_function__`` live, the call goes to them first (``torch_function``)."""
    import functools
    from .._errors import parser_error
    fname = fname or fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if torch_function_objects:
            out = torch_function(call, args, kwargs)
            if out is not NotImplemented:
                return out
        try:
            return fn(*args, **kwargs)
        except Exception as e:          # noqa: BLE001 -- re-raised unless an argument has the wrong type
            err = parser_error(fname, fn, args, kwargs, e, python_level, method)
            if err is None:
                raise
            raise err from None
    call._arg_checked = fn
    return call


def install_checks(namespace, module_prefix="hookgrad", python_level=False, names=None):
    """Wrap each public function of ``namespace`` (a module's dict) defined in hookgrad with ``checked``; only
    the names in ``names`` (torch's public names there) when given, so that the helpers a module imports
    for its own use (``addmm`` in nn.functional) stay unwrapped."""
    import inspect
    for k, v in list(namespace.items()):
        if k.startswith("_") or not inspect.isfunction(v) or (names is not None and k not in names):
            continue
        v = getattr(v, "_arg_checked", v)      # checked already under another name (an alias, a method)
        if not (getattr(v, "__module__", "") or "").startswith(module_prefix):
            continue
        namespace[k] = checked(v, k, python_level)
