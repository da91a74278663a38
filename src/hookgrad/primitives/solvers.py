"""torch.linalg's solvers and inverses: LU, inv, det, slogdet, solve, cholesky, solve_triangular, lu_solve.

Each op is one Node with PyTorch's grad_fn name; its gradient formula is written with hookgrad's own
differentiable linear algebra (solve, solve_triangular, matmul), so double backward comes for free.
The LU factorisation is a small batched kernel (partial pivoting as LAPACK's getrf: the first largest
pivot), because NumPy has none; the others call ``numpy.linalg`` on the inputs' arrays.
"""
import numpy as np

from .._tensor import Tensor
from ..autograd.node import Node
from .._array import array_module
from .. import _array
from . import return_types as RT


class LinAlgError(RuntimeError):
    """PyTorch's ``torch.linalg.LinAlgError``: a factorisation or solve failed (singular input, not
    positive-definite)."""


LinAlgError.__name__ = LinAlgError.__qualname__ = "_LinAlgError"
LinAlgError.__module__ = "torch._C"

_LONG = {"float16": "Half", "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
         "int8": "Char", "uint8": "Byte", "bool": "Bool", "float32": "Float", "float64": "Double"}


# ------------------------------------------------------------------ argument checks (PyTorch's texts)
def check_tensor(name, A, arg="A"):
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not {type(A).__name__}")


def check_matrix(name, A, square=True, low=True, arg="A"):
    """A float (not half) tensor of (batches of) matrices, square when ``square``."""
    check_tensor(name.replace(".", "_"), A, arg)
    a = A._data
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    check_float(name, A, low)


def check_float(name, A, low=True):
    dt = A._data.dtype
    if dt.kind not in "fc":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_LONG.get(dt.name, dt.name)}")
    if low and dt.itemsize < 4:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {_LONG.get(dt.name, dt.name)}")


def check_same_dtype(name, A, B, a="A", b="B"):
    da, db = A._data.dtype, B._data.dtype
    if da != db:
        raise RuntimeError(f"{name}: Expected {a} and {b} to have the same dtype, but found {a} of type "
                           f"{_LONG.get(da.name, da.name)} and {b} of type {_LONG.get(db.name, db.name)} instead")


def raise_info(name, info, msg):
    """PyTorch's LinAlgError for the first failed batch element: ``msg(i)`` says why (i: its info > 0)."""
    info = _array.to_host(info)
    bad = np.flatnonzero(info.reshape(-1) > 0)
    if bad.size:
        k = int(bad[0])
        where = f"(Batch element {k}): " if info.ndim else ""
        raise LinAlgError(f"{name}: {where}{msg(int(info.reshape(-1)[k]))}")


# ------------------------------------------------------------------ kernels on arrays
def lu_kernel(a):
    """LU with partial pivoting of (batches of) m x n matrices: (LU, pivots (1-based, int32), info (int32)).

    As LAPACK's getrf: the pivot is the first entry of largest magnitude; a zero pivot sets info (its
    1-based index) and the column is not eliminated."""
    xp = array_module(a)
    shape = a.shape
    m, n = shape[-2:]
    k = min(m, n)
    lu = a.reshape((-1, m, n)).copy()
    nb = lu.shape[0]
    piv = xp.zeros((nb, k), np.int32)
    info = xp.zeros(nb, np.int32)
    rows = xp.arange(nb)
    for j in range(k):
        p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1)
        piv[:, j] = p + 1
        rj = lu[rows, j].copy()
        lu[rows, j] = lu[rows, p]
        lu[rows, p] = rj
        d = lu[:, j, j]
        zero = d == 0
        if zero.any():
            info = np.where(zero & (info == 0), j + 1, info)
            d = np.where(zero, 1, d)
            lu[:, j + 1:, j] = np.where(zero[:, None], lu[:, j + 1:, j], lu[:, j + 1:, j] / d[:, None])
        else:
            lu[:, j + 1:, j] /= d[:, None]
        if j + 1 < m and j + 1 < n:
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return lu.reshape(shape), piv.reshape(shape[:-2] + (k,)), info.reshape(shape[:-2])


def perm_from_pivots(piv, m):
    """The row permutation (batches of index vectors) that pivots (1-based LAPACK swaps) apply: P^T A = L U."""
    xp = array_module(piv)
    b = piv.shape[:-1]
    perm = xp.broadcast_to(xp.arange(m), b + (m,)).copy().reshape(-1, m)
    pv = piv.reshape(-1, piv.shape[-1]) - 1
    rows = xp.arange(perm.shape[0])
    for j in range(pv.shape[1]):
        p = pv[:, j]
        t = perm[rows, j].copy()
        perm[rows, j] = perm[rows, p]
        perm[rows, p] = t
    return perm.reshape(b + (m,))


def unpack_arrays(lu, piv):
    """(P, L, U) from a packed LU and its pivots: A = P L U."""
    xp = array_module(lu)
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = np.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=lu.dtype)
    U = np.triu(lu[..., :k, :])
    perm = perm_from_pivots(piv, m)             # row i of P^T A is row perm[i] of A
    P = xp.zeros(lu.shape[:-2] + (m, m), lu.dtype)
    np.put_along_axis(P, perm[..., :, None], 1, axis=-1)    # P^T[i, perm[i]] = 1
    return np.swapaxes(P, -1, -2), L, U


def _solve_arrays(a, b):
    """a^{-1} b for (batches of) invertible a; b a batch of matrices."""
    return np.linalg.solve(a, b)


# ------------------------------------------------------------------ inv
class LinalgInvEx(Node, name="LinalgInvExBackward0"):
    save = (-1,)
    saved_names = ("inverse",)
    nondiff_outputs = (1,)

    def forward(self, a):
        lu, _, info = lu_kernel(a)
        if self.check:
            raise_info("linalg.inv", info, lambda i: f"The diagonal element {i} is zero, the inversion could not "
                                                     "be completed because the input matrix is singular.")
        with np.errstate(all="ignore"):
            if np.any(info):
                inv = _inv_lu(a, lu)
            else:
                inv = np.linalg.inv(a) if a.size else a.copy()
        return inv, info

    def backward(self, g):
        inv, = self.saved_values
        ih = inv.mH
        return -(ih @ (g @ ih)),


def _inv_lu(a, lu):
    """A (non-finite) inverse of a singular matrix, as LAPACK's getri leaves it (inf where it divides by 0)."""
    xp = array_module(a)
    n = a.shape[-1]
    out = xp.zeros(a.shape, a.dtype)
    flat, o = a.reshape(-1, n, n), out.reshape(-1, n, n)
    for i in range(flat.shape[0]):
        try:
            o[i] = np.linalg.inv(flat[i])
        except np.linalg.LinAlgError:
            o[i] = np.inf
    return out


def inv_ex(A, *, check_errors=False, out=None):
    """The inverse of (batches of) square matrices, with LAPACK's ``info`` (0: success)."""
    check_matrix("linalg.inv", A)
    return RT.linalg_inv_ex(*LinalgInvEx.apply(A, check=bool(check_errors)))


def inv(A, *, out=None):
    """The inverse of (batches of) square matrices; a singular one raises LinAlgError."""
    check_matrix("linalg.inv", A)
    return LinalgInvEx.apply(A, check=True)[0]


# ------------------------------------------------------------------ slogdet (det: decomp.py, its singular case needs the SVD)
def eye_like(A):
    d = A._data
    return Tensor._make(array_module(d).eye(d.shape[-1], dtype=d.dtype))


class LinalgSlogdet(Node, name="LinalgSlogdetBackward0"):
    save = (0,)
    saved_names = ("A",)

    def forward(self, a):
        if not a.size:
            xp = array_module(a)
            return xp.ones(a.shape[:-2], a.dtype), xp.zeros(a.shape[:-2], a.dtype)
        s, l = np.linalg.slogdet(a)
        xp = array_module(a)
        return xp.asarray(s), xp.asarray(l)       # (NumPy's named-tuple results: back in the inputs' module)

    def backward(self, gsign, glogabs):
        A, = self.saved_values
        d = glogabs.unsqueeze(-1).unsqueeze(-1) * eye_like(A)
        return solve(A.mH, d),


def slogdet(A, *, out=None):
    """(sign, log |det|) of (batches of) square matrices."""
    check_matrix("linalg.slogdet", A)
    return RT.linalg_slogdet(*LinalgSlogdet.apply(A))


# ------------------------------------------------------------------ solve
def _is_vector_rhs(A, B):
    sa, sb = A._data.shape, B._data.shape
    return len(sb) == 1 or (len(sa) - 1 == len(sb) and sb == sa[:-1])


class LinalgSolveEx(Node, name="LinalgSolveExBackward0"):
    save = (0, -1)
    saved_names = ("A", "result")
    save_if = ((1, 0), (0,))
    nondiff_outputs = (1,)

    def forward(self, a, b):
        lu, _, info = lu_kernel(a)
        if self.check:
            if np.any(info):
                raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.")
        xp = array_module(a)
        if not self.left:
            a = np.swapaxes(a, -1, -2)
            b = np.swapaxes(b, -1, -2)
        if self.vector:
            b = b[..., None]
        bshape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, bshape + a.shape[-2:])
        b = np.broadcast_to(b, bshape + b.shape[-2:])
        if np.any(info):
            with np.errstate(all="ignore"):
                x = xp.full(b.shape, np.nan, dtype=b.dtype)
        else:
            x = _solve_arrays(a, b) if a.size and b.size else xp.zeros(b.shape, b.dtype)
        if self.vector:
            x = x[..., 0]
        if not self.left:
            x = np.swapaxes(x, -1, -2)
        return xp.ascontiguousarray(x), info

    def backward(self, g):
        A, X = self.saved_values
        nf = self.next_functions
        gB = solve(A.mH, g, left=self.left)
        gA = None
        if nf[0][0] is not None:
            if self.vector:
                gA = -(gB.unsqueeze(-1) @ X.unsqueeze(-1).mH)
            else:
                gA = -(gB @ X.mH) if self.left else -(X.mH @ gB)
        return gA, (gB if nf[1][0] is not None else None)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """The solution X of A X = B (``left``) or X A = B, with LAPACK's ``info``."""
    return RT.linalg_solve_ex(*_solve(A, B, left, bool(check_errors)))


def solve(A, B, *, left=True, out=None):
    """The solution X of A X = B (``left``) or X A = B; B may be a (batch of) vector(s). Batches broadcast."""
    return _solve(A, B, left, True)[0]


def _solve(A, B, left, check):
    check_matrix("linalg.solve", A)
    check_tensor("linalg_solve", B, "B")
    check_same_dtype("linalg.solve", A, B)
    vector = _is_vector_rhs(A, B)
    sa, sb = A._data.shape, B._data.shape
    n = sa[-1]
    bm = (sb[-1], 1) if vector else (sb[-2], sb[-1])
    if vector and not left or (left and bm[0] != n) or (not left and bm[1] != n):
        eq = "AX = B" if left else "XA = B"
        shown = (sb[-1], 1) if vector else bm
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{shown[0]}x{shown[1]})")
    ba, bb = sa[:-2], (sb[:-1] if vector else sb[:-2])
    try:
        np.broadcast_shapes(ba, bb)
    except ValueError:
        from .._errors import broadcast_error
        raise broadcast_error(ba, bb, detail=False) from None
    return LinalgSolveEx.apply(A, B, left=left, vector=vector, check=check)


# ------------------------------------------------------------------ cholesky
class LinalgCholeskyEx(Node, name="LinalgCholeskyExBackward0"):
    save = (-1,)
    saved_names = ("L",)
    saved_attrs = ("upper",)
    nondiff_outputs = (1,)

    def forward(self, a):
        xp = array_module(a)
        n = a.shape[-1]
        flat = a.reshape(-1, n, n)
        info = xp.zeros(flat.shape[0], np.int32)
        try:
            L = np.linalg.cholesky(flat) if flat.size else flat.copy()
        except np.linalg.LinAlgError:
            L = xp.zeros(flat.shape, a.dtype)
            for i in range(flat.shape[0]):
                L[i], info[i] = _cholesky_one(flat[i])
        info = info.reshape(a.shape[:-2])
        if self.check:
            raise_info("linalg.cholesky", info, lambda i: "The factorization could not be completed because the "
                       f"input is not positive-definite (the leading minor of order {i} is not positive-definite).")
        L = L.reshape(a.shape)
        if self.upper:
            L = array_module(a).ascontiguousarray(np.swapaxes(L, -1, -2))
        return L, info

    def backward(self, g):
        L, = self.saved_values
        if self.upper:
            L, g = L.mH, g.mH
        Linv = solve_triangular(L, eye_like(L), upper=False)
        phi = (L.mH @ g).tril()
        phi = phi - 0.5 * _diag_part(phi)
        gA = Linv.mH @ phi @ Linv
        return 0.5 * (gA + gA.mH),


def _diag_part(M):
    """M with its off-diagonal entries zeroed (differentiable)."""
    return M.diagonal(0, -2, -1).diag_embed()


def _cholesky_one(a):
    """Cholesky of one matrix, stopping at the first non-positive leading minor: (L, info)."""
    n = a.shape[-1]
    L = np.tril(a).copy()
    for j in range(n):
        d = a[j, j] - np.dot(L[j, :j], L[j, :j])
        if not d > 0:
            return L * 0 + np.tril(L), j + 1
        L[j, j] = np.sqrt(d)
        L[j + 1:, j] = (a[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L, 0


def cholesky_ex(input, *, upper=False, check_errors=False, out=None):
    """The Cholesky factor of (batches of) Hermitian positive-definite matrices, with LAPACK's ``info``."""
    A = input
    check_matrix("linalg.cholesky", A)
    return RT.linalg_cholesky_ex(*LinalgCholeskyEx.apply(A, upper=bool(upper), check=bool(check_errors)))


def cholesky(input, *, upper=False, out=None):
    """The lower (or ``upper``) Cholesky factor of (batches of) Hermitian positive-definite matrices."""
    A = input
    check_matrix("linalg.cholesky", A)
    return LinalgCholeskyEx.apply(A, upper=bool(upper), check=True)[0]


# ------------------------------------------------------------------ solve_triangular
def _tri_solve_arrays(a, b, upper, left, unit):
    """X with tri(A) X = B (left) or X tri(A) = B; batches broadcast. (np.linalg.solve on the triangle.)"""
    xp = array_module(a)
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        n = a.shape[-1]
        t = t * (1 - xp.eye(n, dtype=a.dtype)) + xp.eye(n, dtype=a.dtype)
    if not left:
        t = np.swapaxes(t, -1, -2)
        b = np.swapaxes(b, -1, -2)
    shape = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = np.broadcast_to(t, shape + t.shape[-2:])
    b = np.broadcast_to(b, shape + b.shape[-2:])
    with np.errstate(all="ignore"):
        try:
            x = np.linalg.solve(t, b) if t.size and b.size else xp.zeros(b.shape, b.dtype)
        except np.linalg.LinAlgError:           # a zero on the diagonal: LAPACK's trtrs gives inf/nan
            x = _back_substitute(t, b, upper != (not left))
    if not left:
        x = np.swapaxes(x, -1, -2)
    return xp.ascontiguousarray(x)


def _back_substitute(t, b, upper):
    """Triangular solve by substitution (a zero on the diagonal gives inf/nan, as LAPACK's trtrs)."""
    x = b.copy()
    n = t.shape[-1]
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        s = b[..., i, :].copy()
        for k in (range(i + 1, n) if upper else range(i)):
            s = s - t[..., i, k, None] * x[..., k, :]
        x[..., i, :] = s / t[..., i, i, None]
    return x


class LinalgSolveTriangular(Node, name="LinalgSolveTriangularBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")
    saved_attrs = ("upper", "left", "unitriangular")
    save_if = ((1, 0), (0,))

    def forward(self, a, b):
        return _tri_solve_arrays(a, b, self.upper, self.left, self.unitriangular)

    def backward(self, g):
        A, X = self.saved_values
        nf = self.next_functions
        gB = solve_triangular(A.mH, g, upper=not self.upper, left=self.left, unitriangular=self.unitriangular)
        gA = None
        if nf[0][0] is not None:
            gA = -(gB @ X.mH) if self.left else -(X.mH @ gB)
            if self.unitriangular:
                gA = gA.triu(1) if self.upper else gA.tril(-1)
            else:
                gA = gA.triu() if self.upper else gA.tril()
        return gA, (gB if nf[1][0] is not None else None)


def solve_triangular(input, B, *, upper, left=True, unitriangular=False, out=None):
    """The solution X of tri(A) X = B (``left``) or X tri(A) = B, tri(A) the upper or lower triangle of A."""
    A = input
    check_matrix("linalg.solve_triangular", A)
    check_tensor("linalg_solve_triangular", B, "B")
    check_same_dtype("linalg.solve_triangular", A, B)
    if B._data.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    sa, sb = A._data.shape, B._data.shape
    n = sa[-1]
    if (left and sb[-2] != n) or (not left and sb[-1] != n):
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {sb[-2]}x{sb[-1]})")
    try:
        np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        from .._errors import broadcast_error
        raise broadcast_error(sa[:-2], sb[:-2], detail=False) from None
    return LinalgSolveTriangular.apply(A, B, upper=bool(upper), left=bool(left), unitriangular=bool(unitriangular))




# ------------------------------------------------------------------ LU: lu_factor, lu, lu_solve
def _check_pivot(name, pivot):
    if not pivot:
        raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")


def _unpack_tensors(LU, piv):
    """Differentiable (L, U) and the constant P of a packed LU."""
    d = LU._data
    xp = array_module(d)
    m, n = d.shape[-2:]
    k = min(m, n)
    L = LU[..., :, :k].tril(-1) + Tensor._make(xp.eye(m, k, dtype=d.dtype))
    U = LU[..., :k, :].triu()
    P = Tensor._make(unpack_arrays(d, piv._data if isinstance(piv, Tensor) else piv)[0])
    return P, L, U


def lu_backward(gL, gU, P, L, U):
    """The gradient of A = P L U (partial pivoting) from those of L and U (None: no gradient); any m x n."""
    m, n = L.shape[-2], U.shape[-1]
    gL = gL if gL is not None else L * 0
    gU = gU if gU is not None else U * 0
    if m == n:
        inner = (L.mH @ gL).tril(-1) + (gU @ U.mH).triu()
        gA = solve_triangular(U.mH, inner, upper=False, left=False)
        gA = solve_triangular(L.mH, gA, upper=True, unitriangular=True)
        return P @ gA
    from .join import cat
    if m < n:       # wide: A = P L [U1 | U2]
        U1, U2 = U[..., :, :m], U[..., :, m:]
        gU1, gU2 = gU[..., :, :m], gU[..., :, m:]
        inner = (L.mH @ gL - gU2 @ U2.mH).tril(-1) + (gU1 @ U1.mH).triu()
        g1 = solve_triangular(U1.mH, inner, upper=False, left=False)
        gA = solve_triangular(L.mH, cat([g1, gU2], -1), upper=True, unitriangular=True)
        return P @ gA
    # tall: P^T A = [L1; L2] U
    L1, L2 = L[..., :n, :], L[..., n:, :]
    gL1, gL2 = gL[..., :n, :], gL[..., n:, :]
    inner = (L1.mH @ gL1).tril(-1) + (gU @ U.mH - L2.mH @ gL2).triu()
    g1 = solve_triangular(L1.mH, inner, upper=True, unitriangular=True)
    gA = solve_triangular(U.mH, cat([g1, gL2], -2), upper=False, left=False)
    return P @ gA


class LinalgLuFactorEx(Node, name="LinalgLuFactorExBackward0"):
    save = (-1,)
    saved_names = ("LU",)
    saved_attrs = ("pivot",)
    nondiff_outputs = (1, 2)

    def forward(self, a):
        lu, piv, info = lu_kernel(a)
        if self.check:
            raise_info("torch.linalg.lu_factor_ex", info, lambda i: f"The factorization could not be completed "
                       f"because the input is singular (U[{i},{i}] is zero).")
        self.piv = piv
        return lu, piv, info

    def backward(self, g):
        LU, = self.saved_values
        P, L, U = _unpack_tensors(LU, self.piv)
        k = min(LU.shape[-2], LU.shape[-1])
        return lu_backward(g[..., :, :k].tril(-1), g[..., :k, :].triu(), P, L, U),


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """The packed LU factorisation with partial pivoting, its pivots (1-based) and LAPACK's ``info``."""
    check_matrix("torch.linalg.lu_factor_ex", A, square=False)
    _check_pivot("linalg.lu_factor", pivot)
    return RT.linalg_lu_factor_ex(*LinalgLuFactorEx.apply(A, pivot=True, check=bool(check_errors)))


def lu_factor(A, *, pivot=True, out=None):
    """The packed LU factorisation with partial pivoting and its pivots (1-based), as LAPACK's getrf."""
    check_matrix("torch.linalg.lu_factor", A, square=False)
    _check_pivot("linalg.lu_factor", pivot)
    LU, piv, info = LinalgLuFactorEx.apply(A, pivot=True, check=False)
    i = _array.to_host(info._data).reshape(-1)
    bad = np.flatnonzero(i > 0)
    if bad.size:
        k = int(i[bad[0]])
        where = f"(Batch element {int(bad[0])}): " if info._data.ndim else ""
        raise RuntimeError(f"torch.linalg.lu_factor: {where}U[{k},{k}] is zero and using it on lu_solve would result "
                           "in a division by zero. If you still want to perform the factorization, consider calling "
                           "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return RT.linalg_lu_factor(LU, piv)


class LinalgLu(Node, name="LinalgLuBackward0"):
    save = (-1, -2)
    saved_names = ("L", "U")
    saved_attrs = ("pivot",)
    nondiff_outputs = (0,)

    def forward(self, a):
        lu, piv, _ = lu_kernel(a)
        P, L, U = unpack_arrays(lu, piv)
        self.P = P
        return P, L, U

    def backward(self, gL, gU):
        L, U = self.saved_values
        return lu_backward(gL, gU, Tensor._make(self.P), L, U),


def lu(A, *, pivot=True, out=None):
    """A = P L U with partial pivoting: (P, L, U)."""
    check_matrix("linalg.lu", A, square=False)
    _check_pivot("linalg.lu_factor", pivot)
    return RT.linalg_lu(*LinalgLu.apply(A, pivot=True))


def _lu_to_a(lu, piv):
    P, L, U = unpack_arrays(lu, piv)
    return P @ L @ U


class LinalgLuSolve(Node, name="LinalgLuSolveBackward0"):
    save = (0, -1)
    saved_names = ("LU", "result")
    saved_attrs = ("left", "adjoint")

    def forward(self, lu, piv, b):
        a = _lu_to_a(lu, piv)
        if self.adjoint:
            a = np.swapaxes(a, -1, -2)
        if self.left:
            return _tri_free_solve(a, b)
        return np.swapaxes(_tri_free_solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2).copy()

    def backward(self, g):
        LU, X = self.saved_values
        nf = self.next_functions
        piv = Tensor._make(self.piv)
        gB = lu_solve(LU, piv, g, left=self.left, adjoint=not self.adjoint)
        gLU = None
        if nf[0][0] is not None:
            if self.left:
                gA = -(gB @ X.mH) if not self.adjoint else -(X @ gB.mH)
            else:
                gA = -(X.mH @ gB) if not self.adjoint else -(gB.mH @ X)
            P, L, U = _unpack_tensors(LU, piv)
            PtgA = P.mT @ gA
            gLU = (PtgA @ U.mH).tril(-1) + (L.mH @ PtgA).triu()
        return gLU, None, (gB if nf[2][0] is not None else None)


def _tri_free_solve(a, b):
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, shape + a.shape[-2:])
    b = np.broadcast_to(b, shape + b.shape[-2:])
    if not (a.size and b.size):
        return array_module(a).zeros(b.shape, b.dtype)
    with np.errstate(all="ignore"):
        return np.linalg.solve(a, b)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """The solution X of A X = B (or A^H X = B with ``adjoint``, X A = B with ``left=False``), A = P L U given
    by lu_factor's (LU, pivots)."""
    check_matrix("linalg.lu_solve", LU, arg="LU")
    check_tensor("linalg_lu_solve", B, "B")
    if B._data.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    check_same_dtype("linalg.lu_solve", LU, B, "LU", "B")
    n = LU._data.shape[-1]
    sb = B._data.shape
    if (left and sb[-2] != n) or (not left and sb[-1] != n):
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {sb[-2]}x{sb[-1]})")
    if pivots._data.dtype != np.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    return LinalgLuSolve.apply(LU, pivots, B, left=bool(left), adjoint=bool(adjoint), piv=pivots._data)


# ------------------------------------------------------------------ LDL: ldl_factor, ldl_solve (no derivative)
_BK_ALPHA = (1 + 17 ** 0.5) / 8        # Bunch-Kaufman's growth bound


def _ldl_one(a, herm):
    """LAPACK's sytf2/hetf2 (lower) on one n x n matrix ``a`` (modified in place): (pivots, info).

    Bunch-Kaufman pivoting: 1x1 and 2x2 diagonal blocks; pivots 1-based, a 2x2 block marks both of its
    rows with -kp (kp: the row swapped with its second row)."""
    n = a.shape[-1]
    cplx = a.dtype.kind == "c"
    ab1 = (lambda v: np.abs(v.real) + np.abs(v.imag)) if cplx else np.abs      # LAPACK's CABS1
    cj = np.conj if herm and cplx else (lambda v: v)
    dabs = (lambda v: abs(v.real)) if herm and cplx else ab1
    piv = [0] * n
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = float(dabs(a[k, k]))
        if k + 1 < n:
            imax = k + 1 + int(np.argmax(ab1(a[k + 1:, k])))
            colmax = float(ab1(a[imax, k]))
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or absakk != absakk:
            info = info or k + 1
            kp = k
            if herm and cplx:
                a[k, k] = a[k, k].real
        else:
            if absakk >= _BK_ALPHA * colmax:
                kp = k
            else:
                jmax = k + int(np.argmax(ab1(a[imax, k:imax])))
                rowmax = float(ab1(a[imax, jmax]))
                if imax + 1 < n:
                    jmax = imax + 1 + int(np.argmax(ab1(a[imax + 1:, imax])))
                    rowmax = max(rowmax, float(ab1(a[jmax, imax])))
                if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif float(dabs(a[imax, imax])) >= _BK_ALPHA * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:        # swap rows and columns kk and kp of the trailing lower triangle
                t = a[kp + 1:, kk].copy()
                a[kp + 1:, kk] = a[kp + 1:, kp]
                a[kp + 1:, kp] = t
                t = cj(a[kk + 1:kp, kk].copy())
                a[kk + 1:kp, kk] = cj(a[kp, kk + 1:kp])
                a[kp, kk + 1:kp] = t
                if herm and cplx:
                    a[kp, kk] = np.conj(a[kp, kk])
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if kstep == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if herm and cplx:
                a[k, k] = a[k, k].real
                if kstep == 2:
                    a[k + 1, k + 1] = a[k + 1, k + 1].real
            if kstep == 1:
                if k + 1 < n:
                    x = a[k + 1:, k].copy()
                    d = a[k, k].real if herm and cplx else a[k, k]
                    a[k + 1:, k + 1:] -= np.tril(np.outer(x, cj(x)) / d)
                    a[k + 1:, k] = x / d
            elif k + 2 < n:     # 2x2 block D = [[a_kk, conj(d21)], [d21, a_k1k1]]: W = A[k+2:, k:k+2] D^-1
                d21 = a[k + 1, k]
                if herm and cplx:
                    dd = abs(d21)
                    d11, d22 = a[k + 1, k + 1].real / dd, a[k, k].real / dd
                    tt = 1 / (d11 * d22 - 1)
                    e21 = d21 / dd
                    dd = tt / dd
                    c0, c1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                    wk = dd * (d11 * c0 - e21 * c1)
                    wkp1 = dd * (d22 * c1 - np.conj(e21) * c0)
                else:
                    d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
                    t = 1 / (d11 * d22 - 1)
                    d21 = t / d21
                    c0, c1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                    wk = d21 * (d11 * c0 - c1)
                    wkp1 = d21 * (d22 * c1 - c0)
                a[k + 2:, k + 2:] -= np.tril(np.outer(c0, cj(wk)) + np.outer(c1, cj(wkp1)))
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
                if herm and cplx:
                    idx = np.arange(k + 2, n)
                    a[idx, idx] = a[idx, idx].real
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return piv, info


def ldl_kernel(a, herm):
    """LDL^T (LDL^H with ``herm``) of (batches of) symmetric matrices, their lower triangles read: (LD, pivots
    (int32, LAPACK's convention), info (int32)), LD lower-triangular as PyTorch returns it."""
    xp = array_module(a)
    n = a.shape[-1]
    flat = np.tril(a.reshape((int(np.prod(a.shape[:-2])), n, n))).copy()
    piv = xp.zeros(flat.shape[:-1], np.int32)
    info = xp.zeros(flat.shape[0], np.int32)
    with np.errstate(all="ignore"):
        for i in range(flat.shape[0]):
            p, info[i] = _ldl_one(flat[i], herm)
            piv[i] = xp.asarray(p, dtype=np.int32)
    return np.tril(flat).reshape(a.shape), piv.reshape(a.shape[:-1]), info.reshape(a.shape[:-2])


def _ldl_solve_one(a, piv, b, herm):
    """LAPACK's sytrs/hetrs (lower): solve A X = B in place in ``b`` from sytrf's (a, piv)."""
    n = a.shape[-1]
    cj = np.conj if herm and a.dtype.kind == "c" else (lambda v: v)
    k = 0
    while k < n:                                # L D Y = P B
        if piv[k] > 0:
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= a[k + 1:, k, None] * b[k]
            b[k] = b[k] / (a[k, k].real if herm else a[k, k])
            k += 1
        else:
            kp = -piv[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2:] -= a[k + 2:, k, None] * b[k] + a[k + 2:, k + 1, None] * b[k + 1]
            akm1k = a[k + 1, k]
            akm1, ak = a[k, k] / cj(akm1k), a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = b[k] / cj(akm1k), b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:                               # L^T X = Y, then the swaps back
        if piv[k] > 0:
            b[k] -= cj(a[k + 1:, k]) @ b[k + 1:]
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= cj(a[k + 1:, k]) @ b[k + 1:]
            b[k - 1] -= cj(a[k + 1:, k - 1]) @ b[k + 1:]
            kp = -piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b


class _NoDerivative(Node, name="NotImplemented"):
    """An op PyTorch defines no derivative for: its outputs require grad, its backward raises."""
    nondiff_outputs = ()

    def name(self):
        return "torch::autograd::NotImplemented"

    def backward(self, *gs):
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")


class LinalgLdlFactorEx(_NoDerivative, name="NotImplemented"):
    op = "linalg_ldl_factor_ex"
    nondiff_outputs = (1, 2)

    def forward(self, a):
        ld, piv, info = ldl_kernel(a, self.hermitian)
        if self.check:
            raise_info(self.fname, info, lambda i: f"The factorization could not be completed because the block "
                       f"diagonal matrix D is exactly singular (D[{i - 1},{i - 1}] is zero).")
        return ld, piv, info


class LinalgLdlSolve(_NoDerivative, name="NotImplemented"):
    op = "linalg_ldl_solve"

    def forward(self, ld, piv, b):
        xp = array_module(b)
        batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
        n = ld.shape[-1]
        nb = int(np.prod(batch))
        lds = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape(nb, n, n)
        pivs = np.broadcast_to(piv, batch + piv.shape[-1:]).reshape(nb, n)
        x = np.broadcast_to(b, batch + b.shape[-2:]).copy().reshape((nb,) + b.shape[-2:])
        with np.errstate(all="ignore"):
            for i in range(x.shape[0]):
                _ldl_solve_one(lds[i], [int(p) for p in pivs[i]], x[i], self.hermitian)
        return x.reshape(batch + b.shape[-2:])


def _ldl_factor(fname, A, hermitian, check, name="torch.linalg.ldl_factor_ex"):
    check_tensor("linalg_ldl_factor" + ("_ex" if name == fname else ""), A, "input")
    a = A._data
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    check_float(name, A, low=False)
    if a.dtype.itemsize < 4:
        raise NotImplementedError(f'"ldl_factor_kernel_cpu" not implemented for \'{_LONG[a.dtype.name]}\'')
    return LinalgLdlFactorEx.apply(A, hermitian=bool(hermitian), check=check, fname=fname)


def ldl_factor_ex(input, *, hermitian=False, check_errors=False, out=None):
    """The compact LDL^T (LDL^H with ``hermitian``) factorisation of (batches of) symmetric matrices, with
    Bunch-Kaufman pivoting as LAPACK's sytrf: (LD, pivots, info). No derivative (as PyTorch)."""
    ld, piv, info = _ldl_factor("torch.linalg.ldl_factor_ex", input, hermitian, bool(check_errors))
    return RT.linalg_ldl_factor_ex(ld, piv, info)


def ldl_factor(input, *, hermitian=False, out=None):
    """The compact LDL^T (LDL^H with ``hermitian``) factorisation of (batches of) symmetric matrices, with
    Bunch-Kaufman pivoting as LAPACK's sytrf: (LD, pivots). A singular D raises LinAlgError."""
    ld, piv, _ = _ldl_factor("torch.linalg.ldl_factor", input, hermitian, True, "torch.linalg.ldl_factor_ex")
    return RT.linalg_ldl_factor(ld, piv)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """The solution X of A X = B from ldl_factor's (LD, pivots); batches of B broadcast. No derivative."""
    check_tensor("linalg_ldl_solve", LD, "LD")
    check_tensor("linalg_ldl_solve", pivots, "pivots")
    check_tensor("linalg_ldl_solve", B, "B")
    ld, piv, b = LD._data, pivots._data, B._data
    name = "torch.linalg.ldl_solve"
    if ld.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor LD must have at least 2 dimensions.")
    if ld.shape[-1] != ld.shape[-2]:
        raise RuntimeError(f"{name}: LD must be batches of square matrices, but they are {ld.shape[-2]} by "
                           f"{ld.shape[-1]} matrices")
    if b.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(b.ndim, 1)}, "
                         f"{max(b.ndim, 1) - 1}], but got -2)")
    if piv.shape != ld.shape[:-1]:
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(piv.shape)} instead")
    if piv.dtype.kind not in "iu":
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {_LONG.get(piv.dtype.name, piv.dtype.name)}")
    check_float(name, LD, low=False)
    if b.dtype != ld.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_LONG.get(b.dtype.name, b.dtype.name)} and A of type "
                           f"{_LONG.get(ld.dtype.name, ld.dtype.name)} instead.")
    if b.shape[-2] != ld.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {ld.shape[-1]} by "
                           f"{ld.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    try:
        np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    except ValueError:
        from .._errors import broadcast_error
        raise broadcast_error(b.shape[:-2], ld.shape[:-2], detail=False) from None
    return LinalgLdlSolve.apply(LD, pivots, B, hermitian=bool(hermitian))


# ------------------------------------------------------------------ composites: matrix_power, multi_dot, tensorinv, ...
def matrix_power(input, n, *, out=None):
    """A to the integer power n (negative: of the inverse), by repeated squaring as PyTorch."""
    A = input
    from .linalg import matmul
    check_tensor("linalg_matrix_power", A)
    a = A._data
    if a.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {a.shape[-2]} "
                           f"by {a.shape[-1]} matrices")
    if n == 0:
        xp = array_module(a)
        r = A.clone()
        return r.copy_(Tensor._make(xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)))
    if n < 0:
        A = inv(A)
        n = -n
    if n == 1:
        return A.clone()
    if n == 2:
        return matmul(A, A)
    if n == 3:
        return matmul(matmul(A, A), A)
    z = result = None
    while n > 0:
        bit = n % 2
        n //= 2
        z = A if z is None else matmul(z, z)
        if bit == 1:
            if n == 0:
                return z if result is None else matmul(result, z)
            result = z if result is None else matmul(result, z)
    return result


def multi_dot(tensors, *, out=None):
    """The product of two or more matrices (the first and last may be vectors) in the cheapest order."""
    from .linalg import mm
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    if first._data.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first._data.ndim}D")
    if last._data.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last._data.ndim}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t._data.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t._data.ndim}D")
    ms = [t if t._data.ndim == 2 else None for t in tensors]
    ms[0] = first if first._data.ndim == 2 else first.unsqueeze(0)
    ms[-1] = last if last._data.ndim == 2 else last.unsqueeze(1)
    dt = ms[0]._data.dtype
    for i, t in enumerate(ms):
        if t._data.dtype != dt:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_LONG[dt.name]} and tensor {i} {_LONG[t._data.dtype.name]}")
    for i in range(n - 1):
        if ms[i]._data.shape[1] != ms[i + 1]._data.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    out_shape = (() if first._data.ndim == 1 else (ms[0]._data.shape[0],)) + \
                (() if last._data.ndim == 1 else (ms[-1]._data.shape[1],))
    if n == 2:
        r = mm(ms[0], ms[1])
    else:
        dims = [t._data.shape[0] for t in ms] + [ms[-1]._data.shape[1]]
        order = _chain_order(dims)

        def prod(i, j):
            if i == j:
                return ms[i]
            k = order[i][j]
            return mm(prod(i, k), prod(k + 1, j))
        r = prod(0, n - 1)
    return r.view(out_shape)


def _chain_order(p):
    """Matrix-chain order (dynamic programming): s[i][j] = the split of the product i..j."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    s = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], s[i][j] = c, k
    return s


def tensorinv(input, ind=2, *, out=None):
    """The inverse of A with respect to tensordot over its first ``ind`` dims."""
    A = input
    import math
    check_tensor("linalg_tensorinv", A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = A._data.shape
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(shape[ind:] + shape[:ind])


def tensorsolve(input, other, dims=None, *, out=None):
    """The X with tensordot(A, X, X.ndim) = B."""
    A, B = input, other
    import math
    check_tensor("linalg_tensorsolve", A)
    if dims is not None:
        from ._dispatch import wrap_dim
        nd = A._data.ndim
        ds = [wrap_dim(d, nd) for d in dims]
        A = A.permute([i for i in range(nd) if i not in ds] + ds)
    sa, sb = A._data.shape, B._data.shape
    rest = sa[B._data.ndim:]
    rows, cols = math.prod(sb), math.prod(rest)
    if math.prod(sa[:B._data.ndim]) != rows or rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {math.prod(sa[:B._data.ndim])}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(rest)
