"""The toolkit on the "cuda" device (the CPU stand-in of CuPy, tests/backend/cupylike.py): the gradient monitor keeps
its statistics on the device and reads the host once per step, capture reads nothing, detect_nonfinite localises on
the device; every host read of hookgrad goes through ``_array.to_host`` (``HOST_READS``), and the stand-in counts
the implicit ones CuPy would make (``IMPLICIT``: must stay 0)."""
import os
import sys
import warnings

import numpy as np
import pytest

import hookgrad
from hookgrad import _array
from hookgrad.tools.gradmon import GradientMonitor, GradientWarning

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import backend  # noqa: E402
from backend import cupylike  # noqa: E402

if backend.NAME == "cupylike":
    pytest.skip("the cupylike module is the default array module here; the stand-in device needs it free",
                allow_module_level=True)


def _model(dev):
    hookgrad.manual_seed(0)
    m = hookgrad.nn.Sequential(hookgrad.nn.Linear(6, 5), hookgrad.nn.ReLU(),
                               hookgrad.nn.Sequential(hookgrad.nn.Linear(5, 4), hookgrad.nn.Tanh()),
                               hookgrad.nn.Linear(4, 3))
    return m.to(dev)


def _reads():
    return _array.HOST_READS[0], cupylike.IMPLICIT[0]


@pytest.mark.parametrize("kw", [{}, {"range": (-0.5, 0.5), "bins": 7}, {"auto_step": False}])
def test_gradient_monitor_reads_the_host_once_per_step(fake_cuda, kw):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((8, 6)).astype(np.float32)
    xs[0, 0] = 0.0
    res = {}
    for dev in ("cpu", "cuda"):
        m = _model(dev)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            mon = GradientMonitor(m, vanishing=1e-3, exploding=0.5, **kw)
            x = hookgrad.tensor(xs).to(dev)
            per_step = []
            for step in range(3):
                before = _reads()
                m.zero_grad()
                loss = m(x * (step + 1)).pow(2).sum()
                in_backward = _reads()
                loss.backward()
                if dev == "cuda":
                    assert _reads() == in_backward, "a host read during backward"
                if not mon.auto_step:
                    mon.step()
                per_step.append(_reads()[0] - before[0])
            mon.flush()
            if dev == "cuda":
                assert cupylike.IMPLICIT[0] == before[1]
                # each step's statistics: read once, when the step ended (the next forward, or step())
                assert per_step == ([0, 1, 1] if mon.auto_step else [1, 1, 1]), per_step
            mon.remove()
        res[dev] = (mon.history, mon.module_history, sorted(str(x.message) for x in w))
    (hc, mc, wc), (hd, md, wd) = res["cpu"], res["cuda"]
    assert wc == wd and wc            # the same warnings (vanishing/exploding), at the step's end on the device
    for hist_c, hist_d in ((hc, hd), (mc, md)):
        assert hist_c.keys() == hist_d.keys()
        for name in hist_c:
            for a, b in zip(hist_c[name], hist_d[name]):
                assert a.keys() == b.keys()
                for k in a:
                    if k in ("hist",):
                        np.testing.assert_array_equal(b[k], a[k], err_msg=f"{name} {k}")
                    elif k in ("edges", "norm", "max", "zero_frac"):
                        np.testing.assert_allclose(b[k], a[k], rtol=1e-6, err_msg=f"{name} {k}")
                    else:
                        assert a[k] == b[k], (name, k)


def test_gradient_monitor_nonfinite_on_the_device(fake_cuda):
    m = _model("cuda")
    mon = GradientMonitor(m)
    m[3].weight.register_hook(lambda g: g * float("nan"))
    with pytest.warns(GradientWarning, match=r"non-finite gradient in parameter '3.weight'"):
        m(hookgrad.randn(2, 6, device="cuda")).sum().backward()
        mon.step()
    st = mon.latest()["3.weight"]
    assert st["nonfinite"] == 12 and np.isnan(st["norm"]) and st["hist"].sum() == 0
    assert list(st["edges"][[0, -1]]) == [0.0, 1.0]
    mon.remove()


def test_capture_reads_nothing_on_the_device(fake_cuda):
    from hookgrad.tools.capture import capture
    m = _model("cuda")
    x = hookgrad.randn(4, 6, device="cuda")
    before = _reads()
    with capture(m, "*", grads=True) as cache:
        m(x).sum().backward()
    assert _reads() == before
    assert all(t.is_cuda for p in cache for t in cache[p] if isinstance(t, hookgrad.Tensor))


def _nan_run(dev, steps=1, raise_=False):
    """detect_nonfinite over ``steps`` training steps of a model whose second Linear meets log(negative) values."""
    from hookgrad.tools.nan import detect_nonfinite
    m = _model(dev)
    x = hookgrad.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6)).to(dev)
    reads = []
    ctx = detect_nonfinite(m, raise_=raise_)
    with ctx:
        for _ in range(steps):
            before = _reads()
            h = m[1](m[0](x))
            y = m[3](m[2](h.log()))          # log(0) = -inf, log(negative) = nan: the culprit
            y.sum().backward()
            reads.append(_reads()[0] - before[0])
    return ctx, reads


def test_detect_nonfinite_judges_device_ops_once_per_step(fake_cuda):
    cpu, _ = _nan_run("cpu", steps=2)
    before = _reads()
    dev, reads = _nan_run("cuda", steps=2)
    assert reads == [0, 1]                  # step 1 is judged when step 2's first op runs; step 2 at the exit
    assert _reads()[0] == before[0] + 2 and cupylike.IMPLICIT[0] == before[1]
    assert [e.message for e in dev.events] == [e.message for e in cpu.events]
    assert [(e.phase, e.op, e.upstream) for e in dev.events][:2] == [("forward", "Log", False),
                                                                      ("backward", "Addmm", False)]


def test_detect_nonfinite_raises_on_the_device(fake_cuda):
    with pytest.raises(RuntimeError) as te:
        _nan_run("cpu", raise_=True)
    with pytest.raises(RuntimeError) as he:
        _nan_run("cuda", raise_=True)       # raised when the step's reads are judged (the context's exit)
    assert str(he.value) == str(te.value) and "Function 'Log' returned inf values" in str(he.value)
