"""Shared helpers of the torch.func tests: run one scenario under torch and hookgrad and compare every tensor
of the (nested) results: values, dtypes, shapes and requires_grad; or the exceptions both raise."""
import warnings

import numpy as np
import torch

import hookgrad
from oracle import assert_same

LIBS = (("torch", torch), ("hookgrad", hookgrad))


def compare(t, h, what="result", tol=None):
    if isinstance(t, torch.Tensor):
        assert_same(t, h, what, tol)
        assert t.requires_grad == h.requires_grad, f"{what}: requires_grad torch {t.requires_grad} vs hookgrad {h.requires_grad}"
    elif isinstance(t, dict):
        assert isinstance(h, dict) and list(t) == list(h), f"{what}: keys {list(t)} vs {list(h) if isinstance(h, dict) else h}"
        for k in t:
            compare(t[k], h[k], f"{what}[{k!r}]", tol)
    elif isinstance(t, (tuple, list)):
        assert isinstance(h, (tuple, list)) and type(t).__name__ == type(h).__name__, \
            f"{what}: torch {type(t).__name__} vs hookgrad {type(h).__name__}"
        assert len(t) == len(h), f"{what}: length {len(t)} vs {len(h)}"
        for i, (a, b) in enumerate(zip(t, h)):
            compare(a, b, f"{what}[{i}]", tol)
    else:
        assert_same(t, h, what, tol)


def both(scen, tol=None, seed=0):
    """``scen(lib)`` under both libraries (same seed), results compared; returns (torch's, hookgrad's)."""
    res = []
    for _, lib in LIBS:
        lib.manual_seed(seed)
        res.append(scen(lib))
    compare(res[0], res[1], tol=tol)
    return res


def raises_same(scen, match_text=True):
    """``scen(lib)`` raises the same exception type (and text) under both libraries."""
    errs = []
    for _, lib in LIBS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scen(lib)
        except Exception as e:      # noqa: BLE001
            errs.append(e)
        else:
            errs.append(None)
    t, h = errs
    assert t is not None, "torch raised nothing"
    assert h is not None, f"hookgrad raised nothing (torch: {type(t).__name__}: {t})"
    assert type(t).__name__ == type(h).__name__ or isinstance(h, type(t)), \
        f"torch {type(t).__name__}: {t}\nhookgrad {type(h).__name__}: {h}"
    if match_text:
        assert str(t).split("\n")[0] == str(h).split("\n")[0], f"torch: {t}\nhookgrad: {h}"
    return t, h


def data(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed + 17 * len(shape) + sum(shape)).standard_normal(shape).astype(dtype)
