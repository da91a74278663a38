"""Complex tensors, as far as torch.fft and its users need: the views between a complex tensor and its real
pairs (view_as_real, view_as_complex, real, imag), conjugation, abs/angle/sgn, and building complex tensors
(complex, polar).

Gradients follow PyTorch's convention for complex inputs: the gradient of a real loss L with respect to z is
the conjugate Wirtinger derivative times two, dL/d(conj z) * 2 (so for L = |z|^2, z.grad == 2 * z). A complex
gradient reaching a real input is reduced to its real part once, in ``Node._run_backward`` (the cast).

hookgrad computes conjugates: ``conj()`` (and ``_neg_view()``) returns a new tensor holding the conjugated (negated)
values, not a view of the input's memory. PyTorch's conjugate and negative bits are kept as metadata
(``Tensor._bits``: 1 conjugate, 2 negative), so that ``is_conj()`` / ``is_neg()`` answer as PyTorch's do: set by
``conj()`` (``_neg_view()``; ``.imag`` of a conjugate), carried by views, ``detach()`` and in-place ops, dropped by
``resolve_conj()`` / ``resolve_neg()`` (a copy) and by every op that makes a new tensor; ``view_as_real`` refuses
a conjugate, as PyTorch. See docs/differences.md for the ops that take complex input.
"""
import builtins as _builtins

import numpy as np

from .. import _dtype as D
from .._array import array_module
from .._tensor import Tensor
from ..autograd.node import Node
from .._errors import not_tensor
from ._inplace import make_view
from . import special as _SP
from .index import select
from . import shape as _S


def _tensor_in(fname, input):
    if not isinstance(input, Tensor):
        raise not_tensor(fname, input)
    return input


def _is_complex(t):
    return t._data.dtype.kind == "c"


# ---------------------------------------------------------------------------------------- views
def _as_real(a):
    """The (..., 2) real view of complex array ``a`` (any strides: a trailing axis of one element re-read as
    two floats)."""
    return a[..., None].view(a.real.dtype)


class ViewAsReal(Node, name="ViewAsRealBackward0"):
    def forward(self, z):
        return _as_real(z)

    def backward(self, g):
        return view_as_complex(g.contiguous())


class ViewAsComplex(Node, name="ViewAsComplexBackward0"):
    def forward(self, x):
        return x.view(np.complex64 if x.dtype == np.float32 else np.complex128)[..., 0]

    def backward(self, g):
        return _view_as_real(g.contiguous())     # (a conjugate gradient: its values, whatever its bit)


def view_as_real(input):
    """The complex tensor as a real one with a trailing dimension of 2 (real, imaginary): a view."""
    _tensor_in("view_as_real", input)
    if input._bits & _CONJ:
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate "
                           "tensor so you can view it as real, use self.resolve_conj(); however, be warned that the "
                           "resulting tensor will NOT alias the original.")
    return _view_as_real(input)


def _view_as_real(input):
    if not _is_complex(input):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return make_view(ViewAsReal.apply(input), input, _view_as_real)


def view_as_complex(input):
    """A real tensor with a trailing dimension of 2 read as a complex tensor: a view."""
    _tensor_in("view_as_complex", input)
    d = input._data
    if d.dtype.kind != "f" or d.dtype == np.float16:
        name = "Half" if d.dtype == np.float16 else input.dtype._legacy.replace("Tensor", "")
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, but got a tensor of "
                           f"scalar type: {name}" if d.dtype != np.float16 else
                           "hookgrad: view_as_complex of a float16 tensor needs complex32, which hookgrad does not "
                           "support")
    if d.ndim == 0 or d.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    isz = d.itemsize
    if d.size and d.strides[-1] != isz:           # (an empty array's NumPy strides may be 0: nothing to check)
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if d.size and any(s % (2 * isz) for s in d.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return make_view(ViewAsComplex.apply(input), input, view_as_complex)


def real(input):
    """The real part: a view (PyTorch's select(view_as_real(z), -1, 0)); a real tensor itself."""
    _tensor_in("real", input)
    if not _is_complex(input):
        return input
    return _part(input, 0)


def imag(input):
    """The imaginary part: a view (select(view_as_real(z), -1, 1)); an error for a real tensor. The imaginary part
    of a conjugate has the negative bit, as PyTorch's."""
    _tensor_in("imag", input)
    if not _is_complex(input):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _part(input, 1)


_CONJ, _NEG = 1, 2      # Tensor._bits


def _part_bits(bits, k):
    """The bits of the real (k = 0) or imaginary (k = 1) part of a tensor with ``bits``: the imaginary part of a
    conjugate is a negative."""
    return (bits & _NEG) ^ (_NEG if k and bits & _CONJ else 0)


def _part(input, k):
    r = _with_bits(select(_view_as_real(input), -1, k), _part_bits(input._bits, k))
    t, it = r._fw_grad, input._fw_grad
    if t is not None and it is not None:        # (forward AD: the tangent is the same part of the input's)
        _with_bits(t, _part_bits(it._bits, k))
    return r


def _with_bits(t, bits):
    if t._bits != bits:
        t._bits = bits
    return t


def _set_part(k):
    def setter(self, value):
        part = (real if k == 0 else imag)(self)
        part.copy_(value if isinstance(value, Tensor) else Tensor._make(array_module(self._data).asarray(value)))
    return setter


# ---------------------------------------------------------------------------------------- conjugation
class Conj(Node, name="ConjBackward0"):
    def forward(self, z):
        return np.conjugate(z)

    def backward(self, g):
        return g.conj()


class ConjPhysical(Conj, name="ConjPhysicalBackward0"):
    def backward(self, g):
        return g.conj_physical()


def conj(input):
    """The complex conjugate (computed: hookgrad has no lazy conjugate bit); a real tensor itself."""
    _tensor_in("conj", input)
    return _with_bits(Conj.apply(input), input._bits ^ _CONJ) if _is_complex(input) else input


def conj_physical(input, *, out=None):
    """The complex conjugate, computed; a real tensor itself."""
    _tensor_in("conj_physical", input)
    r = ConjPhysical.apply(input) if _is_complex(input) else input
    if out is not None:
        out.copy_(r)
        return out
    return r


def resolve_conj(input):
    """The tensor itself, or where it has the conjugate bit a copy without it (the values are the same: hookgrad's
    conjugates are computed)."""
    _tensor_in("resolve_conj", input)
    return _with_bits(input.clone(), input._bits & ~_CONJ) if input._bits & _CONJ else input


def is_conj(input):
    """Whether the tensor has PyTorch's conjugate bit (made by conj(), see the module's docstring)."""
    _tensor_in("is_conj", input)
    return bool(input._bits & _CONJ)


# ---------------------------------------------------------------------------------------- abs, angle, sgn
class Sgn(Node, name="SgnBackward0"):
    """z / |z| (0 at 0) of a complex tensor."""
    save = (0, -1)
    saved_names = ("self", "result")

    def forward(self, z):
        return np.sign(z)

    def backward(self, g):
        # PyTorch's sgn_backward: (g - sgn^2 * conj(g)) / (2 |z|), 0 where z is 0
        z, s = self.saved_values
        a = z.abs()
        zero = a == 0
        return ((g - s * s * g.conj()) / (a.masked_fill(zero, 1.0) * 2)).masked_fill(zero, 0)


class AngleComplex(Node, name="AngleBackward0"):
    save = (0,)
    saved_names = ("self",)

    def forward(self, z):
        return np.angle(z).astype(z.real.dtype, copy=False)

    def backward(self, g):
        (z,) = self.saved_values     # PyTorch's angle_backward: g * z / |z|^2 * 1j (0 where z is 0)
        a2 = z.abs().pow(2)
        return g * z / a2.masked_fill(a2 == 0, 1.0) * 1j


def angle(input, *, out=None):
    """The argument of each element (radians, in (-pi, pi]); for real tensors pi for negatives, else 0."""
    _tensor_in("angle", input)
    if not _is_complex(input):
        return _SP.angle(input, out=out)
    r = AngleComplex.apply(input)
    if out is not None:
        out.copy_(r)
        return out
    return r


def sgn(input, *, out=None):
    """z / |z| for complex tensors (0 at 0), the sign of real ones."""
    _tensor_in("sgn", input)
    if not _is_complex(input):
        return _SP.sgn(input, out=out)
    r = Sgn.apply(input)
    if out is not None:
        out.copy_(r)
        return out
    return r


# ---------------------------------------------------------------------------------------- construction
def _check_pair(fname, a, b, names):
    _tensor_in(fname, a)
    if not isinstance(b, Tensor):
        raise TypeError(f"{fname}(): argument '{names[1]}' (position 2) must be Tensor, not {type(b).__name__}")
    da, db = a._data.dtype, b._data.dtype
    if da.kind != "f" or db.kind != "f":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {a.dtype._legacy[:-6]} "
                           f"and {b.dtype._legacy[:-6]}")
    if da != db:
        raise RuntimeError(f"Expected object of scalar type {a.dtype._legacy[:-6]} but got scalar type "
                           f"{b.dtype._legacy[:-6]} for second argument")
    if da == np.float16:
        raise RuntimeError(f"hookgrad: {fname} of float16 tensors needs complex32, which hookgrad does not support")


def _complex_array(re, im):
    xp = array_module(re)
    out = xp.empty(np.broadcast_shapes(re.shape, im.shape), np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real = re
    out.imag = im
    return out


class Complex(Node, name="ComplexBackward0"):
    def forward(self, re, im):
        return _complex_array(re, im)

    def backward(self, g):
        nf = self.next_functions
        return (g.real if nf[0][0] is not None else None), (g.imag if nf[1][0] is not None else None)


class Polar(Node, name="PolarBackward0"):
    save = (-1,)
    saved_names = ("result",)

    def forward(self, r, theta):
        return _complex_array(r * np.cos(theta), r * np.sin(theta))

    def backward(self, g):
        (out,) = self.saved_values      # PyTorch's polar_backward
        gc = g.conj()
        nf = self.next_functions
        gabs = (gc * out.sgn()).real if nf[0][0] is not None else None
        gangle = (gc * (out * 1j)).real if nf[1][0] is not None else None
        return gabs, gangle


def complex(real, imag, *, out=None):
    """real + imag * 1j from two floating tensors of one dtype (broadcast)."""
    _check_pair("complex", real, imag, ("real", "imag"))
    r = Complex.apply(real, imag)
    if out is not None:
        out.copy_(r)
        return out
    return r


def polar(abs, angle, *, out=None):
    """abs * (cos(angle) + sin(angle) * 1j) from two floating tensors of one dtype (broadcast)."""
    _check_pair("polar", abs, angle, ("abs", "angle"))
    r = Polar.apply(abs, angle)
    if out is not None:
        out.copy_(r)
        return out
    return r


def H(self):
    """The conjugate transpose of a matrix (Tensor.H): the transpose of a real one."""
    nd = self._data.ndim
    if nd == 2:
        return conj(_S.transpose(self, 0, 1))
    if nd == 0:
        return conj(self)          # PyTorch warns that H of a 0-D tensor is deprecated
    raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D tensor."
                       + (" For batches of matrices, consider using tensor.mH" if nd > 2 else ""))


def mH(self):
    """The conjugate transpose of the last two dims (Tensor.mH)."""
    return conj(_S.mT(self))


# Tensor methods (installed by primitives/__init__.py)
METHODS = {
    "real": property(real, _set_part(0), doc="The real part (a view); a real tensor itself."),
    "imag": property(imag, _set_part(1), doc="The imaginary part (a view); complex tensors only."),
    "conj": conj, "conj_physical": conj_physical, "resolve_conj": resolve_conj, "is_conj": is_conj,
    "angle": angle, "sgn": sgn, "__complex__": lambda self: _builtins.complex(self.item()),
}
