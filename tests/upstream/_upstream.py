"""Harness for PyTorch's own autograd hook tests (test/test_autograd.py), ported to run unchanged in
spirit on both libraries: each test takes ``torch`` (real torch, then hookgrad) and ``self`` (a
unittest.TestCase whose assertEqual compares tensors of either library through NumPy).

Running every ported test on real torch too checks the port itself: an assertion that torch 2.13
does not satisfy is a porting error, not a hookgrad bug."""
import contextlib
import gc
import unittest

import numpy as np
import pytest
import torch as _real_torch

import hookgrad as _hookgrad

_real_torch.set_num_threads(1)
LIBS = {"torch": _real_torch, "hookgrad": _hookgrad}


def _is_tensor(x):
    return isinstance(x, (_real_torch.Tensor, _hookgrad.Tensor))


def _np(x):
    if _is_tensor(x):
        return x.detach().numpy()
    return np.asarray(x)


class Case(unittest.TestCase):
    """The assertions test_autograd.py uses; assertEqual follows TestCase.assertEqual on tensors."""

    def __init__(self, lib):
        super().__init__()
        self.lib = lib

    def runTest(self):  # pragma: no cover - unittest needs a method name
        pass

    def assertEqual(self, a, b, msg=None, atol=None, rtol=None, exact_dtype=True):
        if _is_tensor(a) or _is_tensor(b):
            x, y = _np(a), _np(b)
            if _is_tensor(a) and _is_tensor(b):
                assert x.shape == y.shape, f"{msg or ''} shapes {x.shape} vs {y.shape}"
                if exact_dtype:
                    assert str(a.dtype) == str(b.dtype), f"{msg or ''} dtypes {a.dtype} vs {b.dtype}"
            np.testing.assert_allclose(x.astype(np.float64), np.broadcast_to(y, x.shape).astype(np.float64)
                                       if x.shape != y.shape else y.astype(np.float64),
                                       rtol=1.3e-6 if rtol is None else rtol, atol=1e-5 if atol is None else atol,
                                       err_msg=msg or "")
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and (
                any(map(_is_tensor, a)) or any(map(_is_tensor, b))):
            assert len(a) == len(b), msg
            for u, v in zip(a, b):
                self.assertEqual(u, v, msg, atol, rtol, exact_dtype)
        else:
            super().assertEqual(a, b, msg)

    def assertNotEqual(self, a, b, msg=None):
        if _is_tensor(a) or _is_tensor(b):
            assert not np.allclose(_np(a), _np(b)), msg
        else:
            super().assertNotEqual(a, b, msg)


@contextlib.contextmanager
def disable_gc():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def lib_fixtures():
    @pytest.fixture(params=list(LIBS))
    def torch(request):
        return LIBS[request.param]

    @pytest.fixture
    def self(torch):
        return Case(torch)

    return torch, self
