"""PyTorch's rules for the requires_grad flag, compared with torch: only float (and complex) tensors can
require grad, only a leaf's flag can be changed, the value must be a bool; a rejected change leaves the
tensor and its graph as they were."""
import numpy as np
import pytest
import torch

import hookgrad


def _outcome(lib, fn):
    try:
        r = fn(lib)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return "ok", r


CASES = {
    "int_setter": lambda L: setattr(L.ones(3, dtype=L.int64), "requires_grad", True),
    "bool_setter": lambda L: setattr(L.ones(3, dtype=L.bool), "requires_grad", True),
    "int_setter_false": lambda L: setattr(L.ones(3, dtype=L.int64), "requires_grad", False),
    "int_method": lambda L: L.ones(3, dtype=L.int64).requires_grad_(),
    "nonleaf_false": lambda L: setattr(L.ones(2, requires_grad=True) * 2, "requires_grad", False),
    "nonleaf_true": lambda L: setattr(L.ones(2, requires_grad=True) * 2, "requires_grad", True),
    "nonleaf_method_false": lambda L: (L.ones(2, requires_grad=True) * 2).requires_grad_(False),
    "nonleaf_method_true": lambda L: (L.ones(2, requires_grad=True) * 2).requires_grad_(True).requires_grad,
    "view_of_leaf_false": lambda L: L.ones(2, requires_grad=True)[0].requires_grad_(False),
    "not_bool_str": lambda L: setattr(L.ones(2), "requires_grad", "yes"),
    "not_bool_int": lambda L: setattr(L.ones(2), "requires_grad", 1),
    "not_bool_none": lambda L: setattr(L.ones(2), "requires_grad", None),
    "leaf_toggle": lambda L: (lambda t: (setattr(t, "requires_grad", True), setattr(t, "requires_grad", False),
                                         t.requires_grad))(L.ones(2)),
    "detached_false": lambda L: L.ones(2, requires_grad=True).detach().requires_grad_(False).requires_grad,
    "cast_to_long": lambda L: L.ones(2, requires_grad=True).long().requires_grad,
    "parameter_int": lambda L: L.nn.Parameter(L.ones(2, dtype=L.int64)),
    "parameter_int_no_grad": lambda L: L.nn.Parameter(L.ones(2, dtype=L.int64), requires_grad=False).requires_grad,
    "zeros_int": lambda L: L.zeros(3, dtype=L.int64, requires_grad=True),
    "tensor_int": lambda L: L.tensor([1, 2], requires_grad=True),
    "arange_int": lambda L: L.arange(3, requires_grad=True),
    "full_int": lambda L: L.full((2,), 3, requires_grad=True),
    "randint": lambda L: L.randint(0, 3, (2,), requires_grad=True),
    "zeros_like_int": lambda L: L.zeros_like(L.ones(2, dtype=L.int64), requires_grad=True),
    "float64_ok": lambda L: L.ones(2, dtype=L.float64, requires_grad=True).requires_grad,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_requires_grad_rule(name):
    t, h = _outcome(torch, CASES[name]), _outcome(hookgrad, CASES[name])
    assert h[0] == t[0], (t, h)
    if t[0] == "ok":
        assert (h[1] is None) == (t[1] is None) and (not isinstance(t[1], bool) or h[1] == t[1]), (t, h)
    else:
        assert h[1].startswith(t[1]), (t, h)


def test_rejected_flag_change_keeps_the_graph():
    # hookgrad used to accept this and silently cut y out of the graph (a wrong gradient)
    res = []
    for lib in (torch, hookgrad):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        with pytest.raises(RuntimeError):
            y.requires_grad = False
        assert y.requires_grad and y.grad_fn is not None
        (y * 3).sum().backward()
        res.append(x.grad.numpy().copy())
    np.testing.assert_allclose(res[1], res[0])
