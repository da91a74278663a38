"""hookgrad.tools.why: each reason a hook does not fire, constructed, and hooks that fired left out."""
import warnings

import pytest

import hookgrad as torch
from hookgrad.tools import why
from hookgrad.tools.registry import HookRegistry

nn = torch.nn


class Net(nn.Module):
    """a -> b -> c; ``mode`` picks how the forward misbehaves."""

    def __init__(self, mode=""):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b, self.c, self.unused = nn.Linear(3, 4), nn.Linear(4, 4), nn.Linear(4, 2), nn.Linear(2, 2)
        self.mode = mode

    def forward(self, x):
        h = self.a(x)
        if self.mode == "direct":
            h = self.b.forward(h)
        elif self.mode == "no_grad":
            with torch.no_grad():
                h = self.b(h)
        elif self.mode == "dead_end":
            self.b(h)                  # output not used by the loss
        else:
            h = self.b(h)
        return self.c(h)


def _run(model, reg, x=None, backward=True, **kw):
    x = torch.randn(2, 3) if x is None else x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the full-backward-hook-fired-early warning
        with why.watch(model, registry=reg, **kw) as w:
            out = model(x).sum()
            if backward:
                out.backward()
    return w


def _reasons(w):
    return [(f.record.kind, f.record.path, f.reason) for f in w.report()]


def _all_kinds(reg, mod, tag):
    reg.register(mod, "forward_pre", lambda m, a: None, tag=tag)
    reg.register(mod, "forward", lambda m, a, o: None, tag=tag)
    reg.register(mod, "full_backward_pre", lambda m, g: None, tag=tag)
    reg.register(mod, "full_backward", lambda m, gi, go: None, tag=tag)


def test_hooks_that_fired_are_not_reported():
    model = Net()
    reg = HookRegistry(model)
    for name in ("a", "b", "c"):
        _all_kinds(reg, getattr(model, name), name)
    reg.register(model.b.weight, "grad", lambda g: None)
    w = _run(model, reg, x=torch.randn(2, 3, requires_grad=True))
    assert w.report() == [] and str(w) == "every watched hook fired"
    assert all(r.fired == 1 for r in reg.hooks())
    assert model.b.forward.__func__ is nn.Linear.forward and "forward" not in model.b.__dict__   # restored


def test_never_executed():
    model = Net()
    reg = HookRegistry(model)
    reg.register(model.unused, "forward", lambda m, a, o: None, tag="u")
    reg.register(model.unused.weight, "grad", lambda g: None, tag="u")
    reg.register(model.c, "forward", lambda m, a, o: None)        # fires: not reported
    w = _run(model, reg)
    assert _reasons(w) == [("forward", "unused", "never_executed"), ("grad", "unused.weight", "never_executed")]
    assert "module 'unused' never ran in the forward" in str(w)


def test_forward_called_directly():
    model = Net("direct")
    reg = HookRegistry(model)
    _all_kinds(reg, model.b, "b")
    reg.register(model.b.weight, "grad", lambda g: None)        # the parameter is still used: fires
    w = _run(model, reg)
    assert _reasons(w) == [(k, "b", "forward_called_directly")
                           for k in ("forward_pre", "forward", "full_backward_pre", "full_backward")]
    assert "module.forward(...), which bypasses its hooks" in w.report()[0].message
    assert "forward" not in model.b.__dict__


def test_forward_called_directly_is_not_seen_without_detection():
    model = Net("direct")
    reg = HookRegistry(model)
    reg.register(model.b, "forward", lambda m, a, o: None)
    w = _run(model, reg, detect_direct=False)
    assert _reasons(w) == [("forward", "b", "never_executed")]


def test_grad_mode_off():
    model = Net("no_grad")
    reg = HookRegistry(model)
    _all_kinds(reg, model.b, "b")
    reg.register(model.b.bias, "grad", lambda g: None)
    w = _run(model, reg, backward=False)     # the output of c still requires grad (c's parameters)
    assert _reasons(w) == [("full_backward_pre", "b", "grad_mode_off"), ("full_backward", "b", "grad_mode_off"),
                           ("grad", "b.bias", "grad_mode_off")]
    assert "grad mode was off during the forward of module 'b'" in str(w)


def test_no_input_requires_grad_full_backward_fires_early():
    model = Net()
    reg = HookRegistry(model)
    got = []
    reg.register(model.a, "full_backward", lambda m, gi, go: got.append(gi), tag="early")
    reg.register(model.b, "full_backward", lambda m, gi, go: None)    # its input requires grad: normal
    w = _run(model, reg, x=torch.randn(2, 3))
    assert got == [(None,)]                 # it did fire, with grad_input all None
    [f] = w.report()
    assert (f.record.tag, f.reason) == ("early", "fired_early")
    assert "with grad_input all None (1 of 1 calls)" in f.message


def test_no_input_requires_grad_and_output_does_not_require_grad():
    model = Net()
    model.a.requires_grad_(False)
    reg = HookRegistry(model)
    reg.register(model.a, "full_backward", lambda m, gi, go: None)
    reg.register(model.a, "full_backward_pre", lambda m, go: None)
    w = _run(model, reg)
    assert _reasons(w) == [("full_backward", "a", "no_grad_output"), ("full_backward_pre", "a", "no_grad_output")]


def test_hook_removed_before_it_could_fire():
    model = Net()
    reg = HookRegistry(model)
    early = reg.register(model.c, "full_backward", lambda m, gi, go: None, tag="early")
    early.remove()                          # removed before the watch, never fired
    fired = reg.register(model.a, "forward", lambda m, a, o: None, tag="fired")
    inside = []

    def remove_in_forward(m, args, out):
        inside.append(1)
        h.remove()                          # removes the backward hook of c during the forward
    h = reg.register(model.c, "full_backward_pre", lambda m, g: None, tag="during")
    reg.register(model.b, "forward", remove_in_forward)
    w = _run(model, reg)
    fired.remove()                          # removed after firing: not reported
    assert inside == [1]
    assert [(f.record.tag, f.reason) for f in w.report()] == [("early", "removed"), ("during", "removed")]
    assert "removed before it could fire" in str(w)


def test_disabled_and_backward_not_reached():
    model = Net("dead_end")
    reg = HookRegistry(model)
    reg.register(model.a, "forward", lambda m, a, o: None, tag="off")
    reg.disable(tag="off")
    reg.register(model.b, "full_backward_pre", lambda m, g: None)
    w = _run(model, reg)
    assert _reasons(w) == [("forward", "a", "disabled"), ("full_backward_pre", "b", "backward_not_reached")]
    # without a backward at all: every backward hook is "not reached"
    model2 = Net()
    reg2 = HookRegistry(model2)
    reg2.register(model2.c, "full_backward", lambda m, gi, go: None)
    reg2.register(model2.c.weight, "grad", lambda g: None)
    w2 = _run(model2, reg2, backward=False)
    assert _reasons(w2) == [("full_backward", "c", "backward_not_reached"), ("grad", "c.weight", "backward_not_reached")]


def test_direct_hooks_are_reported_only_when_provably_silent():
    model = Net("direct")
    reg = HookRegistry(model)
    model.unused.register_forward_hook(lambda m, a, o: None)        # module never ran
    model.b.register_full_backward_hook(lambda m, gi, go: None)     # forward called directly
    model.c.register_forward_hook(lambda m, a, o: None)             # fired (count unknown): not reported
    gone = model.c.register_forward_pre_hook(lambda m, a: None)

    def remove_gone(m, args):
        gone.remove()
    model.a.register_forward_pre_hook(remove_gone)
    w = _run(model, reg)
    assert [(f.record.kind, f.record.path, f.record.fired, f.reason) for f in w.report()] == [
        ("full_backward", "b", None, "forward_called_directly"), ("forward", "unused", None, "never_executed"),
        ("forward_pre", "c", None, "removed")]


def test_tensor_and_node_hooks_registered_inside_and_global_hooks():
    model = Net()
    reg = HookRegistry(model)
    x = torch.randn(2, 3, requires_grad=True)
    with why.watch(model, registry=reg) as w:
        y = model(x)
        side = (x * 2).sum()                   # never backpropagated
        reg.register(side.grad_fn, "node", lambda gi, go: None, tag="node")
        reg.register(y, "grad", lambda g: None, tag="fires")
        reg.register("global", "forward", lambda m, a, o: None, tag="glob")   # registered after the forward
        y.sum().backward()
    assert [(f.record.tag, f.reason) for f in w.report()] == [("node", "backward_not_reached"),
                                                             ("glob", "unknown")]
    reg.remove_all()


def test_report_before_exit_and_bad_arguments():
    model = Net()
    w = why.watch(model, registry=HookRegistry(model))
    with pytest.raises(RuntimeError, match="after the with block"):
        w.report()
    with pytest.raises(TypeError, match="model must be a Module"):
        why.watch(3)
    with pytest.raises(TypeError, match="registry must be a HookRegistry"):
        why.watch(model, registry=object())
