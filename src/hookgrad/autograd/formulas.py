"""Gradient spaces: what a primitive's one gradient formula is written against.

A primitive's ``backward(self, g, F=TENSORS)`` reads its saved values with ``F.saved(self)`` and computes
with operators (``g * y``, ``1 - out * out`` work on arrays and Tensors alike) and the few functions
below. The engine picks the space once per backward pass:

- ``TENSORS``: gradients are Tensors and the formula runs hookgrad's differentiable ops, so a
  create_graph pass records the graph of the gradient (double backward differentiates the formula);
- ``ARRAYS``: gradients are arrays of the inputs' array module (NumPy, or a module with its API) and
  the formula runs that module's functions: no Tensor is built (a plain backward).

Each space also carries gradients around hooks (``tensor``: as a Tensor, ``carry``: back, ``add``: two
gradients of one input slot). Undoing broadcasting (``sum_to``) and the cast back to the input dtype
(``cast``) are done once, by ``Node._run_backward``, for every formula.
"""
import operator

import numpy as np

from .. import _dtype as D, _parallel
from .._jit import fast, kernel
from .._array import array_module
from .._tensor import Tensor
from .saved import SavedTensor, _version_error, _FREED

_ndarray = np.ndarray
_add_reduce = np.add.reduce
_make = Tensor._make
_ZEROS = {}


def expand_np(g, shape):
    """A read-only broadcast of array ``g`` to ``shape`` (like Tensor.expand: stride-0 dims).

    NOTE: ``np.broadcast_to`` costs ~2.5 us in Python; building the strided NumPy view directly ~1 us
    (other array modules go through ``broadcast_to``, which keeps their type)."""
    if type(g) is _ndarray and g.flags.c_contiguous and g.ndim <= len(shape):
        gs = (1,) * (len(shape) - g.ndim) + g.shape
        st = (0,) * (len(shape) - g.ndim) + g.strides
        strides = tuple(0 if a == 1 and b != 1 else t for a, b, t in zip(gs, shape, st))
        out = _ndarray(shape, g.dtype, buffer=g, strides=strides)
        out.flags.writeable = False
        return out
    return np.broadcast_to(g, shape)


def sum_to_shape(a, shape):
    """Sum a broadcast array back to ``shape`` (undoing broadcasting on arrays)."""
    lead = a.ndim - len(shape)
    if lead == 1 and len(shape) == 1 and a.shape[1] == shape[0]:
        # a bias gradient: the hot case. NOTE: ``a.sum`` goes through a Python wrapper (~0.4 us more);
        # ``add.reduce`` is what it calls (other array modules keep their ``sum``)
        return _add_reduce(a, 0) if type(a) is _ndarray else a.sum(axis=0)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and a.shape[i + lead] != 1)
    if not axes:
        return a.reshape(shape) if lead else a
    if len(axes) == lead:           # leading dims only (a bias gradient): no keepdims + reshape
        return a.sum(axis=axes)
    a = a.sum(axis=axes, keepdims=True)
    return a.reshape(shape) if lead else a


def _saved_arrays(node):
    """A node's saved values as arrays (version-checked; unpack hooks applied; non-tensor values as
    they were, entries not saved (``save_if``) None)."""
    vers = node._versions
    if vers is not None and len(vers) == 2:     # two lightly saved inputs (Mul, mm, addmm): the hot path
        va, vb = vers
        a, b = node._saved
        if va is not None:
            if vb is not None:
                if a._vc[0] == va and b._vc[0] == vb:
                    return a._data, b._data
            elif b is None and a._vc[0] == va:
                return a._data, None
        elif a is None and vb is not None and b._vc[0] == vb:
            return None, b._data
    if node._freed:
        raise RuntimeError(_FREED)
    if vers is None:
        u = node._unpacked          # packed by saved_tensors_hooks: unpacked once by the node (_run_hook_packed)
        if u is not None:
            return [v._data if isinstance(v, Tensor) else v for v in u]
        return [s._array() if type(s) is SavedTensor else s for s in node._saved]
    out = []
    for s, v in zip(node._saved, vers):
        if v is not None:
            if s._vc[0] != v:
                _version_error(s, v)
            out.append(s._data)
        elif type(s) is SavedTensor:
            vc = s._vc      # SavedTensor._array(), inlined
            if vc is not None and s._unpack is None and vc[0] == s._version:
                t = s._tensor
                out.append(t._data if t is not None else s._data)
            else:
                out.append(s.unpack()._data)
        else:
            out.append(s)
    return out


def _t_mm_arrays(a, g, bt):
    """a.T @ g, laid out like the operand it is the gradient of: when that operand is a transposed
    view (``bt``: nn.Linear's weight.t()) compute (g.T @ a).T, so that the gradient reaching the weight
    through TBackward0 is C-contiguous (no transposing copy when accumulated; a fast optimizer step)."""
    if bt:
        return (g.T @ a).T
    return a.T @ g


def _scale_arrays(g, f, src=None, node=None):
    return np.multiply(g, f, dtype=g.dtype)


def _div_number_arrays(g, k, node=None):
    return g / k


def zero_like(a):
    """A cached 0-d zero of ``a``'s dtype and array module: NumPy ufuncs are ~2x slower with a
    Python-int operand."""
    key = a.dtype if type(a) is _ndarray else (type(a), a.dtype)     # NumPy's: the hot path, a dtype key
    z = _ZEROS.get(key)
    if z is None:
        z = _ZEROS[key] = array_module(a).zeros((), a.dtype)
    return z


def cast_array(g, dtype):
    """``g`` as NumPy dtype ``dtype``; a complex gradient of a real input is its real part (PyTorch's
    handle_r_to_c: the input's real direction)."""
    if g.dtype.kind == "c" and dtype.kind != "c":
        g = g.real
    return g.astype(dtype)


def _conj_arrays(a):
    return None if a is None else np.conjugate(a)


@kernel
def _threshold_backward_kernel(g, src, threshold, out):
    for i in range(g.size):
        out[i] = g[i] if not src[i] <= threshold else 0


def _threshold_backward_arrays(g, src, threshold, node=None):
    """PyTorch's threshold_backward: 0 where ``src <= threshold`` (even where g is NaN), else g (a NaN src passes
    g on). Compiled on the pool for float32 arrays; else a where()."""
    if g.size > 4096 and g.shape == src.shape and fast(g, src) and np.ndim(threshold) == 0:
        gf, sf, t = np.ascontiguousarray(g).reshape(-1), np.ascontiguousarray(src).reshape(-1), np.float32(threshold)
        out = np.empty(g.shape, g.dtype)
        of = out.reshape(-1)
        _parallel.parallel_for(of.size, lambda lo, hi: _threshold_backward_kernel(gf[lo:hi], sf[lo:hi], t, of[lo:hi]),
                               1 << 16)
        return out
    return np.where(src <= threshold, zero_like(g), g)


class _Arrays:
    """Gradients as arrays of the inputs' module: the formulas run on arrays, no graph is built."""
    __slots__ = ()
    name = "arrays"

    # ---- carrying gradients (around hooks, into input buffers) ----
    @staticmethod
    def tensor(g):
        return None if g is None else _make(g)

    @staticmethod
    def carry(t):
        return None if t is None else t._data

    @staticmethod
    def tensors(gs):
        """``tuple(tensor(g) for g in gs)`` in one call (a node's grads around its hooks)."""
        return tuple([None if g is None else _make(g) for g in gs])

    @staticmethod
    def carry_all(ts):
        return [None if t is None else t._data for t in ts]

    @staticmethod
    def add(a, b):
        return a + b

    # ---- what formulas use ----
    saved = staticmethod(_saved_arrays)
    exp = staticmethod(np.exp)
    tanh = staticmethod(np.tanh)
    matmul = staticmethod(np.matmul)
    unsqueeze = staticmethod(np.expand_dims)
    squeeze = staticmethod(np.squeeze)
    transpose = staticmethod(np.swapaxes)
    zeros_like = staticmethod(np.zeros_like)
    expand = staticmethod(expand_np)
    t_mm = staticmethod(_t_mm_arrays)
    scale = staticmethod(_scale_arrays)
    div_number = staticmethod(_div_number_arrays)
    threshold_backward = staticmethod(_threshold_backward_arrays)

    @staticmethod
    def array(x):
        return x

    @staticmethod
    def op(node, *args, **params):
        """A primitive inside a formula (a backward kernel such as GeluBackward's): its forward on the arrays,
        no graph (under TENSORS: ``node.apply``, so that double backward differentiates it)."""
        n = object.__new__(node)
        if params:
            n.__dict__.update(params)
        return n.forward(*args)

    @staticmethod
    def sigmoid(x):
        return 0.5 + 0.5 * np.tanh(0.5 * x)     # never overflows

    @staticmethod
    def sum(x, dim, keepdim=False):
        return x.sum(axis=dim, keepdims=keepdim)

    @staticmethod
    def permute(x, dims):
        return x.transpose(dims)

    t = staticmethod(operator.attrgetter("T"))     # C callables: a formula's call costs no Python frame
    mm = staticmethod(operator.matmul)

    @staticmethod
    def zeros(shape, dtype, like):
        """Zeros (a NumPy dtype) of the module of array ``like``."""
        return array_module(like).zeros(shape, dtype)

    sum_to = staticmethod(sum_to_shape)            # called only when the shapes differ

    cast = staticmethod(cast_array)
    conj = staticmethod(_conj_arrays)


class _Tensors:
    """Gradients as Tensors: the formulas run hookgrad's differentiable ops (create_graph records them)."""
    __slots__ = ()
    name = "tensors"

    @staticmethod
    def tensor(g):
        return g

    @staticmethod
    def carry(t):
        return t

    @staticmethod
    def tensors(gs):
        return tuple(gs)

    @staticmethod
    def carry_all(ts):
        return list(ts)

    @staticmethod
    def add(a, b):
        return a + b

    @staticmethod
    def saved(node):
        return node.saved_values

    @staticmethod
    def array(x):
        return x._data

    @staticmethod
    def op(node, *args, **params):
        return node.apply(*args, **params)

    @staticmethod
    def exp(x):
        return x.exp()

    @staticmethod
    def tanh(x):
        return x.tanh()

    @staticmethod
    def sigmoid(x):
        return x.sigmoid()

    @staticmethod
    def sum(x, dim, keepdim=False):
        return x.sum(dim, keepdim=keepdim)

    @staticmethod
    def matmul(a, b):
        return a.matmul(b)

    @staticmethod
    def mm(a, b):
        return a.mm(b)

    @staticmethod
    def t_mm(a, g, bt=False):
        """a.T @ g (the layout hint ``bt`` is for arrays; PyTorch's graph is a.t().mm(g))."""
        return a.t().mm(g)

    @staticmethod
    def unsqueeze(x, dim):
        return x.unsqueeze(dim)

    @staticmethod
    def squeeze(x, dim):
        return x.squeeze(dim)

    @staticmethod
    def transpose(x, d0, d1):
        return x.transpose(d0, d1)

    @staticmethod
    def permute(x, dims):
        return x.permute(dims)

    @staticmethod
    def t(x):
        return x.t()

    @staticmethod
    def expand(x, shape):
        return x.expand(shape)

    @staticmethod
    def scale(g, f, src, node):
        """g * f for a constant array ``f``, recorded as ``node`` (a constant-factor Node class: the
        gradient depends on ``src`` with derivative zero, as PyTorch's backward kernels do)."""
        return node.apply(g, src, f=f)

    @staticmethod
    def div_number(g, k, node):
        """g / k for a Python number ``k``, recorded as ``node`` (PyTorch's div.Scalar inside its backward
        formulas, DivBackward1)."""
        return node.apply(g, k=k)

    @staticmethod
    def threshold_backward(g, src, threshold, node):
        """PyTorch's threshold_backward: 0 where ``src <= threshold``, else g (a NaN passes g on) (recorded as
        ``scale`` does; on arrays a ``where`` for small arrays)."""
        keep = src._data <= threshold
        return node.apply(g, src, f=np.logical_not(keep, out=keep) if keep.ndim else ~keep)

    @staticmethod
    def zeros_like(x):
        """PyTorch's zeros_like in a formula: a constant (no graph)."""
        d = x._data
        return _make(array_module(d).zeros_like(d))

    @staticmethod
    def zeros(shape, dtype, like):
        d = like._data
        return _make(array_module(d).zeros(shape, dtype))

    @staticmethod
    def sum_to(g, shape):
        return g.sum_to_size(shape)

    @staticmethod
    def cast(g, dtype):
        if g._data.dtype.kind == "c" and dtype.kind != "c":
            g = g.real                  # a real input's gradient: the real part (PyTorch's handle_r_to_c)
        return g.to(D._NP_TO_DT[dtype])

    @staticmethod
    def conj(x):
        """The complex conjugate (a differentiable ConjBackward0 for a Tensor; a constant as it is)."""
        if x is None:
            return None
        return x.conj() if isinstance(x, Tensor) else np.conjugate(x)


ARRAYS = _Arrays()
TENSORS = _Tensors()


def takes_space(backward):
    """Is ``backward`` a formula written against a space (a parameter named ``F``)?"""
    code = getattr(backward, "__code__", None)
    return code is not None and "F" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
