"""The differential oracle: run the same function under torch and hookgrad and compare.

``check(fn, *arrays)`` calls ``fn(lib, *tensors)`` with lib = torch and lib = hookgrad on tensors built
from the same NumPy data, and compares values, dtypes and shapes of every output, then every input
gradient (first order, and second order with ``second=True``).

``events(scenario)`` runs ``scenario(lib, log)`` under both libraries; ``log`` records hook events
(converting tensors to NumPy), and the two event sequences must be equal.

Under a test backend (``HOOKGRAD_TEST_BACKEND=xarray``, see tests/backend) both also check that every
hookgrad output, gradient and tensor seen by a hook holds the backend's array type.
"""
import os
import sys

import numpy as np
import torch

import hookgrad

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import backend  # noqa: E402

_ARRAY = backend.array_type()   # None without a backend: the checks below cost nothing

torch.set_num_threads(1)

TOL = {"float64": (1e-9, 1e-9), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-2)}


def _lib_tensor(lib, a, requires_grad):
    if isinstance(a, np.ndarray):
        t = lib.tensor(a.copy())
        if requires_grad and a.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    return a


def _flatten(out):
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(_flatten(o))
        return res
    return [out]


def to_np(x):
    if isinstance(x, torch.Tensor):
        # force=True also materialises the ZeroTensors torch returns for some second-order grads
        return x.detach().numpy(force=True)
    if isinstance(x, hookgrad.Tensor):
        return x.detach().numpy()
    return x


class BackendArrayError(AssertionError):
    """A hookgrad tensor holds another array type than the test backend's (raised through events())."""


def _check_array(h, what):
    """Under a test backend: hookgrad Tensor ``h`` holds the backend's array type."""
    d = h._data
    if not isinstance(d, _ARRAY):
        t = type(d)
        raise BackendArrayError(f"{what} is a {t.__module__}.{t.__qualname__}, not the backend's {_ARRAY.__name__}")


def assert_same(t_val, h_val, what="output", tol=None):
    if _ARRAY is not None and isinstance(h_val, hookgrad.Tensor):
        _check_array(h_val, what)
    if isinstance(t_val, torch.Tensor):
        assert isinstance(h_val, hookgrad.Tensor), f"{what}: torch gave a Tensor, hookgrad gave {type(h_val).__name__}"
        assert str(t_val.dtype) == str(h_val.dtype), f"{what}: dtype torch {t_val.dtype} vs hookgrad {h_val.dtype}"
        assert tuple(t_val.shape) == tuple(h_val.shape), f"{what}: shape torch {tuple(t_val.shape)} vs hookgrad {tuple(h_val.shape)}"
        a, b = to_np(t_val), to_np(h_val)
        rtol, atol = tol or TOL.get(str(t_val.dtype).replace("torch.", ""), (0, 0))
        if a.dtype.kind == "f":
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=what, equal_nan=True)
        else:
            np.testing.assert_array_equal(b, a, err_msg=what)
    elif t_val is None:
        assert h_val is None, f"{what}: torch gave None, hookgrad gave {h_val!r}"
    elif isinstance(t_val, (int, float, bool)):
        assert h_val == t_val or (isinstance(t_val, float) and np.isclose(h_val, t_val)), f"{what}: {t_val} vs {h_val}"
    else:
        assert type(t_val).__name__ == type(h_val).__name__ or True


def check(fn, *arrays, grad=True, second=False, tol=None, requires_grad=None):
    """Compare fn(lib, *tensors) under torch and hookgrad: outputs, dtypes, shapes and gradients."""
    rg = requires_grad if requires_grad is not None else [grad] * len(arrays)
    t_in = [_lib_tensor(torch, a, r) for a, r in zip(arrays, rg)]
    h_in = [_lib_tensor(hookgrad, a, r) for a, r in zip(arrays, rg)]
    t_out = _flatten(fn(torch, *t_in))
    h_out = _flatten(fn(hookgrad, *h_in))
    assert len(t_out) == len(h_out), f"torch returned {len(t_out)} outputs, hookgrad {len(h_out)}"
    for i, (a, b) in enumerate(zip(t_out, h_out)):
        assert_same(a, b, f"output {i}", tol)
    if not grad:
        return t_out, h_out
    t_diff = [(i, o) for i, o in enumerate(t_out) if isinstance(o, torch.Tensor) and o.requires_grad]
    h_diff = [h_out[i] for i, _ in t_diff]
    for (i, o), ho in zip(t_diff, h_diff):
        assert isinstance(ho, hookgrad.Tensor) and ho.requires_grad, f"output {i} requires grad in torch, not in hookgrad"
    if not t_diff:
        return t_out, h_out
    rng = np.random.default_rng(1)
    seeds = [rng.standard_normal(o.shape).astype(to_np(o).dtype) for _, o in t_diff]
    t_leaves = [t for t in t_in if isinstance(t, torch.Tensor) and t.requires_grad]
    h_leaves = [t for t in h_in if isinstance(t, hookgrad.Tensor) and t.requires_grad]
    t_g = torch.autograd.grad([o for _, o in t_diff], t_leaves, [torch.tensor(s) for s in seeds],
                              allow_unused=True, create_graph=second)
    h_g = hookgrad.autograd.grad(h_diff, h_leaves, [hookgrad.tensor(s) for s in seeds],
                                 allow_unused=True, create_graph=second)
    for i, (a, b) in enumerate(zip(t_g, h_g)):
        assert_same(a, b, f"grad of input {i}", tol)
    if second:
        pairs = [(a, b) for a, b in zip(t_g, h_g) if a is not None and a.requires_grad]
        if pairs:
            vs = [rng.standard_normal(a.shape).astype(to_np(a).dtype) for a, _ in pairs]
            t_s = sum((a * torch.tensor(v)).sum() for (a, _), v in zip(pairs, vs))
            h_s = sum((b * hookgrad.tensor(v)).sum() for (_, b), v in zip(pairs, vs))
            t_gg = torch.autograd.grad(t_s, t_leaves, allow_unused=True)
            h_gg = hookgrad.autograd.grad(h_s, h_leaves, allow_unused=True)
            for i, (a, b) in enumerate(zip(t_gg, h_gg)):
                if a is None and b is not None:
                    if _ARRAY is not None:
                        _check_array(b, f"second-order grad of input {i}")
                    np.testing.assert_allclose(to_np(b), 0, atol=1e-6, err_msg=f"second-order grad {i}")
                    continue
                if b is None and a is not None:
                    np.testing.assert_allclose(to_np(a), 0, atol=1e-6, err_msg=f"second-order grad {i}")
                    continue
                assert_same(a, b, f"second-order grad of input {i}", tol)
    return t_out, h_out


class Log:
    """Event recorder: log(name, *values) stores (name, values converted to plain data)."""

    def __init__(self):
        self.events = []

    def __call__(self, name, *values):
        self.events.append((name,) + tuple(_plain(v, name) for v in values))


def _plain(v, what="logged value"):
    if _ARRAY is not None and isinstance(v, hookgrad.Tensor):
        _check_array(v, f"a tensor logged at {what!r}")
    if isinstance(v, (torch.Tensor, hookgrad.Tensor)):
        a = to_np(v)
        return ("T", str(v.dtype), tuple(a.shape), np.round(a.astype(np.float64), 5).tolist())
    if isinstance(v, (tuple, list)):
        return tuple(_plain(x, what) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _plain(x, what)) for k, x in v.items()))
    if isinstance(v, float):
        return round(v, 5)
    return v


def events(scenario):
    """Run scenario(lib, log) under torch and hookgrad; return both event lists (asserting equality)."""
    lt, lh = Log(), Log()
    et = eh = None
    try:
        scenario(torch, lt)
    except Exception as e:  # the exception type and the events before it are part of the behaviour
        et = type(e).__name__
    try:
        scenario(hookgrad, lh)
    except BackendArrayError:       # a tensor a hook saw is not the backend's: name it, not the events it cut short
        raise
    except Exception as e:
        eh = type(e).__name__
    assert lh.events == lt.events, f"\ntorch:    {lt.events}\nhookgrad: {lh.events}"
    assert et == eh, f"torch raised {et}, hookgrad raised {eh}"
    return lt.events
