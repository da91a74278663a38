"""hookgrad.fft: PyTorch's torch.fft, on the array module's own ``fft`` (numpy.fft, cupy.fft).

Three primitives carry every transform and its gradient, as in PyTorch (ATen's _fft_r2c, _fft_c2r and
_fft_c2c with derivatives.yaml's formulas): real to complex (FftR2CBackward0), complex to real (the
Hermitian inverse, FftC2RBackward0) and complex to complex (FftC2CBackward0). Each takes the transformed
dims in order and a normalization mode (0: none, 1: 1/sqrt(n), 2: 1/n, n the product of the signal sizes).
The public functions do PyTorch's argument handling around them: promotion (integers to the default float
dtype, real input to complex where a complex transform needs it: ToCopyBackward0), resizing to ``n``/``s``
(ConstantPadNdBackward0 when padding, SliceBackward0 when trimming), and the conjugations of the inverse
real transforms (ifft of a real tensor, hfft, ihfft: ConjBackward0).
"""
import math
import sys

import numpy as np

from .. import _dtype as D
from .._array import array_module, default_module
from .._tensor import Tensor, _wrap_dim
from .._errors import not_tensor
from ..autograd.node import Node
from .._creation import _finish
from .join import ConstantPad
from .shape import narrow, roll
from .complex import conj, conj_physical

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


# ------------------------------------------------------------------------------------------ primitives
def _normalize(out, mode, sizes):
    """``out`` scaled by PyTorch's normalization ``mode`` for signal ``sizes`` (in place: ``out`` is fresh)."""
    if mode == _NONE:
        return out
    n = math.prod(sizes)
    f = 1.0 / n if mode == _BY_N else 1.0 / math.sqrt(n)
    out *= out.real.dtype.type(f)
    return out


class FftR2C(Node, name="FftR2CBackward0"):
    """Real to complex DFT over ``dim`` (the last of which keeps n // 2 + 1 entries when ``onesided``)."""
    save = (0,)                     # PyTorch saves the input (for its size); saved-tensor hooks see it
    saved_names = ("self",)
    saved_attrs = ("dim", "normalization", "onesided")

    def forward(self, x):
        self.last_size = x.shape[self.dim[-1]]
        xf = array_module(x).fft
        out = (xf.rfftn if self.onesided else xf.fftn)(x, axes=self.dim)
        return _normalize(out, self.normalization, [x.shape[d] for d in self.dim])

    def backward(self, g):
        # PyTorch's fft_r2c_backward: zero-fill the discarded half, the adjoint (an unnormalised inverse C2C with
        # the same scaling), the real part
        d = self.dim[-1]
        n = g.shape[d]
        if self.onesided and self.last_size > n:
            pads = [(0, 0)] * g.dim()
            pads[d] = (0, self.last_size - n)
            g = ConstantPad.apply(g, pads=tuple(pads), value=0)
        return FftC2C.apply(g, dim=self.dim, normalization=self.normalization, fwd=False).real


class FftC2R(Node, name="FftC2RBackward0"):
    """The Hermitian inverse DFT (unnormalised, then scaled): complex to real, ``last_dim_size`` values on the
    last of ``dim``."""
    saved_attrs = ("dim", "normalization")

    def forward(self, z):
        s = [z.shape[d] for d in self.dim[:-1]] + [self.last_dim_size]
        out = array_module(z).fft.irfftn(z, s=s, axes=self.dim, norm="forward")     # "forward": no 1/n here
        return _normalize(out, self.normalization, s)

    def backward(self, g):
        # PyTorch's fft_c2r_backward: a onesided R2C of the gradient, the entries that stand for two (their
        # reflections fell outside the onesided range) doubled
        gi = FftR2C.apply(g, dim=self.dim, normalization=self.normalization, onesided=True)
        d = self.dim[-1]
        double = g.shape[d] - gi.shape[d]
        if double > 0:
            w = array_module(g._data).ones(gi.shape[d], g._data.dtype)
            w[1:1 + double] = 2
            gi = gi * Tensor._make(w.reshape((-1,) + (1,) * (gi.dim() - 1 - d)))
        return gi


class FftC2C(Node, name="FftC2CBackward0"):
    """Complex DFT over ``dim``: forward (e^-i) or inverse (e^+i, unnormalised), then scaled."""
    saved_attrs = ("dim", "normalization", "forward=fwd")

    def forward(self, z):
        xf = array_module(z).fft
        out = xf.fftn(z, axes=self.dim) if self.fwd else xf.ifftn(z, axes=self.dim, norm="forward")
        return _normalize(out, self.normalization, [z.shape[d] for d in self.dim])

    def backward(self, g):
        return FftC2C.apply(g, dim=self.dim, normalization=self.normalization, fwd=not self.fwd)


# ------------------------------------------------------------------------------------------ arguments
def _norm_mode(norm, forward):
    """PyTorch's norm_from_string: the normalization of a forward or an inverse transform."""
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(x, fname, require_complex=False):
    """PyTorch's promote_tensor_fft: integers compute in the default float dtype, float16 is refused (CPU), a
    real tensor becomes complex where the transform needs it."""
    if not isinstance(x, Tensor):
        raise not_tensor(f"fft_{fname}", x)
    k = x._data.dtype.kind
    dt = x.dtype
    if k == "c":
        return x
    if k != "f":
        dt = D.get_default_dtype()
    elif dt is D.float16:
        raise RuntimeError("Unsupported dtype Half")
    if require_complex:
        dt = dt.to_complex()
    return x if dt is x.dtype else x.to(dt)


def _wrap(dim, ndim):
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, ndim)


def _check_size(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _resize(x, dims, sizes):
    """PyTorch's resize_fft_input: trim (a slice) or zero-pad (constant_pad_nd) each of ``dims`` to ``sizes``."""
    pads = [(0, 0)] * x.dim()
    must_pad = False
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if have < n:
            pads[d] = (0, n - have)
            must_pad = True
        elif have > n:
            x = narrow(x, d, 0, n)
    return ConstantPad.apply(x, pads=tuple(pads), value=0) if must_pad else x


def _shape_and_dims(x, s, dim):
    """PyTorch's canonicalize_fft_shape_and_dim_args: the transformed dims and their signal sizes."""
    nd = x.dim()
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(s, int):
        s = (s,)
    dims = None
    if dim is not None:
        dims = [_wrap(int(d), nd) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = [int(n) for n in s]
        if dim is not None and len(dim) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
        if dims is None:
            dims = list(range(nd - len(s), nd))
        shape = [x.shape[d] if n == -1 else n for d, n in zip(dims, s)]
    elif dims is None:
        dims, shape = list(range(nd)), list(x.shape)
    else:
        shape = [x.shape[d] for d in dims]
    for n in shape:
        _check_size(n)
    return dims, shape


def _out(r, out):
    if out is not None:
        out.copy_(r)
        return out
    return r


# ------------------------------------------------------------------------------------------ 1-D
def _c2c(fname, x, n, dim, norm, forward):
    d = _wrap(dim, x.dim())
    size = x.shape[d] if n is None else int(n)
    _check_size(size)
    if n is not None:
        x = _resize(x, [d], [size])
    return FftC2C.apply(x, dim=(d,), normalization=_norm_mode(norm, forward), fwd=forward)


def _r2c(fname, x, n, dim, norm, forward, onesided):
    if x.is_complex():
        raise RuntimeError(f"{fname} expects a real input tensor, but got {'ComplexFloat' if x.dtype is D.complex64 else 'ComplexDouble'}")
    x = _promote(x, fname)
    d = _wrap(dim, x.dim())
    size = x.shape[d] if n is None else int(n)
    _check_size(size)
    if n is not None:
        x = _resize(x, [d], [size])
    r = FftR2C.apply(x, dim=(d,), normalization=_norm_mode(norm, forward), onesided=onesided)
    return r if forward else conj(r)


def _c2r(fname, x, n, dim, norm, forward):
    x = _promote(x, fname, require_complex=True)
    d = _wrap(dim, x.dim())
    size = 2 * (x.shape[d] - 1) if n is None else int(n)
    _check_size(size)
    if n is not None:
        x = _resize(x, [d], [size // 2 + 1])
    if forward:
        x = conj(x)
    return FftC2R.apply(x, dim=(d,), normalization=_norm_mode(norm, forward), last_dim_size=size)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform (a real input gives the full, two-sided spectrum)."""
    x = _promote(input, "fft")
    if x.is_complex():
        return _out(_c2c("fft", x, n, dim, norm, True), out)
    return _out(_r2c("fft", x, n, dim, norm, True, False), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D inverse discrete Fourier transform."""
    x = _promote(input, "ifft")
    if x.is_complex():
        return _out(_c2c("ifft", x, n, dim, norm, False), out)
    return _out(_r2c("ifft", x, n, dim, norm, False, False), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D DFT of a real signal: the n // 2 + 1 non-negative frequencies."""
    _promote(input, "rfft")
    return _out(_r2c("rfft", input, n, dim, norm, True, True), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: a real signal of n (default 2 * (m - 1)) values from its one-sided spectrum."""
    return _out(_c2r("irfft", input, n, dim, norm, False), out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The DFT of a Hermitian-symmetric signal given by its first half: a real spectrum of n values."""
    return _out(_c2r("hfft", input, n, dim, norm, True), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the one-sided inverse DFT of a real signal."""
    _promote(input, "ihfft")
    return _out(_r2c("ihfft", input, n, dim, norm, False, True), out)


# ------------------------------------------------------------------------------------------ n-D
def _fftn_c2c(fname, input, s, dim, norm, forward):
    x = _promote(input, fname, require_complex=True)
    dims, shape = _shape_and_dims(x, s, dim)
    x = _resize(x, dims, shape)
    if not dims:
        return x.clone() if x is input else x
    return FftC2C.apply(x, dim=tuple(dims), normalization=_norm_mode(norm, forward), fwd=forward)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D discrete Fourier transform over ``dim`` (default: every dim, or the last len(s))."""
    return _out(_fftn_c2c("fftn", input, s, dim, norm, True), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D inverse discrete Fourier transform."""
    return _out(_fftn_c2c("ifftn", input, s, dim, norm, False), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D discrete Fourier transform (fftn over the last two dims)."""
    return _out(_fftn_c2c("fft2", input, s, dim, norm, True), out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D inverse discrete Fourier transform."""
    return _out(_fftn_c2c("ifft2", input, s, dim, norm, False), out)


def _rfftn(fname, input, s, dim, norm, forward):
    x = _promote(input, fname)
    if x.is_complex():
        raise RuntimeError(f"{fname} expects a real-valued input tensor, but got "
                           f"{'ComplexFloat' if x.dtype is D.complex64 else 'ComplexDouble'}")
    dims, shape = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    x = _resize(x, dims, shape)
    mode = _norm_mode(norm, forward)
    if forward:
        return FftR2C.apply(x, dim=tuple(dims), normalization=mode, onesided=True)
    # ihfftn (PyTorch's order): a onesided R2C of the last dim, conjugated, then an inverse C2C of the others
    r = FftR2C.apply(x, dim=(dims[-1],), normalization=mode, onesided=True)
    if len(dims) == 1:
        return conj(r)
    return FftC2C.apply(conj_physical(r), dim=tuple(dims[:-1]), normalization=mode, fwd=False)


def _irfftn(fname, input, s, dim, norm, forward):
    x = _promote(input, fname, require_complex=True)
    if isinstance(s, int):
        s = (s,)
    dims, shape = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    last = 2 * (x.shape[dims[-1]] - 1) if s is None or s[-1] == -1 else shape[-1]
    _check_size(last)
    shape[-1] = last // 2 + 1
    x = _resize(x, dims, shape)
    if forward:
        x = conj(x)
    return FftC2R.apply(x, dim=tuple(dims), normalization=_norm_mode(norm, forward), last_dim_size=last)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D DFT of a real signal, one-sided in the last transformed dim."""
    return _out(_rfftn("rfftn", input, s, dim, norm, True), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn (the last transformed dim has s[-1], default 2 * (m - 1), output values)."""
    return _out(_irfftn("irfftn", input, s, dim, norm, False), out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """rfftn over the last two dims."""
    return _out(_rfftn("rfft2", input, s, dim, norm, True), out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """irfftn over the last two dims."""
    return _out(_irfftn("irfft2", input, s, dim, norm, False), out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D DFT of a Hermitian-symmetric signal given by its one-sided half: a real result."""
    return _out(_irfftn("hfftn", input, s, dim, norm, True), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn: the one-sided inverse DFT of a real signal."""
    return _out(_rfftn("ihfftn", input, s, dim, norm, False), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """hfftn over the last two dims."""
    return _out(_irfftn("hfft2", input, s, dim, norm, True), out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """ihfftn over the last two dims."""
    return _out(_rfftn("ihfft2", input, s, dim, norm, False), out)


# ------------------------------------------------------------------------------------------ helpers
def _freq_dtype(dtype):
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    return dt


def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point DFT: [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)."""
    dt = _freq_dtype(dtype)
    r = default_module().arange(n, dtype=dt.np)
    r[(n + 1) // 2:] -= n
    r *= dt.np.type(1.0 / (n * d))
    return _finish(r, dt, requires_grad, device)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The non-negative sample frequencies of an n-point real DFT: [0, 1, ..., n // 2] / (d * n)."""
    dt = _freq_dtype(dtype)
    r = default_module().arange(n // 2 + 1, dtype=dt.np)
    r *= dt.np.type(1.0 / (n * d))
    return _finish(r, dt, requires_grad, device)


def _shift(input, dim, inverse):
    if not isinstance(input, Tensor):
        raise not_tensor("fftshift" if not inverse else "ifftshift", input)
    nd = input.dim()
    if dim is None:
        dims = list(range(nd))
    else:
        dims = [_wrap(int(d), nd) for d in ((dim,) if isinstance(dim, int) else dim)]
    shifts = [(input.shape[d] + inverse) // 2 for d in dims]
    return roll(input, tuple(shifts), tuple(dims))


def fftshift(input, dim=None):
    """Move the zero frequency to the centre (a roll by n // 2 along each of ``dim``, default all)."""
    return _shift(input, dim, 0)


def ifftshift(input, dim=None):
    """The inverse of fftshift (a roll by (n + 1) // 2)."""
    return _shift(input, dim, 1)


# ``import hookgrad.fft`` and ``hookgrad.fft`` are this module, as torch.fft is one module
sys.modules.setdefault("hookgrad.fft", sys.modules[__name__])

# a torch.fft name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr("hookgrad.fft", "torch.fft")
