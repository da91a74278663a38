"""hookgrad.tools.capture: activations and gradients by module path (no torch)."""
import numpy as np
import pytest

import hookgrad as torch
from hookgrad import nn
from hookgrad.tools.capture import ActivationCache, StopForward, capture


def all_hooks(model):
    return [(name, h.kind) for name, m in model.named_modules() for h in m.hooks()]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Linear(4, 4)
        self.act = nn.ReLU()
        self.conv2 = nn.Linear(4, 4)

    def forward(self, x):
        return self.conv2(self.act(self.conv1(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = Block()
        self.layer2 = Block()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.layer2(self.layer1(x)))


class Shared(nn.Module):
    """One Linear called twice (the second call sees the first's output)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(3, 3)
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        return self.out(torch.tanh(self.enc(torch.tanh(self.enc(x)))))


class Recorder(nn.Module):
    def __init__(self, log, name):
        super().__init__()
        self.log, self.name = log, name

    def forward(self, x):
        self.log.append(self.name)
        return x * 2


@pytest.fixture
def net():
    torch.manual_seed(0)
    return Net()


def test_patterns_select_and_values_match_manual_forward(net):
    x = torch.randn(5, 4)
    with capture(net, "layer*.conv1") as cache:
        y = net(x)
    assert cache.paths == ["layer1.conv1", "layer2.conv1"]
    h1 = net.layer1.conv1(x)
    np.testing.assert_allclose(cache["layer1.conv1"][0].numpy(), h1.detach().numpy())
    h2 = net.layer2.conv1(net.layer1(x))
    np.testing.assert_allclose(cache["layer2.conv1"][0].numpy(), h2.detach().numpy())
    assert cache.order == [("layer1.conv1", 0), ("layer2.conv1", 0)]
    assert not cache["layer1.conv1"][0].requires_grad      # detach policy
    assert y.requires_grad


def test_star_captures_root_and_order_is_completion_order(net):
    x = torch.randn(2, 4)
    with capture(net, "*") as cache:
        y = net(x)
    assert "" in cache and len(cache) == len(list(net.named_modules()))
    order = [p for p, _ in cache.order]
    assert order[:4] == ["layer1.conv1", "layer1.act", "layer1.conv2", "layer1"]
    assert order[-2:] == ["head", ""]
    np.testing.assert_array_equal(cache[""][0].numpy(), y.detach().numpy())


def test_pattern_matching_nothing_is_a_value_error_naming_it(net):
    with pytest.raises(ValueError, match=r"'layer\*\.conv9' matches no module of Net"):
        with capture(net, "layer*.conv1", "layer*.conv9"):
            pass
    assert all_hooks(net) == []


def test_unknown_path_key_error_and_missing():
    log = []
    model = nn.ModuleDict({"a": Recorder(log, "a"), "b": Recorder(log, "b")})
    with capture(model, "a", "b") as cache:
        model["a"](torch.ones(1))
    assert cache.missing() == ["b"]
    assert cache.calls("a") == 1 and cache.calls("b") == 0
    with pytest.raises(KeyError, match="'c' is not a captured module path"):
        cache["c"]


def test_shared_module_keeps_every_call_and_grads_per_call():
    torch.manual_seed(1)
    m = Shared()
    x = torch.randn(4, 3)
    with capture(m, "enc", grads=True) as cache:
        m(x).sum().backward()
    assert cache.calls("enc") == 2
    # reference: the same computation by hand with retain_grad
    e0 = m.enc(x)
    e0.retain_grad()
    e1 = m.enc(torch.tanh(e0))
    e1.retain_grad()
    m.out(torch.tanh(e1)).sum().backward()
    for i, ref in enumerate((e0, e1)):
        np.testing.assert_allclose(cache["enc"][i].numpy(), ref.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(cache.grads["enc"][i].numpy(), ref.grad.numpy(), rtol=1e-6)
    assert not np.allclose(cache["enc"][0].numpy(), cache["enc"][1].numpy())


def test_grads_equal_full_backward_hook_grad_output(net):
    x = torch.randn(3, 4, requires_grad=True)
    ref = {}
    hs = [mod.register_full_backward_hook(lambda mod, gi, go, n=n: ref.__setitem__(n, go[0]))
          for n, mod in net.named_modules() if n]
    with capture(net, "*", grads=True) as cache:
        (net(x) ** 2).sum().backward()
    for h in hs:
        h.remove()
    assert set(ref) == set(cache.paths) - {""}
    for n, g in ref.items():
        np.testing.assert_allclose(cache.grads[n][0].numpy(), g.numpy(), rtol=1e-6, err_msg=n)
    np.testing.assert_allclose(cache.grads[""][0].numpy(), 2 * cache[""][0].numpy(), rtol=1e-6)


def test_grads_accumulate_over_two_backwards_and_stop_after_exit(net):
    x = torch.randn(2, 4)
    with capture(net, "head", grads=True) as cache:
        y = net(x)
        y.sum().backward(retain_graph=True)
        np.testing.assert_array_equal(cache.grads["head"][0].numpy(), np.ones((2, 2)))
        y.sum().backward(retain_graph=True)
        np.testing.assert_array_equal(cache.grads["head"][0].numpy(), 2 * np.ones((2, 2)))
    assert y.hooks() == []            # the tensor hook is gone with the context
    y.sum().backward()
    np.testing.assert_array_equal(cache.grads["head"][0].numpy(), 2 * np.ones((2, 2)))


def test_grads_none_when_output_needs_no_grad(net):
    with torch.no_grad(), capture(net, "head", grads=True) as cache:
        net(torch.randn(1, 4))
    assert cache.grads["head"] == [None]


class TwoOut(nn.Module):
    def forward(self, x):
        return x * 2, x.sum(), 7


def test_tuple_outputs_grads_per_element():
    m = nn.Sequential()
    m.add_module("two", TwoOut())
    x = torch.randn(3, requires_grad=True)
    with capture(m, "two", grads=True) as cache:
        a, _, _ = m.two(x)
        (a * 3).sum().backward()
    out = cache["two"][0]
    assert isinstance(out, tuple) and out[2] == 7
    np.testing.assert_allclose(out[0].numpy(), 2 * x.detach().numpy())
    g = cache.grads["two"][0]
    np.testing.assert_array_equal(g[0].numpy(), np.full(3, 3.0))
    assert g[1] is None and g[2] is None


def test_policies():
    lin = nn.Linear(2, 2)
    x = torch.ones(1, 2)
    seen = {}
    for policy in ("detach", "clone", "numpy", "none"):
        with capture(lin, "", policy=policy) as cache:
            y = lin(x)
        seen[policy] = cache[""][0]
        with torch.no_grad():
            y.add_(100.0)         # a later in-place change
    assert seen["detach"].grad_fn is None and seen["detach"].numpy()[0, 0] > 50       # alias sees it
    assert seen["clone"].numpy()[0, 0] < 50                                           # copy does not
    assert isinstance(seen["numpy"], np.ndarray) and seen["numpy"][0, 0] < 50
    assert seen["none"] is y and seen["none"].grad_fn is not None                        # the output itself
    with pytest.raises(ValueError, match="unknown policy 'copy'"):
        capture(lin, policy="copy")


def test_numpy_policy_grads_are_arrays(net):
    with capture(net, "head", grads=True, policy="numpy") as cache:
        net(torch.randn(2, 4)).sum().backward()
    assert isinstance(cache.grads["head"][0], np.ndarray)
    np.testing.assert_array_equal(cache.grads["head"][0], np.ones((2, 2)))


def test_inputs_and_kwargs():
    class K(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = K()
    x = torch.ones(2)
    with capture(m, "", inputs=True) as cache:
        m(x, scale=3.0)
        m(x * 2)
    assert cache.calls("") == 2
    np.testing.assert_array_equal(cache.inputs[""][0][0].numpy(), [1, 1])
    assert cache.kwargs[""][0] == {"scale": 3.0} and cache.kwargs[""][1] == {}
    np.testing.assert_array_equal(cache[""][1].numpy(), [2, 2])


def test_hooks_removed_on_exit_and_on_exception(net):
    x = torch.randn(2, 4)
    with capture(net, "*", grads=True, inputs=True):
        # one hook per captured module, and the root's forward-pre hook that numbers the model's calls (steps)
        assert len(all_hooks(net)) == len(list(net.modules())) + 1
        net(x)
    assert all_hooks(net) == []
    with pytest.raises(ZeroDivisionError):
        with capture(net, "layer1.*", grads=True):
            y = net(x)
            1 / 0
    assert all_hooks(net) == [] and y.hooks() == []


def test_stop_after_last_skips_the_rest():
    log = []
    model = nn.Sequential(Recorder(log, "a"), Recorder(log, "b"), Recorder(log, "c"))
    after = []
    with capture(model, "0", "1", stop_after_last=True) as cache:
        model(torch.ones(1))
        after.append("body")        # skipped: StopForward left the with body
    assert log == ["a", "b"] and after == []
    assert cache.stopped_at == "1"
    np.testing.assert_array_equal(cache["1"][0].numpy(), [4.0])
    assert all_hooks(model) == []
    log.clear()
    model(torch.ones(1))                   # the model is whole again
    assert log == ["a", "b", "c"]


def test_stop_after_last_nested_only_the_owner_catches():
    log = []
    model = nn.Sequential(Recorder(log, "a"), Recorder(log, "b"), Recorder(log, "c"))
    with capture(model, "*") as outer:
        with capture(model, "0", stop_after_last=True) as inner:
            model(torch.ones(1))
        assert inner.stopped_at == "0"
        model(torch.ones(1))
    assert log == ["a", "a", "b", "c"]
    # the outer cache saw the aborted call of "0" and then the full run
    assert [p for p, _ in outer.order] == ["0", "0", "1", "2", ""]
    assert outer.calls("0") == 2
    assert issubclass(StopForward, Exception)


def test_nested_captures_both_record_and_unwind(net):
    x = torch.randn(2, 4)
    with capture(net, "head") as a:
        with capture(net, "head", "layer1") as b:
            net(x)
        assert len(net.head.hooks()) == 1
        net(x)
    assert a.calls("head") == 2 and b.calls("head") == 1 and b.calls("layer1") == 1
    assert all_hooks(net) == []


def test_shared_module_under_an_alias_path():
    lin = nn.Linear(2, 2)
    model = nn.Module()
    model.first = lin
    model.second = lin             # the same module under a second path
    with capture(model, "second") as cache:
        lin(torch.ones(1, 2))
        lin(torch.zeros(1, 2))
    assert cache.paths == ["second"] and cache.calls("second") == 2


def test_cache_repr_and_clear(net):
    with capture(net, "head", grads=True) as cache:
        net(torch.randn(1, 4))
        assert repr(cache) == "ActivationCache(head: 1, grads)"
        cache.clear()
        assert cache.calls("head") == 0 and cache.order == [] and cache.grads["head"] == []
    assert isinstance(cache, ActivationCache)
