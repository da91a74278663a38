"""PyTorch's out= on hookgrad, differentially: the result written into out (values, dtype, shape), the returned
object being out itself, one version bump, the resize warning, the dtype/autograd/type errors, tuple outs.

Which functions take out= is generated from torch (_signatures.torch_has_out): hookgrad takes out= exactly where
PyTorch does, so a function that silently ignored it cannot come back unnoticed.
"""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
import _signatures as S
from oracle import assert_same


def test_out_is_accepted_exactly_where_pytorch_accepts_it():
    rows = S.out_mismatches(("torch", "linalg"))
    assert not rows, f"{len(rows)} function(s) differ from PyTorch on out=:\n" + S.table(rows)


def _run(lib, expr, out_expr):
    x = lib.arange(6.).reshape(2, 3) - 2.5
    y = lib.arange(3.) + 1
    i = lib.tensor([[0, 2, 1], [1, 0, 0]])
    out = eval(out_expr)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    before = [getattr(o, "_version", 0) for o in outs]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = eval(expr)
        except Exception as e:      # noqa: BLE001  (the error's type and first line are compared)
            return ("error", type(e).__name__, str(e).split("\n")[0])
    rs = r if isinstance(r, tuple) else (r,)
    same = [a is b for a, b in zip(rs, outs)]
    return ("ok", r, same, [getattr(o, "_version", 0) - b for o, b in zip(outs, before)],
            [str(m.message).split(" (Triggered internally")[0] for m in w if "resized" in str(m.message)])


CASES = [
    # (call, out)
    ("lib.add(x, y, out=out)", "lib.empty(2, 3)"),
    ("lib.add(x, y, alpha=2, out=out)", "lib.empty(0)"),
    ("lib.add(x, y, out=out)", "lib.empty(5)"),                                  # resized, with the warning
    ("lib.add(x, y, out=out)", "lib.empty(2, 3, dtype=lib.float64)"),            # Float -> Double: castable
    ("lib.add(x, y, out=out)", "lib.empty(2, 3, dtype=lib.int64)"),              # Float -> Long: error
    ("lib.mul(x, 2, out=out)", "lib.empty(2, 3, dtype=lib.bool)"),
    ("lib.add(i, 1, out=out)", "lib.empty(2, 3)"),                               # Long -> Float
    ("lib.sum(x, 0, out=out)", "lib.empty(3, dtype=lib.float64)"),
    ("lib.mean(x, dim=1, keepdim=True, out=out)", "lib.empty(0)"),
    ("lib.exp(x, out=out)", "lib.empty(2, 3)"),
    ("lib.matmul(x, y, out=out)", "lib.empty(2)"),
    ("lib.mm(x, x.t(), out=out)", "lib.empty(0)"),
    ("lib.cat([x, x], out=out)", "lib.empty(4, 3)"),
    ("lib.stack([y, y], 1, out=out)", "lib.empty(0)"),
    ("lib.where(x > 0, x, y, out=out)", "lib.empty(2, 3)"),
    ("lib.clamp(x, -1, 1, out=out)", "lib.empty(2, 3)"),
    ("lib.gt(x, 0, out=out)", "lib.empty(2, 3, dtype=lib.bool)"),
    ("lib.gt(x, 0, out=out)", "lib.empty(2, 3)"),                                # Bool -> Float
    ("lib.argmax(x, 1, out=out)", "lib.empty(2, dtype=lib.int64)"),
    ("lib.cumsum(x, 1, out=out)", "lib.empty(2, 3)"),
    ("lib.norm(x, 2, 1, False, out)", "lib.empty(0)"),                           # out by position
    ("lib.linalg.vector_norm(x, 2, out=out)", "lib.empty(0)"),
    ("lib.tensordot(x, x, 2, out)", "lib.empty(0)"),
    # factories take out's dtype; a different explicit dtype is an error
    ("lib.zeros(2, 3, out=out)", "lib.empty(6, dtype=lib.int64)"),
    ("lib.ones((2,), out=out)", "lib.empty(2, dtype=lib.float64)"),
    ("lib.arange(5, out=out)", "lib.empty(0)"),
    ("lib.arange(0, 1, 0.25, out=out)", "lib.empty(4, dtype=lib.float64)"),
    ("lib.full((2,), 7, out=out)", "lib.empty(2, dtype=lib.int32)"),
    ("lib.linspace(0, 1, 5, out=out)", "lib.empty(5)"),
    ("lib.eye(2, out=out)", "lib.empty(0)"),
    ("lib.zeros(3, out=out, dtype=lib.float32)", "lib.empty(3, dtype=lib.int64)"),
    ("lib.randn(3, out=out).mul(0)", "lib.empty(3, dtype=lib.float64)"),
    # tuple outs: the named tuple holds the out tensors
    ("lib.max(x, 1, out=out)", "(lib.empty(0), lib.empty(0, dtype=lib.int64))"),
    ("lib.min(x, 0, keepdim=True, out=out)", "(lib.empty(1, 3), lib.empty(1, 3, dtype=lib.int64))"),
    ("lib.sort(x, 1, descending=True, out=out)", "[lib.empty(0), lib.empty(0, dtype=lib.int64)]"),
    ("lib.topk(y, 2, out=out)", "(lib.empty(0), lib.empty(0, dtype=lib.int64))"),
    ("lib.sort(x, out=out)", "(lib.empty(0), lib.empty(0))"),                    # indices must be Long
    ("lib.max(x, 1, out=out)", "(lib.empty(0),)"),
    # not a tensor
    ("lib.add(x, y, out=out)", "[1]"),
    ("lib.add(x, y, out=out)", "None"),
]


@pytest.mark.parametrize("expr,out_expr", CASES)
def test_out_writes_returns_and_warns_as_pytorch(expr, out_expr):
    t = _run(torch, expr, out_expr)
    h = _run(hookgrad, expr, out_expr)
    assert t[0] == h[0], (expr, t, h)
    if t[0] == "error":
        assert t[1:] == h[1:], (expr, t, h)
        return
    assert_same(t[1], h[1], expr)
    assert type(t[1]).__name__.replace("_out", "") == type(h[1]).__name__, (type(t[1]), type(h[1]))
    assert t[2:] == h[2:], (expr, t[2:], h[2:])              # identity, versions, resize warning


@pytest.mark.parametrize("expr", [
    "lib.add(a, 1, out=lib.empty(3))",                      # an input requires grad
    "lib.exp(a, out=lib.empty(3))",
    "lib.sum(a, 0, out=lib.empty(()))",
    "lib.max(a, 0, out=(lib.empty(()), lib.empty((), dtype=lib.int64)))",
    "lib.add(b, 1, out=lib.empty(3, requires_grad=True))",  # out requires grad
    "lib.argmax(a, out=lib.empty((), dtype=lib.int64))",    # not differentiable: allowed
    "lib.gt(a, 0, out=lib.empty(3, dtype=lib.bool))",
])
@pytest.mark.parametrize("grad_mode", [True, False])
def test_out_under_autograd_as_pytorch(expr, grad_mode):
    res = {}
    for lib in (torch, hookgrad):
        a = lib.tensor([1., -2., 3.], requires_grad=True)
        b = lib.tensor([1., -2., 3.])
        try:
            with lib.set_grad_enabled(grad_mode):
                r = eval(expr)
            res[lib] = ("ok", r.detach() if isinstance(r, lib.Tensor) else tuple(v.detach() for v in r),
                        r.requires_grad if isinstance(r, lib.Tensor) else None)
        except Exception as e:      # noqa: BLE001
            res[lib] = ("error", type(e).__name__, str(e).split("\n")[0])
    t, h = res[torch], res[hookgrad]
    assert t[0] == h[0], (expr, t, h)
    if t[0] == "ok":
        assert_same(t[1], h[1], expr)
        assert t[2] == h[2]
    else:
        assert t[1:] == h[1:], (expr, t, h)


def test_unknown_keyword_is_a_type_error_as_pytorch():
    for lib in (torch, hookgrad):
        with pytest.raises(TypeError):
            lib.relu(lib.ones(2), out=lib.empty(2))          # PyTorch's relu has no out=
        with pytest.raises(TypeError):
            lib.zeros_like(lib.ones(2), out=lib.empty(2))


def test_out_values_for_every_function_that_takes_it_on_one_input():
    # every unary/elementwise function of one tensor that takes out=: the value written equals the result
    x_np = np.array([[0.3, 0.7, 0.2], [0.9, 0.4, 0.6]], np.float32)
    checked = 0
    for name in sorted(dir(hookgrad)):
        h = getattr(hookgrad, name)
        if not getattr(h, "_takes_out", False) or not hasattr(torch, name):
            continue
        t = getattr(torch, name)
        res = {}
        for lib, f in ((torch, t), (hookgrad, h)):
            x = lib.tensor(x_np)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    plain = f(x)
                    if not isinstance(plain, lib.Tensor) or plain.dtype != x.dtype:
                        res[lib] = None
                        continue
                    out = lib.empty(0)
                    r = f(x, out=out)
                res[lib] = (plain, out, r is out)
            except Exception:       # noqa: BLE001  (needs other arguments: not this test's subject)
                res[lib] = None
        if res[torch] is None or res[hookgrad] is None or not torch.equal(res[torch][0], res[torch][1]):
            continue                # (needs other arguments, or random)
        checked += 1
        assert_same(res[torch][1], res[hookgrad][1], name)
        assert_same(res[hookgrad][0], res[hookgrad][1], name)
        assert res[hookgrad][2], name
    assert checked > 30, checked
