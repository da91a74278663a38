"""The remaining lr schedulers against torch: lr (and cycled momentum) per step, get_last_lr, state_dict keys
and round trips, closed forms, warnings and errors."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad


def _opt(lib, opt_name):
    groups = [{"params": [lib.nn.Parameter(lib.ones(1))]}, {"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.05}]
    return getattr(lib.optim, opt_name)(groups, lr=0.1, **({"momentum": 0.9} if opt_name == "SGD" else {}))


def _run(lib, make, steps=16, opt_name="SGD", epochs=None):
    opt = _opt(lib, opt_name)
    s = make(lib, opt)
    out = [list(s.get_last_lr())]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(steps):
            opt.step()
            s.step(epochs[i]) if epochs else s.step()
            out.append(list(s.get_last_lr()) + [g["lr"] for g in opt.param_groups]
                       + [g.get("momentum", g.get("betas")) for g in opt.param_groups])
    sd = s.state_dict()
    return out, sorted(k for k in sd if k not in ("_schedulers", "lr_lambdas")), [str(x.message)[:50] for x in w]


S = "optim.lr_scheduler."
SCHEDULERS = {
    "MultiplicativeLR": lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.95),
    "MultiplicativeLR2": lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, [lambda e: 0.9, lambda e: 1 - e / 40]),
    "ConstantLR": lambda L, o: L.optim.lr_scheduler.ConstantLR(o, factor=0.25, total_iters=4),
    "PolynomialLR": lambda L, o: L.optim.lr_scheduler.PolynomialLR(o, total_iters=10, power=2.0),
    "PolynomialLR1": lambda L, o: L.optim.lr_scheduler.PolynomialLR(o),
    "CosineAnnealingWarmRestarts": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3),
    "CosineAnnealingWarmRestarts2": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 2, T_mult=2,
                                                                                                  eta_min=0.001),
    "CyclicLR": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3),
    "CyclicLR2": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=2,
                                                            step_size_down=3, mode="triangular2"),
    "CyclicLR3": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=2, mode="exp_range",
                                                            gamma=0.9, base_momentum=0.7, max_momentum=0.95),
    "CyclicLR4": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=2, scale_fn=lambda x: 0.5 ** x,
                                                            scale_mode="iterations", cycle_momentum=False),
    "ChainedScheduler": lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3),
         L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)]),
    "SWALR": lambda L, o: L.optim.swa_utils.SWALR(o, swa_lr=0.02, anneal_epochs=4),
    "SWALR2": lambda L, o: L.optim.swa_utils.SWALR(o, swa_lr=[0.02, 0.5], anneal_epochs=3, anneal_strategy="linear"),
}


def _flat(row):
    return [float(v) for x in row for v in (x if isinstance(x, tuple) else (x,))]


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_sequences(name, opt_name):
    t = _run(torch, SCHEDULERS[name], opt_name=opt_name)
    h = _run(hookgrad, SCHEDULERS[name], opt_name=opt_name)
    assert len(t[0]) == len(h[0])
    for a, b in zip(t[0], h[0]):
        np.testing.assert_allclose(_flat(b), _flat(a), rtol=1e-12)
    assert t[1] == h[1]
    assert t[2] == h[2]


@pytest.mark.parametrize("name,epochs", [
    ("ConstantLR", [1, 2, 5, 3, 7]), ("PolynomialLR", [1, 4, 2, 9, 12]),
    ("CosineAnnealingWarmRestarts", [0.5, 1, 2.5, 4, 7.25]), ("CosineAnnealingWarmRestarts2", [1, 2.5, 3, 6, 13.5]),
])
def test_explicit_epochs(name, epochs):
    t = _run(torch, SCHEDULERS[name], steps=len(epochs), epochs=epochs)
    h = _run(hookgrad, SCHEDULERS[name], steps=len(epochs), epochs=epochs)
    for a, b in zip(t[0], h[0]):
        np.testing.assert_allclose(_flat(b), _flat(a), rtol=1e-12)
    assert t[2] == h[2]


@pytest.mark.parametrize("name", ["CyclicLR3", "ChainedScheduler", "CosineAnnealingWarmRestarts2", "MultiplicativeLR",
                                  "SWALR"])
def test_state_dict_round_trip(name):
    res = []
    for lib in (torch, hookgrad):
        opt = _opt(lib, "SGD")
        s = SCHEDULERS[name](lib, opt)
        for _ in range(5):
            opt.step()
            s.step()
        sd = s.state_dict()
        opt2 = _opt(lib, "SGD")
        s2 = SCHEDULERS[name](lib, opt2)
        s2.load_state_dict(sd)
        lrs = []
        for _ in range(4):
            opt.step()
            s.step()
            opt2.step()
            s2.step()
            lrs.append((s.get_last_lr(), s2.get_last_lr()))
        res.append(lrs)
    assert res[0] == res[1]


def test_warnings_step_order_and_get_lr():
    out = []
    for lib in (torch, hookgrad):
        opt = _opt(lib, "SGD")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = lib.optim.lr_scheduler.PolynomialLR(opt)
            s.step()                      # before optimizer.step()
            s.get_lr()                    # outside step
            c = lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1)
            c.get_lr()
        out.append([(x.category.__name__, str(x.message)[:70]) for x in w])
    assert out[0] == out[1]


@pytest.mark.parametrize("make,exc,msg", [
    (lambda L, o: L.optim.lr_scheduler.ConstantLR(o, factor=1.5), ValueError, "Constant multiplicative factor"),
    (lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=0), ValueError,
     "Expected positive integer T_0, but got 0"),
    (lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=1.5), ValueError,
     "Expected integer T_mult >= 1, but got 1.5"),
    (lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 2).step(-1), ValueError,
     "Expected non-negative epoch, but got -1"),
    (lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.1, 1.0, mode="foo"), ValueError,
     "mode is invalid and scale_fn is None"),
    (lambda L, o: L.optim.lr_scheduler.CyclicLR(o, [0.1], 1.0), ValueError,
     "base_lr must have the same length as optimizer.param_groups"),
    (lambda L, o: L.optim.lr_scheduler.CyclicLR(L.optim.Adagrad(o.param_groups[0]["params"]), 0.1, 1.0), ValueError,
     "optimizer must support momentum or beta1"),
    (lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, [lambda e: 1]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, 3), TypeError, "lr_lambda should be a function, but got int"),
    (lambda L, o: L.optim.lr_scheduler.ChainedScheduler([]), ValueError, "expects at least one scheduler"),
    (lambda L, o: L.optim.lr_scheduler.ChainedScheduler([L.optim.lr_scheduler.ReduceLROnPlateau(o)]), ValueError,
     "does not support `ReduceLROnPlateau`"),
    (lambda L, o: L.optim.swa_utils.SWALR(o, 0.1, anneal_strategy="x"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got x"),
    (lambda L, o: L.optim.swa_utils.SWALR(o, 0.1, anneal_epochs=-1), ValueError,
     "anneal_epochs must be equal or greater than 0, got -1"),
])
def test_errors(make, exc, msg):
    msgs = []
    for lib in (torch, hookgrad):
        with pytest.raises(exc) as ei:
            make(lib, _opt(lib, "SGD"))
        msgs.append(str(ei.value))
    assert msg in msgs[0]
    assert msgs[0] == msgs[1]
