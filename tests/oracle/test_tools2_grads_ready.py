"""tools.register_full_post_accumulate_grad_hook on hookgrad and torch: fires once per backward, right
after the module's last parameter has its .grad, with the same event sequence on both libraries."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.grads_ready import register_full_post_accumulate_grad_hook

LIBS = pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])


def model(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)))


def scenario(lib, log):
    m = model(lib)
    names = {id(p): n for n, p in m.named_parameters()}
    for p in m.parameters():
        p.register_post_accumulate_grad_hook(lambda p: log(("acc", names[id(p)])))

    def ready(mod):      # every grad of the block is there: its sum is final for this pass
        log(("ready", type(mod).__name__, round(sum(float(p.grad.sum()) for p in mod.parameters()), 4)))
    h2 = register_full_post_accumulate_grad_hook(m[2], ready)
    h0 = register_full_post_accumulate_grad_hook(m[0], ready)
    x = lib.tensor(np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3))
    m(x).pow(2).sum().backward()
    log("second pass")
    out = m(x).sum()
    out.backward(retain_graph=True)
    out.backward()
    log(("fired", h0.fired, h2.fired))
    lib.autograd.grad(m(x).sum(), list(m.parameters()))      # accumulates nothing: fires nothing
    h2.remove()
    h2.remove()
    m(x).sum().backward()
    log(("fired", h0.fired, h2.fired))
    return log


def test_same_events_as_torch():
    logs = []
    for lib in (torch, hookgrad):
        log = []
        scenario(lib, log.append)
        logs.append(log)
    assert logs[0] == logs[1]
    log = logs[0]
    # fires right after the block's last parameter, once per pass
    first = log[:log.index("second pass")]
    accs = [e[1] for e in first if e[0] == "acc"]
    k = first.index(next(e for e in first if e[0] == "ready" and e[1] == "Sequential"))
    assert {e[1] for e in first[:k] if e[0] == "acc"} >= {"2.0.weight", "2.0.bias", "2.2.weight", "2.2.bias"}
    assert sum(1 for e in first if e[0] == "ready") == 2 and len(accs) == 6
    assert ("fired", 3, 3) in log and log[-1] == ("fired", 4, 3)


@LIBS
def test_unused_parameter(lib):
    nn = lib.nn
    lib.manual_seed(0)

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x, use_b=True):
            return self.b(self.a(x)) if use_b else self.a(x)

    m = Two()
    calls = []
    h = register_full_post_accumulate_grad_hook(m, calls.append)
    with pytest.warns(UserWarning, match=r"got no gradient"):
        m(lib.ones(1, 2), use_b=False).sum().backward()
    assert calls == [] and sorted(h.missing) == ["b.bias", "b.weight"]
    m(lib.ones(1, 2)).sum().backward()
    assert calls == [m] and h.missing == []
    h.remove()
    h = register_full_post_accumulate_grad_hook(m, calls.append, unused="fire")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m(lib.ones(1, 2), use_b=False).sum().backward()
    assert len(calls) == 2 and h.fired == 1
    x = lib.ones(1, 2, requires_grad=True)
    m(x).sum().backward(inputs=[m.a.weight])                     # a subset: fires at the end
    assert len(calls) == 3
    h.remove()
    with pytest.raises(ValueError, match="no parameter that requires grad"):
        register_full_post_accumulate_grad_hook(nn.ReLU(), print)


@LIBS
def test_step_a_layer_as_soon_as_its_grads_are_ready(lib):
    """The per-layer optimizer step inside backward gives the same weights as stepping after it."""
    ref, m = model(lib), model(lib)
    x = lib.randn(5, 3)
    opt_ref = lib.optim.SGD(ref.parameters(), 0.1)
    ref(x).pow(2).sum().backward()
    opt_ref.step()
    opts = {i: lib.optim.SGD(m[i].parameters(), 0.1) for i in (0, 2)}
    for i in (0, 2):
        register_full_post_accumulate_grad_hook(m[i], lambda mod, i=i: opts[i].step())
    m(x).pow(2).sum().backward()
    for p, q in zip(ref.parameters(), m.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())
