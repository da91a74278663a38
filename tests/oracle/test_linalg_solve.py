"""torch.linalg's solvers and inverses against torch: values, dtypes, batching, first and second order
gradients (float64), float32, grad_fn names and PyTorch's errors (LinAlgError for singular input)."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

R = np.random.default_rng(0)


def mat(*shape, dtype=np.float64):
    """Well-conditioned (batches of) square matrices."""
    n = shape[-1]
    return (R.standard_normal(shape) + 3 * np.eye(n)).astype(dtype)


def spd(*shape):
    a = R.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def rnd(*shape, dtype=np.float64):
    return R.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (2, 1, 2, 2)])
def test_inv(shape):
    check(lambda L, a: L.linalg.inv(a), mat(*shape), second=True)
    check(lambda L, a: L.linalg.inv_ex(a), mat(*shape), second=True)
    check(lambda L, a: L.inverse(a), mat(*shape))
    check(lambda L, a: a.inverse(), mat(*shape))


def test_inv_float32_and_empty():
    check(lambda L, a: L.linalg.inv(a), mat(2, 4, 4, dtype=np.float32))
    check(lambda L, a: L.linalg.inv(a), mat(0, 3, 3), grad=False)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
def test_det_slogdet(shape):
    check(lambda L, a: L.linalg.det(a), mat(*shape), second=True)
    check(lambda L, a: L.det(a), mat(*shape))
    check(lambda L, a: a.det(), mat(*shape))
    m = mat(*shape)
    m[..., 0, :] *= -1
    check(lambda L, a: L.linalg.slogdet(a), m, second=True)
    check(lambda L, a: L.slogdet(a), m)
    check(lambda L, a: L.logdet(a @ a.mT), m, second=True)


def test_det_singular_gradient():
    # a zero row: det is exactly 0 under any LAPACK (a row that is a multiple of another leaves a pivot of ~1e-16
    # or exactly 0 depending on the library's rounding, and PyTorch's rule keys on det == 0)
    a = np.array([[1., 2, 3], [0, 0, 0], [0, 1, 5]])
    check(lambda L, a: L.linalg.det(a), a)          # PyTorch's LU-based formula: zero
    check(lambda L, a: L.linalg.det(a), np.stack([a, mat(3, 3)]))


@pytest.mark.parametrize("sa,sb,left", [((3, 3), (3, 2), True), ((2, 3, 3), (3, 4), True), ((3, 3), (2, 3, 1), True),
                                        ((2, 3, 3), (2, 3), True), ((3, 3), (3,), True), ((1, 3, 3), (2, 3, 3), True),
                                        ((3, 3), (4, 3), False), ((2, 3, 3), (2, 5, 3), False)])
def test_solve(sa, sb, left):
    check(lambda L, a, b: L.linalg.solve(a, b, left=left), mat(*sa), rnd(*sb), second=True)
    check(lambda L, a, b: L.linalg.solve_ex(a, b, left=left), mat(*sa), rnd(*sb))


def test_solve_float32():
    check(lambda L, a, b: L.linalg.solve(a, b), mat(2, 3, 3, dtype=np.float32), rnd(2, 3, 2, dtype=np.float32))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    check(lambda L, a: L.linalg.cholesky(a, upper=upper), spd(3, 3), second=True)
    check(lambda L, a: L.linalg.cholesky_ex(a, upper=upper), spd(2, 4, 4), second=True)
    check(lambda L, a: L.linalg.cholesky(a), spd(2, 3, 3).astype(np.float32))
    check(lambda L, a: L.cholesky(a, upper=upper), spd(3, 3))
    check(lambda L, a: a.cholesky(upper), spd(3, 3))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    b = rnd(2, 3, 4) if left else rnd(2, 4, 3)
    check(lambda L, a, b: L.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit), mat(3, 3), b,
          second=True)


def test_solve_triangular_broadcast_float32():
    check(lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True), mat(2, 1, 3, 3, dtype=np.float32),
          rnd(3, 3, 2, dtype=np.float32))


def test_grad_fn_names():
    a = hookgrad.tensor(mat(3, 3), requires_grad=True)
    s = hookgrad.tensor(spd(3, 3), requires_grad=True)
    L = hookgrad.linalg
    assert L.inv(a).grad_fn.name() == "LinalgInvExBackward0"
    assert L.det(a).grad_fn.name() == "LinalgDetBackward0"
    assert L.slogdet(a)[1].grad_fn.name() == "LinalgSlogdetBackward0"
    assert L.solve(a, a).grad_fn.name() == "LinalgSolveExBackward0"
    assert L.cholesky(s).grad_fn.name() == "LinalgCholeskyExBackward0"
    assert L.solve_triangular(a, a, upper=True).grad_fn.name() == "LinalgSolveTriangularBackward0"
    assert L.inv_ex(a).info.dtype == hookgrad.int32


def _raises(fn, *arrays):
    """fn raises the same exception type (and message) under torch and hookgrad."""
    msgs = []
    for lib in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            fn(lib, *[lib.tensor(a) for a in arrays])
        msgs.append((type(e.value).__name__, str(e.value).split("\n")[0]))
    assert msgs[0] == msgs[1]


def test_errors():
    sing = np.array([[1., 2], [2, 4]])
    _raises(lambda L, a: L.linalg.inv(a), sing)
    _raises(lambda L, a: L.linalg.inv(a), np.zeros((2, 3, 3)))
    _raises(lambda L, a: L.linalg.inv(a), np.ones((2, 3)))
    _raises(lambda L, a: L.linalg.inv(a), np.ones(3))
    _raises(lambda L, a: L.linalg.inv(a), np.ones((2, 2), np.int64))
    _raises(lambda L, a: L.linalg.inv(a), np.ones((2, 2), np.float16))
    _raises(lambda L, a: L.linalg.det(a), np.ones((2, 3)))
    _raises(lambda L, a: L.linalg.cholesky(a), -np.eye(3))
    _raises(lambda L, a: L.linalg.cholesky(a), np.stack([np.eye(3), -np.eye(3)]))
    _raises(lambda L, a, b: L.linalg.solve(a, b), sing, np.ones(2))
    _raises(lambda L, a, b: L.linalg.solve(a, b), np.eye(3), np.ones(2))
    _raises(lambda L, a, b: L.linalg.solve(a, b, left=False), np.eye(3), np.ones(3))
    _raises(lambda L, a, b: L.linalg.solve(a, b), np.eye(3), np.ones((3, 2), np.float32))
    _raises(lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True), np.eye(3), np.ones((2, 2)))
    assert issubclass(hookgrad.linalg.LinAlgError, RuntimeError)


def test_ex_info():
    sing = np.array([[1., 2], [2, 4]])
    for lib in (torch, hookgrad):
        r = lib.linalg.inv_ex(lib.tensor(sing))
        assert int(r.info) == 2
        r = lib.linalg.cholesky_ex(lib.tensor(np.stack([np.eye(3), -np.eye(3)])))
        assert r.info.tolist() == [0, 1]
