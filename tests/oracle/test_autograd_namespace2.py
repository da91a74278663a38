"""torch.autograd's smaller names against torch: the legacy variable module and function, is_tensor_like,
profiler.record_function / profile as tools use them, and forward_ad's names."""
import importlib

import pytest
import torch

import hookgrad


def test_variable_module_and_function():
    for lib in (torch, hookgrad):
        mod = importlib.import_module(lib.__name__ + ".autograd.variable")
        assert mod.Variable is lib.autograd.Variable
        assert isinstance(lib.ones(1), mod.Variable)
        with pytest.raises(RuntimeError, match=r"torch.autograd.variable\(...\) is deprecated, use torch.tensor"):
            lib.autograd.variable(lib.ones(1))


def test_is_tensor_like():
    class TF:
        @classmethod
        def __torch_function__(cls, *a, **k):
            return NotImplemented
    for lib in (torch, hookgrad):
        vals = [lib.autograd.is_tensor_like(x) for x in (lib.ones(1), lib.nn.Parameter(lib.ones(1)), 3, [1], TF())]
        assert vals == [True, True, False, False, True], lib.__name__


def test_record_function_context_and_decorator():
    res = []
    for lib in (torch, hookgrad):
        P = importlib.import_module(lib.__name__ + ".autograd.profiler")
        x = lib.ones(2, requires_grad=True)
        with P.record_function("block") as r:
            y = (x * 2).sum()
        y.backward()

        @P.record_function("fn")
        def f(a):
            return a + 1
        res.append((type(r).__name__, x.grad.tolist(), f(3), isinstance(r, P.record_function)))
    assert res[0] == res[1]


def test_profile_wraps_a_region():
    P = importlib.import_module("hookgrad.autograd.profiler")
    x = hookgrad.ones(2, requires_grad=True)
    with P.profile(record_shapes=True) as prof:
        (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    names = {e.key for e in prof.key_averages()}       # the profiler is real now (issue 22): torch.profiler's events
    assert "aten::mul" in names and "aten::sum" in names
    with P.profile(enabled=False):
        pass


def test_forward_ad_names_and_the_error_outside_a_level():
    fw = importlib.import_module("hookgrad.autograd.forward_ad")
    for name in ("dual_level", "make_dual", "unpack_dual", "enter_dual_level", "exit_dual_level", "UnpackedDualTensor"):
        assert hasattr(torch.autograd.forward_ad, name) and hasattr(fw, name)
    errors = []         # forward AD exists now (issue 27): outside a level, make_dual refuses as PyTorch's does
    for lib, mod in ((torch, torch.autograd.forward_ad), (hookgrad, fw)):
        with pytest.raises(RuntimeError) as e:
            mod.make_dual(lib.ones(1), lib.ones(1))
        errors.append(str(e.value).splitlines()[0])
    assert errors[0] == errors[1]
