"""hookgrad.tools.registry: register through the public API, count, tag, list, disable/enable/remove."""
import inspect

import numpy as np
import pytest

import hookgrad as torch
from hookgrad.nn.modules.module import global_module_hooks
from hookgrad.tools.registry import HookRegistry, default_registry, register

nn = torch.nn


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2)))


def test_register_counts_keeps_name_and_return_value_and_where():
    model = _model()
    reg = HookRegistry(model)

    def double_output(m, args, out):
        return out * 2

    x = torch.randn(5, 3)
    ref = model(x)
    line = inspect.currentframe().f_lineno + 1
    h = reg.register(model[2][0], "forward", double_output, tag="x2")
    out = model(x)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy() * 2, rtol=1e-6)   # the hook's return value is used
    model(x)
    [rec] = reg.hooks(tag="x2")
    assert (rec.kind, rec.path, rec.tag, rec.fired, rec.name, rec.state) == \
        ("forward", "2.0", "x2", 2, "double_output", "active")
    assert rec.where.endswith(f"test_tools_registry.py:{line}")
    assert rec.owner is model[2][0] and rec.id == h.id
    # the registered callable is the wrapper, named after the user's hook
    [info] = model[2][0].hooks()
    assert info.id == h.id and info.hook.__name__ == "double_output" and info.hook.__wrapped__ is double_output


def test_errors_from_the_engine_name_the_users_hook():
    x = torch.ones(3, requires_grad=True)
    reg = HookRegistry()

    def bad_shape(g):
        return g[:2]
    reg.register(x, "grad", bad_shape)
    with pytest.raises(RuntimeError, match="hook 'bad_shape' has changed the size of value"):
        (x * 2).sum().backward()
    assert reg.hooks(owner=x)[0].fired == 1


def test_disable_enable_by_tag_and_disabled_hook_returns_none():
    model = _model()
    reg = HookRegistry(model)
    calls = []
    reg.register(model[0], "forward", lambda m, a, o: calls.append("a") or o + 100, tag="t")
    reg.register(model[0], "forward_pre", lambda m, a: calls.append("pre"), tag="u")
    x = torch.randn(2, 3)
    ref = model[0](x)      # hooks run, +100
    calls.clear()
    assert reg.disable(tag="t") == 1
    out = model[0](x)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy() - 100, atol=1e-4)
    assert calls == ["pre"]
    t = reg.hooks(tag="t")[0]
    assert (t.fired, t.skipped, t.enabled, t.active, t.state) == (1, 1, False, False, "disabled")
    assert reg.enable(tag="t") == 1
    np.testing.assert_allclose(model[0](x).detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    assert calls == ["pre", "pre", "a"] and t.fired == 2


def test_remove_by_owner_tag_path_and_recurse():
    model = _model()
    reg = HookRegistry(model)
    reg.register(model[0], "forward", lambda m, a, o: None, tag="f")
    reg.register(model[0].weight, "grad", lambda g: None, tag="g")
    reg.register(model[2][0], "forward_pre", lambda m, a: None, tag="f")
    reg.register(model[2][0].bias, "grad", lambda g: None)
    assert [r.path for r in reg.hooks(owner="2", recurse=True)] == ["2.0", "2.0.bias"]
    assert [r.path for r in reg.hooks(owner=model[0])] == ["0"]          # exact owner by default
    assert reg.remove(owner="0.weight") == 1
    assert model[0].weight.hooks() == []
    assert reg.remove(owner=model[2], recurse=True) == 2
    assert model[2][0].hooks() == [] and model[2][0].bias.hooks() == []
    assert [r.path for r in reg.hooks()] == ["0"]
    assert [(r.path, r.state) for r in reg.hooks(removed=True)] == \
        [("0", "active"), ("0.weight", "removed"), ("2.0", "removed"), ("2.0.bias", "removed")]
    assert reg.remove(tag="f") == 1 and model[0].hooks() == []
    with pytest.raises(ValueError, match="needs tag= or owner="):
        reg.remove()
    with pytest.raises(AttributeError, match="'nope' is neither a module nor a parameter"):
        reg.hooks(owner="nope")


def test_direct_hooks_are_listed_with_unknown_count_and_remove_all():
    model = _model()
    reg = HookRegistry(model)
    reg.register(model[0], "forward", lambda m, a, o: None, tag="mine")
    direct = model[1].register_forward_pre_hook(lambda m, a: None)
    pdirect = model[0].bias.register_hook(lambda g: None)
    recs = reg.hooks()
    assert [(r.kind, r.path, r.tag, r.fired) for r in recs] == \
        [("forward", "0", "mine", 0), ("forward_pre", "1", None, None), ("grad", "0.bias", None, None)]
    assert recs[1].id == direct.id and recs[2].id == pdirect.id
    assert reg.hooks(tag="mine")[0].tag == "mine" and len(reg.hooks(tag="mine")) == 1
    table = reg.table()
    lines = table.splitlines()
    assert lines[0].split() == ["kind", "path", "hook", "tag", "fired", "state", "where"]
    assert lines[2].split()[:6] == ["forward", "0", "<lambda>", "mine", "0", "active"]
    assert "test_tools_registry.py:" in lines[2]
    assert lines[3].split() == ["forward_pre", "1", "<lambda>", "?", "active"]
    assert reg.remove_all() == 2          # ours + the one directly on a module
    assert all(m.hooks() == [] for m in model.modules())
    assert [r.path for r in reg.hooks()] == ["0.bias"]   # a direct tensor hook has no public remover


def test_scope_removes_only_what_was_registered_inside():
    model = _model()
    reg = HookRegistry(model)
    reg.register(model[0], "forward", lambda m, a, o: None, tag="outside")
    with reg.scope():
        reg.register(model[0], "forward_pre", lambda m, a: None, tag="in")
        h = reg.register("global", "forward", lambda m, a, o: None, tag="in")
        assert any(i.id == h.id for i in global_module_hooks())
        assert len(reg.hooks(tag="in")) == 2
    assert reg.hooks(tag="in") == [] and not any(i.id == h.id for i in global_module_hooks())
    assert [r.tag for r in reg.hooks()] == ["outside"]


def test_options_pass_through_prepend_with_kwargs_always_call():
    m = nn.Linear(2, 2)
    reg = HookRegistry(m)
    order = []
    reg.register(m, "forward", lambda mod, a, o: order.append("first"))
    reg.register(m, "forward", lambda mod, a, o: order.append("prepended"), prepend=True)
    reg.register(m, "forward", lambda mod, a, kw, o: order.append(("kw", sorted(kw))), with_kwargs=True)
    reg.register(m, "forward_pre", lambda mod, a, kw: order.append("pre_kw"), with_kwargs=True)
    m(torch.ones(1, 2))
    assert order == ["pre_kw", "prepended", "first", ("kw", [])]
    assert [i.flags for i in m.hooks()] == [("with_kwargs",), (), (), ("with_kwargs",)]

    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    b = Boom()
    seen = []
    reg.register(b, "forward", lambda mod, a, o: seen.append("always"), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        b(torch.ones(1))
    assert seen == ["always"]
    with pytest.raises(TypeError):
        reg.register(m, "full_backward", lambda *a: None, with_kwargs=True)   # not an option of that kind


def test_tensor_node_global_and_multi_grad_kinds_count_firings():
    reg = HookRegistry()
    x = torch.ones(3, requires_grad=True)
    y = torch.ones(3, requires_grad=True)
    reg.register(x, "grad", lambda g: g * 3, tag="t")
    reg.register(x, "post_accumulate_grad", lambda t: None, tag="t")
    z = (x * y).sum()
    reg.register(z.grad_fn, "node", lambda gi, go: None, tag="n")
    reg.register(z.grad_fn, "node_pre", lambda go: None, tag="n")
    got = []
    reg.register([x, y], "multi_grad", lambda grads: got.append(len(grads)), tag="m")
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3, 3])        # the grad hook's return value is used
    assert [(r.kind, r.path, r.fired) for r in reg.hooks()] == [
        ("grad", None, 1), ("post_accumulate_grad", None, 1), ("node", "SumBackward0", 1),
        ("node_pre", "SumBackward0", 1), ("multi_grad", "None,None", 1)]
    assert got == [2]
    reg.remove(owner=y)          # a multi-grad hook belongs to each of its tensors
    assert reg.hooks(tag="m") == [] and y.hooks() == []
    g = reg.register("global", "forward_pre", lambda m, a: None, tag="g")
    nn.Sequential(nn.Identity(), nn.Identity())(torch.ones(1))
    assert reg.hooks(tag="g")[0].fired == 3 and reg.hooks(owner="global")[0].path == "<global>"
    g.remove()
    assert reg.hooks(owner="global", tag="g") == []


def test_bad_kind_and_target_errors_name_the_culprit():
    reg = HookRegistry()

    def my_hook(*a):
        pass
    with pytest.raises(ValueError, match=r"unknown hook kind 'forwad' for a Linear target \(hook my_hook\)"):
        reg.register(nn.Linear(1, 1), "forwad", my_hook)
    with pytest.raises(ValueError, match="unknown hook kind 'grad' for a Linear"):
        reg.register(nn.Linear(1, 1), "grad", my_hook)
    with pytest.raises(TypeError, match="target must be a Module"):
        reg.register(3, "forward", my_hook)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        reg.register(torch.ones(1), "grad", my_hook)
    with pytest.raises(ValueError, match="needs a registry that knows the model"):
        reg.register("fc1", "forward", my_hook)
    assert reg.records() == []


def test_default_registry_and_aliases():
    m = nn.Linear(2, 2)
    h = register(m, "backward_pre", lambda mod, go: None, tag="default-test")
    try:
        [rec] = default_registry.hooks(tag="default-test")
        assert rec.kind == "full_backward_pre" and m.hooks()[0].kind == "backward_pre"
    finally:
        h.remove()
    assert default_registry.hooks(tag="default-test") == []
