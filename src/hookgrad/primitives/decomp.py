"""torch.linalg's spectral decompositions and what is built on them: svd, eigh, eig, qr, det, pinv, lstsq,
matrix_exp, householder_product, and the matrix norms, rank and condition numbers that need singular values.

One Node per op with PyTorch's grad_fn name; each gradient formula is PyTorch's (FunctionsManual's
svd_backward, linalg_eig_backward, linalg_qr_backward, pinv_backward, ...) written with hookgrad's
differentiable ops, so double backward comes for free. Values come from ``numpy.linalg`` on the inputs'
arrays: singular vectors and eigenvectors carry the signs NumPy's LAPACK gives (see docs/differences.md).
"""
import numpy as np

from .._tensor import Tensor
from ..autograd.node import Node
from .._array import array_module
from .._errors import complex_unsupported
from . import return_types as RT
from .solvers import check_matrix, check_tensor, check_same_dtype, solve, solve_triangular, eye_like


def _defined(g):
    """Does gradient ``g`` carry anything? (A multi-output node's unused outputs get zeros: treat them as
    PyTorch's undefined gradients, which keeps repeated singular values / eigenvalues out of the formula.)"""
    return g is not None and bool(np.any(g._data))


def _diag_part(M):
    return M.diagonal(0, -2, -1).diag_embed()


def _with_diag(M, d):
    """M with its diagonal replaced by d (differentiable)."""
    return M - _diag_part(M) + d.diag_embed()


# ------------------------------------------------------------------ svd
class LinalgSvd(Node, name="LinalgSvdBackward0"):
    save = (-1, -2, -3)
    saved_names = ("U", "S", "Vh")
    saved_attrs = ("full_matrices",)

    def forward(self, a):
        xp = array_module(a)
        m, n = a.shape[-2:]
        k = min(m, n)
        if not a.size:
            b = a.shape[:-2]
            u = xp.zeros(b + (m, m if self.full_matrices else k), a.dtype)
            vh = xp.zeros(b + (n if self.full_matrices else k, n), a.dtype)
            if self.full_matrices:
                u = u + xp.eye(m, dtype=a.dtype)
                vh = vh + xp.eye(n, dtype=a.dtype)
            return u, xp.zeros(b + (k,), a.dtype), vh
        u, s, vh = np.linalg.svd(a, full_matrices=self.full_matrices)
        return xp.ascontiguousarray(u), xp.asarray(s), xp.ascontiguousarray(vh)

    def backward(self, gU, gS, gVh):
        U, S, Vh = self.saved_values
        if U.is_complex() and (_defined(gU) or _defined(gVh)):
            raise complex_unsupported("the gradient of linalg.svd's singular vectors")   # not yet
        k = S.shape[-1]
        if self.full_matrices:
            U, Vh = U[..., :, :k], Vh[..., :k, :]
            gU = gU[..., :, :k] if _defined(gU) else None
            gVh = gVh[..., :k, :] if _defined(gVh) else None
        return svd_backward(gU if _defined(gU) else None, gS if _defined(gS) else None,
                            gVh if _defined(gVh) else None, U, S, Vh),


def svd_backward(gU, gS, gVh, U, S, Vh):
    """PyTorch's svd_backward (reduced SVD A = U diag(S) Vh), with Tensor ops."""
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        if gS is None:
            return None
        return U @ (gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)) @ Vh
    V = Vh.mH
    gV = gVh.mH if gVh is not None else None
    UhgU = _skew(U.mH @ gU) if gU is not None else None
    VhgV = _skew(Vh @ gV) if gV is not None else None
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = _with_diag(E, S2 * 0 + 1)
    if gU is not None and gV is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif gV is None:
        gA = (UhgU / E) * S.unsqueeze(-2)
    else:
        gA = S.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + gS.diag_embed()
    if m > n and gU is not None:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (U.mH @ gUSinv)
        gA = gA @ Vh
    elif m < n and gV is not None:
        gA = gA @ Vh
        gVSinv = gV / S.unsqueeze(-2)
        gA = gA + gVSinv.mH - (gVSinv.mH @ V) @ Vh
        gA = U @ gA
    else:
        gA = U @ (gA @ Vh) if m >= n else (U @ gA) @ Vh
    return gA


def _skew(A):
    return A - A.mH


def svd(A, full_matrices=True, *, driver=None, out=None):
    """A = U diag(S) Vh: (U, S, Vh), singular values in descending order."""
    check_matrix("linalg.svd", A, square=False)
    return RT.linalg_svd(*LinalgSvd.apply(A, full_matrices=bool(full_matrices)))


def svdvals(A, *, driver=None, out=None):
    """The singular values of (batches of) matrices, in descending order."""
    check_matrix("linalg.svdvals", A, square=False)
    return LinalgSvd.apply(A, full_matrices=False)[1]


# ------------------------------------------------------------------ eigh
class LinalgEigh(Node, name="LinalgEighBackward0"):
    save = (-1, -2)
    saved_names = ("eigenvalues", "eigenvectors")

    def forward(self, a):
        if not a.size:
            xp = array_module(a)
            return xp.zeros(a.shape[:-1], a.dtype), a.copy()
        w, v = np.linalg.eigh(a, UPLO=self.uplo)
        xp = array_module(a)
        return xp.asarray(w), xp.ascontiguousarray(v)

    def backward(self, gL, gV):
        L, V = self.saved_values
        gL = gL if _defined(gL) else None
        if not _defined(gV):
            return (None if gL is None else (V * gL.unsqueeze(-2)) @ V.mH),
        VhgV = V.mH @ gV
        VhgV = 0.5 * (VhgV - VhgV.mH)
        E = L.unsqueeze(-2) - L.unsqueeze(-1)
        E = _with_diag(E, L * 0 + 1)
        ret = VhgV / E
        ret = _with_diag(ret, gL if gL is not None else L * 0)
        return V @ (ret @ V.mH),


def _uplo(name, UPLO):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"{name}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def eigh(input, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors of (batches of) symmetric matrices (the ``UPLO`` triangle)."""
    A = input
    check_matrix("linalg.eigh", A)
    return RT.linalg_eigh(*LinalgEigh.apply(A, uplo=_uplo("linalg.eigh", UPLO)))


def eigvalsh(input, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of (batches of) symmetric matrices."""
    A = input
    check_matrix("linalg.eigvalsh", A)
    return LinalgEigh.apply(A, uplo=_uplo("linalg.eigvalsh", UPLO))[0]


# ------------------------------------------------------------------ qr
class LinalgQr(Node, name="LinalgQrBackward0"):
    save = (-1, -2)
    saved_names = ("Q", "R")
    saved_attrs = ("mode",)

    def forward(self, a):
        xp = array_module(a)
        m, n = a.shape[-2:]
        mode = self.mode
        if not a.size:
            k = m if mode == "complete" else min(m, n)
            q = xp.zeros(a.shape[:-2] + (m, k), a.dtype) + xp.eye(m, k, dtype=a.dtype)
            r = xp.zeros(a.shape[:-2] + (k, n), a.dtype)
            return (xp.zeros(a.shape[:-2] + (0,), a.dtype) if mode == "r" else q), r
        if mode == "r":
            return xp.zeros((0,), a.dtype), xp.ascontiguousarray(np.linalg.qr(a, mode="r"))
        q, r = np.linalg.qr(a, mode=mode)
        return xp.ascontiguousarray(q), xp.ascontiguousarray(r)

    def backward(self, gQ, gR):
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        Q, R = self.saved_values
        if Q.is_complex():
            raise complex_unsupported("the gradient of linalg.qr")                      # not yet
        m, n = Q.shape[-2], R.shape[-1]
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        gQ = gQ if _defined(gQ) else None
        gR = gR if _defined(gR) else None
        if gQ is None and gR is None:
            return None,
        if m >= n:
            return _qr_square_back(gQ, gR, Q, R),
        # A = [X | Y], R = [U | V]: X = Q U (square), Y = Q V
        X_Y_split = m
        U, V = R[..., :, :X_Y_split], R[..., :, X_Y_split:]
        Y = Q @ V
        gV = gR[..., :, X_Y_split:] if gR is not None else None
        gU = gR[..., :, :X_Y_split] if gR is not None else None
        gQ2 = gQ
        if gV is not None:
            gQ2 = Y @ gV.mH if gQ2 is None else gQ2 + Y @ gV.mH
        gX = _qr_square_back(gQ2, gU, Q, U)
        gY = Q @ gV if gV is not None else Q @ (R[..., :, X_Y_split:] * 0)
        from .join import cat
        return cat([gX, gY], -1),


def _qr_square_back(gQ, gR, Q, R):
    """A = Q R with m >= n: gA = [gQ + Q copyltu(M)] R^{-H}, M = R gR^H - gQ^H Q."""
    M = None
    if gR is not None:
        M = R @ gR.mH
    if gQ is not None:
        M = -(gQ.mH @ Q) if M is None else M - gQ.mH @ Q
    low = M.tril(-1)
    sym = low + low.mH + _diag_part(M)
    b = Q @ sym if gQ is None else gQ + Q @ sym
    return solve_triangular(R.mH, b, upper=False, left=False)


def qr(A, mode="reduced", *, out=None):
    """A = Q R: mode 'reduced' (Q m x k), 'complete' (Q m x m) or 'r' (R only, Q empty)."""
    check_matrix("linalg.qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    return RT.linalg_qr(*LinalgQr.apply(A, mode=mode))


# ------------------------------------------------------------------ det (its singular case needs the SVD)
class LinalgDet(Node, name="LinalgDetBackward0"):
    save = (0, -1)
    saved_names = ("A", "result")

    def forward(self, a):
        return np.linalg.det(a) if a.size else array_module(a).ones(a.shape[:-2], a.dtype)

    def backward(self, g):
        A, det = self.saved_values
        d = (g * (det.conj() if det.is_complex() else det)).unsqueeze(-1).unsqueeze(-1) * eye_like(A)
        singular = det._data == 0
        if np.any(singular):
            # PyTorch's LU-based formula gives a zero gradient where det(A) == 0 (d is zero there): solve with the
            # identity in those places
            from .elementwise import where
            mask = Tensor._make(array_module(det._data).asarray(singular)[..., None, None])
            A = where(mask, eye_like(A), A)
        return solve(A.mH, d),


def det(A, *, out=None):
    """The determinant of (batches of) square matrices."""
    check_matrix("linalg.det", A)
    return LinalgDet.apply(A)


# ------------------------------------------------------------------ pinv, matrix_rank, cond, norms
class LinalgPinv(Node, name="LinalgPinvBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")

    def forward(self, a, atol, rtol):
        xp = array_module(a)
        m, n = a.shape[-2:]
        if not a.size:
            return xp.zeros(a.shape[:-2] + (n, m), a.dtype)
        if self.hermitian:
            w, v = (xp.asarray(r) for r in np.linalg.eigh(a))
            s = np.abs(w)
        else:
            u, s, vh = (xp.asarray(r) for r in np.linalg.svd(a, full_matrices=False))
        smax = s.max(-1, keepdims=True) if s.shape[-1] else s
        tol = np.maximum(atol[..., None], rtol[..., None] * smax)
        keep = s > tol
        with np.errstate(divide="ignore"):
            sinv = np.where(keep, 1 / np.where(keep, s, 1), 0).astype(a.dtype)
        def adj(x):     # the conjugate transpose
            x = np.swapaxes(x, -1, -2)
            return np.conjugate(x) if x.dtype.kind == "c" else x
        if self.hermitian:
            winv = np.where(keep, 1 / np.where(keep, w, 1), 0).astype(a.dtype)
            return xp.ascontiguousarray((v * winv[..., None, :]) @ adj(v))
        return xp.ascontiguousarray((adj(vh) * sinv[..., None, :]) @ adj(u))

    def backward(self, g):
        A, P = self.saved_values
        return pinv_backward(g, P, A), None, None


def pinv_backward(g, pinvA, A):
    """PyTorch's pinv_backward, with Tensor ops."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh = pinvA.mH
    gh = g.mH
    if m <= n:
        K = gh @ pinvA
        KpinvAh = K @ pinvAh
        return -(pinvA @ K).mH + KpinvAh - (A @ pinvA) @ KpinvAh + (pinvAh @ pinvA) @ (gh - K @ A)
    K = pinvA @ gh
    pinvAhK = pinvAh @ K
    return -(K @ pinvA).mH + ((gh - A @ K) @ pinvA) @ pinvAh + pinvAhK - (pinvAhK @ pinvA) @ A


def _tols(A, atol, rtol, name):
    """PyTorch's tolerances: rtol defaults to eps * max(m, n) when atol is absent or zero, else 0."""
    d = A._data
    xp = array_module(d)
    eps = np.finfo(d.dtype).eps
    def arr(v):
        if isinstance(v, Tensor):
            return v._data.astype(d.dtype)
        return xp.asarray(0.0 if v is None else v, dtype=d.dtype)
    if rtol is None:
        zero_atol = atol is None or (not isinstance(atol, Tensor) and atol <= 0)
        rtol = eps * max(d.shape[-2:]) if zero_atol else 0.0
    return arr(atol), arr(rtol)


def pinv(input, *args, atol=None, rtol=None, hermitian=False, rcond=None, out=None):
    """The Moore-Penrose pseudo-inverse: singular values below max(atol, rtol * largest) are dropped."""
    if args:                    # the legacy overload pinv(A, rcond, hermitian=False)
        rcond = args[0]
        if len(args) > 1:
            hermitian = args[1]
    A = input
    if rcond is not None:
        rtol = rcond
        atol = 0.0
    check_matrix("linalg.pinv", A, square=bool(hermitian))
    at, rt = _tols(A, atol, rtol, "linalg.pinv")
    return LinalgPinv.apply(A, at, rt, hermitian=bool(hermitian))


def matrix_rank(input, *args, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """The number of singular values above max(atol, rtol * largest)."""
    A = input
    if args:
        if isinstance(args[0], bool):
            hermitian = args[0]
        else:
            tol = args[0]
            if len(args) > 1:
                hermitian = args[1]
    if tol is not None:
        atol, rtol = tol, 0.0
    check_matrix("linalg.matrix_rank", A, square=bool(hermitian))
    at, rt = _tols(A, atol, rtol, "linalg.matrix_rank")
    d = A._data
    xp = array_module(d)
    if not d.size:
        return Tensor._make(xp.zeros(d.shape[:-2], np.int64))
    s = np.abs(np.linalg.eigvalsh(d)) if hermitian else np.linalg.svd(d, compute_uv=False)
    tolv = np.maximum(at[..., None], rt[..., None] * s.max(-1, keepdims=True))
    return Tensor._make(xp.asarray((s > tolv).sum(-1), dtype=np.int64))


def _move_to_end(A, dim):
    from ._dispatch import wrap_dim
    nd = A._data.ndim
    d0, d1 = wrap_dim(dim[0], nd), wrap_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    rest = [i for i in range(nd) if i not in (d0, d1)]
    return A.permute(rest + [d0, d1]), (d0, d1)


def _keep(r, dims, keepdim):
    if keepdim:
        for d in sorted(dims):
            r = r.unsqueeze(d)
    return r


def spectral_norm(A, ord, dim, keepdim):
    """matrix_norm for ord 2, -2 and 'nuc' (through the singular values)."""
    B, dims = _move_to_end(A, dim)
    s = svdvals(B)
    r = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
    return _keep(r, dims, keepdim)


# ------------------------------------------------------------------ lstsq
class LinalgLstsq(Node, name="LinalgLstsqBackward0"):
    save = (0, 1)
    saved_names = ("self", "b")

    def forward(self, a, b, rcond):
        xp = array_module(a)
        m, n = a.shape[-2:]
        k = b.shape[-1]
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, batch + a.shape[-2:]).reshape(-1, m, n)
        b = np.broadcast_to(b, batch + b.shape[-2:]).reshape(-1, m, k)
        x = xp.zeros((a.shape[0], n, k), a.dtype)
        ranks = xp.zeros(a.shape[0], np.int64)
        svals = xp.zeros((a.shape[0], min(m, n)), a.dtype)
        res = xp.zeros((a.shape[0], k), a.dtype)
        for i in range(a.shape[0]):
            if a[i].size and b[i].size:
                xi, ri, rk, sv = np.linalg.lstsq(a[i], b[i], rcond=rcond)
                x[i], ranks[i], svals[i] = xi, rk, sv
                if ri.size:
                    res[i] = ri
        # residuals: m > n, every matrix of full rank, a driver other than gelsy; rank: not gels; singular values:
        # gelsd and gelss
        full = m > n and a.shape[0] > 0 and bool(np.all(ranks == n))
        residuals = res.reshape(batch + (k,)) if full and self.driver != "gelsy" else xp.zeros((0,), a.dtype)
        rank = ranks.reshape(batch) if self.driver != "gels" else xp.zeros((0,), np.int64)
        sv = svals.reshape(batch + (min(m, n),)) if self.driver in ("gelsd", "gelss") else xp.zeros((0,), a.dtype)
        return x.reshape(batch + (n, k)), residuals, rank, sv

    nondiff_outputs = (2, 3)

    def backward(self, gX, gR):
        A, B = self.saved_values
        nf = self.next_functions
        pinvA = pinv(A)
        gA = gB = None
        if _defined(gX):
            if nf[0][0] is not None:
                gA = pinv_backward(gX @ B.mH, pinvA, A)
            if nf[1][0] is not None:
                gB = pinvA.mH @ gX
        if _defined(gR) and gR.shape[-1]:
            X = pinvA @ B
            r = 2 * (A @ X - B) * gR.unsqueeze(-2)
            if nf[0][0] is not None:
                ga = r @ X.mH
                gA = ga if gA is None else gA + ga
            if nf[1][0] is not None:
                gB = -r if gB is None else gB - r
        return gA, gB, None


def lstsq(input, b, rcond=None, *, driver=None, out=None):
    """The least-squares solution of A X = B: (solution, residuals, rank, singular_values), as PyTorch on the CPU
    (driver 'gelsy' by default: residuals only when m > n and A has full rank, no singular values)."""
    A, B = input, b
    check_matrix("linalg.lstsq", A, square=False)
    check_tensor("linalg_lstsq", B, "b")
    check_same_dtype("torch.linalg.lstsq", A, B, "input", "b")
    if driver is None:
        driver = "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B._data.ndim == A._data.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm._data.shape[-2] != A._data.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) "
                           f"(hookgrad: shapes {list(A.shape)} and {list(B.shape)})")
    if rcond is None:
        rcond = np.finfo(A._data.dtype).eps * max(A._data.shape[-2:])
    x, res, rank, sv = LinalgLstsq.apply(A, Bm, float(rcond), driver=driver)
    if vector:
        x = x.squeeze(-1)
    return RT.linalg_lstsq(x, res, rank, sv)


# ------------------------------------------------------------------ matrix_exp
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def expm_arrays(a):
    """exp(a) of (batches of) square matrices: Higham's scaling and squaring with the [13/13] Pade approximant."""
    xp = array_module(a)
    n = a.shape[-1]
    if not a.size:
        return a.copy()
    work = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    norm = np.abs(work).sum(-2).max(-1)                 # the 1-norm of each matrix
    with np.errstate(divide="ignore"):
        s = np.maximum(0, np.ceil(np.log2(np.maximum(norm, 1e-300) / _THETA13))).astype(np.int64)
    work = work / (2.0 ** s)[..., None, None]
    eye = xp.eye(n, dtype=work.dtype)
    b = _PADE13
    A2 = work @ work
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = work @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    r = np.linalg.solve(V - U, V + U)
    for k in range(int(s.max()) if s.size else 0):
        sq = r @ r
        r = np.where((s > k)[..., None, None], sq, r)
    return xp.ascontiguousarray(r.astype(a.dtype))


class LinalgMatrixExp(Node, name="LinalgMatrixExpBackward0"):
    save = (0,)
    saved_names = ("self",)

    def forward(self, a):
        return expm_arrays(a)

    def backward(self, g):
        A, = self.saved_values
        from .join import cat
        n = A.shape[-1]
        Ah = A.mH
        z = Ah * 0
        top = cat([Ah, g.expand(Ah.shape) if g.shape != Ah.shape else g], -1)
        big = cat([top, cat([z, Ah], -1)], -2)
        return matrix_exp(big)[..., :n, n:],


def matrix_exp(input, *, out=None):
    """The matrix exponential of (batches of) square matrices."""
    A = input
    check_matrix("linalg.matrix_exp", A)
    return LinalgMatrixExp.apply(A)


# ------------------------------------------------------------------ householder_product
def _hh_vectors(A, k):
    """The Householder vectors v_i (columns): zero above i, one at i, A[i+1:, i] below."""
    d = A._data
    xp = array_module(d)
    m = d.shape[-2]
    mask_low = Tensor._make(np.tril(xp.ones((m, k), d.dtype), -1))
    eye = Tensor._make(xp.eye(m, k, dtype=d.dtype))
    return A[..., :, :k] * mask_low + eye


class LinalgHouseholderProduct(Node, name="LinalgHouseholderProductBackward0"):
    save = (0, 1)
    saved_names = ("self", "tau")

    def forward(self, a, tau):
        xp = array_module(a)
        m, n = a.shape[-2:]
        k = tau.shape[-1]
        q = xp.zeros(a.shape[:-2] + (m, n), a.dtype) + xp.eye(m, n, dtype=a.dtype)
        for i in range(k - 1, -1, -1):
            v = xp.zeros(a.shape[:-2] + (m,), a.dtype)
            v[..., i] = 1
            v[..., i + 1:] = a[..., i + 1:, i]
            # q = (I - tau v v^H) q
            w = np.einsum("...i,...ij->...j", v, q)
            q = q - tau[..., i, None, None] * v[..., :, None] * w[..., None, :]
        return q

    def backward(self, g):
        A, tau = self.saved_values
        m, n = A.shape[-2], A.shape[-1]
        k = tau.shape[-1]
        V = _hh_vectors(A, k)
        from .join import stack
        # Y = H_0 ... H_{k-1} E; posts[i] = H_{i+1} ... H_{k-1} E; G_i = (H_0 ... H_{i-1})^T g
        posts = [None] * k
        p = Tensor._make(array_module(A._data).eye(m, n, dtype=A._data.dtype))
        for i in range(k - 1, -1, -1):
            posts[i] = p
            v = V[..., :, i]
            p = p - tau[..., i, None, None] * v.unsqueeze(-1) * (v.unsqueeze(-2) @ p)
        G = g
        gv, gtau = [], []
        for i in range(k):
            v = V[..., :, i]
            gH = G @ posts[i].mH                          # dL/dH_i
            Hv = gH @ v.unsqueeze(-1)
            HTv = gH.mH @ v.unsqueeze(-1)
            gtau.append(-(v.unsqueeze(-2) @ Hv)[..., 0, 0])
            gv.append((-tau[..., i, None] * (Hv + HTv)[..., 0]))
            G = G - tau[..., i, None, None] * v.unsqueeze(-1) * (v.unsqueeze(-2) @ G)   # H_i^T G
        gV = stack(gv, -1)
        d = A._data
        mask_low = Tensor._make(np.tril(array_module(d).ones((m, k), d.dtype), -1))
        gA = gV * mask_low
        if n > k:
            from .join import cat
            gA = cat([gA, A[..., :, k:] * 0], -1)
        return gA, stack(gtau, -1)


def householder_product(input, tau, *, out=None):
    """The first n columns of the product of the Householder matrices H_i = I - tau_i v_i v_i^H (v_i from A)."""
    A = input
    check_tensor("linalg_householder_product", A)
    check_tensor("linalg_householder_product", tau, "tau")
    if A._data.ndim < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 dimensions.")
    m, n = A._data.shape[-2:]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau._data.shape[-1] > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tau._data.ndim != A._data.ndim - 1:
        raise RuntimeError("torch.linalg.householder_product: Expected tau to have one dimension less than input, "
                           f"but got tau.ndim equal to {tau._data.ndim} and input.ndim is equal to {A._data.ndim}")
    check_same_dtype("torch.linalg.householder_product", A, tau, "input", "tau")
    return LinalgHouseholderProduct.apply(A, tau)


# ------------------------------------------------------------------ eig (complex results)
class LinalgEig(Node, name="LinalgEigBackward0"):
    save = (-1, -2)
    saved_names = ("eigenvalues", "eigenvectors")

    def forward(self, a):
        xp = array_module(a)
        cdt = np.result_type(a.dtype, np.complex64)
        if not a.size:
            return xp.zeros(a.shape[:-1], cdt), xp.zeros(a.shape, cdt)
        w, v = np.linalg.eig(a)
        return xp.asarray(w).astype(cdt, copy=False), xp.ascontiguousarray(xp.asarray(v).astype(cdt, copy=False))

    def backward(self, gL, gV):
        L, V = self.saved_values
        gL = gL if _defined(gL) else None
        Vh = V.mH
        if _defined(gV):
            VhgV = Vh @ gV
            VhgV = VhgV - Vh @ (V * VhgV.diagonal(0, -2, -1).real.unsqueeze(-2))
            Lc = L.conj()
            E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
            E = _with_diag(E, Lc * 0 + 1)
            ret = _with_diag(VhgV / E, gL if gL is not None else L * 0)
        else:
            ret = gL.diag_embed()
        gA = solve(Vh, ret @ Vh)
        if self.real_input:
            gA = gA.real
        return gA,


def eig(input, *, out=None):
    """Eigenvalues and eigenvectors of (batches of) square matrices, as complex tensors (LAPACK's geev order;
    each eigenvector of norm 1)."""
    A = input
    check_matrix("linalg.eig", A)
    return RT.linalg_eig(*LinalgEig.apply(A, real_input=A._data.dtype.kind == "f"))


def eigvals(input, *, out=None):
    """The eigenvalues of (batches of) square matrices, as a complex tensor."""
    A = input
    check_matrix("linalg.eigvals", A)
    return LinalgEig.apply(A, real_input=A._data.dtype.kind == "f")[0]
