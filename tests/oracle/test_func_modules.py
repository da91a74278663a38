"""torch.func with modules against torch: functional_call (a dict, a tuple of dicts, buffers, tie_weights, strict),
BatchNorm's running stats through functional_call, stack_module_state ensembles under vmap, and per-sample
gradients by vmap(grad(functional_call)) equal to a loop of batch-size-1 gradients and to the hook-based
hookgrad.tools.per_sample_grads."""
import numpy as np
import pytest

import hookgrad
from _func_util import both, raises_same, data
from hookgrad.tools.per_sample import per_sample_grads

XM = data(5, 4, seed=3).astype(np.float64)
XC = data(5, 2, 6, 6, seed=4).astype(np.float64)
TG = np.array([0, 2, 1, 2, 0])


def mlp(lib):
    lib.manual_seed(1)
    return lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.LayerNorm(6), lib.nn.GELU(), lib.nn.Linear(6, 3)).double()


def cnn(lib):
    lib.manual_seed(2)
    return lib.nn.Sequential(lib.nn.Conv2d(2, 4, 3), lib.nn.GroupNorm(2, 4), lib.nn.ReLU(),
                             lib.nn.AdaptiveAvgPool2d(2), lib.nn.Flatten(), lib.nn.Linear(16, 3)).double()


def bn_net(lib):
    lib.manual_seed(3)
    return lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.ReLU(), lib.nn.Linear(6, 3)).double()


def test_functional_call_forms():
    def scen(lib):
        fc = lib.func.functional_call
        m = mlp(lib)
        x = lib.tensor(XM)
        params = {k: v * 2 for k, v in m.named_parameters()}
        half = dict(list(params.items())[:2])
        rest = dict(list(params.items())[2:])
        out = (fc(m, params, (x,)), fc(m, params, x), fc(m, (half, rest), (x,)), fc(m, [half], x),
               fc(m, {}, args=(), kwargs={"input": x}))
        still = m(x)                                               # the module's own parameters are back
        return out, still, [n for n, _ in m.named_parameters()]
    both(scen)


def test_functional_call_buffers_batchnorm():
    def scen(lib):
        fc = lib.func.functional_call
        m = bn_net(lib)
        x = lib.tensor(XM)
        params = dict(m.named_parameters())
        buffers = {k: v.clone() for k, v in m.named_buffers()}
        out = fc(m, (params, buffers), (x,))                        # train mode: the given buffers are updated
        m.eval()
        out_eval = fc(m, (params, buffers), (x,))
        g = lib.func.grad(lambda p: fc(m, (p, buffers), (x,)).pow(2).sum())(params)
        m.train()
        g_train = lib.func.grad(lambda p, b: fc(m, (p, b), (x,)).sum())(params, {k: v.clone() for k, v in buffers.items()})
        return out, buffers, dict(m.named_buffers()), out_eval, g, g_train
    both(scen)


def test_functional_call_tie_weights_and_strict():
    class Tied:
        @staticmethod
        def make(lib):
            lib.manual_seed(4)
            m = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.Linear(3, 3)).double()
            m[1].weight = m[0].weight
            return m

    def scen(lib):
        fc = lib.func.functional_call
        m = Tied.make(lib)
        x = lib.tensor(XM[:, :3])
        w = lib.ones(3, 3, dtype=lib.float64)
        return fc(m, {"0.weight": w}, (x,)), fc(m, {"0.weight": w}, (x,), tie_weights=False)
    both(scen)
    raises_same(lambda lib: lib.func.functional_call(Tied.make(lib), {"0.weight": lib.ones(3, 3), "1.weight": lib.zeros(3, 3)},
                                                     (lib.ones(2, 3),)))
    raises_same(lambda lib: lib.func.functional_call(mlp(lib), {"0.weight": lib.ones(6, 4)}, (lib.ones(2, 4),),
                                                     strict=True))
    raises_same(lambda lib: lib.func.functional_call(mlp(lib), ({"0.weight": 1}, {"0.weight": 2}), (lib.ones(2, 4),)))
    raises_same(lambda lib: lib.func.functional_call(mlp(lib), 3, (lib.ones(2, 4),)))
    raises_same(lambda lib: lib.func.functional_call(mlp(lib), ({"a": 1}, 2), (lib.ones(2, 4),)))


@pytest.mark.parametrize("make,xs", [(mlp, XM), (cnn, XC)], ids=["mlp", "cnn"])
def test_stack_module_state_ensemble(make, xs):
    def scen(lib):
        models = []
        for i in range(3):
            lib.manual_seed(10 + i)
            models.append(make(lib))
        params, buffers = lib.func.stack_module_state(models)
        base = models[0]
        x = lib.tensor(xs)

        def run(p, b, xb):
            return lib.func.functional_call(base, (p, b), (xb,))
        same_x = lib.func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
        per_x = lib.func.vmap(run)(params, buffers, lib.stack([x, x * 0.5, -x]))
        loop = lib.stack([m(x) for m in models])
        grads = lib.func.vmap(lib.func.grad(lambda p, b, xb: run(p, b, xb).square().mean()),
                              in_dims=(0, 0, None))(params, buffers, x)
        return same_x, per_x, loop, {k: v.requires_grad for k, v in params.items()}, grads
    t, h = both(scen, tol=(1e-7, 1e-8))
    np.testing.assert_allclose(t[0].detach().numpy(), t[2].detach().numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(h[0].detach().numpy(), h[2].detach().numpy(), rtol=1e-9, atol=1e-10)
    raises_same(lambda lib: lib.func.stack_module_state([]))
    raises_same(lambda lib: lib.func.stack_module_state([mlp(lib), cnn(lib)]))
    raises_same(lambda lib: lib.func.stack_module_state([mlp(lib), mlp(lib).eval()]))


@pytest.mark.parametrize("make,xs", [(mlp, XM), (cnn, XC)], ids=["mlp", "cnn"])
def test_per_sample_grads(make, xs):
    """vmap(grad(functional_call)) == the loop of batch-size-1 gradients == tools.per_sample_grads; torch.func's
    values too."""
    def scen(lib):
        m = make(lib)
        params = {k: v.detach() for k, v in m.named_parameters()}
        x, y = lib.tensor(xs), lib.tensor(TG)

        def loss(p, xb, yb):
            return lib.nn.functional.cross_entropy(lib.func.functional_call(m, p, (xb.unsqueeze(0),)), yb.unsqueeze(0))
        return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    _, h = both(scen, tol=(1e-7, 1e-8))
    m = make(hookgrad)
    x, y = hookgrad.tensor(xs), hookgrad.tensor(TG)
    for i in range(len(xs)):
        m.zero_grad()
        hookgrad.nn.functional.cross_entropy(m(x[i:i + 1]), y[i:i + 1]).backward()
        for k, p in m.named_parameters():
            np.testing.assert_allclose(h[k][i].numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=f"{k}[{i}]")
    hooked = per_sample_grads(m, lambda out: hookgrad.nn.functional.cross_entropy(out, y, reduction="sum"), x)
    assert sorted(hooked) == sorted(h)
    for k in h:
        np.testing.assert_allclose(h[k].numpy(), hooked[k].numpy(), rtol=1e-8, atol=1e-10, err_msg=k)


def test_vmap_batchnorm_modes():
    """BatchNorm under vmap: eval mode and track_running_stats=False batch; running stats in train mode are
    PyTorch's error (see test_func_vmap)."""
    def scen(lib):
        lib.manual_seed(5)
        bn = lib.nn.BatchNorm1d(4).double()
        bn.running_mean += 0.5
        x = lib.tensor(data(3, 5, 4, seed=6).astype(np.float64))
        bn.eval()
        ev = lib.func.vmap(bn)(x)
        free = lib.nn.BatchNorm1d(4, track_running_stats=False).double()
        tr = lib.func.vmap(free)(x)
        g = lib.func.vmap(lib.func.grad(lambda xb: free(xb).pow(3).sum()))(x)
        return ev, tr, g
    both(scen)


def test_replace_all_batch_norm_modules():
    def scen(lib):
        net = bn_net(lib)
        lib.func.replace_all_batch_norm_modules_(net)
        x = lib.tensor(data(2, 5, 4, seed=8).astype(np.float64))
        out = lib.func.vmap(net)(x)
        return out, net[1].running_mean is None, net[1].track_running_stats
    both(scen)


MODULES = {
    "mha": (lambda nn: nn.MultiheadAttention(8, 2, batch_first=True), lambda m, x: m(x, x, x)[0], (3, 5, 8)),
    "encoder": (lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
                lambda m, x: m(x), (3, 5, 8)),
    "embedding": (lambda nn: nn.Embedding(10, 4), lambda m, x: m((x.abs() * 3).long() % 10), (3, 5, 8)),
    "conv_transpose": (lambda nn: nn.ConvTranspose1d(2, 3, 3), lambda m, x: m(x), (3, 2, 2, 6)),
    "instance_norm": (lambda nn: nn.InstanceNorm1d(2, affine=True), lambda m, x: m(x), (3, 2, 2, 6)),
    "pool": (lambda nn: nn.Sequential(nn.Conv1d(2, 4, 2), nn.AvgPool1d(2), nn.AdaptiveMaxPool1d(1)), lambda m, x: m(x),
             (3, 2, 2, 6)),
    "rms_norm": (lambda nn: nn.RMSNorm(8), lambda m, x: m(x), (3, 5, 8)),
    "bilinear": (lambda nn: nn.Bilinear(8, 8, 3), lambda m, x: m(x, x), (3, 5, 8)),
}


@pytest.mark.parametrize("name", list(MODULES))
def test_vmap_modules(name):
    make, call, shape = MODULES[name]

    def scen(lib):
        lib.manual_seed(6)
        m = make(lib.nn).double().eval()
        with lib.no_grad():
            for i, p in enumerate(m.parameters()):              # the same values in both (no init RNG)
                p.copy_(lib.tensor(data(*p.shape, seed=20 + i).astype(np.float64)) * 0.5)
        x = lib.tensor(data(*shape, seed=11).astype(np.float64))
        out = lib.func.vmap(lambda xb: call(m, xb))(x)
        params = {k: v.detach() for k, v in m.named_parameters()}
        args = (lambda xb: (xb, xb, xb)) if name == "mha" else (lambda xb: (xb,))
        first = (lambda o: o[0]) if name == "mha" else (lambda o: o)
        g = lib.func.vmap(lib.func.grad(lambda p, xb: first(lib.func.functional_call(m, p, args(xb))).sum()),
                          in_dims=(None, 0))(params, x) if name in ("mha", "rms_norm", "instance_norm",
                                                                    "conv_transpose") else None
        return out, g
    both(scen, tol=(1e-7, 1e-9))


def test_ensemble_batchnorm_train_updates_stacked_buffers():
    def scen(lib):
        models = []
        for i in range(3):
            lib.manual_seed(i)
            models.append(lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3)).double())
        params, buffers = lib.func.stack_module_state(models)
        x = lib.tensor(XM)
        out = lib.func.vmap(lambda p, b, xb: lib.func.functional_call(models[0], (p, b), (xb,)),
                            in_dims=(0, 0, None))(params, buffers, x)
        return out, buffers
    both(scen)
