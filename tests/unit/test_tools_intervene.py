"""hookgrad.tools.intervene: output edits at paths and around-call interceptors (no torch)."""
import numpy as np
import pytest

import hookgrad as torch
from hookgrad import nn
from hookgrad.tools.intervene import intercept, intervene


def all_hooks(model):
    return [(name, h.kind) for name, m in model.named_modules() for h in m.hooks()]


def forward_attrs(model):
    return [name for name, m in model.named_modules() if "forward" in m.__dict__]


class Scale(nn.Module):
    def __init__(self, log=None):
        super().__init__()
        self.log = log if log is not None else []

    def forward(self, x, factor=2.0):
        self.log.append(("forward", factor))
        return x * factor


@pytest.fixture
def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def test_value_replaces_output_and_grads_flow_to_the_value(mlp):
    x = torch.randn(5, 3)
    v = torch.randn(5, 4, requires_grad=True)
    with intervene(mlp, {"1": v}):
        y = mlp(x)
    np.testing.assert_allclose(y.detach().numpy(), mlp[2](v).detach().numpy(), rtol=1e-6)
    y.sum().backward()
    # d(sum(W2 v + b2))/dv = ones @ W2 ; the layers before the replaced output get no gradient
    np.testing.assert_allclose(v.grad.numpy(), np.ones((5, 2)) @ mlp[2].weight.detach().numpy(), rtol=1e-6)
    assert mlp[0].weight.grad is None and mlp[2].weight.grad is not None
    assert all_hooks(mlp) == []


def test_value_shape_mismatch_names_path(mlp):
    with pytest.raises(RuntimeError, match=r"replacement for '1' \(Tanh\) has shape \(5, 3\).*\(5, 4\)"):
        with intervene(mlp, {"1": torch.zeros(5, 3)}):
            mlp(torch.randn(5, 3))
    assert all_hooks(mlp) == []


def test_function_forms(mlp):
    x = torch.randn(2, 3)
    ref = mlp[0](x)
    got = {}
    with intervene(mlp, {"0": lambda out: out * 0 + 1}):
        y1 = mlp(x)
    np.testing.assert_allclose(y1.detach().numpy(), mlp[2](torch.tanh(torch.ones(2, 4))).detach().numpy(), rtol=1e-6)

    def three(module, args, output):
        got["module"], got["args"] = module, args
        return output + 1

    with intervene(mlp, {"0": three}):
        y2 = mlp(x)
    assert got["module"] is mlp[0] and got["args"][0] is x
    np.testing.assert_allclose(y2.detach().numpy(), mlp[2](torch.tanh(ref + 1)).detach().numpy(), rtol=1e-6)

    def returns_none(out):          # an in-place edit returning None: the edited output stands
        with torch.no_grad():
            out.zero_()

    with intervene(mlp, {"0": returns_none}):
        y3 = mlp(x)
    np.testing.assert_allclose(y3.detach().numpy(), mlp[2](torch.zeros(2, 4)).detach().numpy(), rtol=1e-6)


def test_function_edit_gradient_flows_through_the_edit(mlp):
    x = torch.randn(2, 3, requires_grad=True)
    with intervene(mlp, {"1": lambda out: out * 3}):
        mlp(x).sum().backward()
    g_edit = x.grad.numpy().copy()
    x.grad = None
    mlp(x).sum().backward()
    np.testing.assert_allclose(g_edit, 3 * x.grad.numpy(), rtol=1e-5)


def test_bad_function_and_none_value(mlp):
    with pytest.raises(TypeError, match=r"function for '0' must take \(output\) or \(module, args, output\)"):
        with intervene(mlp, {"0": lambda a, b: a}):
            pass
    with pytest.raises(TypeError, match="value for '0' is None"):
        with intervene(mlp, {"0": None}):
            pass
    with pytest.raises(ValueError, match="'nope' matches no module"):
        with intervene(mlp, {"0": lambda o: o, "nope": lambda o: o}):
            pass
    assert all_hooks(mlp) == []


def test_patterns_and_every_call(mlp):
    shared = Scale()
    model = nn.Sequential(shared, shared, Scale())
    with intervene(model, {"*": lambda out: out + 1}):
        # a shared module is edited at each call; the root is edited too ("*" matches "")
        y = model(torch.zeros(1))
    # ((0*2+1)*2+1)*2+1 = 7 from the three children, +1 from the root
    np.testing.assert_array_equal(y.numpy(), [8.0])


def test_nested_intervene_inner_sees_outer(mlp):
    seen = []
    x = torch.randn(1, 3)
    with intervene(mlp, {"0": lambda out: out * 0 + 5}):
        with intervene(mlp, {"0": lambda out: seen.append(out.detach().numpy().copy()) or out + 1}):
            y = mlp(x)
        assert len(mlp[0].hooks()) == 1
    np.testing.assert_array_equal(seen[0], np.full((1, 4), 5.0))
    np.testing.assert_allclose(y.detach().numpy(), mlp[2](torch.tanh(torch.full((1, 4), 6.0))).detach().numpy(),
                               rtol=1e-6)
    assert all_hooks(mlp) == []


def test_exception_inside_intervene_removes_hooks(mlp):
    with pytest.raises(KeyError):
        with intervene(mlp, {"0": lambda o: o, "2": lambda o: o}):
            mlp(torch.randn(1, 3))
            {}["x"]
    assert all_hooks(mlp) == []


# ---- intercept ---------------------------------------------------------------------------------
def test_intercept_changes_args_and_kwargs():
    m = nn.Sequential(Scale())
    calls = []

    def around(call, module, args, kwargs):
        calls.append((module, args[0].numpy().copy(), dict(kwargs)))
        return call(args[0] + 1, factor=10.0)

    with intercept(m, "0", around):
        y = m(torch.ones(2))
        assert forward_attrs(m) == ["0"]
    assert calls[0][0] is m[0] and calls[0][2] == {}
    np.testing.assert_array_equal(y.numpy(), [20.0, 20.0])
    assert m[0].log == [("forward", 10.0)]
    assert forward_attrs(m) == []
    np.testing.assert_array_equal(m(torch.ones(2)).numpy(), [2.0, 2.0])   # restored


def test_intercept_skips_the_call_and_hooks_still_run():
    log = []
    m = nn.Sequential(Scale(log))
    events = []
    m[0].register_forward_pre_hook(lambda mod, args: events.append("pre"))
    m[0].register_forward_hook(lambda mod, args, out: events.append(("post", out.numpy().tolist())))

    def skip(call, module, args, kwargs):
        events.append("around")
        return args[0] - 1

    with intercept(m, "0", skip):
        y = m(torch.ones(2))
    assert log == []                       # forward never ran
    assert events == ["pre", "around", ("post", [0.0, 0.0])]
    np.testing.assert_array_equal(y.numpy(), [0.0, 0.0])
    m[0].remove_hooks()


def test_intercept_replaces_output_with_gradient():
    lin = nn.Linear(2, 2)
    model = nn.Sequential(lin)
    x = torch.randn(3, 2, requires_grad=True)
    with intercept(model, "0", lambda call, mod, a, k: call(*a, **k) * 2):
        model(x).sum().backward()
    g = x.grad.numpy().copy()
    np.testing.assert_allclose(g, 2 * np.ones((3, 2)) @ lin.weight.detach().numpy(), rtol=1e-6)


def test_nested_intercepts_last_entered_is_outermost_any_exit_order():
    m = nn.Sequential(Scale())
    order = []

    def tag(name):
        def around(call, module, args, kwargs):
            order.append(name + "<")
            out = call(*args, **kwargs)
            order.append(">" + name)
            return out + (1 if name == "A" else 100)
        return around

    a = intercept(m, "0", tag("A"))
    b = intercept(m, "0", tag("B"))
    a.__enter__()
    b.__enter__()
    y = m(torch.zeros(1))
    assert order == ["B<", "A<", ">A", ">B"]
    np.testing.assert_array_equal(y.numpy(), [101.0])
    a.__exit__(None, None, None)           # not LIFO: B stays active alone
    order.clear()
    np.testing.assert_array_equal(m(torch.zeros(1)).numpy(), [100.0])
    assert order == ["B<", ">B"]
    b.__exit__(None, None, None)
    assert forward_attrs(m) == []


def test_intercept_restores_a_preexisting_instance_forward_and_on_exception():
    m = nn.Sequential(Scale())
    own = lambda x: x - 1          # noqa: E731  an instance forward set by the user
    m[0].forward = own
    with pytest.raises(ValueError, match="boom"):
        with intercept(m, "0", lambda call, mod, a, k: call(*a) * 3):
            np.testing.assert_array_equal(m(torch.ones(1)).numpy(), [0.0])
            np.testing.assert_array_equal(m(torch.full((1,), 3.0)).numpy(), [6.0])
            raise ValueError("boom")
    assert m[0].__dict__["forward"] is own
    del m[0].forward
    with pytest.raises(RuntimeError, match="inside around"):
        with intercept(m, "*", lambda call, mod, a, k: (_ for _ in ()).throw(RuntimeError("inside around"))):
            m(torch.ones(1))
    assert forward_attrs(m) == [] and all_hooks(m) == []


def test_intercept_with_intervene_and_errors():
    m = nn.Sequential(Scale())
    with intercept(m, "0", lambda call, mod, a, k: call(*a, **k) + 1), intervene(m, {"0": lambda o: o * 10}):
        np.testing.assert_array_equal(m(torch.ones(1)).numpy(), [30.0])   # (1*2+1)*10
    with pytest.raises(TypeError, match="around must be callable"):
        intercept(m, "0", 3)
    with pytest.raises(ValueError, match="'zz' matches no module"):
        with intercept(m, "zz", lambda *a: None):
            pass
    assert forward_attrs(m) == [] and all_hooks(m) == []
