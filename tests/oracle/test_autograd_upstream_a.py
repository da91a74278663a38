"""Behaviours PyTorch's test_autograd.py checks (issue 27, share A), each run the same way under torch and hookgrad
and compared: torch.autograd.graph.Node as a virtual base of every node class, once_differentiable's Error node and
the create_graph .grad's CopyBackwards, grad_fn._input_metadata, the saved values nodes expose (_saved_*),
view replay and Tensor._view_func with its visitors, the test-only aten ops (_test_autograd_multiple_dispatch*,
_test_warn_in_autograd), torch.xpu without XPU, torch._VF.unique_dim, torch.autograd.torch, Tensor.volatile."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from _scen import identity_function

LIBS = (torch, hookgrad)


def plain(x):
    """A result as plain Python (tensors as dtype, shape and values), comparable across the two libraries."""
    if isinstance(x, (torch.Tensor, hookgrad.Tensor)):
        d = x.detach()
        return ("T", str(d.dtype).split(".")[-1], tuple(d.shape), np.round(d.numpy().astype(np.float64), 6).tolist()
                if d.dtype not in (torch.bool, hookgrad.bool) else d.numpy().tolist())
    if isinstance(x, (tuple, list)):
        return type(x)(plain(v) for v in x)
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (torch.Size, hookgrad.Size)):
        return tuple(x)
    if isinstance(x, (torch.dtype, hookgrad.dtype)):
        return str(x).split(".")[-1]
    if isinstance(x, float):
        return round(x, 9)
    return x


def both(scenario):
    res = [plain(scenario(L)) for L in LIBS]
    assert res[1] == res[0]
    return res[0]


def saved(gf):
    """Every _saved_* value of a node, by name (an error as its type)."""
    out = {}
    for k in sorted(dir(gf)):
        if k.startswith("_saved_"):
            try:
                out[k] = getattr(gf, k)
            except Exception as e:  # noqa: BLE001
                out[k] = type(e).__name__
    return type(gf).__name__, out


def graph_desc(fn):
    if fn is None:
        return "None"
    return type(fn).__name__ + "(" + ", ".join(graph_desc(f) for f, _ in fn.next_functions) + ")"


# ---------------------------------------------------------------------------- Node as a virtual base class
def test_node_is_a_virtual_base_of_every_node_class():
    def run(L):
        Node = L.autograd.graph.Node
        a = L.arange(4.).requires_grad_()
        b = a.exp()
        seen = []

        class Func(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                seen.append(isinstance(ctx, Node))
                return x * 2

            @staticmethod
            def backward(ctx, g):
                seen.append(isinstance(ctx, Node))
                return g

        out = Func.apply(a)
        out.sum().backward()
        return [isinstance(b.grad_fn, Node), issubclass(type(b.grad_fn), Node), Node in type(b.grad_fn).mro(),
                isinstance(L._C._functions.AccumulateGrad, Node), issubclass(L._C._functions.AccumulateGrad, Node),
                isinstance(b.grad_fn.next_functions[0][0], Node), issubclass(L._C._functions.DelayedError, Node),
                isinstance(None, Node), isinstance(1, Node), isinstance(Node, Node), issubclass(Node, Node),
                issubclass(int, Node), issubclass(L.autograd.function.BackwardCFunction, Node),
                isinstance(out.grad_fn, Node), Node in type(out.grad_fn).mro(), seen]
    both(run)


# ---------------------------------------------------------------------------- graphs of double backward
def _fn_test(L, once):
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        return g + g * t2, None, g * ctx.pyscalar + g * t1

    class MyFunction(L.autograd.Function):
        @staticmethod
        def forward(ctx, t1, pyscalar, t2):
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(t1, t2)
            return t1 + pyscalar * t2 + t1 * t2

    MyFunction.backward = staticmethod(L.autograd.function.once_differentiable(backward) if once else backward)
    x = L.arange(6.).reshape(2, 3).requires_grad_()
    y = L.arange(6.).reshape(2, 3).mul(0.5).requires_grad_()
    MyFunction.apply(x, 2, y).sum().backward(L.ones((), requires_grad=True), create_graph=True)
    return graph_desc(x.grad.grad_fn), graph_desc(y.grad.grad_fn), x.grad, y.grad


@pytest.mark.parametrize("once", [False, True])
def test_double_backward_graph_of_a_function(once):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # (backward with create_graph=True warns of a cycle)
        both(lambda L: _fn_test(L, once))


def test_once_differentiable_differentiated_again_raises():
    def run(L):
        class F(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            @L.autograd.function.once_differentiable
            def backward(ctx, g):
                return g * 3

        x = L.arange(3.).requires_grad_()
        g, = L.autograd.grad(F.apply(x).sum(), x, L.ones((), requires_grad=True), create_graph=True)
        try:
            g.sum().backward()
        except RuntimeError as e:
            return type(g.grad_fn).__name__, g.grad_fn.name(), str(e)
    both(run)


def test_delayed_error_with_undefined_inputs():
    def run(L):
        a = L.arange(2.).requires_grad_()
        r = L._C._functions.DelayedError(b"msg", 3)(a, None, a)
        one = L._C._functions.DelayedError(b"msg", 1)(a)
        return ([None if o is None else (type(o.grad_fn).__name__, o.output_nr) for o in r],
                [None if f is None else type(f).__name__ for f, _ in r[0].grad_fn.next_functions],
                type(one).__name__, type(one.grad_fn).__name__, one.grad_fn.name(),
                L._C._functions.UndefinedGrad()(a).grad_fn.name())
    both(run)


# ---------------------------------------------------------------------------- _input_metadata
def test_input_metadata():
    def run(L):
        x = L.arange(3.).requires_grad_()
        y = L.arange(6.).reshape(2, 3).requires_grad_()

        def meta(gf):
            return [(list(m.shape), m.dtype, str(m.device), m.is_nested_tensor, m.is_cpp_nested_tensor)
                    for m in gf._input_metadata]

        Test = identity_function(L)
        v, _ = L.var_mean(y, dim=0)
        z = y.clone()
        w = z[0]
        w.mul_(2)               # CopySlices (the base's history) and AsStridedBackward0 (the view's, regenerated)
        return (meta(z.grad_fn), meta(w.grad_fn), meta((x * y).grad_fn), meta((x * 2).grad_fn), meta(v.grad_fn), meta(x.double().sum().grad_fn),
                meta(x.exp().grad_fn.next_functions[0][0]), meta(Test.apply(y).grad_fn),
                meta(L.unbind(y)[0].grad_fn))
    both(run)


# ---------------------------------------------------------------------------- saved values of nodes
def _index_nodes(L):
    a = L.ones(2, 3, requires_grad=True)
    i = L.tensor([0, 1])
    outs = [a[:, i], a[i], a[i, :2], a[1], a[:, 1:3], a[None], a.narrow(1, 1, 2), a.unsqueeze(1), a[:, -2:],
            a[:, :-1], a[-1], a[..., None], a.select(1, -2), a[1:, i], a[..., i], a[i, None], a[[0, 1], [1, 2]],
            a[a > 0], a.index_put((i,), L.tensor(1.), accumulate=True), a.index_put((i, i), L.tensor(1.)),
            a.unsqueeze(-1), a.unsqueeze(2), a.clone().unsqueeze_(-3)]
    b = a.clone()
    b[:, i] = 2.0
    outs.append(b)
    res = [saved(o.grad_fn) for o in outs]
    out = a[:, i]
    raw = out.grad_fn._raw_saved_indices
    raw[1].register_hooks(lambda x: x, lambda x: x)
    try:
        raw[0].register_hooks(lambda x: x, lambda x: x)
    except RuntimeError as e:
        res.append(str(e))
    res.append([isinstance(r, L._C._autograd.SavedTensor) for r in raw])
    out.sum().backward()
    res.append(saved(out.grad_fn))
    return res


def _scalar_nodes(L):
    F = L.nn.functional
    a = L.ones(2, 2, requires_grad=True)
    b = L.tensor([1.0], requires_grad=True)
    two = L.tensor(2.0)     # (a Python number saved as a tensor: a known dtype gap, see docs/differences.md)
    x = L.zeros(5, requires_grad=True)
    m = L.ones(3, 3, requires_grad=True)
    v = L.ones(3, requires_grad=True)
    bb = L.ones(2, 3, 3, requires_grad=True)
    p = L.full((1, 1, 2), 0.3, requires_grad=True)
    outs = [a.as_strided((3,), (1,), 1), a.as_strided((3,), (1,)), L.pdist(a, p=1), L.logit(p, 0.25), L.logit(p),
            L.div(b, two, rounding_mode="trunc"), L.div(b, two, rounding_mode="floor"), L.div(b, two, rounding_mode=None),
            L.div(b, b, rounding_mode="floor"), L.div(b, b), L.threshold(x, threshold=(1 + 0j), value=(1 + 0j)),
            L.threshold(x, threshold=L.tensor(1 + 0j, dtype=L.complex64), value=(1 + 0j)),
            L.threshold(x, threshold=1.0, value=1.0), L.threshold(x, threshold=1, value=1),
            L.threshold(x, threshold=False, value=False), L.addmv(v, m, v, beta=2, alpha=0.5),
            L.addr(m, v, v, beta=2, alpha=3), L.baddbmm(bb, bb, bb), L.addbmm(m, bb, bb, beta=0.5, alpha=2),
            F.unfold(L.ones(1, 1, 3, 3, requires_grad=True), (2, 3), padding=1, stride=(1, 2)), L.tanh(a)]
    res = []
    for o in outs:
        name, d = saved(o.grad_fn)
        res.append((name, {k: (type(v).__name__, v) for k, v in d.items()}))
    return res


def _upsample_nodes(L):
    F = L.nn.functional
    a1 = L.ones(1, 1, 2, requires_grad=True)
    a2 = L.ones(1, 1, 2, 2, requires_grad=True)
    a3 = L.ones(1, 1, 2, 2, 2, requires_grad=True)
    outs = [F.interpolate(a1, 4, mode="linear"), F.interpolate(a1, scale_factor=0.5, mode="linear"),
            F.interpolate(a1, 4, mode="linear", align_corners=True), F.interpolate(a1, 4, mode="nearest"),
            F.interpolate(a3, 4, mode="trilinear"), F.interpolate(a3, 4, mode="nearest"),
            F.interpolate(a2, 4, mode="nearest-exact")]
    for mode in ("nearest", "bilinear", "bicubic"):
        outs += [F.interpolate(a2, 4, mode=mode), F.interpolate(a2, scale_factor=2, mode=mode)]
    return [saved(o.grad_fn) for o in outs]


def _loss_and_foreach_nodes(L):
    nn = L.nn
    a = L.arange(15.).reshape(3, 5).requires_grad_()
    t = L.tensor([1, 0, 4])
    outs = [nn.NLLLoss()(a, t), nn.NLLLoss(weight=L.arange(5.), ignore_index=2, reduction="sum")(a, t),
            nn.NLLLoss(weight=L.ones(5), reduction="none")(a, t),
            nn.NLLLoss(weight=L.ones(5))(L.arange(30.).reshape(2, 5, 3).requires_grad_(), L.zeros(2, 3, dtype=L.long))]
    res = [saved(o.grad_fn) for o in outs]
    outs[1].sum().backward()
    res.append(saved(outs[1].grad_fn))
    ts = [L.tensor([0., 1, 2], requires_grad=True) for _ in range(3)]
    for op in (L._foreach_maximum, L._foreach_minimum):
        for other in (1.0, [0.0, 1.0, 2.0]):
            r = op(ts, other)
            res.append([saved(o.grad_fn) for o in r] + [r[0].grad_fn is r[1].grad_fn])
            sum(o.sum() for o in r).backward()
            res.append([t.grad for t in ts])
            for t in ts:
                t.grad = None
    return res


@pytest.mark.parametrize("nodes", [_index_nodes, _scalar_nodes, _upsample_nodes, _loss_and_foreach_nodes])
def test_saved_values(nodes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(nodes)


def test_has_lapack():
    both(lambda L: [L._C.has_lapack, L._C.has_spectral])


# ---------------------------------------------------------------------------- view replay and _view_func
def _replayed(L, mode):
    def f(x):
        out = x.clone().view(-1)
        out.add_(1)
        return out

    x = L.ones(2, 2, requires_grad=True)
    res = []
    with L.autograd._force_original_view_tracking(mode):
        o = f(x)
        res.append((o.grad_fn.name(), [n[0].name() for n in o.grad_fn.next_functions], L.autograd.is_view_replay_enabled()))
        (o * L.arange(4.)).sum().backward()
        res.append(x.grad)
        y = x.clone()
        s = y[:, 1]
        s.mul_(2)
        res.append((s.grad_fn.name(), s.grad_fn.next_functions[0][0].name(), s._version))
        y = x.clone()
        q = y[1:].t()
        y.add_(1)
        res.append(q.grad_fn.name())
        (q * 3).sum().backward()
        res.append(x.grad)
    res.append(L.autograd.is_view_replay_enabled())
    return res


@pytest.mark.parametrize("mode", [False, True])
def test_view_replay(mode):
    both(lambda L: _replayed(L, mode))


def _view_funcs(L):
    visits = []

    def vis(x):
        visits.append(x)
        return x

    b = L.arange(12.).reshape(3, 4).clone().requires_grad_()
    nb = L.arange(12.).reshape(3, 4).mul(-1)
    v = b.select(1, 2)
    res = [v._view_func(nb), v._view_func(nb.requires_grad_()).grad_fn.name(), b._view_func(nb),
           v._view_func(nb, symint_visitor_fn=lambda x: x + 1),          # made without view replay: as_strided
           v._view_func(nb.t()), v._view_func(L.ones(4, 3)), v._view_func_unsafe(L.ones(4, 3)),  # unlike the base
           L.arange(12.).reshape(3, 4).requires_grad_().select(1, 2)._view_func(nb)]
    nb = nb.detach()
    with L.autograd._force_original_view_tracking(True):
        views = [b.select(1, 2), b.select(1, 2).unsqueeze(0), b.view(2, 6), b.view(-1), b.permute(1, 0), b[:, 1:3],
                 b[:, -2:], b.narrow(1, 1, 2), b.expand(2, 3, 4), b.diagonal(1), b.unsqueeze(1), b[1],
                 b.as_strided((2, 2), (1, 2), 1), b.reshape(12), b.t(), b[1:, :].view(8)[2:5]]
        for w in views:
            visits.clear()
            res.append((w._view_func(nb), w._view_func(nb, symint_visitor_fn=vis), list(visits)))
        res.append(b.select(1, 2)._view_func(nb, symint_visitor_fn=lambda x: x + 1))
        base = L.arange(60.).reshape(3, 4, 5)
        sliced = base[:, 2:3, :].detach()
        view = L.ops.aten.slice_inverse(sliced, base, 1, 2, 3, 1)
        visits.clear()
        res.append((view._view_func(sliced), view._view_func(sliced, symint_visitor_fn=vis).shape, list(visits)))
        r = view._view_func(L.ones_like(base)[:, 2:3, :].detach(), tensor_visitor_fn=lambda t: L.zeros(1, 2, 3))
        res.append((r, r.stride()))
    return res


def test_view_func():
    both(_view_funcs)


# ---------------------------------------------------------------------------- test-only aten ops
def _test_ops(L):
    fwAD = L.autograd.forward_ad
    res = []
    t = L.arange(9.).reshape(3, 3).requires_grad_()
    g = L.arange(9.).reshape(3, 3) * 0.5
    o = L._test_autograd_multiple_dispatch(t)
    res.append((o, saved(o.grad_fn), o._base is None))
    o.backward(g)
    res.append(t.grad)
    t.grad = None
    o = L._test_autograd_multiple_dispatch(t, True)
    res.append(o.grad_fn.name())
    o.backward(g)
    res.append(t.grad)
    v = L._test_autograd_multiple_dispatch_view(t)
    vc = L._test_autograd_multiple_dispatch_view_copy(t)
    res.append((v, v.grad_fn.name(), v._base is t, v.grad_fn._saved_self is t))
    res.append((vc, vc.grad_fn.name(), vc._base is None, [k for k in dir(vc.grad_fn) if k.startswith("_saved")]))
    for x in (v, vc):
        t.grad = None
        x.backward(L.arange(9.))
        res.append(t.grad)
    x = L.arange(3.).requires_grad_()
    gx, = L.autograd.grad(L._test_autograd_multiple_dispatch(x).sum(), x, create_graph=True)
    res.append((gx, gx.grad_fn))
    with fwAD.dual_level():
        d = fwAD.make_dual(L.arange(3.), L.ones(3) * 2)
        res.append(fwAD.unpack_dual(L._test_autograd_multiple_dispatch(d)).tangent)
        res.append(fwAD.unpack_dual(L._test_autograd_multiple_dispatch(d, True)).tangent)
        for f in (L._test_autograd_multiple_dispatch_view, L._test_autograd_multiple_dispatch_view_copy,
                  L._C._nn._test_warn_in_autograd):
            try:
                f(d)
            except NotImplementedError as e:
                res.append(str(e))
    res.append(L._test_autograd_multiple_dispatch(L.ones(2, dtype=L.int64)))
    w = t.detach().clone()
    L._test_autograd_multiple_dispatch_view(w).add_(1)
    res.append(w)
    try:
        L._test_autograd_multiple_dispatch_view(L.ones(2, 3).t())
    except RuntimeError as e:
        res.append(str(e))
    y = t.clone()
    L._test_autograd_multiple_dispatch_view(y).mul_(2)
    res.append(y.grad_fn.name())
    a = L.zeros((), requires_grad=True)
    b = L._C._nn._test_warn_in_autograd(a)
    res.append(b.grad_fn.name())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b.backward()
    res.append([(str(c.message)[:18], c.category.__name__) for c in caught])
    res.append(a.grad)
    return res


def test_test_only_aten_ops():
    both(_test_ops)


# ---------------------------------------------------------------------------- namespaces
def test_xpu_without_xpu():
    def run(L):
        x = L.xpu
        res = [x.is_available(), x.device_count(), x.is_initialized(), x.is_bf16_supported(), x._is_compiled(),
               x.memory_allocated(), x.max_memory_allocated(), x.memory_reserved(), x.get_arch_list(),
               x.get_gencode_flags(), x.manual_seed(0), x.seed(), x.empty_cache(), x.set_rng_state(L.zeros(1))]
        for f in (x.init, x.current_device, x.synchronize, x.get_device_name, x.initial_seed, x.get_rng_state,
                  x.current_stream, x.get_device_properties, x.mem_get_info):
            try:
                f()
            except AssertionError as e:
                res.append(str(e))
        for ctx in (x.device_of(L.zeros(1)), x.device(0)):
            try:
                with ctx:
                    pass
            except NotImplementedError as e:
                res.append(str(e))
        return res
    both(run)


@pytest.mark.parametrize("accel", ["cuda", "xpu"])
def test_device_context_without_accelerator(accel):
    """``with torch.<accel>.device(i)`` / ``device_of`` in a build without the accelerator: -1 (or below) passes
    through and leaves idx at -1 (CUDA), any other index raises; XPU raises NotImplementedError for every index."""
    if accel == "cuda" and hookgrad.cuda.is_available():
        pytest.skip("hookgrad sees a CUDA device")

    def run(L):
        mod, res = getattr(L, accel), []
        for ctx in [mod.device(i) for i in (0, -1, -2, 3)] + [mod.device_of(L.zeros(1))]:
            try:
                with ctx:
                    res.append(("in", ctx.idx, ctx.prev_idx))
                res.append(("out", ctx.idx, ctx.prev_idx))
            except (RuntimeError, NotImplementedError) as e:
                res.append((type(e).__name__, str(e)))
        return res
    assert any(r[0] != "out" for r in both(run))


def test_vf_unique_dim_and_integer_outputs():
    def run(L):
        x = L.tensor([[1., 2], [1, 2], [3, 4]], requires_grad=True)
        res = []
        for flags in [(True, False, False), (True, True, True), (False, True, False)]:
            r = L._VF.unique_dim(x, dim=0, sorted=flags[0], return_inverse=flags[1], return_counts=flags[2])
            res.append((r, [o.requires_grad for o in r], r[0].grad_fn.name()))
        for flags in [(True, False), (True, True), (False, True)]:
            r = L._unique2(x, sorted=True, return_inverse=flags[0], return_counts=flags[1])
            res.append((r, [o.requires_grad for o in r], r[0].grad_fn.name()))
        return res
    both(run)


def test_autograd_torch_and_volatile():
    def run(L):
        v = L.autograd.torch.ones(2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = [L.autograd.torch is L, v.volatile]
            v.volatile = True
        return res + [(str(c.message), c.category.__name__) for c in caught]
    both(run)
