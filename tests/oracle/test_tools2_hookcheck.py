"""tools.check_hooks and tools.strict_hooks on hookgrad and torch models: the same findings (same
messages) on both libraries, the warning points at the registering line, registration unchanged."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.hookcheck import HookMisuseWarning, check_hooks, returns_value, strict_hooks

LIBS = pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])


def model(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 3), nn.ReLU()), nn.Linear(3, 1))


def misuse(m, lib):
    """Registers one hook of each misuse (and some correct ones); returns the optimizer."""
    def good_acc(p):
        p.grad.mul_(0.5)

    m[0].register_forward_hook(lambda mod, out: None)                               # arity
    m[0].register_forward_hook(lambda mod, a, kw, out: None, with_kwargs=True)      # fine
    m[0].register_forward_pre_hook(lambda mod, a, kw: None)                         # arity (no with_kwargs)
    m[0].weight.register_post_accumulate_grad_hook(lambda grad: grad.mul_(2))       # grad-named + returns
    m[0].bias.register_post_accumulate_grad_hook(good_acc)                          # fine
    m[1].register_backward_hook(lambda mod, gi, go: None)                           # legacy on several ops
    m[2].register_full_backward_hook(lambda mod, go: None)                          # arity
    m[2].weight.register_hook(lambda g: g * 2)                                      # fine: may return
    opt = lib.optim.SGD(m.parameters(), 0.1)
    opt.register_step_post_hook(lambda o, a, k: 3)                                  # returns a value
    opt.register_step_pre_hook(lambda o, a, k: None)                                # fine
    return opt


EXPECTED = [
    ("forward", "module '0'", "takes 2 positional arguments ('mod', 'out') but forward hooks are called with 3"),
    ("forward_pre", "module '0'", "takes 3 positional arguments ('mod', 'a', 'kw') but forward_pre hooks are called with 2"),
    ("post_accumulate_grad", "parameter '0.weight'", "its parameter is named 'grad'"),
    ("post_accumulate_grad", "parameter '0.weight'", "must return None, but this one returns a value"),
    ("backward", "module '1'", "legacy register_backward_hook on Sequential, a module of several ops"),
    ("full_backward", "module '2'", "takes 2 positional arguments ('mod', 'go') but full_backward hooks are called with 3"),
    ("step_post", "optimizer SGD", "must return None"),
]


def _key(problems):
    return sorted((p.kind, p.where, p.problem) for p in problems)


def _matches(problems):
    got = _key(problems)
    assert len(got) == len(EXPECTED), got
    for kind, where, text in EXPECTED:
        assert any(k == kind and w == where and text in p for k, w, p in got), (kind, where, text, got)


@LIBS
def test_check_hooks_finds_each_misuse(lib):
    m = model(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = misuse(m, lib)
    with pytest.warns(HookMisuseWarning) as rec:
        found = check_hooks(m, opt)
    _matches(found)
    assert len(rec) == len(found)
    assert all("<lambda> (test_tools2_hookcheck.py:" in str(w.message) for w in rec)


@LIBS
def test_strict_mode_warns_at_the_registering_line(lib):
    m = model(lib)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with strict_hooks(m) as s:
            opt = misuse(m, lib)
    mine = [w for w in rec if issubclass(w.category, HookMisuseWarning)]
    _matches(s.found)
    assert len(mine) == len(s.found)
    assert {w.filename for w in mine} == {__file__}          # points at misuse(), not at the tool
    # after the context: the library's methods are the originals again, and no check runs
    assert not hasattr(lib.nn.Module.register_forward_hook, "__wrapped__")
    assert not hasattr(lib.Tensor.register_hook, "__wrapped__")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m[0].register_forward_hook(lambda mod, out: None)
    assert len(check_hooks(m, opt, warn=False)) == len(EXPECTED) + 1


def test_same_findings_on_both_libraries():
    res = []
    for lib in (torch, hookgrad):
        m = model(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = misuse(m, lib)
        res.append([(k, w, p.split(" (test_tools2")[0]) for k, w, p in _key(check_hooks(m, opt, warn=False))])
    assert res[0] == res[1]


@LIBS
def test_strict_error_mode_refuses_the_hook(lib):
    m = model(lib)
    with strict_hooks(m, error=True):
        with pytest.raises(TypeError, match=r"strict_hooks: forward hook .*<lambda> .* on module '2'"):
            m[2].register_forward_hook(lambda out: None)
        h = m[2].register_forward_hook(lambda mod, a, out: None)      # a correct one registers normally
    assert len(m[2]._forward_hooks) == 1
    h.remove()
    assert check_hooks(m, warn=False) == []


@LIBS
def test_strict_mode_changes_nothing_else(lib):
    """Same handles, same firing order, same gradients with strict mode on as off."""
    def run(strict):
        m = model(lib)
        log = []
        ctx = strict_hooks(m) if strict else warnings.catch_warnings()
        with ctx:
            hs = [m[0].register_forward_hook(lambda mod, a, o: log.append("f0")),
                  m[0].register_forward_hook(lambda mod, a, o: log.append("f0-first"), prepend=True),
                  m[2].register_full_backward_hook(lambda mod, gi, go: log.append(("b2", go[0].sum().item()))),
                  m[0].weight.register_hook(lambda g: g * 3),
                  m[0].weight.register_post_accumulate_grad_hook(lambda p: log.append("acc"))]
        m(lib.ones(4, 2)).pow(2).sum().backward()
        hs[1].remove()
        m(lib.ones(1, 2)).sum().backward()
        return log, [p.grad.numpy().copy() for p in m.parameters()], [type(h).__name__ for h in hs]

    off, on = run(False), run(True)
    assert on[0] == off[0] and on[2] == off[2]
    for a, b in zip(on[1], off[1]):
        assert np.array_equal(a, b)


def test_returns_value_heuristic():
    assert returns_value(lambda p: p.grad.mul_(2))
    assert returns_value(lambda p: p.grad * 2)
    assert returns_value(lambda p: 3)
    assert not returns_value(lambda p: None)
    assert not returns_value(lambda p: print(p))          # unknown result: not flagged

    def f(p):
        p.grad.zero_()
    assert not returns_value(f)
