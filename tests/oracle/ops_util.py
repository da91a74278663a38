"""Shared helpers for the op tests: data generation, grad_fn-name and error comparison with torch."""
import numpy as np
import torch

import hookgrad
import oracle
from oracle import check


KINDS = {
    "n": lambda rng, s: rng.standard_normal(s),
    "p": lambda rng, s: rng.uniform(0.5, 2.0, s),          # positive (log, sqrt, pow base)
    "u": lambda rng, s: rng.uniform(-0.9, 0.9, s),         # inside (-1, 1)
    "nz": lambda rng, s: rng.choice([-1, 1], s) * rng.uniform(0.5, 2.0, s),   # away from zero
}


def data(shape, dtype="float64", kind="n", seed=0):
    """Random test data of a NumPy dtype name; integer kinds draw from [-5, 5]."""
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(dtype)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    return np.asarray(KINDS[kind](rng, shape)).astype(dtype)


def grad_fn_names(t_out, h_out):
    for i, (a, b) in enumerate(zip(t_out, h_out)):
        if isinstance(a, torch.Tensor) and a.grad_fn is not None:
            assert b.grad_fn is not None, f"output {i}: torch has {type(a.grad_fn).__name__}, hookgrad no grad_fn"
            assert type(b.grad_fn).__name__ == type(a.grad_fn).__name__, \
                f"output {i}: grad_fn torch {type(a.grad_fn).__name__} vs hookgrad {type(b.grad_fn).__name__}"


def run(fn, *arrays, second=True, names=True, tol=None, **kw):
    """check() values/dtypes/grads (second order too) and compare grad_fn class names."""
    t_out, h_out = check(fn, *arrays, second=second, tol=tol, **kw)
    if names:
        grad_fn_names(t_out, h_out)
    return t_out, h_out


def same_error(fn, *arrays):
    """fn(lib, *tensors) must raise the same exception type under both, hookgrad's message starting with torch's."""
    res = []
    for lib in (torch, hookgrad):
        args = [lib.tensor(a.copy()) if isinstance(a, np.ndarray) else a for a in arrays]
        try:
            fn(lib, *args)
        except Exception as e:  # noqa: BLE001 - the exception is what we compare
            res.append(e)
        else:
            res.append(None)
    te, he = res
    assert te is not None, "torch raised nothing"
    assert he is not None, f"hookgrad raised nothing; torch raised {type(te).__name__}: {te}"
    assert type(he).__name__ == type(te).__name__, f"torch {type(te).__name__}: {te} / hookgrad {type(he).__name__}: {he}"
    tmsg = str(te).split("\n")[0]
    assert str(he).startswith(tmsg), f"\ntorch:    {tmsg}\nhookgrad: {he}"
