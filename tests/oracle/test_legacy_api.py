"""The legacy tensor API old code and tools still use, compared with torch at run time."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same


def both(expr):
    res = {}
    for lib in (torch, hookgrad):
        x = lib.arange(6.).reshape(2, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                res[lib] = ("ok", eval(expr))
            except Exception as e:      # noqa: BLE001
                res[lib] = ("error", type(e).__name__)
    return res[torch], res[hookgrad]


@pytest.mark.parametrize("expr", [
    "lib.LongTensor([1, 2])", "lib.FloatTensor([1, 2])", "lib.DoubleTensor([[1, 2]])", "lib.IntTensor([3])",
    "lib.ShortTensor([3])", "lib.CharTensor([3])", "lib.ByteTensor([3])", "lib.BoolTensor([1, 0])",
    "lib.HalfTensor([1.5])", "lib.FloatTensor(2, 3).shape", "lib.LongTensor(4).dtype", "lib.FloatTensor().shape",
    "lib.Tensor([1, 2])", "lib.Tensor(2, 3).shape", "lib.LongTensor(lib.tensor([1, 2]))",
    "lib.LongTensor(lib.tensor([1., 2.]))",
    "isinstance(x, lib.FloatTensor)", "isinstance(x, lib.DoubleTensor)", "isinstance(x.long(), lib.LongTensor)",
    "isinstance(x.double(), lib.DoubleTensor)", "isinstance(x, lib.Tensor)", "issubclass(lib.FloatTensor, lib.Tensor)",
    "repr(lib.FloatTensor)", "lib.FloatTensor.dtype", "lib.LongTensor.__name__",
    "x.type()", "x.long().type()", "x.type(lib.LongTensor)", "x.type('torch.LongTensor')", "x.type(lib.float64)",
    "x.type('torch.DoubleTensor').type()",
    "lib.autograd.Variable(x, requires_grad=True).requires_grad", "isinstance(x, lib.autograd.Variable)",
    "type(lib.autograd.Variable(x)) is lib.Tensor",
    "x.view(lib.int32)", "x.view(lib.int64)", "x.view(lib.float16)", "x.view(lib.uint8).shape",
    "x.view(dtype=lib.int32)", "x[:, :2].view(lib.float64)", "x.t().view(lib.int64)",
    "x.untyped_storage().nbytes()", "x.untyped_storage().size()", "x.untyped_storage().data_ptr() == x.data_ptr()",
    "x[1].untyped_storage().data_ptr() == x[0].untyped_storage().data_ptr()",
    "x[1].data_ptr() - x.untyped_storage().data_ptr()", "x[1].storage_offset()", "x[1:, 1:].storage_offset()",
    "x.storage().size()", "x[1].storage().size()", "x.storage().dtype", "x.storage().element_size()",
    "x.storage().tolist()", "x.storage().nbytes()", "x.long().storage().tolist()",
    "lib.is_storage(x.storage())", "lib.is_storage(x.untyped_storage())", "lib.is_storage(x)",
    "x.new(2, 3).shape", "x.new([1, 2])", "x.new().shape", "x.long().new([1, 2])", "x.new(lib.Size([2])).shape",
    "lib.typename(x)", "lib.typename(x.long())", "lib.typename(1)", "lib.typename(lib.nn.Linear(1, 1))",
])
def test_legacy_api_as_pytorch(expr):
    t, h = both(expr)
    assert t[0] == h[0], (expr, t, h)
    if t[0] == "ok":
        tv, hv = t[1], h[1]
        if isinstance(tv, torch.Tensor):
            assert_same(tv, hv, expr)
        else:
            assert str(tv) == str(hv), (expr, tv, hv)
    else:
        assert t[1] == h[1], (expr, t, h)


def test_set_default_tensor_type():
    for lib in (torch, hookgrad):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.set_default_tensor_type(lib.DoubleTensor)
            try:
                assert lib.tensor([1.]).dtype == lib.float64 and lib.zeros(1).type() == "torch.DoubleTensor"
            finally:
                lib.set_default_tensor_type("torch.FloatTensor")
        assert lib.get_default_dtype() == lib.float32


def test_load_state_dict_with_torch_tensors_says_so():
    m = hookgrad.nn.Linear(2, 2)
    with pytest.raises(RuntimeError) as e:          # PyTorch's type for a state_dict of the wrong kind
        m.load_state_dict(torch.nn.Linear(2, 2).state_dict())
    assert "PyTorch tensor" in str(e.value) and "hookgrad.tensor(" in str(e.value)
    assert "expected torch.Tensor or Tensor-like object from checkpoint" in str(e.value)   # PyTorch's text first
    sd = {k: hookgrad.tensor(v.numpy()) for k, v in torch.nn.Linear(2, 2).state_dict().items()}
    m.load_state_dict(sd)                           # the suggested conversion works
    np.testing.assert_array_equal(m.weight.detach().numpy(), sd["weight"].numpy())
