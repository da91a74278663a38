"""Every gradient formula written against a gradient space (``backward(self, g, F=TENSORS)``), checked
against torch in both spaces: a plain ``backward()`` (gradients as arrays), ``autograd.grad`` with
create_graph=True (gradients as Tensors) and the second order. The formulas are enumerated from the
Node subclasses: a new one that no program below reaches fails ``test_every_formula_is_covered``."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.autograd.formulas import takes_space
from hookgrad.autograd.graph import Node
from hookgrad.primitives.linalg import Matmul
from hookgrad.primitives.shape import SumToSize
from oracle import assert_same, check

r = lambda *s, seed=0, dt=np.float64: np.random.default_rng(seed).standard_normal(s).astype(dt)
pos = lambda *s, seed=0, dt=np.float64: (np.abs(r(*s, seed=seed)) + 0.5).astype(dt)
f32 = np.float32
F = lambda L: L.nn.functional


def _grad_of_relu(L, x, y):
    """The gradient of relu as a differentiable function (its node is ThresholdBackwardBackward0)."""
    return L.autograd.grad((x.relu() * y).sum(), x, create_graph=True)[0]


def _linear_t(L, x, w, b):
    return L.addmm(b, x, w.t())             # nn.Linear: the weight's gradient through TBackward0


def _inplace_t(L, x):
    return (x * 2).t_() * 1


def _inplace_transpose(L, x):
    return (x * 2).transpose_(0, 1) * 1


def _inplace_squeeze(L, x):
    return (x * 2).squeeze_() * 1


def _inplace_squeeze_dim(L, x):
    return (x * 2).squeeze_(1) * 1


def _sdpa(L, q, k, v):
    """hookgrad's flash-kernel node; torch's flash kernel has no double backward, so its math path is the oracle."""
    m = np.triu(np.ones((3, 4), bool), 2)
    if L is torch:
        from torch.nn.attention import sdpa_kernel, SDPBackend
        with sdpa_kernel(SDPBackend.MATH):
            return L.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=L.tensor(~m), enable_gqa=True)
    return L.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=L.tensor(~m), enable_gqa=True)


# name: (fn(L, *tensors), *arrays)   -- broadcasting and mixed dtypes where the op allows them
PROGRAMS = {
    "sdpa_flash_gqa_mask": (_sdpa, r(1, 4, 3, 5), r(1, 2, 4, 5, seed=1), r(1, 2, 4, 5, seed=2)),
    "add_bcast_mixed": (lambda L, x, y: x + y, r(3, 4, dt=f32), r(4, seed=1)),
    "add_alpha": (lambda L, x, y: L.add(x, y, alpha=2.5), r(3, 4), r(3, 1, seed=1)),
    "sub_bcast": (lambda L, x, y: x - y, r(2, 3, 4), r(3, 1, seed=1, dt=f32)),
    "sub_alpha": (lambda L, x, y: L.sub(x, y, alpha=-1.5), r(3, 4), r(4, seed=1)),
    "mul_bcast_mixed": (lambda L, x, y: x * y, r(3, 4, dt=f32), r(1, 4, seed=1)),
    "mul_scalar": (lambda L, x: x * 3.0, r(3, 4)),
    "div_bcast": (lambda L, x, y: x / y, r(3, 4), pos(4, seed=1)),
    "div_mixed": (lambda L, x, y: x / y, r(3, 4, dt=f32), pos(3, 4, seed=1)),
    "pow_3": (lambda L, x: x ** 3, r(3, 4)),
    "pow_2": (lambda L, x: x ** 2, r(3, 4, dt=f32)),
    "pow_1": (lambda L, x: x ** 1 * x, r(3, 4)),
    "pow_0": (lambda L, x: x ** 0 + x, r(3, 4)),
    "pow_half": (lambda L, x: x ** 0.5, pos(3, 4)),
    "neg": (lambda L, x: -x, r(3, 4)),
    "exp": (lambda L, x: x.exp(), r(3, 4)),
    "gelu": (lambda L, x: L.nn.functional.gelu(x), r(3, 4)),
    "gelu_f32": (lambda L, x: L.nn.functional.gelu(x), r(3, 4, dt=f32)),
    "gelu_tanh": (lambda L, x: L.nn.functional.gelu(x, approximate="tanh"), r(3, 4)),
    "batch_norm_f32": (lambda L, x, w, b: F(L).batch_norm(x, None, None, w, b, True),
                       r(4, 3, 5, dt=f32), r(3, seed=1, dt=f32), r(3, seed=2, dt=f32)),
    "batch_norm_eval": (lambda L, x, w, b: F(L).batch_norm(x, w.detach() * 0.1, b.detach().abs() + 0.5, w, b, False),
                        r(4, 3, 5, dt=f32), r(3, seed=1, dt=f32), r(3, seed=2, dt=f32)),
    "layer_norm_f32": (lambda L, x, w, b: F(L).layer_norm(x, (5,), w, b),
                       r(4, 3, 5, dt=f32), r(5, seed=1, dt=f32), r(5, seed=2, dt=f32)),
    "layer_norm": (lambda L, x, w: F(L).layer_norm(x, (3, 5), w), r(4, 3, 5), r(3, 5, seed=1)),
    "group_norm_f32": (lambda L, x, w, b: F(L).group_norm(x, 2, w, b),
                       r(3, 4, 5, dt=f32), r(4, seed=1, dt=f32), r(4, seed=2, dt=f32)),
    "log": (lambda L, x: x.log(), pos(3, 4)),
    "sqrt": (lambda L, x: x.sqrt(), pos(3, 4, dt=f32)),
    "tanh": (lambda L, x: x.tanh(), r(3, 4)),
    "sigmoid": (lambda L, x: x.sigmoid(), r(3, 4)),
    "lstm_fused_cell": (lambda L, x, h, c, wi, wh: L.lstm(x, (h, c), [wi, wh], False, 1, 0.0, False, False, False),
                        r(3, 2, 2), r(1, 2, 2, seed=1), r(1, 2, 2, seed=2), r(8, 2, seed=3), r(8, 2, seed=4)),
    "lstm_mkldnn_layer": (lambda L, x, h, c, wi, wh, bi, bh: L.lstm(x, (h, c), [wi, wh, bi, bh], True, 1, 0.0, True,
                                                                    False, True),     # float32: one node per layer
                          r(3, 2, 2, dt=f32), r(1, 3, 2, seed=1, dt=f32), r(1, 3, 2, seed=2, dt=f32),
                          r(8, 2, seed=3, dt=f32), r(8, 2, seed=4, dt=f32), r(8, seed=5, dt=f32), r(8, seed=6, dt=f32)),
    "relu": (lambda L, x, y: (x * y).relu(), r(3, 4), r(4, seed=1)),
    "relu_large": (lambda L, x: x.relu() * x, r(80, 80)),     # past the where() size limit
    "relu_grad": (_grad_of_relu, r(3, 4), r(3, 4, seed=1)),
    "sum": (lambda L, x: x.sum(), r(3, 4)),
    "sum_dim": (lambda L, x: x.sum(1), r(3, 4)),
    "sum_dims_keepdim": (lambda L, x: x.sum((0, 2), keepdim=True), r(2, 3, 4)),
    "mean": (lambda L, x: x.mean(), r(3, 4, dt=f32)),
    "mean_dim": (lambda L, x: x.mean(-1), r(2, 3, 4)),
    "mean_grad": (lambda L, x, y: L.autograd.grad(x.mean(1), x, y.sum(1), create_graph=True)[0] * x,
                  r(2, 3), r(2, 3, seed=1)),                      # mean's gradient: DivBackward1
    "alias": (lambda L, x: x[...] * x, r(3, 4)),
    "mean_keepdim": (lambda L, x: x.mean(0, keepdim=True), r(3, 4)),
    "view": (lambda L, x: x.view(4, 3), r(3, 4)),
    "reshape": (lambda L, x: x.t().reshape(12) * 1, r(3, 4)),
    "flatten": (lambda L, x: x.flatten(), r(2, 3, 4)),
    "reshape_alias": (lambda L, x: x[:, 1:3].reshape(3, 2, 1), r(3, 4)),
    "quantile": (lambda L, x: L.quantile(x, L.tensor([0.25, 0.5], dtype=L.float64), dim=1), r(3, 4)),
    "expand": (lambda L, x: x.expand(2, 3, 4), r(3, 1)),
    "sum_to_size": (lambda L, x: x.sum_to_size(1, 4), r(3, 4)),
    "permute": (lambda L, x: x.permute(2, 0, 1), r(2, 3, 4)),
    "transpose": (lambda L, x: x.transpose(0, 2), r(2, 3, 4)),
    "t": (lambda L, x: x.t(), r(3, 4)),
    "t_1d": (lambda L, x: x.t(), r(4)),
    "t_": (_inplace_t, r(3, 4)),
    "transpose_": (_inplace_transpose, r(3, 4)),
    "squeeze": (lambda L, x: x.squeeze(), r(3, 1, 4, 1)),
    "squeeze_dim": (lambda L, x: x.squeeze(1), r(3, 1, 4)),
    "squeeze_dims": (lambda L, x: x.squeeze((1, 3)), r(3, 1, 4, 1)),
    "squeeze_": (_inplace_squeeze, r(3, 1, 4, 1)),
    "squeeze_dim_": (_inplace_squeeze_dim, r(3, 1, 4)),
    "contiguous": (lambda L, x: x.t().contiguous(), r(3, 4)),
    "clone": (lambda L, x: x.clone(), r(3, 4)),
    "to_dtype": (lambda L, x: x.to(L.float32) * 2, r(3, 4)),
    "mm": (lambda L, a, b: L.mm(a, b), r(3, 4), r(4, 5, seed=1)),
    "mm_t": (lambda L, a, b: L.mm(a, b.t()), r(3, 4), r(5, 4, seed=1)),
    "matmul_bcast": (lambda L, a, b: a @ b, r(2, 3, 4), r(4, 5, seed=1)),
    "matmul_batch_bcast": (lambda L, a, b: a @ b, r(2, 1, 3, 4), r(3, 4, 2, seed=1)),
    "matmul_vec_mat": (lambda L, a, b: a @ b, r(4), r(2, 4, 3, seed=1)),
    "matmul_mat_vec": (lambda L, a, b: a @ b, r(2, 3, 4), r(4, seed=1)),
    "mv": (lambda L, a, b: L.mv(a, b), r(3, 4), r(4, seed=1)),
    "bmm": (lambda L, a, b: L.bmm(a, b), r(2, 3, 4), r(2, 4, 5, seed=1)),
    "addmm": (lambda L, c, a, b: L.addmm(c, a, b), r(5), r(3, 4, seed=1), r(4, 5, seed=2)),
    "addmm_alpha_beta": (lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2.0),
                         r(3, 1), r(3, 4, seed=1), r(4, 5, seed=2)),
    "linear": (_linear_t, r(6, 4), r(5, 4, seed=1), r(5, seed=2)),
    "softmax": (lambda L, x: x.softmax(1), r(3, 4)),
    "softmax_f32": (lambda L, x: F(L).softmax(x, 0), r(3, 4, dt=f32)),
    "log_softmax": (lambda L, x: x.log_softmax(-1), r(3, 4)),
    "nll_mean": (lambda L, x: F(L).nll_loss(x.log_softmax(1), L.tensor([0, 2, 1])), r(3, 4)),
    "nll_sum": (lambda L, x: F(L).nll_loss(x, L.tensor([0, 2, 3]), reduction="sum"), r(3, 4, dt=f32)),
    "nll_none_4d": (lambda L, x: F(L).nll_loss(x, L.tensor([[[0, 2], [1, 1]]]), reduction="none"), r(1, 3, 2, 2)),
    "nll_weight_ignore": (lambda L, x: F(L).nll_loss(x, L.tensor([0, 2, 1, 2]), weight=L.tensor(pos(3, seed=1)),
                                                     ignore_index=1), r(4, 3)),
    "nll_1d": (lambda L, x: F(L).nll_loss(x, L.tensor(2)), r(4)),
    "cross_entropy": (lambda L, x: F(L).cross_entropy(x, L.tensor([1, 0, 3])), r(3, 4, dt=f32)),
}


# classes with a space formula that no op records as a graph node
NEVER_RECORDED = {
    Matmul: "the base of mv / bmm / dot; matmul itself is composed of those (as in PyTorch)",
    SumToSize: "sum_to_size records a sum and a view when a gradient is needed (PyTorch's at::sum_to)",
}


def _space_classes():
    """Node classes that define a forward or a formula of their own, the formula written against a space.
    (A subclass that only renames or re-parameterises its parent -- the ``*_copy`` variants made at run time,
    Log10 over Log2 -- runs its parent's code, covered with the parent.)"""
    out, stack = set(), [Node]
    while stack:
        for c in stack.pop().__subclasses__():
            stack.append(c)
            if takes_space(c.backward) and ("backward" in c.__dict__ or "forward" in c.__dict__):
                out.add(c)
    return out


def _graph_classes(outs):
    seen, stack = set(), [o.grad_fn for o in outs if isinstance(o, hookgrad.Tensor) and o.grad_fn is not None]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        stack.extend(n for n, _ in fn.next_functions)
    return {type(fn) for fn in seen}


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _run_plain(lib, fn, arrays):
    """fn's outputs, and the leaves' .grad after a plain backward() (no create_graph: array gradients)."""
    leaves = [lib.tensor(a.copy(), requires_grad=a.dtype.kind == "f") for a in arrays]
    outs = [o for o in _flat(fn(lib, *leaves)) if o.requires_grad]
    rng = np.random.default_rng(1)
    seeds = [lib.tensor(rng.standard_normal(tuple(o.shape)).astype(str(o.dtype).replace("torch.", "")))
             for o in outs]
    lib.autograd.backward(outs, seeds)
    return outs, [t.grad for t in leaves]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_plain_backward(name):
    """The array path: a plain backward() of the program, gradients compared with torch's."""
    fn, *arrays = PROGRAMS[name]
    _, tg = _run_plain(torch, fn, arrays)
    _, hg = _run_plain(hookgrad, fn, arrays)
    for i, (a, b) in enumerate(zip(tg, hg)):
        assert_same(a, b, f"{name}: .grad of input {i}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_create_graph_and_second_order(name):
    """The Tensor path: autograd.grad with create_graph=True, then the second-order gradients."""
    fn, *arrays = PROGRAMS[name]
    check(fn, *arrays, second=True)


def test_every_formula_is_covered():
    reached = set()
    for fn, *arrays in PROGRAMS.values():
        leaves = [hookgrad.tensor(a.copy(), requires_grad=True) for a in arrays]
        reached |= _graph_classes(_flat(fn(hookgrad, *leaves)))
    missing = sorted(f"{c.__module__}.{c.__name__}" for c in _space_classes() - reached - set(NEVER_RECORDED))
    assert not missing, f"space formulas no program of test_formulas.py reaches: {missing}"
