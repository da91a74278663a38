"""Lazy modules (LazyModuleMixin, UninitializedParameter/Buffer) compared with PyTorch at run time: shape
inference on the first call, the values drawn then under manual_seed, the hook order, cls_to_become, state_dict
and load_state_dict, deepcopy, repr and the errors of an uninitialised parameter."""
import copy

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same

RS = np.random.RandomState(0)
X2 = RS.randn(4, 5).astype("float32")
X3 = RS.randn(2, 6, 7).astype("float32")
X4 = RS.randn(2, 6, 5, 5).astype("float32")

CASES = [("LazyLinear(3)", X2), ("LazyLinear(3, bias=False)", X2), ("LazyLinear(3)", X3), ("LazyLinear(2, dtype=lib.float64)", X2),
         ("LazyConv1d(4, 3)", X3), ("LazyConv1d(4, 3, padding=1, bias=False)", X3[0]),
         ("LazyConv2d(4, 3, stride=2, groups=2)", X4), ("LazyConv2d(2, 2, padding_mode='reflect', padding=1)", X4[0]),
         ("LazyConvTranspose1d(3, 2, stride=2)", X3), ("LazyConvTranspose2d(4, 3, groups=2)", X4),
         ("LazyBatchNorm1d()", X3), ("LazyBatchNorm1d(affine=False)", X2), ("LazyBatchNorm2d(momentum=None)", X4),
         ("LazyBatchNorm2d(track_running_stats=False)", X4), ("LazyInstanceNorm1d()", X3),
         ("LazyInstanceNorm2d(affine=False, track_running_stats=False)", X4)]


def _state(lib, m):
    return {k: v for k, v in m.state_dict().items()}


def _run(lib, expr, x):
    log = []
    lib.manual_seed(0)
    pre = lib.nn.Linear(2, 2)                         # draws before the lazy module: the init order matters
    m = eval("nn." + expr, {"nn": lib.nn, "lib": lib})
    log.append((type(m).__name__, repr(m), m.has_uninitialized_params(),
                [(k, repr(v), type(v).__name__) for k, v in m.state_dict().items()],
                [type(p).__name__ for p in m.parameters()], list(m._forward_pre_hooks_with_kwargs.values()),
                [type(b).__name__ for b in m.buffers()]))
    m.register_forward_pre_hook(lambda mod, args: log.append(("user pre", type(mod).__name__,
                                                              [type(p).__name__ for p in mod.parameters()])))
    m.register_forward_hook(lambda mod, args, out: log.append(("fwd", type(mod).__name__)))
    xt = lib.tensor(x, dtype=lib.float64) if "float64" in expr else lib.tensor(x)
    xt.requires_grad_(True)
    y = m(xt)
    y.sum().backward()
    y2 = m(xt * 2)
    log.append((type(m).__name__, type(m) is getattr(lib.nn, type(m).__name__), repr(m),
                m.has_uninitialized_params() if hasattr(m, "has_uninitialized_params") else None,
                [type(p).__name__ for p in m.parameters()], [type(b).__name__ for b in m.buffers()],
                len(m._forward_pre_hooks), len(m._state_dict_pre_hooks) if hasattr(m, "_state_dict_pre_hooks") else 0,
                hasattr(m, "_initialize_hook"), type(y.grad_fn).__name__))
    return log, [y, y2, xt.grad, pre.weight] + list(m.state_dict().values()) + [p.grad for p in m.parameters()]


@pytest.mark.parametrize("expr,x", CASES, ids=[c[0] for c in CASES])
def test_lazy_module_first_call(expr, x):
    lt, vt = _run(torch, expr, x)
    lh, vh = _run(hookgrad, expr, x)
    assert lh == lt
    assert len(vt) == len(vh)
    for i, (a, b) in enumerate(zip(vt, vh)):
        if a is None:
            assert b is None
        else:
            assert_same(a.detach(), b.detach(), what=f"value {i}")


def _load(lib, src_expr, dst_expr, x):
    lib.manual_seed(0)
    src = eval("nn." + src_expr, {"nn": lib.nn})
    if x is not None:
        src(lib.tensor(x))
    dst = eval("nn." + dst_expr, {"nn": lib.nn})
    try:
        res = dst.load_state_dict(src.state_dict(), strict=False)
        res = (sorted(res.missing_keys), sorted(res.unexpected_keys))
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return (type(e).__name__, str(e).split(" (hookgrad")[0]), []
    return (res, type(dst).__name__, dst.has_uninitialized_params(),
            [type(p).__name__ for p in dst.parameters()]), list(dst.state_dict().values())


@pytest.mark.parametrize("src,dst,x", [("LazyLinear(3)", "LazyLinear(3)", X2), ("Linear(5, 3)", "LazyLinear(3)", None),
                                       ("LazyLinear(3)", "LazyLinear(3)", None), ("LazyLinear(3)", "Linear(5, 3)", None),
                                       ("LazyBatchNorm1d()", "LazyBatchNorm1d()", X3),
                                       ("LazyConv2d(4, 3)", "LazyConv2d(4, 3)", X4)])
def test_lazy_load_state_dict(src, dst, x):
    rt, vt = _load(torch, src, dst, x)
    rh, vh = _load(hookgrad, src, dst, x)
    assert rh == rt
    assert len(vt) == len(vh)
    for a, b in zip(vt, vh):
        if torch.nn.parameter.is_lazy(a):
            assert repr(a) == repr(b)
        else:
            assert_same(a.detach(), b.detach())


def _misc(lib):
    out = []
    nn = lib.nn
    m = nn.LazyLinear(3)
    c = copy.deepcopy(m)
    out.append((type(c.weight).__name__, c.weight is not m.weight, repr(c), c.has_uninitialized_params()))
    out.append((nn.parameter.is_lazy(m.weight), nn.parameter.is_lazy(nn.Parameter(lib.ones(1)))))
    for call in ["m.weight.shape", "m.weight + 1", "m.weight.numel()", "nn.functional.linear(lib.ones(2, 2), m.weight)",
                 "m.weight.share_memory_()", "nn.init.zeros_(m.weight)", "m.weight.sum()",
                 "nn.LazyConv2d(4, 3)(lib.ones(3, 4))", "nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 5, 5))",
                 "nn.LazyBatchNorm2d()(lib.ones(2, 3, 4))", "nn.modules.lazy.LazyModuleMixin.initialize_parameters(m)"]:
        try:
            eval(call, {"nn": nn, "m": m, "lib": lib})
            out.append((call, None))
        except Exception as e:  # noqa: BLE001 - compared with torch's
            out.append((call, type(e).__name__, str(e).split(" in ")[0].split(" (hookgrad")[0]))
    p = nn.parameter.UninitializedParameter(requires_grad=False, dtype=lib.float64)
    b = nn.parameter.UninitializedBuffer()
    out.append((repr(p), str(p.dtype), p.requires_grad, p.size(), p.ndim,
                p.is_floating_point(), b.requires_grad, b.persistent, repr(b),
                nn.parameter.UninitializedParameter.cls_to_become.__name__, p.__reduce_ex__(2)[1]))
    p.materialize((2, 3))
    b.materialize(4, dtype=lib.float16)
    out.append((type(p).__name__, tuple(p.shape), str(p.dtype), p.requires_grad,
                type(b).__name__, tuple(b.shape), str(b.dtype)))
    # Module.double() before the dry run: the parameters are materialised in the new dtype
    m = nn.LazyLinear(2).double()
    m(lib.ones(3, 4, dtype=lib.float64))
    out.append((str(m.weight.dtype), type(m).__name__))
    return out


def test_lazy_misc_against_torch():
    assert _misc(hookgrad) == _misc(torch)
