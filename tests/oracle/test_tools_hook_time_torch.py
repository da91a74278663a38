"""tools.HookTimeAccount on PyTorch models (its torch twin): each kind of backward hook lands in hook time
on both libraries, the op and node counts are equal, nothing is left registered afterwards.

The hooks sleep a known time, so the checks are lower bounds the attribution must reach (a hook's sleep
counted as hook time, not as model or framework time); the model's own time is far below a sleep."""
import time

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.ophooks import HookTimeAccount, account

LIBS = pytest.mark.parametrize("lib", [hookgrad, torch], ids=["hookgrad", "torch"])
NAP = 0.03


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def _x(lib):
    return lib.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3))


def _nap(*a):
    time.sleep(NAP)


def _run(lib, where):
    """One step with one sleeping backward hook of the kind ``where``; returns the report."""
    m = _model(lib)
    if where == "leaf tensor hook":
        m[0].weight.register_hook(lambda g: _nap())
    if where == "full backward hook":
        m[2].register_full_backward_hook(lambda mod, gi, go: _nap())
    x = _x(lib)
    with HookTimeAccount(m) as acc:
        h = m[1](m[0](x))
        if where == "tensor hook":
            h.register_hook(lambda g: _nap())
        if where == "node pre-hook":
            h.grad_fn.register_prehook(lambda go: _nap())
        if where == "node post-hook":
            h.grad_fn.register_hook(lambda gi, go: _nap())
        m[2](h).sum().backward()
    return acc.report()


WHERE = ["leaf tensor hook", "tensor hook", "node pre-hook", "node post-hook", "full backward hook"]


@LIBS
@pytest.mark.parametrize("where", WHERE)
def test_each_backward_hook_kind_is_hook_time(lib, where):
    r = _run(lib, where)
    assert r["hooks"]["backward"] >= NAP, r
    assert r["model"]["backward"] < NAP, r           # the sleep is not the node's computation
    assert r["hooks"]["forward"] < NAP and r["hooks"]["forward_pre"] < NAP


def test_counts_equal_on_both_libraries():
    got = {}
    for lib in (hookgrad, torch):
        r = _run(lib, "node post-hook")
        got[lib.__name__] = (r["ops"], r["nodes"])
    assert got["hookgrad"] == got["torch"] == (6, 10)


@LIBS
def test_forward_hooks_and_account(lib):
    m = _model(lib)
    m[0].register_forward_pre_hook(lambda mod, a: _nap())
    m[2].register_forward_hook(lambda mod, a, o: _nap())
    x = _x(lib)
    r = account(m, lambda: m(x).sum().backward())
    assert r["hooks"]["forward_pre"] >= NAP and r["hooks"]["forward"] >= NAP
    assert r["model"]["forward"] < NAP and 0.5 < r["hook_fraction"] <= 1.0
    assert r["wall"] >= r["model"]["total"] + r["hooks"]["total"]


@LIBS
def test_nothing_left_registered_and_a_later_backward_runs_clean(lib):
    """The module markers and (torch) the node markers are removed on exit: a second backward through
    the same retained graph, outside the context, runs no marker (which would find no window open)."""
    m = _model(lib)
    fired = []
    m[0].weight.register_hook(fired.append)
    x = _x(lib)
    with HookTimeAccount(m) as acc:
        loss = m(x).sum()
        loss.backward(retain_graph=True)
    assert all(not getattr(mod, "_forward_hooks") and not getattr(mod, "_forward_pre_hooks") for mod in m.modules())
    loss.backward(retain_graph=True)
    assert len(fired) == 2 and acc.report()["nodes"] == 10
    with HookTimeAccount(m) as acc2:               # a new context: a new step is accounted afresh
        m(x).sum().backward()
        loss.backward()          # on torch, of a graph built before the context only the nodes reachable
    # from the new one are seen (its 4 AccumulateGrad nodes), as for every op tool there
    assert acc2.report()["nodes"] == (14 if lib is torch else 20) and len(fired) == 4


def test_torch_gap_without_tensor_hooks_is_not_hook_time():
    """On torch a node's tensor hooks are the gap before its pre-hook: with a sleep in the forward code
    between two ops (not a hook), nothing of it may land in backward hook time."""
    m = _model(torch)
    x = _x(torch)
    with HookTimeAccount(m) as acc:
        h = m[0](x)
        time.sleep(NAP)                            # forward code, not a hook
        m[2](m[1](h)).sum().backward()
    r = acc.report()
    assert r["hooks"]["backward"] < NAP and r["nodes"] == 10
