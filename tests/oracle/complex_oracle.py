"""The differential oracle for complex tensors (test_complex.py, test_fft.py).

``ccheck(fn, *arrays)`` builds tensors from the same NumPy data (real or complex; the floating and complex ones
require grad), runs ``fn(lib, *tensors)`` under torch and hookgrad and compares every output (value, dtype,
shape, grad_fn name). It then differentiates a real loss, the sum of each output (complex ones through
``view_as_real``) times fixed random weights, and compares the gradient of every input (PyTorch's convention for
complex inputs: the conjugate Wirtinger derivative times two); with ``second=True`` also the gradient of a real
function of those gradients (second order).
"""
import numpy as np
import torch

import hookgrad
from oracle import _ARRAY, _check_array, _flatten

TOL = {"float64": (1e-9, 1e-9), "complex128": (1e-9, 1e-9), "float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4)}


def _tensor(lib, a):
    if not isinstance(a, np.ndarray):
        return a
    t = lib.tensor(a.copy())
    if a.dtype.kind in "fc":
        t.requires_grad_(True)
    return t


def same(t, h, what, tol=None):
    """torch's value ``t`` and hookgrad's ``h``: equal dtype, shape and values (within tolerance)."""
    if not isinstance(t, torch.Tensor):
        assert t == h or (isinstance(t, float) and np.isclose(t, h)), f"{what}: {t!r} vs {h!r}"
        return
    assert isinstance(h, hookgrad.Tensor), f"{what}: hookgrad gave {type(h).__name__}"
    if _ARRAY is not None:
        _check_array(h, what)
    assert str(t.dtype) == str(h.dtype), f"{what}: dtype torch {t.dtype} vs hookgrad {h.dtype}"
    assert tuple(t.shape) == tuple(h.shape), f"{what}: shape torch {tuple(t.shape)} vs hookgrad {tuple(h.shape)}"
    a, b = t.detach().resolve_conj().numpy(force=True), h.detach().numpy()
    rtol, atol = tol or TOL.get(str(t.dtype)[6:], (0, 0))
    np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=what, equal_nan=True)


def _real_view(lib, o):
    return lib.view_as_real(o.resolve_conj()) if o.is_complex() else o


def _weighted(lib, outs, weights):
    total = None
    for o, w in zip(outs, weights):
        s = (_real_view(lib, o) * lib.tensor(w)).sum()
        total = s if total is None else total + s
    return total


def ccheck(fn, *arrays, grad=True, second=True, tol=None, names=True):
    t_in = [_tensor(torch, a) for a in arrays]
    h_in = [_tensor(hookgrad, a) for a in arrays]
    t_out = _flatten(fn(torch, *t_in))
    h_out = _flatten(fn(hookgrad, *h_in))
    assert len(t_out) == len(h_out)
    for i, (a, b) in enumerate(zip(t_out, h_out)):
        same(a, b, f"output {i}", tol)
        if names and isinstance(a, torch.Tensor) and a.grad_fn is not None:
            assert b.grad_fn is not None and a.grad_fn.name() == b.grad_fn.name(), \
                f"output {i}: grad_fn {a.grad_fn.name()} vs {b.grad_fn and b.grad_fn.name()}"
    if not grad:
        return h_out
    pairs = [(a, b) for a, b in zip(t_out, h_out) if isinstance(a, torch.Tensor) and a.requires_grad]
    if not pairs:
        return h_out
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal(tuple(_real_view(torch, a).shape)).astype(str(a.dtype.to_real())[6:]) for a, _ in pairs]
    t_leaves = [t for t in t_in if isinstance(t, torch.Tensor) and t.requires_grad]
    h_leaves = [t for t in h_in if isinstance(t, hookgrad.Tensor) and t.requires_grad]
    t_g = torch.autograd.grad(_weighted(torch, [a for a, _ in pairs], ws), t_leaves, allow_unused=True,
                              create_graph=second)
    h_g = hookgrad.autograd.grad(_weighted(hookgrad, [b for _, b in pairs], ws), h_leaves, allow_unused=True,
                                 create_graph=second)
    for i, (a, b) in enumerate(zip(t_g, h_g)):
        if a is None or b is None:
            assert a is None and b is None, f"grad of input {i}: torch {a is None}, hookgrad {b is None} for None"
            continue
        same(a, b, f"grad of input {i}", tol)
    if not second:
        return h_out
    gp = [(a, b) for a, b in zip(t_g, h_g) if a is not None and a.requires_grad]
    if not gp:
        return h_out
    vs = [rng.standard_normal(tuple(_real_view(torch, a).shape)).astype(str(a.dtype.to_real())[6:]) for a, _ in gp]
    t_gg = torch.autograd.grad(_weighted(torch, [a for a, _ in gp], vs), t_leaves, allow_unused=True)
    h_gg = hookgrad.autograd.grad(_weighted(hookgrad, [b for _, b in gp], vs), h_leaves, allow_unused=True)
    for i, (a, b) in enumerate(zip(t_gg, h_gg)):
        if a is None or b is None:
            other = b if a is None else a
            if other is not None:
                np.testing.assert_allclose(np.asarray(other.detach().numpy()), 0, atol=1e-6,
                                           err_msg=f"second-order grad {i}")
            continue
        same(a, b, f"second-order grad of input {i}", tol)
    return h_out


def cdata(*shape, dtype="complex128", seed=0):
    """Random data: complex (real and imaginary parts standard normal) or real."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)
