"""torch.fft vs torch: values, dtypes, grad_fn names, first- and second-order gradients (through real losses and
through complex outputs), n/s, dim and norm handling, the frequency helpers and shifts, errors."""
import numpy as np
import pytest

import torch
import hookgrad
import hookgrad.fft  # noqa: F401  (``import torch.fft`` works as in PyTorch)
from complex_oracle import ccheck, cdata, same

NORMS = [None, "backward", "forward", "ortho"]
X = cdata(6, dtype="float64")
X2 = cdata(3, 6, dtype="float64", seed=1)
X3 = cdata(2, 4, 5, dtype="float64", seed=2)
Z = cdata(6)
Z2 = cdata(3, 6, seed=3)
Z3 = cdata(2, 4, 5, seed=4)


def fft(L):
    return L.fft


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft"])
@pytest.mark.parametrize("data", [X, Z], ids=["real", "complex"])
@pytest.mark.parametrize("n", [None, 4, 9])
def test_fft_ifft(name, data, n, norm):
    ccheck(lambda L, x: getattr(L.fft, name)(x, n=n, norm=norm), data)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 4, 5, 9])
def test_rfft_irfft_hfft_ihfft(n, norm):
    ccheck(lambda L, x: L.fft.rfft(x, n=n, norm=norm), X2)
    ccheck(lambda L, x: L.fft.ihfft(x, n=n, norm=norm), X2)
    ccheck(lambda L, z: L.fft.irfft(z, n=n, norm=norm), Z2)
    ccheck(lambda L, z: L.fft.hfft(z, n=n, norm=norm), Z2)


@pytest.mark.parametrize("dim", [0, -2, 1])
def test_dim(dim):
    ccheck(lambda L, x: (L.fft.fft(x, dim=dim), L.fft.rfft(x, dim=dim), L.fft.ihfft(x, dim=dim)), X3)
    ccheck(lambda L, z: (L.fft.ifft(z, dim=dim), L.fft.irfft(z, dim=dim), L.fft.hfft(z, n=5, dim=dim)), Z3)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"])
@pytest.mark.parametrize("s, dim", [(None, None), ((3, 4), None), (None, (0, 2)), ((3, -1), (2, 0)), ((5,), (1,)),
                                    (None, (-1,))])
def test_nd(name, s, dim):
    real_in = name in ("rfftn", "ihfftn")
    data = X3 if real_in else Z3
    ccheck(lambda L, x: getattr(L.fft, name)(x, s=s, dim=dim, norm="ortho"), data)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"])
@pytest.mark.parametrize("norm", [None, "forward"])
def test_2d(name, norm):
    data = X3 if name in ("rfft2", "ihfft2") else Z3
    ccheck(lambda L, x: getattr(L.fft, name)(x, norm=norm), data)
    ccheck(lambda L, x: getattr(L.fft, name)(x, s=(3, 6), dim=(0, 2), norm=norm), data)


def test_fftn_of_real_input_goes_through_a_complex_copy():
    ccheck(lambda L, x: (L.fft.fftn(x), L.fft.ifft2(x), L.fft.fftn(x, dim=(1,))), X3)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128", "int64"])
def test_result_dtypes(dtype):
    a = (cdata(8, dtype=dtype) if dtype[0] in "fc" else np.arange(8)).astype(dtype)
    for name in ("fft", "ifft", "fftn", "fft2" if False else "ifftn"):
        same(getattr(torch.fft, name)(torch.tensor(a)), getattr(hookgrad.fft, name)(hookgrad.tensor(a)), name)
    if dtype[0] != "c":
        for name in ("rfft", "ihfft", "rfftn"):
            same(getattr(torch.fft, name)(torch.tensor(a)), getattr(hookgrad.fft, name)(hookgrad.tensor(a)), name)
    for name in ("irfft", "hfft", "irfftn"):
        same(getattr(torch.fft, name)(torch.tensor(a)), getattr(hookgrad.fft, name)(hookgrad.tensor(a)), name)


def test_float32_values_and_gradients():
    ccheck(lambda L, x: (L.fft.rfft(x), L.fft.fft(x, norm="ortho")), X2.astype(np.float32))
    ccheck(lambda L, z: (L.fft.irfft(z), L.fft.ifft2(z)), Z2.astype(np.complex64))


@pytest.mark.parametrize("loss", [
    lambda L, x: L.fft.fft(x).abs().sum(),
    lambda L, x: L.view_as_real(L.fft.rfft(x)).pow(2).sum(),
    lambda L, x: L.fft.irfft(L.fft.rfft(x) * L.tensor([1.0, 0.5, 0.25, 0.0], dtype=L.float64), n=6),
    lambda L, x: L.fft.irfft(L.fft.rfft(x, norm="ortho") * 1j, n=6, norm="ortho").sum(),
    lambda L, x: L.fft.ifft(L.fft.fft(x) * x).real.pow(2).sum(),
    lambda L, x: L.fft.rfft2(x).abs().sum() + L.fft.fftn(x).angle().sum(),
    lambda L, x: L.fft.irfftn(L.fft.rfftn(x), s=x.shape).sum(),
])
def test_losses_through_transforms(loss):
    ccheck(loss, X2)


def test_complex_and_real_inputs_together():
    ccheck(lambda L, x, z: L.fft.ifft(L.fft.fft(x) * z), X, Z)
    ccheck(lambda L, x, z: L.fft.irfft(L.fft.rfft(x) * z[:4], n=6), X, Z)


def test_saved_attributes():
    for L in (torch, hookgrad):
        x = L.tensor(X, requires_grad=True)
        f = L.fft.rfft(x, norm="ortho").grad_fn
        assert (tuple(f._saved_dim), f._saved_normalization, f._saved_onesided) == ((0,), 1, True)
        assert f._saved_self.shape == x.shape
        f = L.fft.ifft(L.fft.fft(x), norm="forward").grad_fn
        assert (tuple(f._saved_dim), f._saved_normalization, f._saved_forward) == ((0,), 0, False)
        f = L.fft.irfft(L.fft.rfft(x), n=7).grad_fn
        assert (tuple(f._saved_dim), f._saved_normalization) == ((0,), 2)


# ------------------------------------------------------------------------------------ helpers
@pytest.mark.parametrize("n", [1, 4, 5])
@pytest.mark.parametrize("d", [1.0, 0.3])
def test_fftfreq(n, d):
    same(torch.fft.fftfreq(n, d), hookgrad.fft.fftfreq(n, d), "fftfreq")
    same(torch.fft.rfftfreq(n, d), hookgrad.fft.rfftfreq(n, d), "rfftfreq")
    same(torch.fft.fftfreq(n, d, dtype=torch.float64), hookgrad.fft.fftfreq(n, d, dtype=hookgrad.float64), "f64")
    assert hookgrad.fft.fftfreq(n, requires_grad=True).requires_grad


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), [1]])
def test_fftshift(dim):
    ccheck(lambda L, x: (L.fft.fftshift(x, dim), L.fft.ifftshift(x, dim), L.fft.ifftshift(L.fft.fftshift(x, dim), dim)),
           X3)
    ccheck(lambda L, z: L.fft.fftshift(z, dim), Z3)


# ------------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("bad", [
    lambda L: L.fft.fft(L.ones(4), dim=1),
    lambda L: L.fft.fft(L.ones(4), n=0),
    lambda L: L.fft.fftn(L.ones(4), s=(2, 2)),
    lambda L: L.fft.fft(L.ones(4, dtype=L.float16)),
    lambda L: L.fft.fft(L.ones(4), norm="bad"),
    lambda L: L.fft.rfft(L.ones(4, dtype=L.complex64)),
    lambda L: L.fft.fftn(L.ones(2, 2), dim=(0, 0)),
    lambda L: L.fft.fftn(L.ones(2, 2), s=(2,), dim=(0, 1)),
    lambda L: L.fft.irfft(L.ones(1, dtype=L.complex64)),
    lambda L: L.fft.fft([1.0, 2.0]),
    lambda L: L.fft.rfftn(L.ones(2, 2, dtype=L.complex64)),
])
def test_errors_as_torch(bad):
    with pytest.raises(Exception) as t_err:
        bad(torch)
    with pytest.raises(type(t_err.value)) as h_err:
        bad(hookgrad)
    assert str(t_err.value)[:30] == str(h_err.value)[:30]


def test_out_argument():
    for L in (torch, hookgrad):
        out = L.empty(4, dtype=L.complex128)
        r = L.fft.rfft(L.tensor(X), out=out)
        assert r is out
    same(torch.fft.rfft(torch.tensor(X)), out, "out")
