"""Sparse tensors against torch: construction, layouts, conversions, getters, printing, ops, gradients (and their
layouts), errors. Each scenario runs as ``scenario(lib)`` under torch and hookgrad; what it returns is turned into
plain values by ``dump`` (a tensor: layout, dtype, shape, dense values, and its index/value arrays) and compared."""
import itertools
import warnings

import numpy as np
import pytest
import torch

import hookgrad

LIBS = (torch, hookgrad)
warnings.filterwarnings("ignore", message=".*Sparse.*")
warnings.filterwarnings("ignore", message=".*sparse.*")
warnings.filterwarnings("ignore", message=".*create_graph=True.*")


def _is_t(x):
    return isinstance(x, (torch.Tensor, hookgrad.Tensor))


def dump(x):
    """Plain, comparable values of ``x`` (tensors, nested tuples/lists, layouts, dtypes, exceptions)."""
    if _is_t(x):
        lay = str(x.layout)
        parts = [lay, str(x.dtype), tuple(x.shape), bool(x.requires_grad),
                 None if x.grad_fn is None else type(x.grad_fn).__name__]
        d = x.detach()
        if lay == "torch.sparse_coo":
            parts += [d.is_coalesced(), d._indices().numpy().tolist(), np.round(d._values().numpy(), 9).tolist()]
        elif lay != "torch.strided":
            c, p = (d.crow_indices(), d.col_indices()) if lay in ("torch.sparse_csr", "torch.sparse_bsr") else \
                (d.ccol_indices(), d.row_indices())
            parts += [c.numpy().tolist(), p.numpy().tolist(), np.round(d.values().numpy(), 9).tolist()]
        dense = d.to_dense() if lay != "torch.strided" else d
        parts.append(np.round(dense.numpy(), 9).tolist())
        return tuple(parts)
    if isinstance(x, (list, tuple)):
        return tuple(dump(v) for v in x)
    if isinstance(x, dict):
        return {k: dump(v) for k, v in x.items()}
    if isinstance(x, BaseException):
        return ("raises", type(x).__name__)
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return str(x)


def both(scenario):
    res = [dump(scenario(lib)) for lib in LIBS]
    if res[0] != res[1] and isinstance(res[0], tuple) and isinstance(res[1], tuple) and len(res[0]) == len(res[1]):
        k = next(k for k, (a, b) in enumerate(zip(*res)) if a != b)
        raise AssertionError(f"item {k}\ntorch:    {res[0][k]}\nhookgrad: {res[1][k]}")
    assert res[0] == res[1], f"\ntorch:    {res[0]}\nhookgrad: {res[1]}"
    return res[0]


def _c(g):
    """A gradient with its coalesced flag left out (PyTorch's flag on summed sparse gradients: see differences)."""
    return g.coalesce() if g is not None and g.is_sparse else g


def raises(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - the type is what is compared
        return e
    return "no error"


RNG = np.random.default_rng(0)
A = np.array([[0., 2, 0], [3, 0, 4]])
M44 = RNG.random((4, 4)) + 1
G44 = RNG.random((4, 4)) + 1


def t(lib, a, rg=False):
    x = lib.tensor(np.array(a))
    return x.requires_grad_() if rg else x


# ---- construction, getters, layouts ---------------------------------------------------------------------------

def test_to_sparse_layouts_and_getters():
    def s(lib):
        x = t(lib, A)
        out = []
        for conv in (lambda: x.to_sparse(), lambda: x.to_sparse(1), lambda: x.to_sparse_csr(),
                     lambda: x.to_sparse_csc(),
                     lambda: x.to_sparse(layout=lib.sparse_csr), lambda: x.to_sparse_coo(),
                     lambda: t(lib, M44).to_sparse_bsr(2), lambda: t(lib, M44).to_sparse_bsc((2, 2))):
            y = conv()
            out.append((y, y.layout, y.is_sparse, y.is_sparse_csr, y.sparse_dim(), y.dense_dim(), y._nnz(), y.dim(),
                        y.to_dense(), y.numel()))
        return out
    both(s)


def test_coo_constructor_and_coalesce():
    def s(lib):
        i = lib.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
        v = lib.tensor([1., 2., 3., 4.])
        st = lib.sparse_coo_tensor(i, v, (2, 3))
        c = st.coalesce()
        return (st, c, c.indices(), c.values(), st._indices(), st._values(), c.is_coalesced(), st.is_coalesced(),
                lib.sparse_coo_tensor(lib.tensor([[0.7, 1.2, 0.]]), lib.tensor([1., 2., 3.])),
                lib.sparse_coo_tensor(i, v), lib.sparse_coo_tensor(size=(2, 3)), c.coalesce() is c,
                lib.sparse_coo_tensor(i, v.double(), (2, 5)), lib.sparse_coo_tensor(i[:, :1], v[:1], (2, 3)))
    both(s)


def test_dense_dims_and_hybrid():
    a0 = RNG.random((3, 2, 2)) * (np.arange(3)[:, None, None] != 1)

    def s(lib):
        x = t(lib, a0)
        y = x.to_sparse(1)
        return y, y.sparse_dim(), y.dense_dim(), y.to_dense(), y.coalesce().values()
    both(s)


def test_compressed_constructors():
    def s(lib):
        crow, col, v = lib.tensor([0, 2, 3]), lib.tensor([0, 2, 1]), lib.tensor([1., 2., 3.])
        csr = lib.sparse_csr_tensor(crow, col, v, (2, 3))
        csc = lib.sparse_csc_tensor(lib.tensor([0, 1, 2, 3]), lib.tensor([0, 1, 0]), v, (2, 3))
        bv = lib.tensor(np.arange(8.).reshape(2, 2, 2))
        bsr = lib.sparse_bsr_tensor(lib.tensor([0, 1, 2]), lib.tensor([1, 0]), bv, (4, 4))
        return csr, csc, bsr, csr.to_sparse(), csr.to_dense(), csc.to_sparse_csr(), bsr.to_dense(), csr.values()
    both(s)


def test_conversions_between_sparse_layouts():
    a0 = M44 * (RNG.random((4, 4)) > 0.5)

    def s(lib):
        x = t(lib, a0)
        out = []
        for a, b in itertools.product(("to_sparse", "to_sparse_csr", "to_sparse_csc"), repeat=2):
            out.append(getattr(getattr(x, a)(), b)())
        return out
    both(s)


def test_printing():
    def s(lib):
        x = t(lib, A)
        v = lib.tensor([1., 2., 3.], requires_grad=True)
        st = lib.sparse_coo_tensor(lib.tensor([[0, 1, 1], [2, 0, 2]]), v, (2, 3))
        return [repr(y) for y in (
            x.to_sparse(), x.to_sparse_csr(), x.to_sparse_csc(), t(lib, M44).to_sparse_bsr(2),
            t(lib, M44).to_sparse_bsc(2), x.float().to_sparse(), x.long().to_sparse(), st, st.coalesce(),
            lib.sparse_coo_tensor(size=(2, 3)), lib.zeros(2, 3, 2).to_sparse(2), t(lib, A, True).to_sparse(),
            t(lib, A).to_sparse().requires_grad_(), lib.zeros(3, 3).to_sparse_csr())]
    out = both(s)
    assert "layout=torch.sparse_coo" in out[0] and "crow_indices" in out[1]


# ---- gradients ------------------------------------------------------------------------------------------------

def test_to_sparse_backward_every_layout_pair():
    """PyTorch's test_autograd test_to_sparse_backward: every conversion's gradient, in the source's layout."""
    names = ("to_dense", "to_sparse", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc")
    params = dict(zip(names, ((), (), (), (), (2,), (2,))))

    def s(lib):
        xs, gs = t(lib, M44), t(lib, G44)
        out = []
        for f in names:
            src = getattr(xs, f)(*params[f]).requires_grad_(True)
            for to in names[1:]:
                try:        # the upstream test's check_inversion_possible: both ways convert
                    getattr(getattr(xs, f)(*params[f]), to)(*params[to])
                    getattr(getattr(xs, to)(*params[to]), f)(*params[f])
                except RuntimeError as e:
                    out.append((f, to, dump(e)))
                    continue
                y = getattr(src, to)(*params[to])
                g = getattr(gs, to)(*params[to])
                gr = lib.autograd.grad(y, src, g)[0]
                out.append((f, to, gr.layout, gr.to_dense(), y.grad_fn is None))
        return out
    both(s)


def test_sparse_mm_backward():
    """PyTorch's test_sparse_mm_backward: a.mm(b) with sparse operands, gradients against the dense product's."""
    a0, b0 = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))

    def s(lib):
        out = []
        for arg, asp, brg, bsp in itertools.product((False, True), repeat=4):
            if not ((asp or bsp) and (arg or brg)):
                continue
            a, b = t(lib, a0), t(lib, b0)
            a = (a.to_sparse().detach() if asp else a).requires_grad_(arg)
            b = (b.to_sparse().detach() if bsp else b).requires_grad_(brg)
            r = a.mm(b)
            (r.to_dense() if r.is_sparse else r).sum().backward()
            out.append((r, _c(a.grad), _c(b.grad)))
        return out
    both(s)


def test_sparse_mm_addmm_namespace():
    a0, b0 = RNG.standard_normal((3, 4)) * (RNG.random((3, 4)) > 0.4), RNG.standard_normal((4, 2))

    def s(lib):
        a = t(lib, a0).to_sparse().requires_grad_()
        b = t(lib, b0, True)
        c = t(lib, np.ones((3, 2)), True)
        r = lib.sparse.mm(a, b)
        r2 = lib.sparse.addmm(c, a, b, beta=0.5, alpha=2.0)
        (r.sum() + (r2 * r2).sum()).backward()
        return r, r2, _c(a.grad), b.grad, c.grad
    both(s)


def test_sparse_backward_mixed_accumulation():
    """PyTorch's test_sparse_backward: sparse and dense gradients of one input, summed in every order."""
    i1, i2 = [[0, 3, 4], [0, 2, 2]], [[0, 1, 3, 4], [0, 1, 2, 2]]
    v1, v2 = RNG.standard_normal((3, 2)), RNG.standard_normal((4, 2))
    dg, x0 = RNG.random((6, 3, 2)), RNG.standard_normal((6, 3, 2))

    def s(lib):
        class Fixed(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, grad_x):
                ctx.save_for_backward(grad_x)
                return x

            @staticmethod
            def backward(ctx, grad_x):
                saved, = ctx.saved_tensors
                return saved, None
        sg1 = lib.sparse_coo_tensor(lib.tensor(i1), t(lib, v1), (6, 3, 2))
        sg2 = lib.sparse_coo_tensor(lib.tensor(i2), t(lib, v2), (6, 3, 2))
        dense = t(lib, dg)
        out = []
        for order in ((sg1, dense, sg2), (dense, sg1, sg2), (sg1, sg2)):
            x = t(lib, x0, True)
            y = Fixed.apply(x, order[0])
            for g in order[1:]:
                y = y + Fixed.apply(x, g)
            y.sum().abs().backward()
            out.append(x.grad)
        return out
    both(s)


def test_accumulate_grad_reference_rules():
    """PyTorch's test_accumulate_grad_tensor_reference: which .grad accumulations keep the object."""
    def s(lib):
        out = []
        for cg in (False, True):
            for pg, bg in (("s", "d"), ("d", "d"), ("s", "s")):
                mk = {"s": lambda: lib.sparse_coo_tensor(lib.tensor([[1, 1]]), lib.tensor([1.0, 1.0])),
                      "d": lambda: lib.tensor([1.5, 1.5])}
                p = lib.tensor([1.5, 1.5]).requires_grad_()
                p.grad = mk[pg]()
                saved = p.grad
                p.backward(mk[bg](), create_graph=cg)
                out.append((id(saved) == id(p.grad), p.grad.layout, p.grad.detach().to_dense()))
        return out
    both(s)


def test_ctor_getter_backward():
    """PyTorch's test_sparse_ctor_getter_backward: values -> sparse_coo_tensor -> + other -> coalesce -> values."""
    def s(lib):
        out = []
        rng = np.random.default_rng(3)
        for empty_i, empty_v, empty_nnz in itertools.product((True, False), repeat=3):
            sparse_size = [] if empty_i else [2, 1]
            dense_size = [1, 0, 2] if empty_v else [1, 2]
            nnz = 0 if empty_nnz else 5
            size = sparse_size + dense_size
            sd = len(sparse_size)
            i = lib.tensor((rng.random((sd, nnz)) * np.array(size[:sd])[:, None]).astype(np.int64).reshape(sd, nnz))
            v = t(lib, rng.standard_normal([nnz] + size[sd:]), True)
            oi = lib.tensor((rng.random((sd, 3)) * np.array(size[:sd])[:, None]).astype(np.int64).reshape(sd, 3))
            other = lib.sparse_coo_tensor(oi, t(lib, rng.standard_normal([3] + size[sd:])), size)
            x = lib.sparse_coo_tensor(i, v, size, dtype=lib.double)
            y = (x + other).coalesce()
            z = lib.sparse_coo_tensor(y.indices(), y.values().tanh(), y.size())
            r = z.coalesce().values()
            go = t(lib, rng.standard_normal(tuple(r.shape)))
            g, = lib.autograd.grad(r, v, go, allow_unused=True) if r.requires_grad else (None,)
            e = raises(lambda: other.detach().requires_grad_()._values().backward(lib.ones_like(other._values())))
            out.append((r, g, e, str(e)[:40]))
        return out
    both(s)


def test_sparse_mask_and_to_dense_grads():
    def s(lib):
        tensor = t(lib, [1., 2., 3.], True)
        mask = lib.ones(3)
        mask[1] = 0
        mask = mask.to_sparse()
        conv = tensor.sparse_mask(mask)
        conv.to_dense().sum().backward()
        x = t(lib, A, True)
        sp = x.to_sparse()
        d1 = lib.autograd.grad(sp.to_dense(), sp, t(lib, np.ones((2, 3))), retain_graph=True)[0]
        d2 = lib.autograd.grad(sp.to_dense(masked_grad=False), sp, t(lib, np.ones((2, 3))))[0]
        csr = x.to_sparse_csr()
        d3 = lib.autograd.grad(csr.to_dense(), csr, t(lib, np.full((2, 3), 2.)))[0]
        return conv, tensor.grad, mask, d1, d2, d3
    both(s)


def test_values_and_sum_gradients():
    h0 = RNG.random((3, 2, 2))

    def s(lib):
        s0 = t(lib, A).to_sparse().requires_grad_()
        out = []
        r = lib.sparse.sum(s0)
        r.backward()
        out += [r, s0.grad]
        s0.grad = None
        r = s0.sum()
        r.backward()
        out += [r, s0.grad]
        s0.grad = None
        r = lib.sparse.sum(s0, 0)
        r.backward(lib.ones(3).to_sparse())
        out += [r, s0.grad]
        s0.grad = None
        r = lib.sparse.sum(s0, (0, 1))
        out += [r]
        (s0 * 2).coalesce().values().sum().backward()
        out += [s0.grad]
        s0.grad = None
        (s0 + s0).to_dense().sum().backward()
        out += [s0.grad]
        s0.grad = None
        out += [lib.tanh(s0), raises(lambda: lib.tanh(s0).to_dense().sum().backward())]
        h = t(lib, h0).to_sparse(1).requires_grad_()
        r = lib.sparse.sum(h, 2)
        r.to_dense().sum().backward()
        out += [r, h.grad]
        return out
    both(s)


def test_ops_on_sparse():
    def s(lib):
        sp = t(lib, A).to_sparse()
        st = lib.sparse_coo_tensor(lib.tensor([[0, 1, 1], [2, 0, 2]]), lib.tensor([1., 2., 3.]), (2, 3))
        d = t(lib, np.arange(6.).reshape(2, 3))
        return (sp * 2, 2 * sp, sp + sp, st + st, st + sp, d + sp, sp * d, sp * sp.coalesce(), -sp, sp / 2,
                lib.tanh(sp), sp.t(), sp.transpose(0, 1), sp - sp, lib.mm(sp, d.t()), lib.mm(sp, sp.t()),
                sp.to_sparse_csr() * 3, sp.to_sparse_csr() + sp.to_sparse_csr(), sp.double(), sp.clone(),
                sp.detach(), sp.float().dtype, lib.add(d, sp), d - sp, lib.add(d, sp, alpha=-0.5),
                raises(lambda: sp - d))
    both(s)


def test_errors():
    def s(lib):
        x = t(lib, A)
        sp = x.to_sparse()
        st = lib.sparse_coo_tensor(lib.tensor([[0, 1, 1], [2, 0, 2]]), lib.tensor([1., 2., 3.]), (2, 3))
        cases = [
            lambda: st.values(), lambda: st.indices(), lambda: sp + x, lambda: x._values(), lambda: x._nnz(),
            lambda: sp.crow_indices(), lambda: x.to_sparse_csr().indices(), lambda: x.to_sparse_bsr(2),
            lambda: lib.sparse_coo_tensor(lib.tensor([[0, 5]]), lib.tensor([1., 2.]), (3,)),
            lambda: lib.sparse_coo_tensor(lib.tensor([[0, 1]]), lib.tensor([1., 2., 3.]), (3,)),
            lambda: lib.sparse_coo_tensor(lib.tensor([[0, -1]]), lib.tensor([1., 2.]), (3,)),
            lambda: x.to_sparse(5), lambda: t(lib, [1., 2.]).to_sparse_csr(), lambda: x.sparse_mask(x),
            lambda: lib.sparse_coo_tensor(lib.tensor([[0, 5]]), lib.tensor([1., 2.]), (3,), check_invariants=True),
            lambda: lib.sparse_coo_tensor(lib.tensor([[0, -1]]), lib.tensor([1., 2.]), (3,), check_invariants=True),
            lambda: lib.sparse_csr_tensor(lib.rand(2, 3), lib.rand(2, 3), lib.rand(2, 3)),
            lambda: lib.sparse_bsr_tensor(lib.rand(2, 3), 1, lib.ones(2, 3, dtype=lib.int64), lib.rand(2, 3)),
            lambda: lib.sparse_csr_tensor(lib.rand(2, 3), 1, lib.ones(2, 3, dtype=lib.int64)),
            lambda: lib.sparse_csc_tensor(lib.rand(2, 3), lib.rand(2, 3), 0.5),
            lambda: x.sparse_mask(1), lambda: x.to_dense(x),
        ]
        out = [raises(c) for c in cases]
        with lib.sparse.check_sparse_tensor_invariants():
            out.append(raises(lambda: lib.sparse_coo_tensor(lib.tensor([[0, 5]]), lib.tensor([1., 2.]), (3,))))
            out.append(lib.sparse.check_sparse_tensor_invariants.is_enabled())
        return out + [lib.sparse.check_sparse_tensor_invariants.is_enabled()]
    both(s)


def test_sparse_gather_grad_to_dense():
    """PyTorch's _test_sparse_gather: gather(sparse_grad=True)'s gradient is sparse (COO, one entry per index
    element); 0-d inputs and indices count as 1-d."""
    x0 = RNG.standard_normal((10, 10))
    ind0 = RNG.integers(0, 10, (5, 10))

    def s(lib):
        x = t(lib, x0, True)
        ind = lib.tensor(ind0)
        out = lib.gather(x, 0, ind, sparse_grad=True)
        out.backward(lib.ones_like(out))
        s = lib.tensor(3.0, requires_grad=True)
        lib.gather(s, 0, lib.tensor([0, 0]), sparse_grad=True).sum().backward()
        v = t(lib, x0[0], True)
        r = lib.gather(v, 0, lib.tensor(4), sparse_grad=True)
        r.backward()
        return x.grad, x.grad.to_dense(), s.grad, r, v.grad
    both(s)


def test_hookgrad_storage_is_the_values_module():
    """Index and value arrays are NumPy arrays of the values' module; no NumPy error escapes an unsupported op."""
    sp = hookgrad.tensor(A).to_sparse()
    assert isinstance(sp._data.indices, np.ndarray) and sp._data.indices.dtype == np.int64
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        hookgrad.exp(sp)
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        np.asarray(sp._data)
    with pytest.raises(NotImplementedError, match="aten::mean"):
        sp._data.mean()


def test_embedding_sparse_grad_and_optimizers():
    """nn.Embedding(sparse=True): a COO weight gradient (input order, padding left out); SGD steps with it, the
    algorithms without sparse support raise PyTorch's error."""
    def s(lib):
        out = []
        for opt_cls, kw in (("SGD", {"lr": 0.1}), ("Adam", {}), ("AdamW", {}), ("RMSprop", {})):
            emb = lib.nn.Embedding(5, 3, sparse=True, padding_idx=1)
            with lib.no_grad():
                emb.weight.copy_(lib.arange(15.).reshape(5, 3))
            opt = getattr(lib.optim, opt_cls)(emb.parameters(), **kw)
            x = lib.tensor([[0, 1, 3], [3, 4, 0]])
            for _ in range(2):
                opt.zero_grad()
                y = emb(x)
                (y ** 2).sum().backward()
                out += [y, emb.weight.grad, raises(opt.step), emb.weight]
        w = t(lib, np.arange(6.).reshape(3, 2), True)
        r = lib.nn.functional.embedding(lib.tensor([2, 0, 2]), w, sparse=True)
        r.backward(lib.ones_like(r))
        return out + [r, w.grad]
    both(s)


def test_sparse_mm_reduce_and_index_conversions():
    """torch.sparse.mm(csr, dense, reduce) for every reduction (values, grad_fn, both gradients and their layouts),
    and torch's private COO <-> CSR index conversions torch_geometric calls."""
    a0 = np.array([[0., 2, 0], [3, 0, 4], [0, 0, 0], [1, 5, 0]])
    d0 = np.arange(6.).reshape(3, 2)

    def s(lib):
        out = []
        for r in ("sum", "mean", "amax", "amin", "max", "min"):
            a = t(lib, a0).to_sparse_csr().requires_grad_()
            d = t(lib, d0, True)
            o = lib.sparse.mm(a, d, r)
            (o * t(lib, np.arange(8.).reshape(4, 2))).sum().backward()
            out += [o, a.grad, d.grad]
        out.append(raises(lambda: lib.sparse.mm(t(lib, a0).to_sparse_csr(), t(lib, d0), "prod")))
        rows = lib.tensor([0, 0, 1, 3, 3, 3])
        crow = lib._convert_indices_from_coo_to_csr(rows, 5)
        out += [crow, lib._convert_indices_from_coo_to_csr(rows, 5, out_int32=True),
                lib._convert_indices_from_csr_to_coo(crow, lib.tensor([1, 2, 0, 0, 1, 2])),
                lib._convert_indices_from_csr_to_coo(crow, lib.tensor([1, 2, 0, 0, 1, 2]), transpose=True)]
        return out
    both(s)


def test_tensor_methods_on_sparse():
    """Tensor methods on a COO tensor: a result of the same layout/shape/dtype as torch's, or an error of the same
    type (never Python's AttributeError or NumPy's)."""
    def s(lib):
        sp = t(lib, A).float().to_sparse()

        def tr(f):
            try:
                r = f()
            except Exception as e:      # noqa: BLE001
                return type(e).__name__
            return (str(r.layout), tuple(r.shape), str(r.dtype)) if _is_t(r) else r
        cases = [lambda: sp.numpy(), lambda: sp.tolist(), lambda: sp.item(), lambda: len(sp), lambda: str(sp.device),
                 lambda: sp.to(lib.float64), lambda: sp.to("cpu"), lambda: sp.clone().zero_(), lambda: sp.view(3, 2),
                 lambda: sp.reshape(3, 2), lambda: lib.exp(sp), lambda: sp.sum(0), lambda: sp.sum(), lambda: sp.mean(),
                 lambda: sp.abs(), lambda: sp.neg(), lambda: sp.clone().mul_(2), lambda: sp.clone().add_(sp),
                 lambda: sp.untyped_storage(), lambda: sp.stride(), lambda: sp.is_contiguous(),
                 lambda: sp @ lib.ones(3, 2), lambda: sp == sp, lambda: lib.sqrt(sp), lambda: sp ** 2,
                 lambda: lib.relu(sp), lambda: bool(sp), lambda: sp.data_ptr(), lambda: sp.contiguous(),
                 lambda: sp.detach().requires_grad, lambda: sp.is_sparse, lambda: sp.to_sparse_csr().is_sparse_csr,
                 lambda: sp.clone().mul_(2).to_dense(), lambda: sp.clone().add_(sp, alpha=2).to_dense()]
        return [tr(c) for c in cases]
    both(s)


def test_sparse_adam():
    """optim.SparseAdam on nn.Embedding(sparse=True): the same weights, moments and errors as PyTorch's."""
    def s(lib):
        emb = lib.nn.Embedding(6, 3, sparse=True)
        with lib.no_grad():
            emb.weight.copy_(lib.arange(18.).reshape(6, 3) / 7)
        opt = lib.optim.SparseAdam(emb.parameters(), lr=0.1)
        x = lib.tensor([[0, 1, 3], [3, 4, 0]])
        out = []
        for i in range(3):
            opt.zero_grad()
            (emb(x if i != 1 else x[:, :2]) ** 2).sum().backward()
            opt.step()
            out += [emb.weight, opt.state[emb.weight]["step"], opt.state[emb.weight]["exp_avg_sq"]]
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.ones(2)
        out.append(raises(lambda: lib.optim.SparseAdam([p]).step()))
        out.append(raises(lambda: lib.optim.SparseAdam([p], lr=-1)))
        return out
    both(s)
