"""Hooks registered through tools.registry behave as the same hooks registered directly in torch:
same events, same order (prepend, with_kwargs, always_call), same values."""
import numpy as np
import torch

import hookgrad
from hookgrad.tools.registry import HookRegistry


def _scenario(lib, register):
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 10))
        m.bias.copy_(lib.tensor([0.5, -0.5]))
    ev = []
    register(m, "forward_pre", lambda mod, a: ev.append(("pre", tuple(a[0].shape))))
    register(m, "forward_pre", lambda mod, a, kw: ev.append(("pre_kw_first",)), prepend=True, with_kwargs=True)
    register(m, "forward", lambda mod, a, o: (ev.append(("fwd", o.detach().numpy().round(4).tolist())), o * 2)[1])
    register(m, "forward", lambda mod, a, o: ev.append(("always",)), always_call=True)
    register(m, "full_backward_pre", lambda mod, go: ev.append(("bw_pre", go[0].numpy().round(4).tolist())))
    register(m, "full_backward", lambda mod, gi, go: ev.append(("bw", gi[0].numpy().round(4).tolist())))
    register(m.weight, "grad", lambda g: (ev.append(("w_grad",)), g * 0.5)[1])
    register(m.bias, "post_accumulate_grad", lambda p: ev.append(("b_acc", p.grad.numpy().round(4).tolist())))
    x = lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]], requires_grad=True)
    y = m(x)
    register(y.grad_fn, "node_pre", lambda go: ev.append(("node_pre", type(go).__name__)))
    (y * lib.tensor([1.0, 3.0])).sum().backward()
    ev.append(("grads", m.weight.grad.numpy().round(4).tolist(), x.grad.numpy().round(4).tolist()))
    return ev


def _torch_register(target, kind, hook, **options):
    if kind == "grad":
        return target.register_hook(hook)
    if kind == "post_accumulate_grad":
        return target.register_post_accumulate_grad_hook(hook)
    if kind == "node_pre":
        return target.register_prehook(hook)
    return getattr(target, f"register_{kind}_hook")(hook, **options)


def test_registry_hooks_match_torch_direct_hooks():
    reg = HookRegistry()
    ours = _scenario(hookgrad, lambda t, k, h, **o: reg.register(t, k, h, tag="x", **o))
    theirs = _scenario(torch, _torch_register)
    assert ours == theirs
    assert [r.fired for r in reg.hooks(tag="x", removed=True)] == [1] * 9   # owners are gone: removed
