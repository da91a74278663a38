"""Optimizers against torch: trajectories, state, state_dict layout, hooks and errors."""
import copy
import importlib
import re
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same, events

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.05, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.01, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.2, maximize=True)),
]


def _run(lib, name, kw, init, grads, groups=False):
    params = [lib.nn.Parameter(lib.tensor(a.copy())) for a in init]
    spec = [{"params": params[:1]}, {"params": params[1:], "lr": kw["lr"] / 2}] if groups else params
    opt = getattr(lib.optim, name)(spec, **kw)
    traj = []
    for step in grads:
        for p, g in zip(params, step):
            p.grad = None if g is None else lib.tensor(g)
        opt.step()
        traj.append([p.detach().clone() for p in params])
    return params, opt, traj


def _data(dtype, steps=5, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in [(3, 2), (4,)]]
    grads = [[rng.standard_normal(a.shape).astype(dtype) for a in init] for _ in range(steps)]
    grads[2][1] = None   # a step where one parameter has no grad
    return init, grads


def _same_state(t_sd, h_sd):
    assert list(t_sd["state"]) == list(h_sd["state"])
    for k in t_sd["state"]:
        ts, hs = t_sd["state"][k], h_sd["state"][k]
        assert list(ts) == list(hs), (k, list(ts), list(hs))
        for key in ts:
            assert_same(ts[key], hs[key], f"state[{k}][{key!r}]")
    strip = lambda gs: [{k: v for k, v in g.items()} for g in gs]
    assert strip(t_sd["param_groups"]) == strip(h_sd["param_groups"])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_trajectory_and_state(name, kw, dtype):
    init, grads = _data(dtype)
    groups = name in ("SGD", "Adam") and "momentum" not in kw
    tp, topt, ttraj = _run(torch, name, kw, init, grads, groups)
    hp, hopt, htraj = _run(hookgrad, name, kw, init, grads, groups)
    for i, (ts, hs) in enumerate(zip(ttraj, htraj)):
        for j, (a, b) in enumerate(zip(ts, hs)):
            assert_same(a, b, f"param {j} after step {i + 1}")
    _same_state(topt.state_dict(), hopt.state_dict())
    assert [p._version for p in tp] == [p._version for p in hp]
    for p_t, p_h in zip(tp, hp):
        for (k, a), (_, b) in zip(topt.state[p_t].items(), hopt.state[p_h].items()):
            assert a._version == b._version, k


def test_state_dict_resume_matches_uninterrupted():
    init, grads = _data("float64", steps=6)
    _, _, full = _run(hookgrad, "Adam", dict(lr=0.01, amsgrad=True), init, grads)
    params, opt, _ = _run(hookgrad, "Adam", dict(lr=0.01, amsgrad=True), init, grads[:3])
    sd = copy.deepcopy(opt.state_dict())
    params2 = [hookgrad.nn.Parameter(p.detach().clone()) for p in params]
    opt2 = hookgrad.optim.Adam(params2, lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01 and opt2.param_groups[0]["params"][0] is params2[0]
    for step in grads[3:]:
        for p, g in zip(params2, step):
            p.grad = None if g is None else hookgrad.tensor(g)
        opt2.step()
    for a, b in zip(full[-1], params2):
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy())


def test_load_state_dict_from_torch_layout_and_cast():
    # a torch optimizer state (converted to hookgrad tensors) loads and casts to the param dtype
    init, grads = _data("float32")
    _, topt, _ = _run(torch, "SGD", dict(lr=0.1, momentum=0.9), init, grads)
    sd = topt.state_dict()
    conv = {"state": {k: {n: hookgrad.tensor(v.double().numpy()) for n, v in s.items()} for k, s in sd["state"].items()},
            "param_groups": sd["param_groups"]}
    params = [hookgrad.nn.Parameter(hookgrad.tensor(a)) for a in init]
    opt = hookgrad.optim.SGD(params, lr=1.0, momentum=0.9)
    opt.load_state_dict(conv)
    assert opt.state[params[0]]["momentum_buffer"].dtype == hookgrad.float32
    assert opt.param_groups[0]["lr"] == 0.1


def test_zero_grad():
    def scen(lib, log):
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        p.grad = lib.ones(2)
        g = p.grad
        opt.zero_grad(set_to_none=False)
        log("kept", p.grad is g, p.grad, g._version)
        opt.zero_grad()
        log("none", p.grad)
    events(scen)


def test_step_hooks_order_args_and_kwargs():
    def scen(lib, log):
        from_mod = importlib.import_module(lib.__name__ + ".optim.optimizer")
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        g1 = from_mod.register_optimizer_step_pre_hook(lambda o, a, k: log("GLOBAL pre", type(o).__name__, len(a), a[0] is o, sorted(k)))
        g2 = from_mod.register_optimizer_step_post_hook(lambda o, a, k: log("GLOBAL post", len(a)))
        try:
            opt.register_step_pre_hook(lambda o, a, k: log("pre", len(a), sorted(k)))
            h = opt.register_step_post_hook(lambda o, a, k: log("post"))
            p.grad = lib.ones(2)
            opt.step()
            log("loss", opt.step(closure=lambda: (log("closure", lib.is_grad_enabled()), lib.tensor(2.))[1]))
            h.remove()
            opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": lambda: lib.tensor(7.)}))
            log("replaced", opt.step())
            log("hooked", type(opt).step.hooked, p)
        finally:
            g1.remove()
            g2.remove()
    events(scen)


def test_step_pre_hook_bad_return_message():
    msgs = []
    for lib in (torch, hookgrad):
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        opt.register_step_pre_hook(lambda o, a, k: 5)
        with pytest.raises(RuntimeError) as ei:
            opt.step()
        msgs.append(re.sub(r"0x[0-9a-f]+", "ADDR", str(ei.value)))
    assert msgs[0] == msgs[1]
    assert msgs[1].startswith("<function SGD.step at ADDR> must return None")


def test_state_dict_hooks():
    def scen(lib, log):
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.ones(2)
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
        opt.step()
        opt.register_state_dict_pre_hook(lambda o: log("sd pre"))
        opt.register_state_dict_pre_hook(lambda o: log("sd pre prepended"), prepend=True)
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
        opt.register_state_dict_post_hook(lambda o, sd: log("sd post first", sorted(sd)), prepend=True)
        sd = opt.state_dict()
        log("keys", sorted(sd))

        def lpre(o, sd):
            log("load pre", sorted(sd))
            sd = dict(sd)
            sd.pop("extra")
            sd["param_groups"] = [dict(sd["param_groups"][0], lr=0.5)]
            return sd
        opt.register_load_state_dict_pre_hook(lpre)
        opt.register_load_state_dict_post_hook(lambda o: log("load post", o.param_groups[0]["lr"]))
        opt.register_load_state_dict_post_hook(lambda o: log("load post prepended"), prepend=True)
        opt.load_state_dict(sd)
        log("sd untouched", sorted(sd), sd["param_groups"][0]["lr"])
    events(scen)


def _err(fn):
    try:
        fn()
    except Exception as e:
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", range(12))
def test_errors_match_torch(case):
    def run(lib):
        p = lib.nn.Parameter(lib.ones(2))
        q = lib.nn.Parameter(lib.ones(3))
        return [
            lambda: lib.optim.SGD([], lr=0.1),
            lambda: lib.optim.SGD(p, lr=0.1),
            lambda: lib.optim.SGD([p * 2], lr=0.1),
            lambda: lib.optim.SGD({p}, lr=0.1),
            lambda: lib.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1),
            lambda: lib.optim.SGD([p], lr=-1),
            lambda: lib.optim.SGD([p], lr=0.1, nesterov=True),
            lambda: lib.optim.Adam([p], betas=(1.0, 0.9)),
            lambda: lib.optim.SGD([p, 3], lr=0.1),
            lambda: lib.optim.SGD([p], lr=0.1).load_state_dict({"state": {}, "param_groups": []}),
            lambda: lib.optim.SGD([p], lr=0.1).load_state_dict(lib.optim.SGD([p, q], lr=0.1).state_dict()),
            lambda: lib.optim.RMSprop([p], alpha=-1),
        ][case]
    assert _err(run(torch)) == _err(run(hookgrad))


def test_add_param_group_defaults_and_repr():
    out = []
    for lib in (torch, hookgrad):
        p, q = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.Adam([p], lr=0.1)
        opt.add_param_group({"params": q, "lr": 0.2})
        out.append((repr(opt), [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]))
    assert out[0] == out[1]


def test_duplicate_param_warning():
    with pytest.warns(UserWarning, match="duplicate parameters"):
        p = hookgrad.nn.Parameter(hookgrad.ones(2))
        hookgrad.optim.SGD([p, p], lr=0.1)


def test_step_bumps_version_so_saved_params_error():
    msgs = []
    for lib in (torch, hookgrad):
        p = lib.nn.Parameter(lib.ones(2))
        y = (p * p).sum()
        p.grad = lib.ones(2)
        lib.optim.SGD([p], lr=0.1).step()
        with pytest.raises(RuntimeError) as ei:
            y.backward()
        msgs.append("modified by an inplace operation" in str(ei.value))
    assert msgs == [True, True]


def test_step_runs_without_grad_mode():
    seen = []
    p = hookgrad.nn.Parameter(hookgrad.ones(2))
    p.grad = hookgrad.ones(2)
    opt = hookgrad.optim.SGD([p], lr=0.1)
    opt.register_step_post_hook(lambda o, a, k: seen.append(hookgrad.is_grad_enabled()))
    opt.step()
    assert hookgrad.is_grad_enabled() and p.grad_fn is None and p.requires_grad


# ------------------------------------------------------------------------------------------ schedulers
def _sched_run(lib, make, steps=14, opt_name="SGD", metrics=None):
    p = lib.nn.Parameter(lib.ones(1))
    groups = [{"params": [p]}, {"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.05}]
    opt = getattr(lib.optim, opt_name)(groups, lr=0.1, **({"momentum": 0.9} if opt_name == "SGD" else {}))
    s = make(lib, opt)
    out = [list(s.get_last_lr())]
    for i in range(steps):
        opt.step()
        s.step(metrics[i]) if metrics else s.step()
        out.append(list(s.get_last_lr()) + [g.get("momentum", g.get("betas")) for g in opt.param_groups])
    sd = s.state_dict()
    return out, sorted(k for k in sd if k not in ("_schedulers", "lr_lambdas"))


SCHEDULERS = {
    "StepLR": lambda L, o: L.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda L, o: L.optim.lr_scheduler.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda L, o: L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.001),
    "LinearLR": lambda L, o: L.optim.lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=6),
    "LambdaLR": lambda L, o: L.optim.lr_scheduler.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]),
    "OneCycleLR": lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=15),
    "OneCycleLR3": lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=15, three_phase=True,
                                                                anneal_strategy="linear"),
    "SequentialLR": lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3),
            L.optim.lr_scheduler.ExponentialLR(o, gamma=0.8)], milestones=[4]),
}


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_sequences(name, opt_name):
    t = _sched_run(torch, SCHEDULERS[name], opt_name=opt_name)
    h = _sched_run(hookgrad, SCHEDULERS[name], opt_name=opt_name)
    flat = lambda row: [float(v) for x in row for v in (x if isinstance(x, tuple) else (x,))]
    assert len(t[0]) == len(h[0])
    for a, b in zip(t[0], h[0]):
        np.testing.assert_allclose(flat(b), flat(a), rtol=1e-12)
    assert t[1] == h[1]


def test_reduce_lr_on_plateau():
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.98, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2]
    make = lambda L, o: L.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1, min_lr=[0.02, 0])
    t = _sched_run(torch, make, metrics=metrics)
    h = _sched_run(hookgrad, make, metrics=metrics)
    assert t == h


def test_scheduler_closed_form_and_state_dict():
    out = []
    for lib in (torch, hookgrad):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1)
        s = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step()                      # before optimizer.step(): PyTorch warns
            opt.step()
            s.step(epoch=5)               # deprecated closed form
        out.append(([str(x.message)[:60] for x in w], s.get_last_lr(), s.last_epoch))
        s2 = lib.optim.lr_scheduler.StepLR(opt, step_size=7)
        s2.load_state_dict(s.state_dict())
        out.append((s2.step_size, s2.last_epoch))
    assert out[0] == out[2] and out[1] == out[3]


def test_scheduler_errors():
    for lib in (torch, hookgrad):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1)
        with pytest.raises(TypeError, match="list is not an Optimizer"):
            lib.optim.lr_scheduler.StepLR([], 2)
        with pytest.raises(KeyError, match="initial_lr"):
            lib.optim.lr_scheduler.StepLR(opt, 2, last_epoch=3)
        with pytest.raises(ValueError, match="Tried to step 3 times"):
            s = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=2)
            for _ in range(3):
                opt.step()
                s.step()


def test_training_loop_with_module_matches_torch():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((8, 3)), rng.standard_normal((8, 2))
    w, b = rng.standard_normal((2, 3)), rng.standard_normal(2)
    res = []
    for lib in (torch, hookgrad):
        m = lib.nn.Linear(3, 2).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.copy_(lib.tensor(b))
        opt = lib.optim.AdamW(m.parameters(), lr=0.05)
        sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
        for _ in range(5):
            opt.zero_grad()
            loss = ((m(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
            loss.backward()
            opt.step()
            sched.step()
        res.append([m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy(), sched.get_last_lr()])
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-10)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10)
    assert res[0][2] == res[1][2]
