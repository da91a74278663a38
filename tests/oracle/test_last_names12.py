"""Issue 12, the last torch names: torch.stft / istft (and the Tensor methods), torch.signal.windows,
torch.poisson / binomial, torch.igamma / igammac (and the Tensor methods), and nn.functional's typing and
documentation helpers."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import check, assert_same

f64 = np.float64
LIBS = (torch, hookgrad)


def r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(f64)


def quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


# --------------------------------------------------------------------------------------------- stft / istft
STFT = {
    "default": lambda L, x, w: L.stft(x, 8, return_complex=True),
    "hann_hop3": lambda L, x, w: L.stft(x, 8, hop_length=3, window=w, return_complex=True),
    "win6_constant": lambda L, x, w: L.stft(x, 8, win_length=6, window=w[:6], pad_mode="constant",
                                            return_complex=True),
    "no_center_norm": lambda L, x, w: L.stft(x, 8, center=False, normalized=True, window=w, return_complex=True),
    "twosided": lambda L, x, w: L.stft(x, 8, onesided=False, window=w, return_complex=True),
    "align": lambda L, x, w: L.stft(x, 8, win_length=4, window=w[:4], center=False, align_to_window=True,
                                    return_complex=True),
    "batch_replicate": lambda L, x, w: L.stft(x.reshape(2, 12), 4, hop_length=2, pad_mode="replicate",
                                              window=w[:4], return_complex=True),
    "method_real_out": lambda L, x, w: x.stft(8, window=w, return_complex=False),
    "complex_input": lambda L, x, w: L.stft(L.complex(x, x.flip(0)), 8, window=w, return_complex=True),
}


@pytest.mark.parametrize("name", sorted(STFT))
def test_stft(name):
    fn = STFT[name]

    def loss(L, x, w):
        s = quiet(lambda: fn(L, x, w))
        return (s.abs() if s.is_complex() else s), s.abs().sum() if s.is_complex() else s.sum()
    check(loss, r(24), np.abs(r(8, seed=1)) + 0.5, second=name in ("hann_hop3", "complex_input"))


def test_stft_values_and_grad_fn():
    x = r(20)
    t = torch.stft(torch.tensor(x), 8, window=torch.hann_window(8, dtype=torch.float64), return_complex=True)
    h = hookgrad.stft(hookgrad.tensor(x), 8, window=hookgrad.hann_window(8, dtype=hookgrad.float64),
                      return_complex=True)
    np.testing.assert_allclose(h.detach().numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


ISTFT = {
    "roundtrip_hann": lambda L, s, w: L.istft(s, 8, window=w),
    "length": lambda L, s, w: L.istft(s, 8, window=w, length=22),
    "longer": lambda L, s, w: L.istft(s, 8, window=w, length=30),
    "normalized_hop4": lambda L, s, w: L.istft(s, 8, hop_length=4, window=w, normalized=True),
    "twosided_real": lambda L, s, w: L.istft(s, 8, window=w, onesided=False),
    "twosided_complex": lambda L, s, w: L.istft(s, 8, window=w, onesided=False, return_complex=True),
    "win6": lambda L, s, w: L.istft(s, 8, win_length=6, window=w[1:7]),
    "no_center": lambda L, s, w: L.istft(s, 8, window=w, center=False),
    "method_batched": lambda L, s, w: s.unsqueeze(0).expand(2, -1, -1).istft(8, window=w),
}


@pytest.mark.parametrize("name", sorted(ISTFT))
def test_istft(name):
    two = name.startswith("twosided")

    def fn(L, x, w):
        s = L.stft(x, 8, window=w, onesided=not two, return_complex=True) * (1 + 0.1 * x[:1])
        y = quiet(lambda: ISTFT[name](L, s, w))
        return y.abs() if y.is_complex() else y
    check(fn, r(24), np.abs(r(8, seed=1)) + 0.5, second=name == "roundtrip_hann")


def test_istft_inverts_stft():
    x = hookgrad.tensor(r(3, 40))
    w = hookgrad.hann_window(16, dtype=hookgrad.float64)
    y = hookgrad.istft(hookgrad.stft(x, 16, 4, window=w, return_complex=True), 16, 4, window=w, length=40)
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-12)


BAD_STFT = [
    (lambda L, x: L.stft(x, 8), RuntimeError, "return_complex parameter be given"),
    (lambda L, x: L.stft(x, 30, center=False, return_complex=True), RuntimeError, "expected 0 < n_fft < 20"),
    (lambda L, x: L.stft(x, 8, hop_length=0, return_complex=True), RuntimeError, "expected hop_length > 0"),
    (lambda L, x: L.stft(x, 8, win_length=9, return_complex=True), RuntimeError, "expected 0 < win_length <= n_fft"),
    (lambda L, x: L.stft(x, 8, window=L.ones(5), return_complex=True), RuntimeError, "1D window tensor of size"),
    (lambda L, x: L.stft(x.reshape(1, 2, 10), 4, return_complex=True), RuntimeError, "expected a 1D or 2D tensor"),
    (lambda L, x: L.stft(x, 8, align_to_window=True, return_complex=True), RuntimeError, "align_to_window"),
    (lambda L, x: L.stft(x.to(L.complex128), 8, onesided=True), RuntimeError, "Cannot have onesided"),
    (lambda L, x: L.stft(L.arange(20), 8, return_complex=True), RuntimeError, "floating point or complex"),
    (lambda L, x: L.istft(x, 8), RuntimeError, "complex-valued input"),
    (lambda L, x: L.istft(L.stft(x, 8, return_complex=True), 8, onesided=False), RuntimeError,
     "to match n_fft when onesided=False"),
    (lambda L, x: L.istft(L.stft(x, 8, return_complex=True), 8, window=L.zeros(8, dtype=L.float64)),
     RuntimeError, "window overlap add min"),
    (lambda L, x: L.istft(L.stft(x, 8, return_complex=True), 8, return_complex=True), RuntimeError,
     "Cannot have onesided"),
    (lambda L, x: L.istft(L.stft(x, 8, return_complex=True)[None, None], 8), RuntimeError,
     "expected a tensor with 3 or 4 dimensions, but got 5"),
]


@pytest.mark.parametrize("i", range(len(BAD_STFT)))
def test_stft_errors(i):
    fn, exc, text = BAD_STFT[i]
    for L in LIBS:
        with pytest.raises(exc, match=text):
            quiet(lambda: fn(L, L.tensor(r(20))))


def test_stft_warnings():
    # torch warns once per process (TORCH_WARN_ONCE; these are torch's texts): hookgrad's are checked alone
    L = hookgrad
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        L.stft(L.tensor(r(20)), 8, window=L.ones(8, dtype=L.float64), return_complex=False)
    if True:
        with pytest.warns(UserWarning, match="shorter than the length parameter"):
            L.istft(L.stft(L.tensor(r(20)), 8, return_complex=True), 8, window=L.ones(8, dtype=L.float64), length=40)


# ---------------------------------------------------------------------------------------- torch.signal.windows
WINDOWS = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {"tau": 2.5}),
           ("exponential", {"center": 1.0, "sym": False}), ("gaussian", {"std": 0.7}),
           ("general_cosine", {"a": [0.5, 0.3, 0.2]}), ("general_hamming", {"alpha": 0.6}), ("hamming", {}),
           ("hann", {}), ("kaiser", {"beta": 5.0}), ("nuttall", {})]


@pytest.mark.parametrize("name,kw", WINDOWS)
@pytest.mark.parametrize("M", [0, 1, 2, 7, 10])
def test_windows(name, kw, M):
    for sym in (True, False):
        if kw.get("center") is not None and sym:
            continue
        kws = {**kw, "sym": sym} if "sym" not in kw else kw
        for dt in ("float32", "float64"):
            t = getattr(torch.signal.windows, name)(M, dtype=getattr(torch, dt), **kws)
            h = getattr(hookgrad.signal.windows, name)(M, dtype=getattr(hookgrad, dt), **kws)
            assert_same(t, h, f"{name}({M}, {kws}, {dt})", tol=(1e-6, 1e-7) if dt == "float32" else None)
    assert_same(getattr(torch.signal.windows, name)(M, **kw), getattr(hookgrad.signal.windows, name)(M, **kw))


def test_windows_requires_grad_and_import():
    from hookgrad.signal import windows
    for L, w in ((torch, torch.signal.windows), (hookgrad, windows)):
        e = w.exponential(5, requires_grad=True)
        assert e.requires_grad and e.grad_fn is not None and e.grad_fn.name() == "ExpBackward0"


BAD_WINDOWS = [
    (lambda w, L: w.hann(-1), ValueError, "non-negative window length"),
    (lambda w, L: w.hann(4, dtype=L.int64), ValueError, "expects float32 or float64 dtypes"),
    (lambda w, L: w.exponential(4, tau=0), ValueError, "Tau must be positive"),
    (lambda w, L: w.exponential(4, center=1.0), ValueError, "Center must be None"),
    (lambda w, L: w.gaussian(4, std=-1), ValueError, "Standard deviation must be positive"),
    (lambda w, L: w.kaiser(4, beta=-1), ValueError, "beta must be non-negative"),
    (lambda w, L: w.general_cosine(4, a=3), TypeError, "Coefficients must be a list/tuple"),
    (lambda w, L: w.general_cosine(4, a=[]), ValueError, "Coefficients cannot be empty"),
]


@pytest.mark.parametrize("i", range(len(BAD_WINDOWS)))
def test_window_errors(i):
    fn, exc, text = BAD_WINDOWS[i]
    for L in LIBS:
        with pytest.raises(exc, match=text):
            fn(L.signal.windows, L)


# ------------------------------------------------------------------------------ poisson / binomial / igamma
def test_poisson_grad_is_zeros_and_seeded():
    for L in LIBS:
        rates = L.tensor([0.0, 1.0, 4.0, 30.0], dtype=L.float64, requires_grad=True)
        s = L.poisson(rates)
        assert s.grad_fn.name() == "PoissonBackward0" and s.dtype == L.float64 and s.shape == (4,)
        assert s[0].item() == 0 and bool((s >= 0).all()) and bool((s == s.round()).all())
        (g,) = L.autograd.grad(s.sum(), rates)
        assert g.tolist() == [0.0] * 4
    # hookgrad's own generator makes its samples reproducible (not PyTorch's numbers: docs/differences.md)
    rates = hookgrad.tensor([2.0, 15.0] * 50)
    a = hookgrad.poisson(rates, generator=hookgrad.Generator().manual_seed(5))
    b = hookgrad.poisson(rates, generator=hookgrad.Generator().manual_seed(5))
    assert a.tolist() == b.tolist()
    hookgrad.manual_seed(1)
    c = hookgrad.poisson(rates)
    hookgrad.manual_seed(1)
    assert hookgrad.poisson(rates).tolist() == c.tolist()
    assert abs(c[::2].mean().item() - 2.0) < 1.0 and abs(c[1::2].mean().item() - 15.0) < 3.0


def test_binomial_not_differentiable():
    for L in LIBS:
        n = L.tensor([5.0, 60.0, 0.0], requires_grad=True)
        s = L.binomial(n, L.tensor([0.3, 0.6, 0.5]))
        assert s.grad_fn.name() == "torch::autograd::NotImplemented"
        assert bool((s >= 0).all()) and bool((s <= n).all()) and s[2].item() == 0
        with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
            s.sum().backward()
        assert L.binomial(L.tensor([[5.0], [6.0]]), L.tensor([0.5, 0.2])).shape == (2, 2)


BAD_SAMPLES = [
    (lambda L: L.poisson(L.tensor([1, 2])), NotImplementedError, "\"poisson_cpu\" not implemented for 'Long'"),
    (lambda L: L.poisson(L.tensor([-1.0, 2.0])), RuntimeError, "invalid Poisson rate"),
    (lambda L: L.poisson([1.0]), TypeError, r"poisson\(\): argument 'input' \(position 1\) must be Tensor"),
    (lambda L: L.binomial(L.tensor([5, 6]), L.tensor([0.5, 0.2])), ValueError, "floating-point dtypes for count"),
    (lambda L: L.binomial(L.tensor([5.0]), L.tensor([0.5], dtype=L.float64)), RuntimeError,
     "Found dtype Double but expected Float"),
    (lambda L: L.igamma(L.tensor([1.0]), 1.0), TypeError, r"igamma\(\): argument 'other' \(position 2\)"),
    (lambda L: L.igammac(L.tensor([1]), L.tensor([1])), NotImplementedError, "igammac_cpu"),
]


@pytest.mark.parametrize("i", range(len(BAD_SAMPLES)))
def test_sample_and_igamma_errors(i):
    fn, exc, text = BAD_SAMPLES[i]
    for L in LIBS:
        with pytest.raises(exc, match=text):
            fn(L)


IGAMMA = {
    "igamma": lambda L, a, x: L.igamma(a, x),
    "igammac": lambda L, a, x: L.igammac(a, x),
    "method_igamma": lambda L, a, x: a.igamma(x),
    "method_igammac_": lambda L, a, x: a.detach().clone().igammac_(x),
    "method_igamma_": lambda L, a, x: (a * 1).igamma_(x),
}


@pytest.mark.parametrize("name", sorted(IGAMMA))
def test_igamma(name):
    a, x = np.abs(r(5)) + 0.5, np.abs(r(5, seed=2)) + 0.1
    check(IGAMMA[name], a, x, requires_grad=[False, True], second=True)
    for L in LIBS:
        out = IGAMMA[name](L, L.tensor(a, requires_grad=True), L.tensor(x))
        want = "IgammacBackward0" if "igammac" in name else "IgammaBackward0"
        if name != "method_igammac_":
            assert out.grad_fn.name() == want
            with pytest.raises(NotImplementedError, match=f"the derivative for '{want[:-9].lower()}: input'"):
                out.sum().backward()


# ------------------------------------------------------------------ nn.functional's typing and doc helpers
def test_functional_helpers():
    import torch.nn.functional as TF
    import hookgrad.nn.functional as HF
    for F in (TF, HF):
        assert F.BroadcastingList1[int] is None and F.BroadcastingList2[int] is None and F.BroadcastingList3 is not None
        assert F.assert_int_or_pair(3, "k", "{} bad") is None and F.assert_int_or_pair((1, 2), "k", "{} bad") is None
        with pytest.raises(AssertionError, match="kernel_size bad"):
            F.assert_int_or_pair([1, 2, 3], "kernel_size", "{} bad")

        def yes(x, flag=False):
            """doc"""
            return ("yes", x)

        def no(x, flag=False):
            return ("no", x)
        fn = F.boolean_dispatch("flag", 1, False, yes, no, "mymod", "pick")
        assert (fn(1), fn(1, True), fn(1, flag=True)) == (("no", 1), ("yes", 1), ("yes", 1))
        assert fn.__name__ == "pick" and fn.__module__ == "mymod" and fn.__doc__ == "doc" == no.__doc__

        def also(x, flag=False):
            """another doc"""
        with pytest.raises(RuntimeError, match="only one function can have a docstring"):
            F.boolean_dispatch("flag", 1, False, yes, also, None, None)
        for name in ("reproducibility_notes", "tf32_notes", "sparse_support_notes"):
            assert sorted(getattr(F, name)) == sorted(getattr(TF, name))
    assert sorted(hookgrad.linalg.common_notes) == sorted(torch.linalg.common_notes)
    assert hookgrad.windows is hookgrad.signal.windows
