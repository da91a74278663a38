"""Gather/scatter/index/mask ops vs torch, and their in-place forms and errors."""
import numpy as np
import pytest

import torch
import hookgrad
from ops_util import data, run, same_error

DT = ["float32", "float64"]
IDX = np.array([[0, 3, 3], [2, 1, 0], [1, 1, 2]])


def T(L, a):
    return L.tensor(a)


INDEX = {  # fn(L, x, y) with x (3, 4), y (3, 4)
    "gather": lambda L, x, y: x.gather(1, T(L, IDX)), "gather0": lambda L, x, y: L.gather(x, 0, T(L, IDX[:2] % 3)),
    "scatter": lambda L, x, y: x.scatter(1, T(L, IDX[:, :1]), y[:, :1]), "scatter_value": lambda L, x, y: x.scatter(1, T(L, IDX[:, :2]), 2.5),
    "scatter_add": lambda L, x, y: x.scatter_add(1, T(L, IDX), y[:, :3]), "scatter_add_fn": lambda L, x, y: L.scatter_add(x, 0, T(L, IDX % 3), y[:, 1:]),
    "index_select": lambda L, x, y: x.index_select(1, T(L, [0, 2, 2])), "index_select0": lambda L, x, y: L.index_select(x, 0, T(L, [2, 0])),
    "index_add": lambda L, x, y: x.index_add(0, T(L, [0, 0, 2]), y), "index_add_alpha": lambda L, x, y: x.index_add(1, T(L, [3, 1, 3, 0]), y, alpha=2.0),
    "masked_fill": lambda L, x, y: x.masked_fill(y > 0, -1.0), "masked_fill_t": lambda L, x, y: x.masked_fill(y > 0, y[0, 0]),
    "masked_fill_bc": lambda L, x, y: x.masked_fill(y[0] > 0, 0.5), "masked_select": lambda L, x, y: x.masked_select(y > 0),
    "masked_select_bc": lambda L, x, y: L.masked_select(x, y[:1] > 0), "take": lambda L, x, y: x.take(T(L, [[0, 11], [5, -1]])),
    "where": lambda L, x, y: L.where(y > 0, x, y), "where_scalar": lambda L, x, y: L.where(y > 0, x, 0.0),
    "getitem_tensor": lambda L, x, y: x[T(L, [2, 0, 2])], "getitem_mask": lambda L, x, y: x[y > 0],
    "index_put": lambda L, x, y: x.index_put((T(L, [0, 2]),), y[0]), "index_put_acc": lambda L, x, y: x.index_put((T(L, [0, 0]),), y[:2], accumulate=True),
}


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("name", sorted(INDEX))
def test_index_op(name, dtype):
    run(INDEX[name], data((3, 4), dtype, seed=1), data((3, 4), dtype, seed=2))


INPLACE = {
    "masked_fill_": lambda L, z, y: z.masked_fill_(y > 0, 0.25), "scatter_": lambda L, z, y: z.scatter_(1, T(L, IDX[:, :1]), y[:, :1]),
    "scatter_add_": lambda L, z, y: z.scatter_add_(1, T(L, IDX), y[:, :3]), "index_add_": lambda L, z, y: z.index_add_(0, T(L, [1, 1, 0]), y),
    "clamp_": lambda L, z, y: z.clamp_(min=-0.5), "setitem": lambda L, z, y: z.__setitem__((slice(None), 1), y[:, 0]),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace(name):
    def f(L, x, y):
        z = x * 1
        INPLACE[name](L, z, y)
        return z * 2
    run(f, data((3, 4), seed=1), data((3, 4), seed=2))


def test_scatter_gather_int():
    run(lambda L, x: x.gather(1, T(L, IDX)).scatter_add(1, T(L, IDX % 3), x[:, :3]), data((3, 4), "int64"), second=False)


@pytest.mark.parametrize("fn", [
    lambda L, x: x.gather(1, T(L, [[0, 5]])), lambda L, x: x.gather(1, T(L, [[0., 1]])), lambda L, x: x.gather(1, T(L, [0, 1])),
    lambda L, x: x.gather(1, L.zeros(4, 2, dtype=L.long)), lambda L, x: x.gather(1, T(L, [[-1]])),
    lambda L, x: x.scatter(1, T(L, [[0, 5]]), L.ones(3, 4)), lambda L, x: x.scatter(1, T(L, [[0, 1]]), L.ones(1, 1)),
    lambda L, x: x.scatter(1, T(L, [[0, 1]]), L.ones(1, 2, dtype=L.float64)), lambda L, x: x.index_select(1, T(L, [[1]])),
    lambda L, x: x.index_select(1, T(L, [1.])), lambda L, x: x.masked_fill(x, 1.), lambda L, x: x.masked_fill(x > 0, L.ones(2)),
    lambda L, x: x.masked_select(x), lambda L, x: x.masked_fill(L.ones(5, dtype=L.bool), 1.),
    lambda L, x: x.index_add(0, T(L, [0, 7]), L.ones(2, 4)), lambda L, x: L.where(x > 0, x, L.randn(2, 4)),
])
def test_errors(fn):
    same_error(fn, data((3, 4), "float32"))


def test_index_select_out_of_range():
    for L in (torch, hookgrad):
        with pytest.raises((IndexError, RuntimeError)):
            L.tensor(data((3, 4))).index_select(1, L.tensor([4]))
