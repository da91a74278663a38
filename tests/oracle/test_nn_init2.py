"""nn.init against torch: sparse_ (same values under the same seeds), dirac_/eye_ shapes and groups,
trunc_normal_, the deprecated non-underscore aliases and errors."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same


def _both(fn):
    out = []
    for lib in (torch, hookgrad):
        lib.manual_seed(0)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = fn(lib)
        out.append((res, [(x.category.__name__, str(x.message)) for x in w]))
    return out


@pytest.mark.parametrize("shape,sparsity,gen", [((6, 4), 0.5, False), ((5, 3), 0.1, True), ((7, 2), 0.9, True),
                                                ((4, 4), 0.0, False)])
def test_sparse_same_values(shape, sparsity, gen):
    def fn(lib):
        g = lib.Generator().manual_seed(9) if gen else None
        t = lib.nn.init.sparse_(lib.empty(*shape), sparsity, std=0.5, generator=g)
        return t, lib.rand(2)     # the global generator advanced the same
    (t, tw), (h, hw) = _both(fn)
    assert_same(t[0], h[0], "sparse_")
    assert_same(t[1], h[1], "next draw")
    assert tw == hw


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 5, 1, 2, 3), 4), ((2, 6, 3), 1)])
def test_dirac(shape, groups):
    (t, _), (h, _) = _both(lambda lib: lib.nn.init.dirac_(lib.empty(*shape), groups))
    assert_same(t, h)


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2)])
def test_eye(shape):
    (t, _), (h, _) = _both(lambda lib: lib.nn.init.eye_(lib.empty(*shape, dtype=lib.float64)))
    assert_same(t, h)


@pytest.mark.parametrize("kw", [dict(), dict(mean=1.0, std=2.0, a=-1.0, b=3.0), dict(std=0.02, a=-0.04, b=0.04)])
def test_trunc_normal(kw):
    (t, _), (h, _) = _both(lambda lib: lib.nn.init.trunc_normal_(lib.empty(50, dtype=lib.float64), **kw))
    assert_same(t, h, tol=(1e-6, 1e-7))
    lo, hi = kw.get("a", -2.0), kw.get("b", 2.0)
    assert float(h.min()) >= lo and float(h.max()) <= hi


@pytest.mark.parametrize("name,args", [("eye", ()), ("dirac", ()), ("sparse", (0.5,)), ("uniform", ()),
                                       ("normal", ()), ("xavier_uniform", ()), ("kaiming_normal", ())])
def test_deprecated_aliases(name, args):
    shape = (4, 3, 3) if name == "dirac" else (4, 3)
    (t, tw), (h, hw) = _both(lambda lib: getattr(lib.nn.init, name)(lib.empty(*shape), *args))
    assert_same(t, h, tol=(1e-6, 1e-7))
    assert tw == hw and tw


@pytest.mark.parametrize("case", [
    lambda L: L.nn.init.eye_(L.empty(2, 2, 2)),
    lambda L: L.nn.init.dirac_(L.empty(2, 2)),
    lambda L: L.nn.init.dirac_(L.empty(3, 2, 2), groups=2),
    lambda L: L.nn.init.sparse_(L.empty(3), 0.5),
])
def test_errors(case):
    res = []
    for lib in (torch, hookgrad):
        with pytest.raises(Exception) as ei:
            case(lib)
        res.append((type(ei.value).__name__, str(ei.value)))
    assert res[0] == res[1]
