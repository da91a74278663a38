"""In-place application of any primitive, with PyTorch's rebase and version-counter semantics: the checks made
before any in-place write, the write itself and the version bump. The view and rebase logic it calls lives in
autograd (autograd/views.py); its names stay importable from here."""
import weakref

import numpy as np

from .._array import array_module, writeable, data_ptr
from .._tensor import Tensor
from .._errors import broadcast_error
from ..autograd import saved as _saved
from ..autograd.saved import SavedTensor
from ..autograd.grad_mode import _state
from ..autograd.op_hooks import _op_hooks, _input_cast, inplace_op as _inplace_op
from ..autograd import forward_ad as _fwad
from ..autograd.views import (_LEAF, _LEAF_VIEW, _DIRECT, _view_error, _writable, _rebase, _as_strided_node,
                              _gf_get, _View, _rebase_view)
from ..autograd.views import make_view, _set_history  # noqa: F401  (importable from here, as before)


def check_inplace(self):
    """The errors PyTorch raises before any in-place write, whatever the op (and, inside
    allow_mutation_on_saved_tensors, the cloning of saved tensors about to be overwritten)."""
    mctx = _saved._mutation_ctx
    if mctx is not None:
        mctx._before_mutation(self)
    if self._inference and not _state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
                           "clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")
    if _state.enabled and self.requires_grad:
        if self._creation is not None:
            raise _view_error(self, _DIRECT)
        if self.grad_fn is None:
            raise RuntimeError(_LEAF)
        base = self._base
        if base is not None and base.grad_fn is None and base.requires_grad:
            raise RuntimeError(_LEAF_VIEW)
    if _state.enabled:           # (a stale view's grad_fn is only regenerated in grad mode here)
        gf = self.grad_fn
        hook = getattr(gf, "_forbid_inplace", None) if gf is not None else None
        if hook is not None:
            raise RuntimeError(hook if type(hook) is str else hook(self))     # str, or a method (node, view)


_PARTIAL = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
            "memory location. Please clone() the tensor before performing the operation.")


def _dense(a):
    """PyTorch's is_non_overlapping_and_dense: the elements tile one contiguous block (in some dim order)."""
    expected = a.itemsize
    for st, n in sorted((abs(st), n) for n, st in zip(a.shape, a.strides) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def check_overlap(self, others):
    """PyTorch's assert_no_partial_overlap between the written-to tensor and each input: an input that is
    not the same memory layout but shares part of its memory (dense tensors; bounds, as PyTorch) raises."""
    sd = self._data
    for o in others:
        if not isinstance(o, Tensor) or o is self:
            continue
        od = o._data
        if od is sd or (od.base is None and sd.base is None) or not sd.size or not od.size:
            continue
        if type(od) is not type(sd) and array_module(od) is not array_module(sd):
            continue        # two devices' arrays: no memory in common
        if not (_dense(sd) and _dense(od)) or not np.may_share_memory(sd, od):
            continue
        a0 = data_ptr(sd) + sum(min(0, st * (n - 1)) for n, st in zip(sd.shape, sd.strides))
        b0 = data_ptr(od) + sum(min(0, st * (n - 1)) for n, st in zip(od.shape, od.strides))
        a1, b1 = a0 + sd.nbytes, b0 + od.nbytes
        if a0 == b0 and a1 == b1 and sd.strides == od.strides and sd.shape == od.shape:
            continue            # the same elements (FULL overlap): allowed
        if a0 < b1 and b0 < a1:
            raise RuntimeError(_PARTIAL)


def inplace_apply(self, cls, args, params):
    check_inplace(self)
    if args and not getattr(cls, "_args_may_overlap", False):
        check_overlap(self, args)
    record = _state.enabled and (self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args)
                                 or (self._base is not None and self._base.requires_grad))
    into = _into(self, cls, args, params) if getattr(cls, "writes_into", False) else None
    if not record:
        out = _apply(cls, self, args, params, into)
        _write(self, out._data, cls)
        if _fwad._current_level >= 0:       # forward AD: self's tangent becomes the result's
            _fwad._inplace_tangent(self, out)
        return self
    saves_self = 0 in cls.save
    if type(self) is _View:
        # PyTorch's CopySlices: the op sees the view's current value through a fresh node over the base's
        # history (hooks and retain_grad on the view's previous grad_fn are not in the new graph)
        if self._creation is not None:
            raise _view_error(self, _DIRECT)
        base = self._base
        node = _as_strided_node(self, base) if base.requires_grad else None
        old = Tensor._make(self._data.copy() if saves_self else self._data, node is not None, node, 0)
        if _fwad._current_level >= 0:
            _fwad._carry_tangent(self, old)
        out = _apply(cls, old, args, params, into)
        _write(self, out._data, cls)
        if _fwad._current_level >= 0:
            _fwad._inplace_tangent(self, out)
        shared = _share_saved_result(out, self)
        _rebase_view(self, base, out, node)
        if shared:
            # PyTorch's SavedVariable(is_inplace_on_view): the saved result's grad_fn is the view's new
            # grad_fn while that node lives, else the op's node
            asn = weakref.ref(_gf_get(self))
            for st in shared:
                st._node_ref = (lambda a, o: lambda: a() or o())(asn, st._node_ref)
        return self
    old = Tensor._make(self._data.copy() if saves_self else self._data, self.requires_grad, self.grad_fn,
                       self._output_nr)
    if _fwad._current_level >= 0:
        _fwad._carry_tangent(self, old)
    out = _apply(cls, old, args, params, into)
    _write(self, out._data, cls)
    if _fwad._current_level >= 0:
        _fwad._inplace_tangent(self, out)
    _share_saved_result(out, self)
    _rebase(self, out.grad_fn, 0)
    return self


def _share_saved_result(out, self):
    """The op's result saved for backward (relu_, exp_, sigmoid_... save their output) IS ``self`` after the
    write, as in PyTorch: it shares self's version counter, at the version the write left, so a later
    in-place change of self (or of a view of it) makes backward raise instead of using a stale value."""
    gf = out.grad_fn
    if gf is None:
        return None
    ovc = out._vc
    shared = []
    for s in gf._saved:
        if type(s) is SavedTensor and s._vc is ovc:
            s._vc = vc = self._vc
            s._version = vc[0]
            shared.append(s)
    return shared


_INTO_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _into(self, cls, args, params):
    """The destination for an op that can write its result straight into ``self``'s array (``cls.writes_into``:
    its forward writes into ``_into``), when the result will have self's dtype and shape: self a writeable NumPy
    float32 or float64 array, the other operands Tensors of that dtype that broadcast to self's shape, Python numbers
    or NumPy scalars of that dtype (the in-place binary ops pass their number so); no autocast, no forward AD (its
    tangent step may run the op's forward again). Else None: the result is computed apart and copied in
    (``_write``)."""
    if "dt" in params or _input_cast[0] is not None or _fwad._current_level >= 0:
        return None
    sd = self._data
    if type(sd) is not np.ndarray or sd.dtype not in _INTO_DTYPES or not sd.flags.writeable:
        return None
    for a in args:
        if isinstance(a, Tensor):
            ad = a._data
            if type(ad) is not np.ndarray or ad.dtype != sd.dtype or (ad.shape != sd.shape and (
                    ad.ndim > sd.ndim or any(n != 1 and n != m for n, m in zip(ad.shape[::-1], sd.shape[::-1])))):
                return None
        elif isinstance(a, np.generic) and a.dtype != sd.dtype or not isinstance(a, (int, float, np.generic)) \
                or isinstance(a, (bool, np.bool_)):
            return None
    return sd


def _apply(cls, x, args, params, into=None):
    """cls.apply for an in-place op (its forward writing into ``into`` when given): operands that do not broadcast
    raise PyTorch's RuntimeError."""
    try:
        if into is not None:
            params = dict(params, _into=into)
        if _op_hooks:
            return _inplace_op(cls.apply, x, *args, **params)     # op hooks: the op is PyTorch's fill_, add_...
        return cls.apply(x, *args, **params)
    except ValueError:
        for a in args:
            if isinstance(a, Tensor):
                try:
                    np.broadcast_shapes(x._data.shape, a._data.shape)
                except ValueError:
                    raise broadcast_error(x._data.shape, a._data.shape) from None
        raise


def _write(self, data, cls=None):
    sd = self._data
    if data is sd:              # the op wrote its result in place (``_into``)
        self._vc[0] += 1
        return
    if data.dtype != sd.dtype and not np.can_cast(data.dtype, sd.dtype, "same_kind"):
        raise RuntimeError(f"result type {_tname(data.dtype)} can't be cast to the desired output type {_tname(sd.dtype)}")
    if data.shape != sd.shape:
        try:
            np.broadcast_to(data, sd.shape)
        except ValueError:
            raise RuntimeError(f"output with shape {list(sd.shape)} doesn't match the broadcast shape "
                               f"{list(np.broadcast_shapes(data.shape, sd.shape))}") from None
    if not writeable(sd):
        sd = _writable(sd, getattr(cls, "_overlap_ok", False))
    np.copyto(sd, data, casting="unsafe")
    self._vc[0] += 1


def _tname(npdt):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}[npdt.name]


def resize_(self, *args, size=None, memory_format=None):
    """Give the tensor a new shape, keeping its first elements in row-major order (new elements are zeros where
    PyTorch leaves them uninitialised). Not differentiable: PyTorch refuses it on a tensor that requires grad."""
    from .._creation import int_list, size_args
    shape = tuple(size_args(args, size, "resize_") if args or size is not None else int_list(args, "resize_"))
    if self.requires_grad and not _state.inference:     # (inference mode skips autograd's checks, as PyTorch)
        raise RuntimeError("cannot resize variables that require grad")
    if any(s < 0 for s in shape):
        raise RuntimeError("numel: integer multiplication overflow")
    d = self._data
    n = int(np.prod(shape, dtype=np.int64))
    if shape != d.shape:
        flat = d.reshape(-1)
        if n <= flat.size and d.flags.c_contiguous:
            new = flat[:n].reshape(shape)       # still the same memory (as PyTorch when the storage is big enough)
        else:
            new = array_module(d).zeros(n, d.dtype)
            k = min(n, flat.size)
            new[:k] = flat[:k]
            new = new.reshape(shape)
        self._data = new
        self.__dict__.pop("_index", None)
        self._vc[0] += 1            # (the same size: no new version, as PyTorch)
    return self


def resize_as_(self, the_template, memory_format=None):
    return resize_(self, *the_template._data.shape)
