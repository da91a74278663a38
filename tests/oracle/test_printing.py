"""Differential tests of tensor repr/str: hookgrad must print exactly what torch 2.13 prints."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import hookgrad


@pytest.fixture(autouse=True)
def _restore_printoptions():
    yield
    torch.set_printoptions(profile="default", sci_mode=None)
    hookgrad.set_printoptions(profile="default", sci_mode=None)


def both(a, requires_grad=False):
    """The same data as a torch tensor and a hookgrad tensor."""
    t, h = torch.tensor(a.copy()), hookgrad.tensor(a.copy())
    if requires_grad:
        t.requires_grad_(True)
        h.requires_grad_(True)
    return t, h


def assert_same(a, requires_grad=False):
    t, h = both(a, requires_grad)
    assert repr(h) == repr(t)
    assert str(h) == str(t)


R = np.random.RandomState(1234)
F32, F64, F16 = np.float32, np.float64, np.float16
CASES = {
    "seed_ints_as_float": np.array([2., 4., 6.], F32),
    "seed_aligned": np.array([28., 64., 108.], F32),
    "seed_fixed_2d": np.array([[1., 2.5], [5., 8.5]], F32),
    "seed_int_2d": np.array([[2., 10.], [30., 68.]], F32),
    "seed_large_int": np.full(4, 20200910., F32),
    "seed_neg": np.array([[-6.1532]], F32),
    "scalar_float": np.array(3., F32),
    "scalar_frac": np.array(-2.71828, F32),
    "scalar_tiny": np.array(1.5e-7, F32),
    "scalar_int": np.array(7, np.int64),
    "scalar_int32": np.array(-7, np.int32),
    "scalar_bool": np.array(True),
    "scalar_nan": np.array(np.nan, F32),
    "scalar_f64": np.array(0.1, F64),
    "scalar_f16": np.array(1.5, F16),
    "zeros": np.zeros(5, F32),
    "neg_zero": np.array([-0., 0., 1.], F32),
    "randn_1d": R.randn(7).astype(F32),
    "randn_2d": R.randn(4, 5).astype(F32),
    "randn_3d": R.randn(2, 3, 4).astype(F32),
    "randn_4d": R.randn(2, 2, 3, 2).astype(F32),
    "randn_f64": R.randn(3, 4),
    "randn_f16": R.randn(3, 4).astype(F16),
    "mixed_mag": np.array([1e-3, 1., 1e4], F32),
    "ratio_edge": np.array([1., 1000.], F32),
    "ratio_over": np.array([1., 1000.5], F32),
    "big": np.array([1e8, 2e8], F32),
    "huge_f64": np.array([1e200, -3e-150], F64),
    "small": np.array([1e-5, 2e-5], F32),
    "nan_inf": np.array([np.nan, np.inf, -np.inf, 1.5], F32),
    "nan_inf_int": np.array([np.nan, np.inf, -np.inf, 2.], F32),
    "only_nonfinite": np.array([np.nan, np.inf, 0.], F32),
    "nan_inf_sci": np.array([np.nan, 1e-8, 1.], F64),
    "int64": np.arange(-5, 6, dtype=np.int64),
    "int32": np.array([[1, -200], [30000, 4]], np.int32),
    "int16": np.array([1, 2], np.int16),
    "int8": np.array([-128, 127], np.int8),
    "uint8": np.array([0, 255], np.uint8),
    "bool": np.array([True, False]),
    "bool_2d": np.array([[True], [True]]),
    "long_row_wraps": R.randn(40).astype(F32),
    "long_row_f64": R.randn(30).astype(F64) * 100,
    "long_int_row": np.arange(100, dtype=np.int64) * 1234567,
    "wide_2d": R.randn(3, 20).astype(F32),
    "summ_1d": R.randn(2000).astype(F32),
    "summ_1d_int": np.arange(1001, dtype=np.int32),
    "summ_2d": R.randn(40, 50).astype(F32),
    "summ_2d_narrow": R.randn(500, 3).astype(F32),
    "summ_3d": R.randn(12, 10, 11).astype(F64),
    "summ_4d": (R.randn(4, 5, 6, 7) * 1e5).astype(F32),
    "summ_sci": np.logspace(-10, 10, 1500).astype(F64),
    "summ_bool": R.rand(30, 40) > 0.5,
    "summ_hidden_nan": np.r_[np.ones(3), np.nan, 1e-9, np.ones(1000), 2.5].astype(F32),
    "empty_1d": np.zeros(0, F32),
    "empty_2d": np.zeros((0, 3), F32),
    "empty_3d_int": np.zeros((2, 0, 1), np.int64),
    "empty_f64": np.zeros(0, F64),
    "empty_int": np.zeros(0, np.int64),
    "empty_bool": np.zeros((0,), bool),
    "empty_f16": np.zeros((3, 0), F16),
    "f16_large": np.array([65504., -1.], F16),
    "f16_frac": np.array([0.1, 0.2, 0.3], F16),
    "rounding_carry": np.array([9.99996, 0.5], F64),
}


@pytest.mark.parametrize("name", list(CASES))
def test_repr_matches(name):
    assert_same(CASES[name])


@pytest.mark.parametrize("name", ["randn_2d", "scalar_float", "long_row_f64", "empty_2d", "summ_2d", "f16_frac",
                                  "seed_int_2d"])
def test_requires_grad_leaf(name):
    assert_same(CASES[name], requires_grad=True)


def test_grad_fn_suffix():
    a = R.randn(3, 40)
    for data in (a, a[0, :3].copy(), np.float64(2.0)):
        t, h = both(np.asarray(data), requires_grad=True)
        assert repr(h * 2) == repr(t * 2)
        assert repr(h + 1) == repr(t + 1)


def test_parameter():
    a = R.randn(2, 3).astype(F32)
    assert repr(hookgrad.nn.Parameter(hookgrad.tensor(a))) == repr(torch.nn.Parameter(torch.tensor(a)))
    no_grad = hookgrad.nn.Parameter(hookgrad.tensor(a), requires_grad=False)
    assert repr(no_grad) == repr(torch.nn.Parameter(torch.tensor(a), requires_grad=False))
    assert repr(hookgrad.nn.Buffer(hookgrad.tensor(a))) == repr(torch.nn.Buffer(torch.tensor(a)))


def test_containers_and_size():
    t, h = both(np.array([[1., 2.], [3., 4.]], F32))
    assert repr([h, h[0]]) == repr([t, t[0]])
    assert str((h, 1)) == str((t, 1))
    assert repr(h.shape) == repr(t.shape) == "torch.Size([2, 2])"
    assert str(hookgrad.Size([])) == str(torch.Size([]))


def test_default_dtype_float64():
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        hookgrad.set_default_dtype(hookgrad.float64)
        for a in (np.array([1.5, 2.], F64), np.array([1.5], F32), np.zeros((0, 2), F64), np.zeros(0, F32)):
            assert_same(a)
    finally:
        torch.set_default_dtype(old)
        hookgrad.set_default_dtype(hookgrad.float32)


OPTIONS = [
    dict(precision=2),
    dict(precision=0),
    dict(precision=8),
    dict(threshold=5),
    dict(threshold=5, edgeitems=1),
    dict(threshold=5, edgeitems=0),
    dict(edgeitems=1),
    dict(linewidth=30),
    dict(linewidth=5),
    dict(linewidth=200),
    dict(sci_mode=True),
    dict(sci_mode=False),
    dict(profile="short"),
    dict(profile="full"),
    dict(profile="short", precision=6),
]
OPTION_CASES = ["seed_fixed_2d", "seed_int_2d", "randn_3d", "summ_1d", "summ_2d", "summ_1d_int", "mixed_mag",
                "nan_inf", "huge_f64", "scalar_frac", "bool", "empty_2d", "long_row_f64", "int32"]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_printoptions(opts):
    torch.set_printoptions(**opts)
    hookgrad.set_printoptions(**opts)
    for name in OPTION_CASES:
        t, h = both(CASES[name], requires_grad=name == "long_row_f64")
        assert repr(h) == repr(t), name


def test_set_printoptions_resets_sci_mode():
    for lib in (torch, hookgrad):
        lib.set_printoptions(sci_mode=True)
        lib.set_printoptions(precision=3)
    assert_same(np.array([1.5, 2.25], F32))


def test_linewidth_suffix_wrap():
    torch.set_printoptions(linewidth=40)
    hookgrad.set_printoptions(linewidth=40)
    for a in (R.randn(5).astype(F64), R.randn(2, 4).astype(F16), np.arange(6, dtype=np.int32)):
        assert_same(a, requires_grad=a.dtype.kind == "f")


_DTYPES = st.sampled_from([F16, F32, F64, np.int64, np.int32, np.uint8, np.bool_])


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=0, max_size=4), dtype=_DTYPES, seed=st.integers(0, 2 ** 31),
       exp=st.integers(-12, 12), spread=st.integers(0, 8), special=st.booleans(), intlike=st.booleans())
def test_random_arrays(shape, dtype, seed, exp, spread, special, intlike):
    rng = np.random.RandomState(seed)
    n = int(np.prod(shape))
    mag = 10.0 ** (exp + rng.uniform(-spread, spread, size=n))
    vals = rng.choice([-1., 1.], size=n) * mag
    if intlike:
        vals = np.round(vals)
    if special and n:
        vals[rng.randint(0, n, size=max(1, n // 5))] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0])
    if dtype is np.bool_:
        a = (vals > 0).reshape(shape)
    elif np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        a = np.clip(np.nan_to_num(vals), info.min, info.max / 2).astype(dtype).reshape(shape)
    else:
        with np.errstate(over="ignore"):
            a = vals.astype(dtype).reshape(shape)
    assert_same(a)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(900, 2100), threshold=st.sampled_from([1000, 50, 2000]), edgeitems=st.integers(0, 4),
       seed=st.integers(0, 2 ** 31), ndim=st.integers(1, 3))
def test_random_summarized(n, threshold, edgeitems, seed, ndim):
    rng = np.random.RandomState(seed)
    shape = {1: (n,), 2: (n // 30, 30), 3: (n // 60, 6, 10)}[ndim]
    a = (rng.randn(*shape) * 10.0 ** rng.randint(-3, 6)).astype(F32)
    torch.set_printoptions(threshold=threshold, edgeitems=edgeitems)
    hookgrad.set_printoptions(threshold=threshold, edgeitems=edgeitems)
    assert_same(a)
