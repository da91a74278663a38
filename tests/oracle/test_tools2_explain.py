"""tools.explain_autograd_errors on hookgrad and torch models: the two classic autograd errors name the
module path, the module's call and the forward where the failing op was built; same text on both."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.explain import explain_autograd_errors

LIBS = pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])


def model(lib):
    nn = lib.nn
    lib.manual_seed(0)

    class Inplace(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x, bad=False):
            y = self.fc(x).exp()
            if bad:
                y.add_(1)                   # exp saved its result: changed after the op ran
            return y

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(3, 3)
            self.block = Inplace()
            self.out = nn.Linear(3, 1)

        def forward(self, x, bad=False):
            h = self.block(self.inp(x))
            return self.out(self.block(h, bad))      # block runs twice: call 1 is the bad one
    return Net()


def explained(lib, fn):
    m = model(lib)
    with pytest.raises(RuntimeError) as e:
        with explain_autograd_errors(m):
            fn(m)
    return str(e.value), e.value.__cause__


@LIBS
def test_backward_twice_names_the_module(lib):
    def twice(m):
        m(lib.ones(2, 3))                          # forward 0, not backpropagated
        loss = m(lib.ones(2, 3)).sum()             # forward 1
        loss.backward()
        loss.backward()
    text, cause = explained(lib, twice)
    assert text.startswith("Trying to backward through the graph a second time")
    assert text.endswith("(explain_autograd_errors: in the backward of AddmmBackward0, an op of module 'out' (call 0) "
                         "in forward 1 of Net; that forward's graph was freed by an earlier backward: run the forward "
                         "again, or pass retain_graph=True to the first backward)")
    assert isinstance(cause, RuntimeError)


@LIBS
def test_inplace_error_names_the_module_and_call(lib):
    text, _ = explained(lib, lambda m: m(lib.ones(2, 3), bad=True).sum().backward())
    assert "modified by an inplace operation" in text
    assert "(explain_autograd_errors: in the backward of ExpBackward0, an op of module 'block' (call 1) in forward 0" in text


def test_same_text_on_both_libraries():
    def run(lib):
        def f(m):
            loss = m(lib.ones(2, 3)).sum()
            loss.backward()
            loss.backward()
        return explained(lib, f)[0].split("(explain_autograd_errors: ")[1]
    assert run(torch) == run(hookgrad)


@LIBS
def test_no_error_no_change(lib):
    m = model(lib)
    ref = model(lib)
    ref(lib.ones(2, 3)).sum().backward()
    with explain_autograd_errors(m):
        m(lib.ones(2, 3)).sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        assert np.array_equal(p.grad.numpy(), q.grad.numpy())
    assert not any(mod._forward_hooks or mod._forward_pre_hooks for mod in m.modules())
    # an error outside the model's ops (the loss's own saved tensors) is passed through unchanged
    x = m(lib.ones(2, 3))
    with pytest.raises(RuntimeError) as e:
        with explain_autograd_errors(m):
            loss = (m(lib.ones(2, 3)) ** 2).sum()
            loss.backward()
            loss.backward()
    # the loss's PowBackward0 failed, outside the model: not attributed to the model's last node run
    assert "explain_autograd_errors" not in str(e.value) and e.value.__cause__ is None
    with pytest.raises(ValueError):
        with explain_autograd_errors(m):
            raise ValueError("not ours")
    del x
