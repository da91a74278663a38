"""Shape, view, join/split and pad ops vs torch (values, grads, grad_fn names, views, errors)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import torch
import hookgrad
from ops_util import data, run, same_error

DT = ["float32", "float64"]


def PAD(L):
    return L.nn.functional.pad


SHAPE = {  # fn(L, x) on x of shape (2, 3, 4)
    "reshape": lambda L, x: x.reshape(6, -1), "view": lambda L, x: x.view(4, 6), "reshape_nc": lambda L, x: x.transpose(0, 2).reshape(-1),
    "flatten": lambda L, x: x.flatten(), "flatten12": lambda L, x: x.flatten(1), "unflatten": lambda L, x: x.unflatten(2, (2, -1)),
    "squeeze": lambda L, x: x[:, :1].squeeze(), "squeeze1": lambda L, x: x[:, :1].squeeze(1), "squeeze_t": lambda L, x: x[:1, :1].squeeze((0, 1)),
    "unsqueeze": lambda L, x: x.unsqueeze(-1), "permute": lambda L, x: x.permute(2, 0, 1), "transpose": lambda L, x: x.transpose(0, 2),
    "t": lambda L, x: x[0].t(), "T2": lambda L, x: x[0].T, "mT": lambda L, x: x.mT, "expand": lambda L, x: x[:, :1].expand(2, 5, 4),
    "expand_as": lambda L, x: x[0].expand_as(x), "repeat": lambda L, x: x.repeat(2, 1, 1, 2), "tile": lambda L, x: x.tile(2),
    "cat": lambda L, x: L.cat([x, x * 2], 1), "cat_neg": lambda L, x: L.cat((x, x[:, :1]), -2), "concat": lambda L, x: L.concat([x, x], 2),
    "stack": lambda L, x: L.stack([x, x.exp()], 1), "stack_last": lambda L, x: L.stack([x, x], -1),
    "hstack": lambda L, x: L.hstack([x, x]), "vstack": lambda L, x: L.vstack([x[0], x[1]]),
    "split": lambda L, x: x.split(2, 2), "split_l": lambda L, x: x.split([1, 2], 1), "chunk": lambda L, x: x.chunk(3, 2),
    "chunk_uneven": lambda L, x: x.chunk(3, 1), "unbind": lambda L, x: x.unbind(1), "split_one": lambda L, x: x.split(3, 1)[0] * 2,
    "narrow": lambda L, x: x.narrow(2, 1, 2), "narrow_neg": lambda L, x: L.narrow(x, -1, -3, 2), "flip": lambda L, x: x.flip(0, 2),
    "roll": lambda L, x: x.roll(1, 2), "roll2": lambda L, x: x.roll((1, -1), (0, 2)), "roll_flat": lambda L, x: x.roll(3),
    "tril": lambda L, x: x.tril(), "triu": lambda L, x: x.triu(1), "tril_neg": lambda L, x: L.tril(x, -1),
    "diagonal": lambda L, x: x.diagonal(), "diagonal_off": lambda L, x: x.diagonal(1, 1, 2), "diagonal_neg": lambda L, x: x.diagonal(-1, -1, -2),
    "diag_vec": lambda L, x: L.diag(x[0, 0]), "diag_mat": lambda L, x: L.diag(x[0], 1), "diag_embed": lambda L, x: L.diag_embed(x),
    "trace": lambda L, x: x[0].trace(), "movedim": lambda L, x: x.movedim(0, 2), "getitem": lambda L, x: x[1, :, 1:3],
    "getitem_adv": lambda L, x: x[:, [0, 2, 2]], "clone": lambda L, x: x.clone(), "contiguous": lambda L, x: x.transpose(0, 1).contiguous(),
    "pad_const": lambda L, x: PAD(L)(x, (1, 2)), "pad_const2": lambda L, x: PAD(L)(x, (1, 0, 2, 1), value=1.5),
    "pad_crop": lambda L, x: PAD(L)(x, (-1, 2, 0, -1)), "pad_reflect": lambda L, x: PAD(L)(x, (2, 3), mode="reflect"),
    "pad_reflect2": lambda L, x: PAD(L)(x, (1, 2, 2, 1), mode="reflect"), "pad_rep": lambda L, x: PAD(L)(x, (3, 1), mode="replicate"),
    "pad_rep2": lambda L, x: PAD(L)(x, (1, 2, 3, 4), mode="replicate"), "pad_rep3": lambda L, x: PAD(L)(x[None], (1, 1, 1, 1, 1, 1), mode="replicate"),
    "pad_circ": lambda L, x: PAD(L)(x, (1, 2), mode="circular"),
}
NO_NAME = {"pad_circ", "hstack", "vstack", "chunk_uneven"}   # pad_circ: torch shows CopySlices from its Python impl


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("name", sorted(SHAPE))
def test_shape_op(name, dtype):
    run(SHAPE[name], data((2, 3, 4), dtype), names=name not in NO_NAME or name == "pad_circ")


@settings(max_examples=10, deadline=None)
@given(sizes=st.lists(st.integers(0, 3), min_size=1, max_size=4), dim=st.integers(0, 2), dt=st.sampled_from(DT))
def test_cat_split_roundtrip(sizes, dim, dt):
    def f(L, x):
        parts = x.split(sizes, dim)
        return L.cat([p * (i + 1) for i, p in enumerate(parts)], dim)
    shape = [2, 2, 2]
    shape[dim] = sum(sizes)
    run(f, data(tuple(shape), dt))


def test_cat_promotes_and_skips_legacy_empty():
    run(lambda L, x, y: L.cat([x, y.double(), L.zeros(0)], 0), data((2, 3), "float32"), data((1, 3), "float32"))
    run(lambda L, x, y: L.stack([x, y.double()]), data((2, 3), "float32"), data((2, 3), "float32"))


def test_views_share_version_and_data():
    for L in (torch, hookgrad):
        x = L.zeros(3, 4)
        x.diagonal().fill_(1)
        x.split(2, 1)[1].add_(2)
        x.narrow(0, 2, 1).mul_(3)
        x.unbind(0)[0].sub_(1)
        x.t()[0].add_(10)
        if L is torch:
            expect = x.numpy().copy()
        else:
            np.testing.assert_array_equal(x.numpy(), expect)


def test_inplace_on_multi_view_output_errors():
    for L in (torch, hookgrad):
        x = L.randn(4, requires_grad=True) * 1
        with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
            x.split(2)[0].mul_(2)


@pytest.mark.parametrize("fn", [
    lambda L, x: L.cat([x, L.randn(3, 5)]), lambda L, x: L.cat([x, L.randn(3)]), lambda L, x: L.cat([]),
    lambda L, x: L.cat([L.tensor(1.)]), lambda L, x: L.cat([x, x], 2), lambda L, x: L.stack([x, L.randn(3, 5)]),
    lambda L, x: L.stack([]), lambda L, x: x.split(0), lambda L, x: x.chunk(0), lambda L, x: x.narrow(1, 3, 2),
    lambda L, x: x.reshape(5), lambda L, x: x.view(-1, -1), lambda L, x: x.t().view(12), lambda L, x: x.permute(0),
    lambda L, x: x.expand(5, 4), lambda L, x: x.unflatten(1, (3, 2)), lambda L, x: x.tril(1.5),
    lambda L, x: x.diagonal(0, 1, 1), lambda L, x: x.repeat(2), lambda L, x: x.squeeze(4), lambda L, x: x.unsqueeze(3),
    lambda L, x: x.transpose(0, 2), lambda L, x: x.flip(2), lambda L, x: x.unbind(2), lambda L, x: PAD(L)(x, (1,)),
    lambda L, x: PAD(L)(x[None], (4, 4), mode="reflect"), lambda L, x: PAD(L)(x, (1, 1, 1, 1, 1, 1, 1, 1)),
    lambda L, x: PAD(L)(x.reshape(-1), (1, 1), mode="reflect"), lambda L, x: PAD(L)(x[None], (1, 1), mode="foo"),
    lambda L, x: L.cat(x), lambda L, x: x.split([1, 1]),
])
def test_errors(fn):
    same_error(fn, data((3, 4)))
