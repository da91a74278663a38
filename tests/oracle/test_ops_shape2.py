"""Issue 10 part D2 vs torch: more shape/view ops, products, creation, windows and torch's top-level nn
functions (values, dtypes, grads and second derivatives, grad_fn names, views, errors, warnings)."""
import warnings

import numpy as np
import pytest

import torch
import hookgrad
from ops_util import data, run, same_error

X = data((3, 4))
V3, V4 = data((3,), seed=1), data((4,), seed=2)
B1, B2 = data((2, 3, 5), seed=3), data((2, 5, 4), seed=4)

OPS = {   # fn(L, *tensors), the arrays it takes
    "ravel": (lambda L, x: L.ravel(x), X),
    "ravel_nc": (lambda L, x: x.t().ravel(), X),
    "rot90": (lambda L, x: L.rot90(x), X),
    "rot90_k3": (lambda L, x: x.rot90(3, [1, 0]), X),
    "rot90_k-2": (lambda L, x: L.rot90(x, -2), X),
    "as_strided": (lambda L, x: L.as_strided(x, (2, 2), (1, 2)), X),
    "as_strided_off": (lambda L, x: x.as_strided((3, 3), (4, 1), 1), X),
    "as_strided_overlap": (lambda L, x: L.as_strided(x, (3, 3), (1, 1)), X),
    "as_strided_of_view": (lambda L, x: L.as_strided(x[1:], (2, 2), (1, 3)), X),
    "select_scatter": (lambda L, x, v: L.select_scatter(x, v, 0, 1), X, V4),
    "select_scatter_neg": (lambda L, x, v: x.select_scatter(v, 1, -1), X, V3),
    "slice_scatter": (lambda L, x, s: L.slice_scatter(x, s, 1, 1, 3), X, data((3, 2), seed=5)),
    "slice_scatter_step": (lambda L, x, s: L.slice_scatter(x, s, 0, 0, None, 2), X, data((2, 4), seed=5)),
    "diagonal_scatter": (lambda L, x, v: L.diagonal_scatter(x, v), X, V3),
    "diagonal_scatter_off": (lambda L, x, v: x.diagonal_scatter(v, 1), X, V3),
    "view_copy": (lambda L, x: L.view_copy(x, (2, 6)), X),
    "permute_copy": (lambda L, x: L.permute_copy(x, (1, 0)), X),
    "t_copy": (lambda L, x: L.t_copy(x), X),
    "transpose_copy": (lambda L, x: L.transpose_copy(x, 0, 1), X),
    "expand_copy": (lambda L, x: L.expand_copy(x[:1], (2, 4)), X),
    "squeeze_copy": (lambda L, x: L.squeeze_copy(x[:1]), X),
    "unsqueeze_copy": (lambda L, x: L.unsqueeze_copy(x, 1), X),
    "select_copy": (lambda L, x: L.select_copy(x, 1, 2), X),
    "slice_copy": (lambda L, x: L.slice_copy(x, 1, 1, 3), X),
    "diagonal_copy": (lambda L, x: L.diagonal_copy(x, 1), X),
    "narrow_copy": (lambda L, x: L.narrow_copy(x, 1, -3, 2), X),
    "alias_copy": (lambda L, x: L.alias_copy(x), X),
    "split_copy": (lambda L, x: L.split_copy(x, 2), X),
    "split_with_sizes_copy": (lambda L, x: L.split_with_sizes_copy(x, [1, 3], 1), X),
    "unbind_copy": (lambda L, x: L.unbind_copy(x, 1), X),
    "unsafe_split": (lambda L, x: L.unsafe_split(x, 2), X),
    "unsafe_chunk": (lambda L, x: x.unsafe_chunk(2, 1), X),
    "unsafe_split_ws": (lambda L, x: L.unsafe_split_with_sizes(x, [1, 2]), X),
    "diagflat": (lambda L, x: L.diagflat(x), V3),
    "diagflat_2d": (lambda L, x: x.diagflat(-1), X),
    "atleast_3d": (lambda L, x, v: L.atleast_3d(x, v, x[0, 0]), X, V3),
    "broadcast_tensors": (lambda L, a, b: L.broadcast_tensors(a[:, None], b), V3, V4),
    "meshgrid_ij": (lambda L, a, b: L.meshgrid(a, b, indexing="ij"), V3, V4),
    "meshgrid_xy": (lambda L, a, b: L.meshgrid([a, b, a[0]], indexing="xy"), V3, V4),
    "repeat_interleave": (lambda L, x: L.repeat_interleave(x, 2, dim=0), X),
    "repeat_interleave_flat": (lambda L, x: x.repeat_interleave(3), X),
    "repeat_interleave_t": (lambda L, x: L.repeat_interleave(x, L.tensor([1, 0, 2]), 0), X),
    "repeat_interleave_t1": (lambda L, x: x.repeat_interleave(L.tensor([2]), dim=1, output_size=8), X),
    "diff": (lambda L, x: L.diff(x), X),
    "diff_n2_dim0": (lambda L, x: x.diff(2, 0), X),
    "diff_prepend": (lambda L, x, v: L.diff(x, dim=0, prepend=v[None], append=x[:1]), X, V4),
    "kron": (lambda L, a, b: L.kron(a, b), X, data((2, 3), seed=6)),
    "kron_mixed": (lambda L, a, b: L.kron(a, b), V3, X),
    "cross": (lambda L, a, b: L.cross(a, b, dim=1), data((4, 3), seed=1), data((4, 3), seed=2)),
    "cross_bcast": (lambda L, a, b: L.linalg.cross(a, b) if False else a.cross(b, -1), data((4, 3), seed=1), data((1, 3), seed=2)),
    "addmv": (lambda L, i, m, v: L.addmv(i, m, v), V3, X, V4),
    "addmv_ab": (lambda L, i, m, v: L.addmv(i[:1], m, v, beta=0.5, alpha=2), V3, X, V4),
    "addmv_beta0": (lambda L, i, m, v: i.addmv(m, v, beta=0), V3, X, V4),
    "addr": (lambda L, i, a, b: L.addr(i, a, b, alpha=-1.5), X, V3, V4),
    "addr_bcast": (lambda L, i, a, b: i[0].addr(a, b, beta=2), X, V3, V4),
    "baddbmm": (lambda L, i, a, b: L.baddbmm(i, a, b, beta=0.3, alpha=0.7), X, B1, B2),
    "addbmm": (lambda L, i, a, b: L.addbmm(i, a, b), X, B1, B2),
    "addbmm_ab": (lambda L, i, a, b: i[:1].addbmm(a, b, beta=2, alpha=3), X, B1, B2),
    "addmv_": (lambda L, i, m, v: (i * 1).addmv_(m, v, alpha=2), V3, X, V4),
    "addr_": (lambda L, i, a, b: (i * 1).addr_(a, b), X, V3, V4),
    "baddbmm_": (lambda L, i, a, b: (i * 1).expand(2, 3, 4).contiguous().baddbmm_(a, b), X, B1, B2),
    "addbmm_": (lambda L, i, a, b: (i * 1).addbmm_(a, b, beta=0.5), X, B1, B2),
    "vdot": (lambda L, a, b: L.vdot(a, b), V4, data((4,), seed=9)),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, dims=([1], [1])), X, data((2, 4), seed=3)),
    "tensordot_int": (lambda L, a, b: L.tensordot(a, b, 1), X, data((4, 2), seed=3)),
    "tensordot_0": (lambda L, a, b: L.tensordot(a, b, 0), V3, V4),
    "tensordot_2": (lambda L, a, b: L.tensordot(a, b), B1, data((3, 5, 2), seed=3)),
    "block_diag": (lambda L, a, b, c: L.block_diag(a, b, c[0, 0]), X, V3, X),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a, b), V3, V4),
    "combinations": (lambda L, a: L.combinations(a), V4),
    "combinations_r3": (lambda L, a: L.combinations(a, 3, with_replacement=True), V3),
    "trapezoid": (lambda L, y: L.trapezoid(y), X),
    "trapezoid_dx": (lambda L, y: L.trapezoid(y, dx=0.5, dim=0), X),
    "trapezoid_x": (lambda L, y, x: L.trapezoid(y, x), X, V4),
    "trapz": (lambda L, y, x: L.trapz(y, x[None], dim=1), X, V4),
    "cumulative_trapezoid": (lambda L, y: L.cumulative_trapezoid(y), X),
    "cumulative_trapezoid_x": (lambda L, y, x: L.cumulative_trapezoid(y, x, dim=0), X, V3),
    "vander": (lambda L, x: L.vander(x, 3, True), V4),
    "vander_default": (lambda L, x: L.vander(x), V3),
    "fill": (lambda L, x: L.fill(x, 2.5), X),
    "fill_t": (lambda L, x, v: L.fill(x, v[0]), X, V3),
}


# PyTorch names trapezoid's scalar products MulBackward1/DivBackward1 (at::mul(Tensor, Scalar)), a node hookgrad
# does not have: values and gradients are compared, names are not
NO_NAMES = {"trapezoid", "trapezoid_dx", "trapezoid_x", "trapz", "cumulative_trapezoid_x"}
VALUES_ONLY = {"vander", "vander_default"}     # torch's own backward of vander fails (its cumprod_ on a view)


@pytest.mark.parametrize("name", list(OPS))
def test_ops(name):
    fn, *arrays = OPS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(fn, *arrays, names=name not in NO_NAMES, grad=name not in VALUES_ONLY)


def test_as_strided_scatter():
    # src's gradient is compared; PyTorch 2.13's gradient for self is the written region itself (it should be
    # its complement, as select_scatter's is); hookgrad gives the complement
    run(lambda L, x, v: L.as_strided_scatter(x, v, (3,), (5,)), X, V3, requires_grad=[False, True])
    x = hookgrad.zeros(3, 4, requires_grad=True)
    g, = hookgrad.autograd.grad(hookgrad.as_strided_scatter(x, hookgrad.zeros(3), (3,), (5,)), x,
                                hookgrad.ones(3, 4))
    assert g.tolist() == [[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1]]


INT_OPS = {  # no grads: integer / creation results compared with torch
    "tril_indices": lambda L: L.tril_indices(3, 4, 1),
    "triu_indices": lambda L: L.triu_indices(4, 3, -1, dtype=L.int32),
    "tril_indices_0": lambda L: L.tril_indices(0, 0),
    "unravel_index": lambda L: L.unravel_index(L.tensor([5, -1, 12, 7]), (3, 4)),
    "unravel_index_0d": lambda L: L.unravel_index(L.tensor(3, dtype=L.int32), (2, 2)),
    "vander_int": lambda L: L.vander(L.tensor([1, 2, 3], dtype=L.int32), 4),
    "vander_bool": lambda L: L.vander(L.tensor([True, False])),
    "repeat_interleave_idx": lambda L: L.repeat_interleave(L.tensor([2, 0, 3])),
    "combinations_0": lambda L: L.combinations(L.tensor([1, 2, 3]), 0),
    "combinations_4": lambda L: L.combinations(L.tensor([1, 2, 3]), 4),
    "cartesian_1": lambda L: L.cartesian_prod(L.tensor([1, 2, 3])),
    "block_diag_empty": lambda L: L.block_diag(),
    "block_diag_mixed": lambda L: L.block_diag(L.tensor([[1, 2]]), L.tensor([1.5], dtype=L.float64)),
    "kron_int": lambda L: L.kron(L.tensor([1, 2]), L.tensor([[1, 2], [3, 4]])),
    "diff_bool": lambda L: L.diff(L.tensor([True, False, False, True])),
    "diff_n0": lambda L: L.diff(L.tensor([1, 4, 9]), 0),
    "addr_int": lambda L: L.addr(L.ones(2, 3, dtype=L.int64), L.tensor([1, 2]), L.tensor([1, 2, 3]), beta=2),
    "scalar_tensor": lambda L: (L.scalar_tensor(3), L.scalar_tensor(True), L.scalar_tensor(2, dtype=L.int64)),
    "range": lambda L: (L.range(0, 3), L.range(1, 2, 0.25), L.range(0, 3, dtype=L.int64), L.range(5, 1, -2)),
    "hann": lambda L: (L.hann_window(5), L.hann_window(6, periodic=False), L.hann_window(1), L.hann_window(0),
                       L.hann_window(4, dtype=L.float64)),
    "hamming": lambda L: (L.hamming_window(7), L.hamming_window(5, False), L.hamming_window(5, True, 0.5, 0.3)),
    "blackman": lambda L: (L.blackman_window(7), L.blackman_window(5, periodic=False)),
    "bartlett": lambda L: (L.bartlett_window(7), L.bartlett_window(6, False), L.bartlett_window(1)),
    "kaiser": lambda L: (L.kaiser_window(7), L.kaiser_window(5, False), L.kaiser_window(6, True, 5.0)),
    "empty_strided": lambda L: L.empty_strided((2, 3), (1, 2)).zero_(),
    "empty_permuted": lambda L: L.empty_permuted((2, 3, 4), (0, 2, 1)).zero_(),
    "frombuffer": lambda L: (L.frombuffer(bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00"), dtype=L.int32),
                             L.frombuffer(bytearray(12), dtype=L.float32, count=1, offset=4)),
    "broadcast_shapes": lambda L: (L.tensor(L.broadcast_shapes((2, 1), (3, 1, 1), 1)), L.tensor(L.broadcast_shapes(3, (2, 1)))),
    "meshgrid_int": lambda L: L.meshgrid(L.tensor([1, 2]), L.tensor(7), indexing="xy"),
}


@pytest.mark.parametrize("name", list(INT_OPS))
def test_values(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(lambda L: INT_OPS[name](L), grad=False, names=False)


def test_strides_and_views():
    for lib in (torch, hookgrad):
        pass
    t, h = torch.empty_strided((2, 3), (1, 2)), hookgrad.empty_strided((2, 3), (1, 2))
    assert t.stride() == h.stride()
    t, h = torch.empty_permuted((2, 3, 4), (0, 2, 1)), hookgrad.empty_permuted((2, 3, 4), (0, 2, 1))
    assert t.stride() == h.stride()
    xs = [lib.arange(12.).reshape(3, 4) for lib in (torch, hookgrad)]
    for f in (lambda L, x: L.as_strided(x, (2, 2), (1, 2)), lambda L, x: x.ravel(), lambda L, x: L.view_copy(x, (12,)),
              lambda L, x: L.t_copy(x), lambda L, x: L.meshgrid(x[0], x[1], indexing="ij")[0],
              lambda L, x: L.broadcast_tensors(x, x[0])[1], lambda L, x: L.repeat_interleave(x, 2, 0),
              lambda L, x: L.split_copy(x, 2)[1], lambda L, x: L.unsafe_split(x, 2)[1], lambda L, x: L.atleast_3d(x)):
        (rt, rh) = (f(L, x) for L, x in zip((torch, hookgrad), xs))
        assert (rt._base is None) == (rh._base is None), f
        assert rt.stride() == rh.stride(), f
    # writes through as_strided reach the storage; in-place on a *_copy does not
    for L, x in zip((torch, hookgrad), xs):
        L.as_strided(x, (2,), (5,), 1).mul_(-1)
        L.t_copy(x).zero_()
    np.testing.assert_array_equal(xs[0].numpy(), xs[1].numpy())


def test_as_strided_inplace_history():
    """An in-place op on an as_strided view rebases the base's history (CopySlices), as any view."""
    def f(L, x):
        y = x * 1
        v = L.as_strided(y, (2, 2), (4, 1), 1)
        v.mul_(3)
        return y
    run(f, X, names=True)


METAOPS = {
    "squeeze_": lambda L, x: (x * 1).unsqueeze(0).squeeze_(),
    "squeeze_dim": lambda L, x: (x * 1).unsqueeze(1).squeeze_(1),
    "unsqueeze_": lambda L, x: (x * 1).unsqueeze_(-1),
    "t_": lambda L, x: (x * 1).t_(),
    "transpose_": lambda L, x: (x * 1).unsqueeze(0).transpose_(0, 2),
    "swapaxes_": lambda L, x: (x * 1).swapaxes_(0, 1),
    "swapdims_": lambda L, x: (x * 1).swapdims_(1, 0),
}


@pytest.mark.parametrize("name", list(METAOPS))
def test_metadata_inplace(name):
    def f(L, x):
        y = METAOPS[name](L, x)
        return y, L.tensor(y.stride()), L.tensor(y._version)
    run(f, X)


def test_metadata_inplace_on_view_and_leaf():
    for lib in (torch, hookgrad):
        z = lib.zeros(3, 4)
        v = z[0]
        v.unsqueeze_(0)
        assert tuple(v.shape) == (1, 4) and v._base is z and v._version == 1
        v.mul_(0).add_(2)
        assert z[0].tolist() == [2.0] * 4
    same_error(lambda L, x: x.requires_grad_().t_(), X)


def test_addmv_inplace_grad_fn():
    for lib in (torch, hookgrad):
        a = lib.randn(3, requires_grad=True) * 1
        a.addmv_(lib.randn(3, 4), lib.randn(4))
        assert type(a.grad_fn).__name__ == "AddmvBackward0"


def test_top_level_helpers():
    for L in (torch, hookgrad):
        x = L.tensor([[1.0, 2.0]])
        assert L.is_nonzero(L.tensor([0.5])) is True and L.is_nonzero(L.tensor([0])) is False
        assert L.is_same_size(x, L.zeros(1, 2)) and not x.is_same_size(L.zeros(2, 1))
        assert L.is_signed(x) and not L.is_signed(L.tensor([1], dtype=L.uint8)) and not L.is_signed(L.tensor([True]))
        assert L.is_complex(x) is False and x.is_inference() is False
        assert str(L.result_type(L.tensor([1]), 1.0)) == "torch.float32"
        assert str(L.result_type(L.tensor([1], dtype=L.int32), L.tensor(1.0, dtype=L.float64))) == "torch.float64"
        assert str(L.result_type(2, 1.0)) == "torch.float32" and str(L.result_type(True, 2)) == "torch.int64"
        assert [L.can_cast(a, b) for a, b in ((L.float32, L.int32), (L.int32, L.float32), (L.int32, L.bool),
                                              (L.bool, L.int32), (L.float64, L.float16))] == [False, True, False, True, True]
        assert str(L.get_default_device()) == "cpu"
        L.set_default_device("cpu")
        y = L.ones(3, requires_grad=True) * 2
        d = L.detach(y)
        assert not d.requires_grad and d.grad_fn is None
        L.detach_(y)
        assert y.grad_fn is None and not y.requires_grad
        z = L.ones(2, 3)
        L.fill_(z, 4)
        L.zero_(z[0])
        assert z.tolist() == [[0, 0, 0], [4, 4, 4]]
        L.index_put_(z, (L.tensor([1]),), L.tensor(7.0))
        assert z[1].tolist() == [7, 7, 7]
        L.resize_as_(z, L.zeros(3))
        assert tuple(z.shape) == (3,)
    with hookgrad.inference_mode():
        v = hookgrad.ones(2)[0:1]
    assert v.is_inference()


ERRORS = {
    "rot90_dims": lambda L, x: L.rot90(x, 1, [0, 0]),
    "rot90_ndims": lambda L, x: L.rot90(x, 1, [0]),
    "rot90_1d": lambda L, x: L.rot90(x[0], 1),
    "as_strided_oob": lambda L, x: L.as_strided(x, (4, 4), (4, 1)),
    "as_strided_neg": lambda L, x: L.as_strided(x, (2,), (-1,)),
    "select_scatter_shape": lambda L, x: L.select_scatter(x, x[0, :3], 0, 0),
    "slice_scatter_shape": lambda L, x: L.slice_scatter(x, x[:2], 0, 0, 1),
    "meshgrid_indexing": lambda L, x: L.meshgrid(x[0], indexing="foo"),
    "meshgrid_dtype": lambda L, x: L.meshgrid(x[0], x[0].double(), indexing="ij"),
    "broadcast_tensors": lambda L, x: L.broadcast_tensors(x, x[:2]),
    "broadcast_shapes": lambda L, x: L.broadcast_shapes((2, 1), (3, 4)),
    "broadcast_shapes_neg": lambda L, x: L.broadcast_shapes((-1,), (2,)),
    "repeat_interleave_neg": lambda L, x: L.repeat_interleave(x, -1),
    "repeat_interleave_size": lambda L, x: L.repeat_interleave(x, L.tensor([1, 2]), 0),
    "diff_0d": lambda L, x: L.diff(x[0, 0]),
    "diff_order": lambda L, x: L.diff(x, -1),
    "diff_prepend": lambda L, x: L.diff(x, prepend=x[0]),
    "cross_nodim": lambda L, x: L.cross(x[:2], x[:2]),
    "cross_len": lambda L, x: L.cross(x, x, dim=1),
    "cross_ndim": lambda L, x: L.cross(x[:, :3], x[0, :3]),
    "addmv_size": lambda L, x: L.addmv(x[0], x, x[0]),
    "addmv_dtype": lambda L, x: L.addmv(x[:, 0], x, x[0].double()),
    "addr_1d": lambda L, x: L.addr(x, x, x[0]),
    "addr_expand": lambda L, x: L.addr(x, x[:, 0], x[:2, 0]),
    "baddbmm_size": lambda L, x: L.baddbmm(x, x[None], x[None]),
    "addbmm_expand": lambda L, x: L.addbmm(x, x[None].expand(2, 3, 4), x.t()[None].expand(2, 4, 4)),
    "vdot_2d": lambda L, x: L.vdot(x, x),
    "vdot_dtype": lambda L, x: L.vdot(x[0], x[0].double()),
    "tensordot_size": lambda L, x: L.tensordot(x, x, 1),
    "tensordot_neg": lambda L, x: L.tensordot(x, x, -1),
    "chain_matmul_1d": lambda L, x: L.chain_matmul(x, x[0]),
    "block_diag_3d": lambda L, x: L.block_diag(x, x[None]),
    "cartesian_2d": lambda L, x: L.cartesian_prod(x),
    "combinations_2d": lambda L, x: L.combinations(x),
    "hann_int": lambda L, x: L.hann_window(5, dtype=L.int64),
    "hann_neg": lambda L, x: L.kaiser_window(-1),
    "tril_indices_float": lambda L, x: L.tril_indices(3, 3, dtype=L.float32),
    "tril_indices_neg": lambda L, x: L.tril_indices(-1, 3),
    "is_nonzero_many": lambda L, x: L.is_nonzero(x),
    "is_nonzero_empty": lambda L, x: L.is_nonzero(x[:0]),
    "unravel_float": lambda L, x: L.unravel_index(x, (3, 4)),
    "unravel_neg_shape": lambda L, x: L.unravel_index(L.tensor([1]), (2, -1)),
    "fill_1d": lambda L, x: L.fill(x, x[0]),
    "narrow_copy_range": lambda L, x: L.narrow_copy(x, 0, 2, 2),
    "t_3d": lambda L, x: x[None].t_(),
    "trapezoid_bool": lambda L, x: L.trapezoid(x > 0),
    "trapezoid_x": lambda L, x: L.trapezoid(x, x[0, :3]),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(ERRORS[name], X.astype("float32"))


def _warning_texts(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [str(x.message).split(" (Triggered internally")[0] for x in w]


@pytest.mark.parametrize("name, fn", [
    ("meshgrid", lambda L: L.meshgrid(L.tensor([1, 2]), L.tensor([3]))),
    ("cross", lambda L: L.cross(L.ones(2, 3), L.ones(2, 3))),
    ("chain_matmul", lambda L: L.chain_matmul(L.ones(2, 2), L.ones(2, 2))),
    ("range", lambda L: L.range(0, 2)),
])
def test_warnings(name, fn):
    torch.set_warn_always(True)
    hookgrad.set_warn_always(True)
    try:
        assert _warning_texts(lambda: fn(hookgrad)) == _warning_texts(lambda: fn(torch))
    finally:
        torch.set_warn_always(False)
        hookgrad.set_warn_always(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(lambda L: fn(L), grad=False, names=False)


IMG = data((2, 4, 6, 6), "float32", seed=7)
NN = {   # torch's top-level nn functions, ATen signatures (positional)
    "conv1d": (lambda L, x, w: L.conv1d(x, w, None, 1, 1), data((2, 3, 7), seed=1), data((4, 3, 3), seed=2)),
    "conv1d_same": (lambda L, x, w: L.conv1d(x, w, None, 1, "same", 2), data((2, 3, 7), seed=1), data((4, 3, 3), seed=2)),
    "conv2d": (lambda L, x, w, b: L.conv2d(x, w, b, 2, 1, 1, 2), IMG, data((6, 2, 3, 3), "float32", seed=2), data((6,), "float32")),
    "conv_transpose1d": (lambda L, x, w: L.conv_transpose1d(x, w, None, 2, 1, 1), data((2, 3, 5), seed=1), data((3, 2, 3), seed=2)),
    "conv_transpose2d": (lambda L, x, w: L.conv_transpose2d(x, w, None, 1, 0, 0, 1, 1), IMG, data((4, 3, 2, 2), "float32", seed=2)),
    "convolution": (lambda L, x, w: L.convolution(x, w, None, [1, 1], [1, 0], [1, 1], False, [0, 0], 1), IMG, data((3, 4, 3, 3), "float32", seed=2)),
    "convolution_t": (lambda L, x, w: L.convolution(x, w, None, [2], [0], [1], True, [1], 1), data((2, 3, 5), seed=1), data((3, 2, 3), seed=2)),
    "avg_pool1d": (lambda L, x: L.avg_pool1d(x, 3, 2, 1, True, False), data((2, 3, 8), seed=1)),
    "max_pool1d": (lambda L, x: L.max_pool1d(x, 2), data((2, 3, 8), seed=1)),
    "max_pool2d": (lambda L, x: L.max_pool2d(x, 3, 2, 1), IMG),
    "max_pool1d_with_indices": (lambda L, x: L.max_pool1d_with_indices(x, 3, 2), data((2, 3, 8), seed=1)),
    "adaptive_avg_pool1d": (lambda L, x: L.adaptive_avg_pool1d(x, 3), data((2, 3, 8), seed=1)),
    "adaptive_max_pool1d": (lambda L, x: L.adaptive_max_pool1d(x, 3), data((2, 3, 8), seed=1)),
    "batch_norm": (lambda L, x, w, b: L.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False), IMG, data((4,), "float32"), data((4,), "float32", seed=3)),
    "batch_norm_eval": (lambda L, x, m, v: L.batch_norm(x, None, None, m.detach(), v.detach().abs() + 0.5, False, 0.1, 1e-5, False), IMG, data((4,), "float32"), data((4,), "float32", seed=3)),
    "instance_norm": (lambda L, x: L.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False), IMG),
    "layer_norm": (lambda L, x, w: L.layer_norm(x, [6], w), IMG, data((6,), "float32")),
    "group_norm": (lambda L, x: L.group_norm(x, 2), IMG),
    "rms_norm": (lambda L, x, w: L.rms_norm(x, [6, 6], w), IMG, data((6, 6), "float32")),
    "rms_norm_eps": (lambda L, x: L.rms_norm(x, (6,), None, 1e-3), IMG),
    "embedding": (lambda L, w: L.embedding(w, L.tensor([[0, 2], [1, 0]])), X),
    "embedding_pad": (lambda L, w: L.embedding(w, L.tensor([0, 2, 0]), 0), X),
    "dropout_eval": (lambda L, x: L.dropout(x, 0.5, False), X),
    "alpha_dropout_eval": (lambda L, x: L.alpha_dropout(x, 0.5, False), X),
    "feature_dropout_eval": (lambda L, x: L.feature_dropout(x, 0.5, False), X),
    "dropout_p0": (lambda L, x: L.dropout(x, 0.0, True), X),
    "bilinear": (lambda L, a, b, w: L.bilinear(a, b, w, None), X, X, data((2, 4, 4), seed=4)),
    "bce_with_logits": (lambda L, x, y: L.binary_cross_entropy_with_logits(x, y.sigmoid()), X, X),
    "bce_with_logits_mean": (lambda L, x, y: L.binary_cross_entropy_with_logits(x, y.sigmoid(), None, None, 1), X, X),
    "kl_div": (lambda L, x, y: L.kl_div(x, y.abs()), X, X),
    "kl_div_sum": (lambda L, x, y: L.kl_div(x, y, 2, log_target=True), X, X),
    "cosine_embedding_loss": (lambda L, a, b: L.cosine_embedding_loss(a, b, L.tensor([1.0, -1.0, 1.0]), 0.1, 1), X, X[::-1].copy()),
    "constant_pad_nd": (lambda L, x: L.constant_pad_nd(x, [1, 2, 0, 1], 1.5), X),
    "channel_shuffle": (lambda L, x: L.channel_shuffle(x, 2), IMG),
    "native_channel_shuffle": (lambda L, x: L.native_channel_shuffle(x, 4), IMG),
    "pixel_shuffle": (lambda L, x: L.pixel_shuffle(x, 2), IMG),
    "pixel_unshuffle": (lambda L, x: L.pixel_unshuffle(x, 3), IMG),
    "prelu": (lambda L, x, w: L.prelu(x, w), IMG, data((4,), "float32")),
}


@pytest.mark.parametrize("name", list(NN))
def test_nn_functions(name):
    fn, *arrays = NN[name]
    run(fn, *arrays, names=False, second=False, grad=name != "native_channel_shuffle")   # (no derivative in torch)


def test_dropout_inplace_and_errors():
    for L in (torch, hookgrad):
        x = L.ones(4, 4)
        assert L.dropout_(x, 0.0, True) is x
        assert L.feature_dropout_(x, 0.0, True) is x
    same_error(lambda L, x: L.kl_div(x, x, reduction="mean"), X)
    same_error(lambda L, x: L.channel_shuffle(x, 3), IMG)
    same_error(lambda L, x: L.pixel_shuffle(x, 3), IMG)
