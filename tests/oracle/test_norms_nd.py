"""The remaining norms against torch: BatchNorm3d, InstanceNorm3d (and their lazy forms), SyncBatchNorm on one
process, LocalResponseNorm, CrossMapLRN2d, RMSNorm: values, every gradient, second order, running statistics,
state_dict keys, reprs and torch's errors."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

R = np.random.default_rng(0)


def _pair(make, x, train=True, steps=2):
    """Run module make(nn) under both libraries for ``steps`` forwards; compare outputs, grads, buffers."""
    mods = []
    for L in (torch, hookgrad):
        L.manual_seed(0)
        m = make(L.nn).double()
        m.train(train)
        mods.append(m)
    for _ in range(steps):
        check(lambda L, t: mods[L is hookgrad](t), x, second=True)
    t_sd, h_sd = mods[0].state_dict(), mods[1].state_dict()
    assert list(t_sd) == list(h_sd)
    for k in t_sd:
        np.testing.assert_allclose(h_sd[k].numpy(), t_sd[k].numpy(), rtol=1e-9, atol=1e-12, err_msg=k)
    assert repr(mods[0]) == repr(mods[1])


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("make", [lambda nn: nn.BatchNorm3d(3), lambda nn: nn.BatchNorm3d(3, momentum=None),
                                  lambda nn: nn.BatchNorm3d(3, affine=False, track_running_stats=False),
                                  lambda nn: nn.SyncBatchNorm(3), lambda nn: nn.InstanceNorm3d(3),
                                  lambda nn: nn.InstanceNorm3d(3, affine=True, track_running_stats=True)])
def test_norm_3d(make, train):
    _pair(make, R.standard_normal((2, 3, 2, 3, 2)), train)


def test_sync_batch_norm_any_rank():
    _pair(lambda nn: nn.SyncBatchNorm(3), R.standard_normal((4, 3)))
    _pair(lambda nn: nn.SyncBatchNorm(3, momentum=None), R.standard_normal((2, 3, 4)))


def test_instance_norm_3d_unbatched():
    _pair(lambda nn: nn.InstanceNorm3d(3, affine=True), R.standard_normal((3, 2, 3, 2)))


def test_convert_sync_batchnorm():
    outs = []
    for L in (torch, hookgrad):
        L.manual_seed(0)
        net = L.nn.Sequential(L.nn.Conv2d(2, 3, 1), L.nn.BatchNorm2d(3), L.nn.Sequential(L.nn.BatchNorm1d(3)))
        bn = net[1]
        s = L.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        assert type(s[1]).__name__ == "SyncBatchNorm" and type(s[2][0]).__name__ == "SyncBatchNorm"
        assert s[1].weight is bn.weight and s[1].running_mean is bn.running_mean
        outs.append((repr(s), list(s.state_dict())))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("make", [lambda nn: nn.LazyBatchNorm3d(), lambda nn: nn.LazyInstanceNorm3d(affine=True,
                                                                                                    track_running_stats=True)])
def test_lazy_3d(make):
    x = R.standard_normal((2, 3, 2, 2, 3)).astype(np.float32)
    mods = [make(L.nn) for L in (torch, hookgrad)]
    check(lambda L, t: mods[L is hookgrad](t), x)
    assert [type(m).__name__ for m in mods] == ["BatchNorm3d", "BatchNorm3d"] or \
        [type(m).__name__ for m in mods] == ["InstanceNorm3d", "InstanceNorm3d"]
    assert list(mods[0].state_dict()) == list(mods[1].state_dict())


@pytest.mark.parametrize("make", [lambda nn: nn.LocalResponseNorm(3, alpha=0.1), lambda nn: nn.LocalResponseNorm(2),
                                  lambda nn: nn.CrossMapLRN2d(3, alpha=0.1, beta=0.5, k=2),
                                  lambda nn: nn.CrossMapLRN2d(4, alpha=0.2)])
@pytest.mark.parametrize("shape", [(2, 5, 3, 2), (2, 3, 1, 2)])
def test_lrn(make, shape):
    x = R.standard_normal(shape)
    second = type(make(torch.nn)).__name__ == "LocalResponseNorm"
    check(lambda L, t: make(L.nn)(t), x, second=second)
    check(lambda L, t: make(L.nn)(t), x.astype(np.float32))
    assert repr(make(torch.nn)) == repr(make(hookgrad.nn))
    names = [make(L.nn)(L.tensor(x, requires_grad=True)).grad_fn.name() for L in (torch, hookgrad)]
    assert names[0] == names[1]


@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 4, 2, 2, 3)])
def test_local_response_norm_functional(shape):
    check(lambda L, t: L.nn.functional.local_response_norm(t, 3, alpha=0.3, beta=0.6, k=1.5), R.standard_normal(shape),
          second=True)


@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(eps):
    x, w = R.standard_normal((2, 3, 4)), R.standard_normal((3, 4))
    check(lambda L, t, v: L.nn.functional.rms_norm(t, (3, 4), v, eps), x, w, second=True)
    check(lambda L, t: L.rms_norm(t, [4], eps=eps), x.astype(np.float32), second=True)
    check(lambda L, t: L.rms_norm(t, [4], eps=eps), x.astype(np.float16), grad=False, tol=(1e-3, 1e-3))
    _pair(lambda nn: nn.RMSNorm([3, 4], eps=eps), x)
    _pair(lambda nn: nn.RMSNorm(4, elementwise_affine=False), x)


def _same_error(fn, x):
    errs = []
    for L in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            fn(L, L.tensor(x))
        errs.append(type(e.value))
    assert errs[0] == errs[1]
    return errs[0]


@pytest.mark.parametrize("case", [
    (lambda L, t: L.nn.BatchNorm3d(3)(t), (2, 3, 4)), (lambda L, t: L.nn.InstanceNorm3d(3)(t), (2, 3)),
    (lambda L, t: L.nn.SyncBatchNorm(3)(t), (3,)), (lambda L, t: L.nn.SyncBatchNorm(0)(t), (2, 0)),
    (lambda L, t: L.nn.CrossMapLRN2d(3)(t), (2, 3, 2)), (lambda L, t: L.nn.LocalResponseNorm(2)(t), (2, 3)),
    (lambda L, t: L.rms_norm(t, [4]), (2, 4, 3)), (lambda L, t: L.rms_norm(t, [3], L.ones(4)), (2, 4, 3)),
    (lambda L, t: L.rms_norm(t.long(), [3]), (2, 4, 3)), (lambda L, t: L.nn.BatchNorm3d(3)(t), (1, 3, 1, 1, 1)),
    (lambda L, t: L.nn.BatchNorm3d(4)(t), (2, 3, 2, 2, 2)),
    (lambda L, t: L.nn.InstanceNorm3d(4, affine=True)(t), (2, 3, 2, 2, 2))])
def test_errors(case):
    fn, shape = case
    _same_error(fn, R.standard_normal(shape).astype(np.float32))
