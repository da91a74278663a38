"""torch.func.vmap against torch: the batching rules op by op (values, shapes, dtypes), in_dims/out_dims with
None and nested pytrees, nested vmap, chunk_size, randomness, the per-sample fallback and its warning, errors."""
import warnings

import numpy as np
import pytest

import hookgrad
from _func_util import both, raises_same, data

X = data(4, 3, 5)          # batch 4 of (3, 5)
V = data(4, 5, seed=1)     # batch 4 of (5,)
M = data(5, 6, seed=2)     # unbatched
S = data(4, seed=3)        # batch 4 of scalars
IDX = np.array([[0, 2, 1], [1, 1, 0], [2, 0, 0], [1, 2, 2]])


def T(lib, a):
    return lib.tensor(a)


# (name, f(lib, x) on one sample of X (3, 5))
UNARY = [
    ("sin", lambda lib, x: x.sin()), ("exp+relu", lambda lib, x: lib.relu(x.exp() - 1.5)),
    ("neg/abs/pow", lambda lib, x: (-x).abs() ** 1.5), ("sigmoid tanh", lambda lib, x: x.sigmoid() * x.tanh()),
    ("gelu silu", lambda lib, x: lib.nn.functional.gelu(x) + lib.nn.functional.silu(x)),
    ("leaky_relu", lambda lib, x: lib.nn.functional.leaky_relu(x, 0.2)),
    ("clamp", lambda lib, x: x.clamp(-0.5, 0.5)), ("where", lambda lib, x: lib.where(x > 0, x, x * 0.1)),
    ("masked_fill", lambda lib, x: x.masked_fill(x < 0, 0.0)),
    ("scalar ops", lambda lib, x: 2 - x / 3 + 1 / (x.abs() + 1) + 2 ** x),
    ("comparison", lambda lib, x: (x > 0.1) & (x < 1.0)),
    ("sum", lambda lib, x: x.sum()), ("sum dim", lambda lib, x: x.sum(1)), ("sum -1 keep", lambda lib, x: x.sum(-1, keepdim=True)),
    ("sum dims", lambda lib, x: x.sum((0, 1))), ("mean", lambda lib, x: x.mean(0)), ("mean all", lambda lib, x: x.mean()),
    ("var", lambda lib, x: x.var(1)), ("std all", lambda lib, x: x.std()), ("amax", lambda lib, x: x.amax(-1)),
    ("max dim", lambda lib, x: x.max(1)), ("max all", lambda lib, x: x.max()), ("min dim keep", lambda lib, x: x.min(0, keepdim=True)),
    ("argmax", lambda lib, x: x.argmax()), ("argmax dim", lambda lib, x: x.argmax(1)), ("prod", lambda lib, x: x.prod(1)),
    ("logsumexp", lambda lib, x: x.logsumexp(1)), ("norm", lambda lib, x: x.norm()), ("norm dim", lambda lib, x: x.norm(dim=1)),
    ("softmax", lambda lib, x: x.softmax(-1)), ("log_softmax 0", lambda lib, x: lib.log_softmax(x, 0)),
    ("F.softmax", lambda lib, x: lib.nn.functional.softmax(x, dim=1)), ("cumsum", lambda lib, x: x.cumsum(1)),
    ("sort", lambda lib, x: x.sort(1)), ("topk", lambda lib, x: x.topk(2)), ("all/any", lambda lib, x: ((x > -3).all(), (x > 1).any(1))),
    ("view", lambda lib, x: x.view(15)), ("reshape -1", lambda lib, x: x.reshape(5, -1)), ("flatten", lambda lib, x: x.flatten()),
    ("unflatten", lambda lib, x: x.unflatten(1, (5, 1))), ("permute", lambda lib, x: x.permute(1, 0)),
    ("transpose", lambda lib, x: x.transpose(0, 1)), ("t", lambda lib, x: x.t()), ("T mT", lambda lib, x: (x.T, x.mT)),
    ("unsqueeze", lambda lib, x: x.unsqueeze(0).unsqueeze(-1)), ("squeeze", lambda lib, x: x.unsqueeze(1).squeeze()),
    ("squeeze dim", lambda lib, x: x.unsqueeze(1).squeeze(1)), ("expand", lambda lib, x: x[:, :1].expand(3, 4)),
    ("expand new dims", lambda lib, x: x.expand(2, 3, 5)), ("repeat", lambda lib, x: x.repeat(2, 1)),
    ("movedim", lambda lib, x: x.movedim(0, -1)), ("flip", lambda lib, x: x.flip(1)), ("roll", lambda lib, x: x.roll(1, 0)),
    ("narrow select", lambda lib, x: (x.narrow(1, 1, 2), x.select(1, 0))), ("split chunk unbind", lambda lib, x: (x.split(2, 1), x.chunk(3, 0), x.unbind(1))),
    ("getitem", lambda lib, x: (x[0], x[:, 1:3], x[..., -1], x[None, 1], x[lib.tensor([True, False, True])])),
    ("index tensor", lambda lib, x: x[lib.tensor([2, 0])]), ("cat", lambda lib, x: lib.cat([x, x * 2], 1)),
    ("stack", lambda lib, x: lib.stack([x, -x], -1)), ("tril", lambda lib, x: x.tril()),
    ("diagonal", lambda lib, x: x.diagonal(0, 0, 1)), ("matmul M", lambda lib, x: x @ lib.tensor(M)),
    ("matmul vec", lambda lib, x: x @ x[0]), ("mm", lambda lib, x: lib.mm(x, x.t())),
    ("einsum", lambda lib, x: lib.einsum("ij,jk->ik", x, lib.tensor(M))), ("outer", lambda lib, x: lib.outer(x[0], x[1])),
    ("new_zeros like", lambda lib, x: (x.new_zeros(2), lib.zeros_like(x), lib.ones_like(x) * x)),
    ("linear", lambda lib, x: lib.nn.functional.linear(x, lib.tensor(M).t(), lib.tensor(M[0]))),
    ("layer_norm", lambda lib, x: lib.nn.functional.layer_norm(x, (5,))),
    ("normalize", lambda lib, x: lib.nn.functional.normalize(x, dim=-1)),
    ("dtype", lambda lib, x: (x.double(), x.to(lib.float64), (x > 0).long().sum(), x.type_as(lib.zeros(1, dtype=lib.float64)))),
    ("inplace on a clone", lambda lib, x: x.clone().mul_(2).add_(1)),
    ("setitem", lambda lib, x: _setitem(x)),
    ("shape queries", lambda lib, x: x.new_ones(x.shape) * x.size(0) * x.dim() * x.numel() * len(x)),
    ("gather", lambda lib, x: x.gather(1, lib.tensor([[0, 1], [2, 3], [4, 0]]))),
    ("index_select", lambda lib, x: x.index_select(1, lib.tensor([4, 0]))),
    ("pad", lambda lib, x: (lib.nn.functional.pad(x, (1, 2)), lib.nn.functional.pad(x, (1, 1, 2, 0), value=3.0),
                            lib.nn.functional.pad(x, (2, 1), mode="reflect"), lib.nn.functional.pad(x, (1, 1), mode="replicate"))),
    ("cummax cumprod logcumsumexp", lambda lib, x: (x.cummax(1), x.cumprod(0), x.logcumsumexp(1))),
    ("kthvalue median mode", lambda lib, x: (x.kthvalue(2, 1), x.median(), x.median(0), x.round().mode(1))),
    ("nansum var_mean std_mean", lambda lib, x: (x.nansum(1), lib.var_mean(x, 1), lib.std_mean(x))),
    ("count_nonzero aminmax", lambda lib, x: (lib.count_nonzero(x > 0, 1), x.amin((0, 1)))),
    ("argsort msort", lambda lib, x: (x.argsort(0), lib.msort(x))),
    ("tensor_split repeat_interleave", lambda lib, x: (x.tensor_split(2, 1), x.repeat_interleave(2, 0), x.repeat_interleave(2))),
    ("diff cross", lambda lib, x: (lib.diff(x, dim=1), lib.cross(x[:, :3], x[:, 1:4].flip(0), dim=1))),
    ("scatter index_add", lambda lib, x: (x.scatter(1, lib.tensor([[0], [2], [4]]), -1.0),
                                          x.scatter_add(0, lib.tensor([[0, 1, 2, 0, 1]]), x[:1]),
                                          x.index_add(1, lib.tensor([0, 0]), x[:, :2]))),
    ("take_along_dim", lambda lib, x: lib.take_along_dim(x, x.argsort(1), 1)),
    ("diag_embed swapaxes", lambda lib, x: (lib.diag_embed(x[0]), x.swapaxes(0, 1))),
    ("F.glu cosine_similarity", lambda lib, x: (lib.nn.functional.glu(x[:, :4], -1), lib.nn.functional.cosine_similarity(x, x.flip(1), dim=1))),
    ("pools", lambda lib, x: (lib.nn.functional.max_pool1d(x, 2), lib.nn.functional.avg_pool1d(x.unsqueeze(0), 2),
                              lib.nn.functional.adaptive_avg_pool1d(x, 3))),
    ("baddbmm addmm", lambda lib, x: (lib.addmm(x[:, :3], x, lib.tensor(M)[:, :3], beta=0.5, alpha=2.0),
                                      lib.baddbmm(x.unsqueeze(0), x.unsqueeze(0), lib.eye(5).unsqueeze(0)))),
    ("bmm-like batched matmul", lambda lib, x: lib.matmul(x.unsqueeze(0).expand(2, 3, 5), x.t())),
]


def _setitem(x):
    y = x.clone()
    y[0] = 1.0
    y[1:, 2] = y[0, 2] * 3
    return y


@pytest.mark.parametrize("name,f", UNARY, ids=[u[0] for u in UNARY])
def test_vmap_ops(name, f):
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # each of these has a batching rule: no fallback warning
        both(lambda lib: lib.func.vmap(lambda x: f(lib, x))(T(lib, X)))


BINARY = [
    ("add broadcast", lambda lib, x, v: x + v), ("mul rev", lambda lib, x, v: v * x), ("div", lambda lib, x, v: x / (v.abs() + 1)),
    ("matmul", lambda lib, x, v: x @ v), ("vec matmul", lambda lib, x, v: v @ x.t()), ("dot", lambda lib, x, v: lib.dot(v, v)),
    ("atan2 maximum", lambda lib, x, v: lib.atan2(x, v) + lib.maximum(x, v)),
    ("cat list", lambda lib, x, v: lib.cat([x, v.unsqueeze(0)])), ("stack", lambda lib, x, v: lib.stack([x[0], v])),
    ("where mixed", lambda lib, x, v: lib.where(v > 0, x, v)), ("einsum two", lambda lib, x, v: lib.einsum("ij,j->i", x, v)),
    ("addcmul", lambda lib, x, v: lib.addcmul(x, x, v, value=0.5)), ("lerp", lambda lib, x, v: lib.lerp(x, v.expand(3, 5), 0.3)),
]


@pytest.mark.parametrize("name,f", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
def test_vmap_binary_in_dims(name, f, in_dims):
    def scen(lib):
        x = T(lib, X) if in_dims[0] == 0 else T(lib, X[0])
        v = T(lib, V) if in_dims[1] == 0 else T(lib, V[1])
        return lib.func.vmap(lambda a, b: f(lib, a, b), in_dims=in_dims)(x, v)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both(scen)


def test_batched_indices():
    """Indexing with batched integer indices (a plain or batched tensor indexed by them), and the nested vmap over
    index ranges that transformers' masking_utils builds its attention masks with."""
    def scen(lib):
        x, idx = T(lib, X), lib.tensor(IDX)
        table = T(lib, M)
        pad = lib.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]).bool()

        def mask(b, h, q, kv):
            return (kv <= q) & pad[b, kv] & (kv > q - 3)
        f = mask
        for dims in [(None, None, None, 0), (None, None, 0, None), (None, 0, None, None), (0, None, None, None)]:
            f = lib.func.vmap(f, in_dims=dims, out_dims=0)
        return (lib.func.vmap(lambda i: table[i])(idx), lib.func.vmap(lambda a, i: a[i])(x, idx),
                lib.func.vmap(lambda a, i: a[i, 1:])(x, idx[:, 0]), lib.func.vmap(lambda i: table[i, i + 1])(idx[:, 0]),
                f(lib.arange(2), lib.arange(1), lib.arange(5), lib.arange(5)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both(scen)


def test_in_dims_out_dims_pytrees():
    def scen(lib):
        x, v, s = T(lib, X), T(lib, V), T(lib, S)
        f = lambda d, t: {"a": d["x"] * t[0], "b": (d["v"].sum() + t[1], d["v"])}   # noqa: E731
        r1 = lib.func.vmap(f, in_dims=({"x": 1, "v": 0}, (None, 0)), out_dims={"a": 1, "b": (0, -1)})(
            {"x": x.transpose(0, 1), "v": v}, (x[0, 0], s))
        r2 = lib.func.vmap(lambda a: (a, a.sum()), in_dims=-1, out_dims=(2, 0))(x)
        r3 = lib.func.vmap(lambda a, n: a * n, in_dims=(0, None))(v, 3)
        r4 = lib.func.vmap(lambda a: (a[0], lib.ones(3)), out_dims=(0, None))(v)[1]  # an unbatched output
        r5 = lib.func.vmap(lambda a: lib.ones(2))(v)                          # unbatched: expanded
        r6 = lib.func.vmap(lambda a, k=2: a * k)(v, k=3)                       # kwargs are not batched
        return r1, r2, r3, r5, r6, r4.shape
    both(scen)


def test_nested_vmap_and_chunks():
    def scen(lib):
        x, v = T(lib, X), T(lib, V)
        r1 = lib.func.vmap(lib.func.vmap(lib.dot))(x.reshape(4, 3, 5), x)
        r2 = lib.func.vmap(lib.func.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))(v[0], v)
        r3 = lib.func.vmap(lambda a: lib.func.vmap(lambda r: r @ a[0])(a))(x)
        r4 = lib.func.vmap(lambda a: a.sum(0), chunk_size=3)(x)
        r5 = lib.func.vmap(lambda a, b: (a * b, b), in_dims=(1, 0), out_dims=(1, 0), chunk_size=1)(x, v[:3])
        return r1, r2, r3, r4, r5
    both(scen)


def test_fallback_loop_and_warning():
    def scen(lib):
        x = T(lib, X)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = lib.func.vmap(lambda a: lib.histc(a, bins=4, min=-2, max=2))(x)
        msgs = [str(m.message) for m in w if "performance drop" in str(m.message)]
        assert len(msgs) == 1 and msgs[0].startswith(
            "There is a performance drop because we have not yet implemented the batching rule for aten::histc."), msgs
        return r
    both(scen)


def test_randomness():
    x = hookgrad.ones(4, 1000)
    for f in (lambda a: hookgrad.rand_like(a), lambda a: hookgrad.nn.functional.dropout(a, 0.5)):
        raises_same(lambda lib: lib.func.vmap(f if lib is hookgrad else _torch_version(f))(
            lib.ones(4, 1000) if lib is not hookgrad else x))
        diff = hookgrad.func.vmap(f, randomness="different")(x)
        assert not hookgrad.equal(diff[0], diff[1]) and tuple(diff.shape) == (4, 1000)
        same = hookgrad.func.vmap(f, randomness="same")(x)
        assert hookgrad.equal(same[0], same[3]) and tuple(same.shape) == (4, 1000)
    out = hookgrad.func.vmap(lambda a: hookgrad.nn.functional.dropout(a, 0.5, training=False))(x)
    assert hookgrad.equal(out, x)
    raises_same(lambda lib: lib.func.vmap(lambda a: a, randomness="sometimes")(lib.ones(2)))


def _torch_version(f):
    import torch
    return lambda a: torch.rand_like(a) if "rand_like" in f.__code__.co_names else torch.nn.functional.dropout(a, 0.5)


ERRORS = [
    ("sizes", lambda lib: lib.func.vmap(lambda a, b: a + b)(lib.ones(3), lib.ones(4))),
    ("in_dims structure", lambda lib: lib.func.vmap(lambda a, b: a, in_dims=(0, 0, 0))(lib.ones(3), lib.ones(3))),
    ("in_dim range", lambda lib: lib.func.vmap(lambda a: a, in_dims=2)(lib.ones(3))),
    ("in_dim type", lambda lib: lib.func.vmap(lambda a: a, in_dims=(1.0,))(lib.ones(3))),
    ("in_dims type", lambda lib: lib.func.vmap(lambda a: a, in_dims=[0])(lib.ones(3))),
    ("non-tensor batched", lambda lib: lib.func.vmap(lambda a: a)(3)),
    ("nothing batched", lambda lib: lib.func.vmap(lambda a: a, in_dims=None)(lib.ones(3))),
    ("no inputs", lambda lib: lib.func.vmap(lambda: 1)()),
    ("non-tensor output", lambda lib: lib.func.vmap(lambda a: 5)(lib.ones(3))),
    ("out_dims", lambda lib: lib.func.vmap(lambda a: a, out_dims="x")(lib.ones(3))),
    ("out_dims structure", lambda lib: lib.func.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(lib.ones(3))),
    ("batched out_dim None", lambda lib: lib.func.vmap(lambda a: a, out_dims=None)(lib.ones(3))),
    ("item", lambda lib: lib.func.vmap(lambda a: a.sum().item())(lib.ones(3, 2))),
    ("float()", lambda lib: lib.func.vmap(lambda a: float(a.sum()))(lib.ones(3, 2))),
    ("control flow", lambda lib: lib.func.vmap(lambda a: a if a.sum() > 0 else -a)(lib.ones(3, 2))),
    ("tolist", lambda lib: lib.func.vmap(lambda a: a.tolist())(lib.ones(3, 2))),
    ("chunk_size", lambda lib: lib.func.vmap(lambda a: a, chunk_size=0)),
    ("boolean mask", lambda lib: lib.func.vmap(lambda a: a[a > 0])(lib.ones(3, 2))),
    ("batch norm running stats", lambda lib: lib.func.vmap(lib.nn.BatchNorm1d(2))(lib.ones(3, 4, 2))),
]


@pytest.mark.parametrize("name,f", ERRORS, ids=[e[0] for e in ERRORS])
def test_vmap_errors(name, f):
    raises_same(f)


def test_autograd_through_vmap():
    """vmap's results are differentiable by regular autograd (and by hooks on the inputs)."""
    def scen(lib):
        x = T(lib, X).double().requires_grad_()
        w = lib.tensor(M, dtype=lib.float64, requires_grad=True)
        seen = []
        x.register_hook(lambda g: seen.append(g * 1))
        y = lib.func.vmap(lambda a: (a @ w).tanh().sum(0))(x)
        gx, gw = lib.autograd.grad(y.pow(2).sum(), (x, w), create_graph=True)
        ggx = lib.autograd.grad(gx.sum(), x, retain_graph=True)[0]
        y.sum().backward()
        return y, gx, gw, ggx, x.grad, w.grad, seen
    both(scen)


def test_functorch_state_queries():
    """torch._C's questions libraries ask (kornia skips data-dependent checks under a transform)."""
    def scen(lib):
        active = lib._C._are_functorch_transforms_active
        flags = [active()]
        lib.func.vmap(lambda a: flags.append((active(), lib._C._functorch.is_batchedtensor(a))) or a)(lib.ones(2))
        lib.func.grad(lambda a: flags.append(active()) or a.sum())(lib.ones(2))
        flags.append((active(), lib._C._functorch.is_batchedtensor(lib.ones(2))))
        return flags
    t, h = both(scen)
    assert t == h, (t, h)


def test_debug_unwrap_and_functionalize():
    def scen(lib):
        x = T(lib, X)
        shapes = lib.func.vmap(lambda a: lib.func.debug_unwrap(a) * 1)(x)      # the whole batch, per sample
        f = lib.func.functionalize(lambda a: a.clone().add_(1).mul(2))
        return shapes, f(x), lib.func.debug_unwrap(x)
    both(scen)
    raises_same(lambda lib: lib.func.functionalize(lambda a: a, remove="views"))


def test_legacy_vmap_internals():
    import torch
    for lib in (torch, hookgrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib._vmap_internals.vmap(lambda a: a * 2)(lib.ones(2, 3))
        assert any(issubclass(m.category, FutureWarning) and "Please use `torch.vmap`" in str(m.message) for m in w)

    def scen(lib):
        x = lib.tensor(X[0], requires_grad=True)
        y = (x ** 2).sum(0)
        g = lambda v: lib.autograd.grad(y, x, v, retain_graph=True)   # noqa: E731  gradcheck's batched check
        return lib._vmap_internals._vmap(g)(lib.tensor(V))
    both(scen)
    both(lambda lib: lib.vmap(lib.sin)(lib.tensor(X)))
