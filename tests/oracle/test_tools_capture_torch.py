"""hookgrad.tools capture and intervene against torch doing the same by hand with plain hooks.

The same model is built in both libraries with the same weights; torch captures with
register_forward_hook + register_full_backward_hook (or tensor hooks where full backward hooks cannot
be used: an in-place op after the module), hookgrad with tools.capture / tools.intervene.
"""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.capture import capture
from hookgrad.tools.intervene import intercept, intervene

from oracle import to_np


def make_model(lib, inplace):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
            self.relu = nn.ReLU(inplace=inplace)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)

        def forward(self, x):
            return self.conv2(self.relu(self.conv1(x))) + self.conv1(x)   # conv1 runs twice

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = Block(2, 3)
            self.layer2 = Block(3, 3)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Linear(3, 3)
            self.act = nn.Tanh()

        def forward(self, x):
            h = self.pool(self.layer2(self.layer1(x))).flatten(1)
            return self.head(self.act(self.head(h)))   # head shared: called twice

    return Net()


def pair(inplace=False, seed=0):
    torch.manual_seed(seed)
    t = make_model(torch, inplace)
    h = make_model(hookgrad, inplace)
    h.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(seed).standard_normal((2, 2, 5, 5)).astype(np.float32)
    return t, h, x


def torch_capture_full_backward(model, x, names):
    outs, grads, hs = {}, {}, []
    for n, m in model.named_modules():
        if n in names:
            outs[n], grads[n] = [], []
            hs.append(m.register_forward_hook(lambda m, a, o, n=n: outs[n].append(o.detach().clone())))
            hs.append(m.register_full_backward_hook(lambda m, gi, go, n=n: grads[n].append(go[0])))
    xt = torch.tensor(x, requires_grad=True)
    loss = (model(xt) ** 2).sum()
    loss.backward()
    for h in hs:
        h.remove()
    return outs, {n: g[::-1] for n, g in grads.items()}, xt.grad   # backward visits calls last-first


def torch_capture_tensor_hooks(model, x, names):
    outs, grads, hs = {}, {}, []

    def fwd(n):
        def hook(m, a, o):
            i = len(outs[n])
            outs[n].append(o.detach().clone())
            grads[n].append(None)
            o.register_hook(lambda g: grads[n].__setitem__(i, g))
        return hook

    for n, m in model.named_modules():
        if n in names:
            outs[n], grads[n] = [], []
            hs.append(m.register_forward_hook(fwd(n)))
    xt = torch.tensor(x, requires_grad=True)
    (model(xt) ** 2).sum().backward()
    for h in hs:
        h.remove()
    return outs, grads, xt.grad


def compare(ref_outs, ref_grads, cache):
    assert set(ref_outs) == set(cache.paths)
    for n in cache.paths:
        assert cache.calls(n) == len(ref_outs[n]), n
        for i, (o, g) in enumerate(zip(ref_outs[n], ref_grads[n])):
            np.testing.assert_allclose(to_np(cache[n][i]), to_np(o), rtol=1e-5, atol=1e-6, err_msg=f"{n}[{i}]")
            np.testing.assert_allclose(to_np(cache.grads[n][i]), to_np(g), rtol=1e-4, atol=1e-6,
                                       err_msg=f"grad {n}[{i}]")


def test_capture_grads_equal_torch_full_backward_hooks():
    t, h, x = pair()
    names = ["layer1.conv1", "layer1.conv2", "layer2.conv1", "layer2.conv2", "head", "pool"]
    ref_outs, ref_grads, ref_xgrad = torch_capture_full_backward(t, x, set(names))
    xh = hookgrad.tensor(x, requires_grad=True)
    with capture(h, "layer*.conv*", "head", "pool", grads=True, policy="clone") as cache:
        (h(xh) ** 2).sum().backward()
    assert cache.paths == ["layer1.conv1", "layer1.conv2", "layer2.conv1", "layer2.conv2", "pool", "head"]
    assert cache.calls("layer1.conv1") == 2 and cache.calls("head") == 2
    compare(ref_outs, ref_grads, cache)
    np.testing.assert_allclose(xh.grad.numpy(), to_np(ref_xgrad), rtol=1e-4, atol=1e-6)
    assert [hk for _, m in h.named_modules() for hk in m.hooks()] == []


@pytest.mark.parametrize("policy", ["detach", "numpy"])
def test_capture_with_inplace_relu_equals_torch_tensor_hooks(policy):
    t, h, x = pair(inplace=True, seed=1)
    names = {n for n, _ in t.named_modules() if n}
    ref_outs, ref_grads, _ = torch_capture_tensor_hooks(t, x, names)
    with capture(h, "?*", grads=True, policy=policy) as cache:
        (h(hookgrad.tensor(x, requires_grad=True)) ** 2).sum().backward()
    # "detach" aliases outputs later modified in place (the relu): compare the pre-relu value only
    # where the policy copies; the gradients are what a hook registered before the in-place op sees
    if policy == "detach":
        for n in ("layer1.conv1", "layer2.conv1"):
            ref_outs[n] = [torch.relu(o) if i == 0 else o for i, o in enumerate(ref_outs[n])]
    compare(ref_outs, ref_grads, cache)


def test_intervene_value_and_fn_equal_torch_forward_hooks():
    t, h, x = pair(seed=2)
    v = np.random.default_rng(5).standard_normal((2, 3, 5, 5)).astype(np.float32)
    results = {}
    for lib, model in (("torch", t), ("hookgrad", h)):
        L = torch if lib == "torch" else hookgrad
        vt = L.tensor(v, requires_grad=True)
        xt = L.tensor(x, requires_grad=True)
        m = dict(model.named_modules())
        if lib == "torch":
            hs = [m["layer1.relu"].register_forward_hook(lambda mod, a, o, vt=vt: vt),
                  m["layer2.conv2"].register_forward_hook(lambda mod, a, o: o * 0.5 + 1)]
            y = model(xt)
            for hk in hs:
                hk.remove()
        else:
            with intervene(model, {"layer1.relu": vt, "layer2.conv2": lambda o: o * 0.5 + 1}):
                y = model(xt)
        (y ** 2).sum().backward()
        results[lib] = (y, vt.grad, xt.grad, m["layer1.conv2"].weight.grad, m["layer1.conv1"].weight.grad,
                        m["layer2.conv1"].weight.grad)
    for i, (a, b) in enumerate(zip(results["torch"], results["hookgrad"])):
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-4, atol=1e-5, err_msg=f"item {i}")


def test_intercept_equals_torch_pre_and_forward_hooks():
    t, h, x = pair(seed=3)
    results = {}
    for lib, model in (("torch", t), ("hookgrad", h)):
        L = torch if lib == "torch" else hookgrad
        xt = L.tensor(x, requires_grad=True)
        m = dict(model.named_modules())
        if lib == "torch":
            # args * 2 before the call, output + 1 after it, as two plain hooks
            hs = [m["layer2.conv1"].register_forward_pre_hook(lambda mod, a, k: ((a[0] * 2,), k), with_kwargs=True),
                  m["layer2.conv1"].register_forward_hook(lambda mod, a, o: o + 1),
                  m["pool"].register_forward_hook(lambda mod, a, o: a[0].mean((2, 3), keepdim=True) * 3)]
            y = model(xt)
            for hk in hs:
                hk.remove()
        else:
            with intercept(model, "layer2.conv1", lambda call, mod, a, k: call(a[0] * 2, **k) + 1), \
                    intercept(model, "pool", lambda call, mod, a, k: a[0].mean((2, 3), keepdim=True) * 3):
                y = model(xt)
        (y ** 2).sum().backward()
        results[lib] = (y, xt.grad, m["layer2.conv1"].weight.grad, m["layer1.conv1"].bias.grad)
    for i, (a, b) in enumerate(zip(results["torch"], results["hookgrad"])):
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-4, atol=1e-5, err_msg=f"item {i}")
