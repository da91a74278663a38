"""torch.stft / torch.istft and the torch.signal namespace (torch.signal.windows).

Both transforms are composites, as PyTorch's are: framing (``Tensor.unfold``), the window product, the
transforms of hookgrad.fft, and for istft the overlap-add (``index_add``, the adjoint of the framing) and the
division by the window envelope. Every gradient, second order included, comes from the composition.

``torch.signal.windows`` is PyTorch's Python module re-written on hookgrad's ops (linspace, cos, exp, i0):
the windows are computed in the requested dtype, as PyTorch's are, and with ``requires_grad`` they carry
the same graph (a ``torch.signal.windows.exponential(..., requires_grad=True)`` is a non-leaf, as in PyTorch).
The top-level ``torch.*_window`` factories (ATen kernels in PyTorch) stay in ``_creation``.
"""
import math
import sys
import types
import warnings
from collections.abc import Iterable

from .. import _dtype as D
from .._tensor import Tensor
from .._errors import not_tensor
from .._creation import linspace, arange, tensor as _tensor, empty, ones, zeros
from ..nn import functional as _F
from . import fft as _fft
from .complex import view_as_real

__all__ = ["stft", "istft"]

_NO_WINDOW = ("A window was not provided. A rectangular window will be applied,which is known to cause spectral "
              "leakage. Other windows such as torch.hann_window or torch.hamming_window are recommended to reduce "
              "spectral leakage.To suppress this warning and use a rectangular window, explicitly set "
              "`window=torch.ones(n_fft, device=<device>)`.")
_REAL_OUT = ("stft with return_complex=False is deprecated. In a future pytorch release, stft will return complex "
             "tensors for all inputs, and return_complex=False will raise an error.\nNote: you can still call "
             "torch.view_as_real on the complex output to recover the old return format.")


def _opt(v):
    return "None" if v is None else str(int(v))


def _window_desc(window):
    return "None" if window is None else f"{window.type()}{{{list(window.shape)}}}"


def _full_window(window, win_length, n_fft, like):
    """The window zero-padded on both sides to ``n_fft`` (None: the rectangular window, None if no padding)."""
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    if window is None:
        window = ones(win_length, dtype=like)
    return _F.pad(window, [left, n_fft - win_length - left])


def _check_window(window, win_length, prefix):
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"{prefix}expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform of a 1-D signal or a batch of them (PyTorch's torch.stft): frames of
    ``n_fft`` samples every ``hop_length``, times ``window``, transformed; the result is
    (batch?, freq, frames), complex (``return_complex=True``; real input requires the argument)."""
    if not isinstance(input, Tensor):
        raise not_tensor("stft", input)
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        signal_dim = input.dim()
        pad = int(n_fft // 2)
        input = _F.pad(input.view([1] * (3 - signal_dim) + list(input.shape)), [pad, pad], pad_mode)
        input = input.view(input.shape[-signal_dim:])
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    prefix = (f"stft({input.type()}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
              f"window={_window_desc(window)}, normalized={int(normalized)}, onesided={_opt(onesided)}, "
              f"return_complex={_opt(return_complex)}, align_to_window={_opt(align_to_window)}) : ")
    complex_fft = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None and not complex_fft:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError(f"{prefix}expected a tensor of floating point or complex values")
    if input.dim() not in (1, 2):
        raise RuntimeError(f"{prefix}expected a 1D or 2D tensor")
    if not return_complex:
        warnings.warn(_REAL_OUT, UserWarning, stacklevel=2)
    if window is None:
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=2)
    batch = input if input.dim() == 2 else input.unsqueeze(0)
    length = batch.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"{prefix}expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{prefix}expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{prefix}expected 0 < win_length <= n_fft, but got win_length={win}")
    _check_window(window, win, prefix)
    if onesided and complex_fft:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if align_to_window and win < n_fft:
        # the frames start where their windows start: the input is shifted by the window's left padding
        left = (n_fft - win) // 2
        batch = _F.pad(batch, [left, n_fft - win - left])
    frames = batch.unfold(-1, n_fft, hop)                          # (batch, n_frames, n_fft)
    w = _full_window(window, win, n_fft, batch.dtype if not batch.is_complex() else D.float32)
    if w is not None:
        frames = frames * w
    norm = "ortho" if normalized else "backward"
    one = (not complex_fft) if onesided is None else onesided
    out = _fft.rfft(frames, dim=-1, norm=norm) if one else _fft.fft(frames, dim=-1, norm=norm)
    out = out.transpose(1, 2)
    if input.dim() == 1:
        out = out.squeeze(0)
    return out if return_complex else view_as_real(out)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of :func:`stft` (PyTorch's torch.istft): inverse transforms of the frames, windowed,
    overlap-added and divided by the summed squared window (which must not vanish: the NOLA condition)."""
    if not isinstance(input, Tensor):
        raise not_tensor("istft", input)
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    ctype = {"complex128": "ComplexDouble", "complex64": "ComplexFloat"}.get(str(input.dtype).split(".")[-1], "")
    prefix = (f"istft(CPU{ctype}Type{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
              f"window={_window_desc(window)}, center={int(center)}, normalized={int(normalized)}, "
              f"onesided={_opt(onesided)}, length={'None' if length is None else length}, "
              f"return_complex={int(return_complex)}) : ")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"{prefix}expected a tensor with 3 or 4 dimensions, but got {input.dim() + 1}")
    if window is None:
        warnings.warn(_NO_WINDOW.replace("leakage. Other", "leakage. Please provide the same window used by stft "
                                         "to make the inversion lossless. Other"), UserWarning, stacklevel=2)
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    expected_len = n_fft + hop * (n_frames - 1)
    one = (fft_size != n_fft) if onesided is None else onesided
    if one and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(f"{prefix}expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not one and n_fft != fft_size:
        raise RuntimeError(f"{prefix}expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        raise RuntimeError(f"{prefix}expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{prefix}expected 0 < win_length <= n_fft")
    _check_window(window, win, prefix)
    real_dtype = input.real.dtype
    w = _full_window(window, win, n_fft, real_dtype)
    batch = (input if input.dim() == 3 else input.unsqueeze(0)).transpose(1, 2)    # (batch, n_frames, freq)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if one:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _fft.ifft(batch, dim=-1, norm=norm)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one:
            batch = batch.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft.irfft(batch, n=n_fft, dim=-1, norm=norm)
    if w is None:
        w = ones(n_fft, dtype=real_dtype)
    frames = frames * w
    # overlap-add: frame t's sample j lands at t * hop + j (the adjoint of stft's framing)
    idx = (arange(n_frames).unsqueeze(1) * hop + arange(n_fft)).reshape(-1)
    y = zeros(frames.shape[0], expected_len, dtype=frames.dtype).index_add(1, idx, frames.reshape(frames.shape[0], -1))
    sq = (w * w).expand(n_frames, n_fft).reshape(-1)
    envelope = zeros(expected_len, dtype=sq.dtype).index_add(0, idx, sq)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (expected_len - n_fft // 2 if center else expected_len)
    stop = min(end, expected_len)
    y = y[:, start:stop]
    envelope = envelope[start:stop]
    low = envelope.abs().min().item() if envelope.numel() else 0.0
    if not low > 1e-11:
        raise RuntimeError(f"{prefix}window overlap add min: {low:g}")
    y = y / envelope
    if input.dim() == 2:
        y = y.squeeze(0)
    if end > expected_len:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with zeros "
                      "in the tail. Please check your center and hop_length settings.", UserWarning, stacklevel=2)
        y = _F.pad(y, [0, end - expected_len])
    return y


# ======================================================================================= torch.signal.windows
def _window_checks(name, M, dtype, layout):
    from .._layout import strided
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (D.float32, D.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _start(name, M, dtype, layout):
    """The dtype to compute in, after PyTorch's checks; and the window for M == 0 (empty), else None."""
    dtype = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    _window_checks(name, M, dtype, layout)
    return dtype


def _trivial(M, dtype, device, requires_grad, one=True):
    if M == 0:
        return empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1 and one:
        return ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The exponential (Poisson) window exp(-|n - center| / tau)."""
    dtype = _start("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    t = _trivial(M, dtype, device, requires_grad, one=False)
    if t is not None:
        return t
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    c = 1 / tau
    k = linspace(-center * c, (-center + (M - 1)) * c, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return (-k.abs()).exp()


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The cosine (sine) window sin(pi (n + 1/2) / M)."""
    dtype = _start("cosine", M, dtype, layout)
    t = _trivial(M, dtype, device, requires_grad, one=False)
    if t is not None:
        return t
    c = math.pi / (M + 1 if not sym and M > 1 else M)
    k = linspace(0.5 * c, (0.5 + (M - 1)) * c, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return k.sin()


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Gaussian window exp(-(n - (M - 1) / 2)^2 / (2 std^2))."""
    dtype = _start("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    t = _trivial(M, dtype, device, requires_grad, one=False)
    if t is not None:
        return t
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    c = 1 / (std * math.sqrt(2))
    k = linspace(start * c, (start + (M - 1)) * c, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return (-(k ** 2)).exp()


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Kaiser window I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    dtype = _start("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    t = _trivial(M, dtype, device, requires_grad)
    if t is not None:
        return t
    b = _tensor(beta, dtype=dtype, device=device)
    start = -b
    c = 2.0 * b / (M if not sym else M - 1)
    end = b.minimum(start + (M - 1) * c)
    k = linspace(start.item(), end.item(), M, dtype=dtype, device=device, requires_grad=requires_grad)
    return (b * b - k.pow(2)).sqrt().i0() / b.i0()


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The generalised cosine window sum_i (-1)^i a_i cos(2 pi i n / (M - 1))."""
    dtype = _start("general_cosine", M, dtype, layout)
    t = _trivial(M, dtype, device, requires_grad)
    if t is not None:
        return t
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    c = 2 * math.pi / (M if not sym else M - 1)
    k = linspace(0, (M - 1) * c, M, dtype=dtype, device=device, requires_grad=requires_grad)
    a_i = _tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device, requires_grad=requires_grad)
    i = arange(a_i.shape[0], dtype=a_i.dtype, device=device, requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The generalised Hamming window alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window (general_hamming with alpha 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window (general_hamming with alpha 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window (general_cosine with a = [0.42, 0.5, 0.08])."""
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window 1 - |2n / (M - 1) - 1|."""
    dtype = _start("bartlett", M, dtype, layout)
    t = _trivial(M, dtype, device, requires_grad)
    if t is not None:
        return t
    c = 2 / (M if not sym else M - 1)
    k = linspace(-1, -1 + (M - 1) * c, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return 1 - k.abs()


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


_WINDOWS = ("bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
            "hamming", "hann", "kaiser", "nuttall")


def _namespace(name, doc, members):
    m = types.ModuleType(name, doc)
    for k, v in members.items():
        setattr(m, k, v)
    sys.modules.setdefault(name, m)
    return m


windows = _namespace("hookgrad.signal.windows", "torch.signal.windows: window functions for signal processing.",
                     {"__all__": list(_WINDOWS), **{n: globals()[n] for n in _WINDOWS}})
signal = _namespace("hookgrad.signal", "torch.signal: signal processing (the windows submodule).",
                    {"__all__": ["windows"], "windows": windows})

# Tensor.stft / Tensor.istft (PyTorch's Python methods, which call torch.stft / torch.istft)
Tensor.stft = stft
Tensor.istft = istft
