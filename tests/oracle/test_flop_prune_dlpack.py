"""torch.utils.flop_counter (counts by module and op, forward and backward), torch.nn.utils.prune (masks,
``<name>_orig``, the forward pre-hook, state_dict keys under the same seed) and torch.utils.dlpack (zero-copy
exchange with torch and NumPy), each against PyTorch."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as tprune
import torch.utils.dlpack
import torch.utils.flop_counter

import hookgrad as hg
import hookgrad.nn.utils.prune as hprune
import hookgrad.utils.dlpack
import hookgrad.utils.flop_counter


def both(fn):
    return fn(torch, torch.utils.flop_counter, tprune), fn(hg, hg.utils.flop_counter, hprune)


def data(L, *shape, seed=1, grad=False):
    t = L.tensor(np.random.RandomState(seed).randn(*shape).astype(np.float32))
    return t.requires_grad_() if grad else t


def flops(fc):
    return {mod: {str(op): n for op, n in ops.items()} for mod, ops in fc.get_flop_counts().items()}


# ---------------------------------------------------------------------------------------------------------
# flop counter

@pytest.mark.parametrize("input_grad", [False, True])
def test_flop_counts_by_module_forward_and_backward(input_grad):
    def run(L, FC, _):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Conv2d(3, 4, 3), L.nn.ReLU(), L.nn.Flatten(), L.nn.Linear(4 * 6 * 6, 5),
                            L.nn.Linear(5, 2, bias=False))
        with FC.FlopCounterMode(display=False) as fc:
            m(data(L, 2, 3, 8, 8, grad=input_grad)).sum().backward()
        return flops(fc), fc.get_total_flops()
    t, h = both(run)
    assert t == h
    assert "Sequential.0" in h[0] and "aten.convolution_backward" in h[0]["Sequential.0"]


def test_flop_counts_of_products_and_transposed_conv():
    def run(L, FC, _):
        a, b, c = data(L, 2, 3, 4, grad=True), data(L, 4, 5, grad=True), data(L, 2, 4, 5, seed=2, grad=True)
        with FC.FlopCounterMode(display=False) as fc:
            (a @ b).sum().backward()
            (a @ c).sum().backward()
            L.baddbmm(data(L, 2, 3, 5), a, c).sum().backward()
            L.mm(a[0], b.detach()).sum().backward()
            L.nn.functional.conv_transpose2d(data(L, 1, 2, 4, 4, grad=True), data(L, 2, 3, 3, 3, grad=True),
                                             stride=2).sum().backward()
            L.nn.functional.scaled_dot_product_attention(a[None], a[None], a[None])     # CPU kernel: no formula
        return flops(fc)
    t, h = both(run)
    assert t == h


def test_flop_table_and_custom_mapping():
    fc = hg.utils.flop_counter
    m = hg.nn.Linear(4, 3)
    with fc.FlopCounterMode(display=False, custom_mapping={hg.ops.aten.addmm: lambda *a, **k: 7}) as c:
        m(hg.ones(2, 4))
    assert c.get_total_flops() == 7
    with fc.FlopCounterMode(display=False) as c:
        m(hg.ones(2, 4)).sum().backward()
    table = c.get_table()
    assert table.splitlines()[0].split() == ["Module", "FLOP", "%", "Total"]
    assert " - aten.addmm" in table and "Linear" in table
    assert fc.convert_num_with_suffix(48000, fc.get_suffix_str(48000)) == \
        torch.utils.flop_counter.convert_num_with_suffix(48000, torch.utils.flop_counter.get_suffix_str(48000))


def test_profiler_with_flops():
    def run(L, FC, _):
        m = L.nn.Linear(6, 4)
        with L.no_grad(), L.profiler.profile(with_flops=True) as p:
            m(data(L, 3, 6))
            L.bmm(data(L, 2, 3, 4), data(L, 2, 4, 5))
        return {e.key: e.flops for e in p.key_averages() if e.key in ("aten::addmm", "aten::bmm")}
    t, h = both(run)
    assert t == h


# ---------------------------------------------------------------------------------------------------------
# pruning

def state(m):
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def same_state(a, b):
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_allclose(b[k], a[k], rtol=1e-6, atol=1e-7, err_msg=k)


def test_pruning_methods_masks_and_containers():
    def run(L, _, prune):
        L.manual_seed(0)
        m, c = L.nn.Linear(6, 4), L.nn.Conv2d(3, 5, 3)
        prune.random_unstructured(m, "weight", amount=0.3)
        prune.l1_unstructured(m, "weight", amount=0.25)
        prune.l1_unstructured(m, "bias", amount=2, importance_scores=L.arange(4.0))
        prune.random_structured(c, "weight", amount=2, dim=0)
        prune.ln_structured(c, "weight", amount=0.34, n=2, dim=1)
        prune.identity(c, "bias")
        hooks = [(type(h).__name__, h._tensor_name, [type(x).__name__ for x in h] if isinstance(
            h, prune.PruningContainer) else None) for h in list(m._forward_pre_hooks.values()) +
            list(c._forward_pre_hooks.values())]
        params = sorted(n for n, _ in m.named_parameters()) + sorted(n for n, _ in c.named_parameters())
        return state(m), state(c), hooks, params, prune.is_pruned(m), prune.is_pruned(L.nn.Linear(2, 2))
    t, h = both(run)
    same_state(t[0], h[0])
    same_state(t[1], h[1])
    assert t[2:] == h[2:]


def test_pruning_hook_fires_and_remove():
    def run(L, _, prune):
        L.manual_seed(1)
        m = L.nn.Linear(5, 3)
        prune.l1_unstructured(m, "weight", amount=0.4)
        with L.no_grad():
            m.weight_orig.mul_(2)           # the pre-hook recomputes weight = mask * weight_orig
        x = data(L, 2, 5)
        y1 = m(x).detach().numpy().copy()
        w = m.weight.detach().numpy().copy()
        m(x).sum().backward()
        g = m.weight_orig.grad.numpy().copy()
        prune.remove(m, "weight")
        errs = []
        for f in (lambda: prune.remove(m, "weight"), lambda: prune.l1_unstructured(m, "bias", amount=1.5),
                  lambda: prune.l1_unstructured(m, "bias", amount=10),
                  lambda: prune.random_structured(m, "bias", 1, 0)):
            try:
                f()
            except (ValueError, TypeError, IndexError) as e:
                errs.append((type(e).__name__, str(e).split(" of module")[0].split(". Found")[0]))
        return y1, w, g, state(m), sorted(n for n, _ in m.named_parameters()), len(m._forward_pre_hooks), errs
    t, h = both(run)
    for a, b in zip(t[:3], h[:3]):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    same_state(t[3], h[3])
    assert t[4:] == h[4:]


def test_global_unstructured_and_custom_mask():
    def run(L, _, prune):
        L.manual_seed(2)
        net = L.nn.Sequential(L.nn.Linear(5, 4), L.nn.ReLU(), L.nn.Linear(4, 3))
        prune.random_unstructured(net[0], "weight", amount=3)
        prune.global_unstructured([(net[0], "weight"), (net[2], "weight"), (net[2], "bias")],
                                  pruning_method=prune.L1Unstructured, amount=0.3)
        prune.custom_from_mask(net[0], "bias", mask=L.tensor([1.0, 0.0, 1.0, 0.0]))
        try:
            prune.global_unstructured([(net[0], "bias")], pruning_method=prune.RandomStructured, amount=1)
        except TypeError as e:
            err = str(e).split("Found")[0]
        return state(net), err
    t, h = both(run)
    same_state(t[0], h[0])
    assert t[1] == h[1]


def test_prune_method_without_module():
    def run(L, _, prune):
        L.manual_seed(3)
        t = data(L, 4, 4)
        return prune.L1Unstructured(amount=0.5).prune(t).numpy(), prune.RandomUnstructured(amount=5).prune(t).numpy()
    for a, b in zip(*both(run)):
        np.testing.assert_array_equal(b, a)


# ---------------------------------------------------------------------------------------------------------
# dlpack

def test_dlpack_shares_memory_with_torch_both_ways():
    t = torch.arange(6.0).reshape(2, 3)
    h = hg.from_dlpack(t)
    assert h.shape == (2, 3) and h.dtype is hg.float32
    h[0, 1] = 42.0
    assert t[0, 1].item() == 42.0
    h2 = hg.arange(4, dtype=hg.int64)
    t2 = torch.from_dlpack(h2)
    t2[2] = -7
    assert h2.tolist() == [0, 1, -7, 3] and t2.dtype == torch.int64
    t3 = torch.utils.dlpack.from_dlpack(hg.utils.dlpack.to_dlpack(h2))      # through a capsule
    t3[0] = 9
    assert h2[0].item() == 9
    h4 = hg.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    h4[1, 2] = 5.0
    assert t[1, 2].item() == 5.0


def test_dlpack_with_numpy_and_views():
    a = np.arange(12.0).reshape(3, 4)
    h = hg.from_dlpack(a)
    h[2, 3] = -1.0
    assert a[2, 3] == -1.0
    v = hg.arange(12.0).reshape(3, 4).t()          # a strided view
    b = np.from_dlpack(v)
    assert b.shape == (4, 3) and np.shares_memory(b, v.numpy())
    tv = torch.from_dlpack(v)
    assert tv.stride() == v.stride()


def test_dlpack_device_and_errors():
    d = hg.ones(2).__dlpack_device__()
    assert (int(d[0]), d[1]) == tuple(int(x) for x in torch.ones(2).__dlpack_device__())
    assert hg.utils.dlpack.DLDeviceType.kDLCPU == int(torch.utils.dlpack.DLDeviceType.kDLCPU)
    assert [m.name for m in hg.utils.dlpack.DLDeviceType][:3] == [m.name for m in torch.utils.dlpack.DLDeviceType][:3]
    for lib in (torch, hg):
        with pytest.raises(BufferError, match="require gradient"):
            lib.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError):
        hg.from_dlpack([1, 2])
    c = hg.from_dlpack(torch.ones(2), copy=True)
    assert not np.shares_memory(c.numpy(), torch.ones(2).numpy()) and c.tolist() == [1.0, 1.0]
    for lib in (torch, hg):
        with pytest.raises(AssertionError):
            lib.from_dlpack(lib.utils.dlpack.to_dlpack(lib.ones(2)), copy=True)
