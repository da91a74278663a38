"""The array-module seam: tensors made from nothing follow the default module, ``*_like`` and ``new_*``
follow their input's module, random numbers are PyTorch's whatever the module, and ``numpy()`` gives a
NumPy ndarray as torch's does. Run under the test backend's module (tests/backend/xarray.py)."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad import _array
from backend.xarray import XArray, xp
from oracle import assert_same


@pytest.fixture
def xdefault():
    prev = _array.set_default_module(xp)
    yield
    _array.set_default_module(prev)


CREATIONS = {
    "tensor": lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]),
    "tensor_int": lambda L: L.tensor([1, 2, 3]),
    "as_tensor": lambda L: L.as_tensor([1.5, 2.5]),
    "zeros": lambda L: L.zeros(2, 3),
    "ones": lambda L: L.ones(2, dtype=L.float64),
    "empty": lambda L: L.empty(0),
    "full": lambda L: L.full((2, 2), 7),
    "arange": lambda L: L.arange(5),
    "arange_f": lambda L: L.arange(0.0, 1.0, 0.25),
    "linspace": lambda L: L.linspace(-1, 1, 7),
    "logspace": lambda L: L.logspace(0, 2, 3),
    "eye": lambda L: L.eye(3, 2),
    "scalar_tensor": lambda L: L.scalar_tensor(3.5),
    "hann_window": lambda L: L.hann_window(6),
    "tril_indices": lambda L: L.tril_indices(3, 3),
    "legacy": lambda L: L.Tensor([1, 2]),
    "legacy_sizes": lambda L: L.FloatTensor(2, 2).zero_(),
    "rand": lambda L: (L.manual_seed(3), L.rand(4, 5))[1],
    "randn": lambda L: (L.manual_seed(3), L.randn(40))[1],
    "randint": lambda L: (L.manual_seed(3), L.randint(0, 9, (6,)))[1],
    "randperm": lambda L: (L.manual_seed(3), L.randperm(7))[1],
    "normal": lambda L: (L.manual_seed(3), L.normal(1.0, 2.0, (5,)))[1],
    "fill_": lambda L: L.zeros(3).fill_(2.5),
    "normal_": lambda L: (L.manual_seed(3), L.zeros(20).normal_())[1],
    "uniform_": lambda L: (L.manual_seed(3), L.zeros(5).uniform_(-1, 1))[1],
    "one_hot": lambda L: L.nn.functional.one_hot(L.tensor([0, 2, 1])),
    "dropout": lambda L: (L.manual_seed(3), L.nn.functional.dropout(L.ones(8), 0.5))[1],
    "interpolate": lambda L: L.nn.functional.interpolate(L.arange(8.0).reshape(1, 1, 8), scale_factor=2,
                                                          mode="linear"),
    "init_eye_": lambda L: L.nn.init.eye_(L.empty(2, 3)),
    "init_dirac_": lambda L: L.nn.init.dirac_(L.empty(2, 2, 3)),
}


@pytest.mark.parametrize("name", sorted(CREATIONS))
def test_made_from_nothing_follows_the_default_module(name, xdefault):
    t, h = CREATIONS[name](torch), CREATIONS[name](hookgrad)
    assert_same(t, h, name)
    assert isinstance(h._data, XArray), f"{name} made a {type(h._data).__name__}"


LIKES = {
    "zeros_like": lambda L, x: L.zeros_like(x),
    "ones_like": lambda L, x: L.ones_like(x, dtype=L.int64),
    "empty_like": lambda L, x: L.empty_like(x).zero_(),
    "full_like": lambda L, x: L.full_like(x, 3.0),
    "rand_like": lambda L, x: (L.manual_seed(5), L.rand_like(x))[1],
    "randn_like": lambda L, x: (L.manual_seed(5), L.randn_like(x))[1],
    "randint_like": lambda L, x: (L.manual_seed(5), L.randint_like(x, 10))[1],
    "new_zeros": lambda L, x: x.new_zeros(2),
    "new_ones": lambda L, x: x.new_ones((1, 2)),
    "new_full": lambda L, x: x.new_full((2,), 4.0),
    "tensor_of_tensor": lambda L, x: L.tensor(x),
}


@pytest.mark.parametrize("name", sorted(LIKES))
def test_like_follows_the_input_module_not_the_default(name):
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    h_in = hookgrad.Tensor._make(xp.asarray(a))       # an XArray tensor while NumPy is the default
    assert _array.default_module() is np or _array.default_module() is xp
    t, h = LIKES[name](torch, torch.tensor(a)), LIKES[name](hookgrad, h_in)
    assert_same(t, h, name)
    assert isinstance(h._data, XArray), f"{name} made a {type(h._data).__name__}"


def test_numpy_gives_a_numpy_array_sharing_memory(xdefault):
    h = hookgrad.zeros(3)
    for a in (h.numpy(), np.asarray(h)):
        assert type(a) is np.ndarray
    h.numpy()[0] = 5.0                        # torch: numpy() shares the tensor's memory
    assert h[0].item() == 5.0


def test_from_numpy_shares_memory_under_another_module(xdefault):
    a = np.zeros(3, np.float32)
    h = hookgrad.from_numpy(a)
    assert isinstance(h._data, XArray)
    a[1] = 2.0                                # torch: from_numpy shares the array's memory
    assert h.tolist() == [0.0, 2.0, 0.0]


def test_xp_is_the_storage_module():
    assert hookgrad.zeros(1)._xp is _array.default_module()
    assert hookgrad.Tensor._make(xp.zeros(1))._xp is xp
    assert hookgrad.Tensor._make(np.zeros(1))._xp is np
