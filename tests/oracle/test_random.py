"""manual_seed gives PyTorch's numbers: rand, randn (both of PyTorch's code paths), randint, randperm,
uniform_, normal_, and the generator's state carries across calls like PyTorch's."""
import numpy as np
import pytest
import torch

import hookgrad


def _draws(lib, dtype_name):
    dt = getattr(lib, dtype_name)
    out = [lib.rand(5, dtype=dt), lib.randn(3, dtype=dt), lib.randn(3, dtype=dt), lib.randn(37, dtype=dt),
           lib.randn(2, 16, dtype=dt), lib.randint(-5, 7, (9,)), lib.randperm(11),
           lib.empty(6, dtype=dt).uniform_(-2, 3), lib.empty(40, dtype=dt).normal_(1.5, 0.5),
           lib.empty(5, dtype=dt).normal_(), lib.rand(3, 4, dtype=dt)]
    return out


@pytest.mark.parametrize("seed", [0, 1, 20200910, 2 ** 40 + 7])
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_seeded_draws_match_torch(seed, dtype_name):
    torch.manual_seed(seed)
    ts = _draws(torch, dtype_name)
    hookgrad.manual_seed(seed)
    hs = _draws(hookgrad, dtype_name)
    for t, h in zip(ts, hs):
        assert str(t.dtype) == str(h.dtype) and tuple(t.shape) == tuple(h.shape)
        np.testing.assert_allclose(h.numpy(), t.numpy(), rtol=2e-6, atol=2e-6)


def test_generator_objects_and_state():
    g_t = torch.Generator().manual_seed(3)
    g_h = hookgrad.Generator().manual_seed(3)
    np.testing.assert_allclose(hookgrad.randn(20, generator=g_h).numpy(), torch.randn(20, generator=g_t).numpy(),
                               rtol=2e-6, atol=2e-6)
    st = hookgrad.get_rng_state()
    a = hookgrad.randn(7)
    hookgrad.set_rng_state(st)
    np.testing.assert_array_equal(hookgrad.randn(7).numpy(), a.numpy())
    assert hookgrad.manual_seed(5).initial_seed() == torch.manual_seed(5).initial_seed() == 5


def _intel_mkl_bernoulli():
    # PyTorch draws bernoulli_(p) through MKL streams on Intel CPUs; elsewhere its default CPU kernel runs
    try:
        return "GenuineIntel" in open("/proc/cpuinfo").read()
    except OSError:
        return True


@pytest.mark.skipif(_intel_mkl_bernoulli(), reason="PyTorch uses MKL's bernoulli stream on Intel CPUs")
def test_dropout_and_bernoulli_masks_match_torch():
    out = []
    for lib in (torch, hookgrad):
        lib.manual_seed(11)
        x = lib.ones(3, 4, 5, 5)
        out.append([lib.nn.functional.dropout(x, 0.3), lib.nn.functional.dropout2d(x, 0.5),
                    lib.bernoulli(lib.full((9,), 0.4)), lib.bernoulli(lib.rand(7)), lib.empty(6).bernoulli_(0.2)])
    for t, h in zip(*out):
        np.testing.assert_allclose(h.numpy(), t.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("a,b", [(-0.37, 0.81), (0, 1), (-1 / 3, 1 / 3), (2.5, 7.1), (-100.0, 1e-3)])
def test_uniform_bit_for_bit(dtype, a, b):
    """uniform_'s x * (to - from) + from is fused as PyTorch's CPU kernel fuses it: equal bits, not 1 ulp off."""
    out = []
    for L in (torch, hookgrad):
        L.manual_seed(0)
        out.append(L.empty(20000, dtype=getattr(L, dtype)).uniform_(a, b).numpy())
    assert (out[0] == out[1]).all()


@pytest.mark.parametrize("make", [lambda L: L.nn.Linear(33, 17), lambda L: L.nn.Conv2d(8, 16, 3),
                                  lambda L: L.nn.MultiheadAttention(32, 4)], ids=["linear", "conv", "mha"])
def test_module_init_bit_for_bit(make):
    sd = []
    for L in (torch, hookgrad):
        L.manual_seed(0)
        sd.append({k: v.numpy() for k, v in make(L).state_dict().items()})
    assert list(sd[0]) == list(sd[1])
    for k in sd[0]:
        assert (sd[0][k] == sd[1][k]).all(), k
