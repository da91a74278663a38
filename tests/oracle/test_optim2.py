"""The remaining torch.optim algorithms against torch: trajectories, state (values, versions, key layout),
state_dict round trips, hooks through the base class, LBFGS with closures, swa_utils and errors."""
import copy
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same

CONFIGS = [
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, maximize=True, foreach=False)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.05, maximize=True, foreach=False)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01, maximize=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, foreach=False)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.6), weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.6), weight_decay=0.1, decoupled_weight_decay=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1), maximize=True, foreach=False)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1, maximize=True, foreach=False)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-6, 1e-2), d=1.5, weight_decay=0.1, maximize=True)),
]


def _run(lib, name, kw, init, grads, groups=True):
    params = [lib.nn.Parameter(lib.tensor(a.copy())) for a in init]
    lr = kw.get("lr", 0.01)
    spec = [{"params": params[:1]}, {"params": params[1:], "lr": lr / 2}] if groups else params
    opt = getattr(lib.optim, name)(spec, **kw)
    traj = []
    for step in grads:
        for p, g in zip(params, step):
            p.grad = None if g is None else lib.tensor(g)
        opt.step()
        traj.append([p.detach().clone() for p in params])
    return params, opt, traj


def _data(dtype, steps=6, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in [(3, 2), (4,)]]
    grads = [[rng.standard_normal(a.shape).astype(dtype) for a in init] for _ in range(steps)]
    grads[2][1] = None   # a step where one parameter has no grad
    grads[4][0] = grads[3][0]   # a repeated gradient (Rprop's sign branches)
    return init, grads


def _same_state(t_sd, h_sd):
    assert list(t_sd["state"]) == list(h_sd["state"])
    for k in t_sd["state"]:
        ts, hs = t_sd["state"][k], h_sd["state"][k]
        assert list(ts) == list(hs), (k, list(ts), list(hs))
        for key in ts:
            assert_same(ts[key], hs[key], f"state[{k}][{key!r}]")
    assert t_sd["param_groups"] == h_sd["param_groups"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_trajectory_state_and_versions(name, kw, dtype):
    init, grads = _data(dtype)
    tp, topt, ttraj = _run(torch, name, kw, init, grads)
    hp, hopt, htraj = _run(hookgrad, name, kw, init, grads)
    for i, (ts, hs) in enumerate(zip(ttraj, htraj)):
        for j, (a, b) in enumerate(zip(ts, hs)):
            assert_same(a, b, f"param {j} after step {i + 1}")
    _same_state(topt.state_dict(), hopt.state_dict())
    assert [p._version for p in tp] == [p._version for p in hp]
    for p_t, p_h in zip(tp, hp):
        for (k, a), (_, b) in zip(topt.state[p_t].items(), hopt.state[p_h].items()):
            assert a._version == b._version, k
    assert repr(topt) == repr(hopt)


def _resume(lib, name, kw, init, grads):
    params, opt, _ = _run(lib, name, kw, init, grads[:3])
    sd = copy.deepcopy(opt.state_dict())
    params2 = [lib.nn.Parameter(p.detach().clone()) for p in params]
    opt2 = getattr(lib.optim, name)([{"params": params2[:1]}, {"params": params2[1:]}], lr=0.5)
    opt2.load_state_dict(sd)
    for step in grads[3:]:
        for p, g in zip(params2, step):
            p.grad = None if g is None else lib.tensor(g)
        opt2.step()
    return params2, opt2


@pytest.mark.parametrize("name,kw", CONFIGS[1::2], ids=[n for n, _ in CONFIGS[1::2]])
def test_state_dict_round_trip_resumes(name, kw):
    # load_state_dict casts the float state (not 'step') to the parameter's dtype, in both libraries
    init, grads = _data("float64", steps=6)
    tp, topt = _resume(torch, name, kw, init, grads)
    hp, hopt = _resume(hookgrad, name, kw, init, grads)
    for a, b in zip(tp, hp):
        assert_same(a, b, "param after resume")
    _same_state(topt.state_dict(), hopt.state_dict())


def test_hooks_of_the_base_class_apply():
    for lib in (torch, hookgrad):
        p = lib.nn.Parameter(lib.ones(2))
        for cls in ("Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adadelta"):
            opt = getattr(lib.optim, cls)([p])
            log = []
            opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
            opt.register_step_post_hook(lambda o, a, k: log.append("post"))
            opt.register_state_dict_post_hook(lambda o, sd: log.append("sd"))
            p.grad = lib.ones(2)
            opt.step()
            opt.state_dict()
            assert log == ["pre", "post", "sd"], (lib.__name__, cls, log)


def _lbfgs(lib, kw, iters=3, dtype="float64"):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 3)).astype(dtype)
    b = rng.standard_normal(5).astype(dtype)
    A, B = lib.tensor(a), lib.tensor(b)
    x = lib.nn.Parameter(lib.zeros(3, dtype=getattr(lib, dtype)))
    y = lib.nn.Parameter(lib.tensor(np.array([0.5], dtype=dtype)))
    opt = lib.optim.LBFGS([x, y], **kw)
    losses, calls = [], [0]

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = ((A @ x + y - B) ** 2).sum() + (x ** 4).sum() * 0.1
        loss.backward()
        return loss
    for _ in range(iters):
        losses.append(opt.step(closure))
    return x, y, opt, losses, calls[0]


@pytest.mark.parametrize("kw", [dict(), dict(line_search_fn="strong_wolfe"), dict(lr=0.5, max_iter=4, history_size=2),
                                dict(line_search_fn="strong_wolfe", max_iter=5, history_size=3)])
def test_lbfgs_matches(kw):
    tx, ty, topt, tl, tc = _lbfgs(torch, kw)
    hx, hy, hopt, hl, hc = _lbfgs(hookgrad, kw)
    assert tc == hc
    for a, b in zip(tl, hl):
        assert_same(a, b, "loss")
    assert_same(tx, hx, "x")
    assert_same(ty, hy, "y")
    ts, hs = topt.state_dict()["state"][0], hopt.state_dict()["state"][0]
    assert sorted(ts) == sorted(hs)
    assert ts["func_evals"] == hs["func_evals"] and ts["n_iter"] == hs["n_iter"]


def test_lbfgs_errors():
    for lib in (torch, hookgrad):
        p = lib.nn.Parameter(lib.ones(2))
        q = lib.nn.Parameter(lib.ones(2))
        with pytest.raises(ValueError, match="doesn't support per-parameter options"):
            lib.optim.LBFGS([{"params": [p]}, {"params": [q]}])
        opt = lib.optim.LBFGS([p], line_search_fn="nope")
        with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
            opt.step(lambda: (p.grad.__class__ if False else (p * 3).sum().backward() or (p * 3).sum()))


@pytest.mark.parametrize("name,kw,err", [
    ("Adamax", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("NAdam", dict(momentum_decay=-1.0), "Invalid momentum_decay value: -1.0"),
    ("RAdam", dict(weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    ("RAdam", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    ("Rprop", dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    ("ASGD", dict(lr=-0.1), "Invalid learning rate: -0.1"),
    ("LBFGS", dict(lr=-2), "Invalid learning rate: -2"),
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
])
def test_constructor_errors(name, kw, err):
    msgs = []
    for lib in (torch, hookgrad):
        with pytest.raises(ValueError) as ei:
            getattr(lib.optim, name)([lib.nn.Parameter(lib.ones(1))], **kw)
        msgs.append(str(ei.value))
    assert msgs[0] == msgs[1] == err


# ------------------------------------------------------------------------------------------ swa_utils
def _net(lib, w):
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 2)).double()
    with lib.no_grad():
        for p, a in zip(m.parameters(), w):
            p.copy_(lib.tensor(a))
    return m


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_multi", "swa_multi", "buffers"])
def test_averaged_model_and_update_bn(kind):
    rng = np.random.default_rng(4)
    shapes = [(4, 3), (4,), (4,), (4,), (2, 4), (2,)]
    w = [rng.standard_normal(s) for s in shapes]
    xs = [rng.standard_normal((5, 3)) for _ in range(4)]
    out = []
    for lib in (torch, hookgrad):
        su = lib.optim.swa_utils
        m = _net(lib, w)
        kw = {"swa": {}, "ema": dict(avg_fn=su.get_ema_avg_fn(0.9)), "ema_multi": dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.8)),
              "swa_multi": dict(multi_avg_fn=su.get_swa_multi_avg_fn()), "buffers": dict(use_buffers=True)}[kind]
        avg = su.AveragedModel(m, **kw)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        for x in xs:
            opt.zero_grad()
            m(lib.tensor(x)).pow(2).sum().backward()
            opt.step()
            avg.update_parameters(m)
        loader = [(lib.tensor(x), 0) for x in xs]
        su.update_bn(loader, avg)
        state = avg.state_dict()
        out.append((list(state), [state[k] for k in state], avg(lib.tensor(xs[0])), avg.training))
    assert out[0][0] == out[1][0]
    for a, b in zip(out[0][1], out[1][1]):
        assert_same(a, b, "averaged state")
    assert_same(out[0][2], out[1][2], "averaged output")
    assert out[0][3] == out[1][3]


def test_swa_errors():
    for lib in (torch, hookgrad):
        su = lib.optim.swa_utils
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a value in \[0,1\] range."):
            su.get_ema_avg_fn(1.5)
        with pytest.raises(ValueError, match="Invalid decay value -1"):
            su.get_ema_multi_avg_fn(-1)
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
            su.AveragedModel(lib.nn.Linear(1, 1), avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())
