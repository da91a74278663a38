"""torchvision's C++ operators (``torch.ops.torchvision.*``), written over NumPy: nms, roi_align, roi_pool,
ps_roi_align, ps_roi_pool, deform_conv2d and the ``_*_backward`` operators torchvision's Python calls.
Their semantics follow torchvision's CPU kernels (torchvision/csrc/ops/cpu/*.cpp) rule for rule: the
bilinear interpolation (a sample outside [-1, size] is zero, a sample in [-1, 0] reads the border), the
``aligned`` half-pixel offset, the adaptive sampling ratio ``ceil(roi_size / pooled_size)``, roi_pool's
rounding and ``-FLT_MAX`` start, nms's order by score.

The roi ops are linear in the input: each is a *sampling plan* (per roi and output bin: flat row
positions and weights), gathered in forward and scatter-added in backward (one plan, two directions, so
the gradient is the forward's exact adjoint; ps_roi_pool's backward clips its bins as torchvision's
backward kernel does, which differs from its forward at the bottom and right border). The gradients are
nodes of their own (torchvision's ``_roi_align_backward``...) whose backward raises, as torchvision's
("double backwards on roi_align not supported").
"""
import numpy as np

from .._tensor import Tensor
from ..autograd.node import Node
from .._array import array_module

_CHUNK = 1 << 22            # elements gathered at once (rois x bins x samples x channels)
_FLT_MAX = np.float32(np.finfo(np.float32).max)


def _T(a):
    return Tensor._make(a)


def _check(cond, msg):
    if not cond:
        raise RuntimeError(msg)


def _round(v):
    """C's round(): half away from zero (NumPy's rounds half to even)."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _rois_of(rois, dt):
    r = np.asarray(rois).astype(dt, copy=False)
    return r[:, 0].astype(np.int64), r[:, 1:5]


# ------------------------------------------------------------------------------ sampling plans
class _Plan:
    """Where each output value reads: ``groups`` is a list of (roi indices ks, pos (k, P, S), w (k, P, S));
    output value (k, p, c) = sum_s w * rows[pos, c] with ``rows`` the input laid out as (n_rows, C')."""

    def __init__(self, n_rows, groups):
        self.n_rows, self.groups = n_rows, groups


def _gather(plan, rows, K, P):
    """(K, P, C') from rows (n_rows, C') through the plan."""
    C = rows.shape[1]
    out = array_module(rows).zeros((K, P, C), rows.dtype)
    for ks, pos, w in plan.groups:
        S = pos.shape[2]
        step = max(1, _CHUNK // max(1, P * S * C))
        for a in range(0, len(ks), step):
            v = rows[pos[a:a + step]]                               # (k, P, S, C)
            out[ks[a:a + step]] = np.einsum("kps,kpsc->kpc", w[a:a + step], v)
    return out


def _scatter(plan, g):
    """The adjoint of _gather: g (K, P, C') summed into zeros (n_rows, C')."""
    C = g.shape[2]
    out = array_module(g).zeros((plan.n_rows, C), g.dtype)
    for ks, pos, w in plan.groups:
        P, S = pos.shape[1:]
        step = max(1, _CHUNK // max(1, P * S * C))
        for a in range(0, len(ks), step):
            p = pos[a:a + step].ravel()
            v = (w[a:a + step][..., None] * g[ks[a:a + step]][:, :, None, :]).reshape(-1, C)
            order = np.argsort(p, kind="stable")
            p, v = p[order], v[order]
            starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
            out[p[starts]] += np.add.reduceat(v, starts, axis=0)
    return out


def _axis_matrices(idx, w):
    """Per roi, one axis's sampling as a matrix over the roi's crop: (start (k,), A (k, bins, crop), crop
    sizes (k,)); A[k, bin, i] sums the weights of that bin's samples on pixel start + i."""
    nz = w != 0
    k, nb = idx.shape[:2]
    start = np.where(nz, idx, np.iinfo(np.int64).max).min((1, 2))
    stop = np.where(nz, idx, -1).max((1, 2)) + 1
    start = np.where(stop > 0, start, 0)
    size = np.maximum(stop - start, 0)
    m = int(size.max()) if k else 0
    flat = ((np.arange(k)[:, None, None] * nb + np.arange(nb)[None, :, None]) * max(m, 1)
            + (idx - start[:, None, None]))[nz]
    A = np.bincount(flat, weights=w[nz].astype(np.float64), minlength=k * nb * max(m, 1))
    return start, A.reshape(k, nb, max(m, 1)).astype(w.dtype), size


def _scatter_separable(plan, g, shape, ps):
    """roi_align's gradient, one roi at a time on the pixels it reads: dX[crop] += A_y^T g A_x (each channel,
    or for ps_roi_align each bin's own channel). Sums in another order than the kernel's; a NaN gradient
    spreads over its roi's crop."""
    out = array_module(g).zeros(shape, g.dtype)
    C = shape[1]
    for ks, yi, wy, xi, wx in plan.sep:
        y0, Ay, hs = _axis_matrices(yi, wy.astype(g.dtype, copy=False))
        x0, Ax, ws = _axis_matrices(xi, wx.astype(g.dtype, copy=False))
        for j, k in enumerate(ks):
            hc, wc = int(hs[j]), int(ws[j])
            if hc == 0 or wc == 0:
                continue
            ay, ax = Ay[j, :, :hc], Ax[j, :, :wc]
            if ps:
                r = np.einsum("ohp,hy,px->ohpyx", g[k], ay, ax).reshape(C, hc, wc)
            else:
                r = np.tensordot(np.tensordot(g[k], ax, axes=([2], [0])), ay, axes=([1], [0])).transpose(0, 2, 1)
            out[plan.b[k], :, y0[j]:y0[j] + hc, x0[j]:x0[j] + wc] += r
    return out


def _bilinear_axis(c, size, valid):
    """torchvision's roi_align bilinear rule along one axis: (low, high, w_low, w_high) for coordinates
    ``c`` already known to lie in [-1, size] where ``valid``."""
    c = np.where(c <= 0, np.zeros_like(c), c)
    low = np.where(valid, c, 0).astype(np.int64)
    top = low >= size - 1
    low = np.where(top, size - 1, low)
    high = np.where(top, size - 1, low + 1)
    c = np.where(top, low.astype(c.dtype), c)
    lc = c - low.astype(c.dtype)
    return low, high, 1 - lc, lc


def _align_plan(rois, dt, scale, PH, PW, sr, aligned, H, W, nb, ps):
    """The plan of roi_align (ps=False: rows (N*H*W, C)) or ps_roi_align (ps=True, always aligned: rows
    (N*P*H*W, C_out), bin p reads channel c_out*P + p). Coordinates are computed in the input's dtype in
    the kernel's order of operations."""
    T = np.dtype(dt).type
    b, box = _rois_of(rois, dt)
    sc = T(scale)
    off = T(0.5) if aligned else T(0)
    x1, y1, x2, y2 = (box[:, i] * sc - off for i in range(4))
    rw, rh = x2 - x1, y2 - y1
    if not aligned and not ps:          # malformed rois are forced to 1x1
        rw, rh = np.maximum(rw, T(1)), np.maximum(rh, T(1))
    bh, bw = rh / T(PH), rw / T(PW)
    K, P = len(b), PH * PW
    if sr > 0:
        gh = gw = np.full(K, sr, np.int64)
    else:
        with np.errstate(invalid="ignore"):
            gh = np.nan_to_num(np.ceil(rh / T(PH))).astype(np.int64)
            gw = np.nan_to_num(np.ceil(rw / T(PW))).astype(np.int64)
    cnt = gh * gw
    count = cnt.astype(dt) if ps else np.maximum(cnt, 1).astype(dt)
    groups, sep = [], []
    keys = np.stack([np.maximum(gh, 0), np.maximum(gw, 0)], 1)
    for key in np.unique(keys, axis=0) if K else ():
        ks = np.flatnonzero((keys == key).all(1))
        kh, kw = int(key[0]), int(key[1])
        if kh == 0 or kw == 0:
            continue
        i = np.arange(kh, dtype=dt)
        j = np.arange(kw, dtype=dt)
        ph = np.arange(PH, dtype=dt)
        pw = np.arange(PW, dtype=dt)
        # y (k, PH, kh), x (k, PW, kw): start + bin * p + (i + .5) * bin / grid
        y = (y1[ks, None, None] + ph[None, :, None] * bh[ks, None, None]) + \
            (i[None, None, :] + T(0.5)) * bh[ks, None, None] / T(kh)
        x = (x1[ks, None, None] + pw[None, :, None] * bw[ks, None, None]) + \
            (j[None, None, :] + T(0.5)) * bw[ks, None, None] / T(kw)
        vy = (y >= -1.0) & (y <= H)
        vx = (x >= -1.0) & (x <= W)
        yl, yh, wyl, wyh = _bilinear_axis(y, H, vy)
        xl, xh, wxl, wxh = _bilinear_axis(x, W, vx)
        zero = np.zeros((), dt)
        yi = np.stack([yl, yh], -1)                                     # (k, PH, kh, 2)
        wy = np.where(vy[..., None], np.stack([wyl, wyh], -1), zero)
        xi = np.stack([xl, xh], -1)                                     # (k, PW, kw, 2)
        wx = np.where(vx[..., None], np.stack([wxl, wxh], -1), zero)
        k = len(ks)
        # (k, PH, PW, kh, kw, 2, 2) -> (k, P, S): the four corners of every sample of every bin
        pos = yi[:, :, None, :, None, :, None] * W + xi[:, None, :, None, :, None, :]
        w = wy[:, :, None, :, None, :, None] * wx[:, None, :, None, :, None, :]
        w = (w / count[ks, None, None, None, None, None, None]).reshape(k, P, -1)
        pos = pos.reshape(k, P, -1)
        if ps:
            pos = pos + ((b[ks, None, None] * P + np.arange(P)[None, :, None]) * (H * W))
        else:
            pos = pos + b[ks, None, None] * (H * W)
        groups.append((ks, pos, w.astype(dt, copy=False)))
        # the same weights per axis (count folded into y's): the gradient's separable form
        sep.append((ks, yi.reshape(k, PH, -1), (wy / count[ks, None, None, None]).reshape(k, PH, -1),
                    xi.reshape(k, PW, -1), wx.reshape(k, PW, -1)))
    n_rows = nb * (P if ps else 1) * H * W
    plan = _Plan(n_rows, groups)
    plan.sep, plan.b = sep, b
    if ps:
        # a roi with no sample divides zero by a zero count: NaN, as the kernel
        plan.nan_rois = np.flatnonzero(cnt == 0)
    return plan


def _pool_plan(rois, dt, scale, PH, PW, H, W, nb, hi_h, hi_w):
    """ps_roi_pool's plan: the mean over each bin's pixels (bins clipped to [0, hi]); empty bins are 0."""
    T = np.dtype(dt).type
    b, box = _rois_of(rois, dt)
    st = _round(box * T(scale)).astype(np.int64)
    sw, sh, ew, eh = st[:, 0], st[:, 1], st[:, 2], st[:, 3]
    rw, rh = np.maximum(ew - sw, 1), np.maximum(eh - sh, 1)
    bh, bw = rh.astype(dt) / T(PH), rw.astype(dt) / T(PW)
    ph, pw = np.arange(PH, dtype=dt), np.arange(PW, dtype=dt)
    hs = np.clip(np.floor(ph[None] * bh[:, None]).astype(np.int64) + sh[:, None], 0, hi_h)
    he = np.clip(np.ceil((ph[None] + 1) * bh[:, None]).astype(np.int64) + sh[:, None], 0, hi_h)
    ws = np.clip(np.floor(pw[None] * bw[:, None]).astype(np.int64) + sw[:, None], 0, hi_w)
    we = np.clip(np.ceil((pw[None] + 1) * bw[:, None]).astype(np.int64) + sw[:, None], 0, hi_w)
    K, P = len(b), PH * PW
    nh, nw = np.maximum(he - hs, 0), np.maximum(we - ws, 0)           # (K, PH), (K, PW)
    mh, mw = (int(nh.max()) if K else 0), (int(nw.max()) if K else 0)
    if K == 0 or mh == 0 or mw == 0:
        return _Plan(nb * P * H * W, [])
    i, j = np.arange(mh), np.arange(mw)
    yy = hs[:, :, None] + i                                             # (K, PH, mh)
    xx = ws[:, :, None] + j
    vy = i < nh[:, :, None]
    vx = j < nw[:, :, None]
    area = (nh[:, :, None] * nw[:, None, :]).astype(dt)                # (K, PH, PW)
    with np.errstate(divide="ignore"):
        inv = np.where(area > 0, T(1) / np.where(area > 0, area, T(1)), T(0))
    w = (vy[:, :, None, :, None] & vx[:, None, :, None, :]) * inv[..., None, None]
    pos = np.where(vy, yy, 0)[:, :, None, :, None] * W + np.where(vx, xx, 0)[:, None, :, None, :]
    pos = pos.reshape(K, P, -1) + (b[:, None, None] * P + np.arange(P)[None, :, None]) * (H * W)
    return _Plan(nb * P * H * W, [(np.arange(K), pos, w.reshape(K, P, -1).astype(dt))])


# ------------------------------------------------------------------------------ layouts
def _rows(x, ps, P):
    """x (N, C, H, W) as rows: (N*H*W, C) or, position-sensitive, (N*P*H*W, C/P)."""
    N, C, H, W = x.shape
    if ps:
        return np.ascontiguousarray(x.reshape(N, C // P, P, H * W).transpose(0, 2, 3, 1)).reshape(-1, C // P)
    return np.ascontiguousarray(x.reshape(N, C, H * W).transpose(0, 2, 1)).reshape(-1, C)


def _unrows(r, shape, ps, P):
    N, C, H, W = shape
    if ps:
        return np.ascontiguousarray(r.reshape(N, P, H * W, C // P).transpose(0, 3, 1, 2)).reshape(shape)
    return np.ascontiguousarray(r.reshape(N, H * W, C).transpose(0, 2, 1)).reshape(shape)


def _out(o, PH, PW):
    """(K, P, C) -> (K, C, PH, PW)."""
    K, P, C = o.shape
    return np.ascontiguousarray(o.transpose(0, 2, 1)).reshape(K, C, PH, PW)


def _grad_rows(g, PH, PW):
    K, C = g.shape[:2]
    return np.ascontiguousarray(g.reshape(K, C, PH * PW).transpose(0, 2, 1))


def _check_rois(x, rois, name):
    _check(rois.ndim == 2 and rois.shape[1] == 5, "rois must have shape as Tensor[K, 5]")
    _check(x.dtype == rois.dtype, f"{name}: input should have the same type as rois")


_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _float(x, name, half=True):
    """The kernels' dtype dispatch: floating types (float16 too where ``half``)."""
    if x.dtype.kind != "f" or (not half and x.dtype == np.float16):
        raise RuntimeError(f'"{name}" not implemented for \'{_TORCH_NAMES.get(str(x.dtype), str(x.dtype))}\'')


# ------------------------------------------------------------------------------ the gradient nodes
class _GradNode(Node):
    """A torchvision backward operator: differentiable once only, as torchvision's."""
    op = ""

    def backward(self, *grads):
        raise RuntimeError(f"double backwards on {self.op} not supported")


class RoiScatter(_GradNode, name="RoIAlignBackwardFunctionBackward"):
    """The gradient of a roi op with respect to its input: g (K, C', PH, PW) scattered through the plan
    into zeros of ``shape`` (torchvision's _roi_align_backward, _ps_roi_align_backward, _ps_roi_pool_backward)."""

    def forward(self, g, rois=None):
        PH, PW = g.shape[2:]
        if g.dtype == np.float16:
            g = g.astype(np.float32)
        if getattr(self.plan, "sep", None) is not None:
            return _scatter_separable(self.plan, g, self.shape, self.ps).astype(self.dtype, copy=False)
        r = _scatter(self.plan, _grad_rows(g, PH, PW))
        P = PH * PW
        return _unrows(r, self.shape, self.ps, P).astype(self.dtype, copy=False)


class RoiPoolScatter(_GradNode, name="RoIPoolBackwardFunctionBackward"):
    """roi_pool's gradient: g summed into zeros (N, C, H, W) at each bin's argmax (-1: nowhere)."""
    op = "roi_pool"

    def forward(self, g, rois=None, argmax=None):
        N, C, H, W = self.shape
        b = self.b
        K = g.shape[0]
        am = self.argmax.astype(np.int64)
        keep = am >= 0
        flat = ((b[:, None, None, None] * C + np.arange(C)[None, :, None, None]) * (H * W) + am)[keep]
        out = np.bincount(flat, weights=np.asarray(g, np.float64)[keep], minlength=N * C * H * W) if K else \
            np.zeros(N * C * H * W)
        return out.astype(g.dtype).reshape(self.shape)


# ------------------------------------------------------------------------------ roi_align
class RoiAlign(Node, name="RoIAlignFunctionBackward"):
    """torchvision::roi_align: the average of bilinear samples over each bin of each roi."""
    ps = False

    def forward(self, x, rois):
        _float(x, self.op)
        _check_rois(x, rois, self.op)
        N, C, H, W = x.shape
        PH, PW = self.PH, self.PW
        dt = np.float32 if x.dtype == np.float16 else x.dtype
        P = PH * PW
        if self.ps:
            _check(C % P == 0, "input channels must be a multiple of pooling height * pooling width")
        self.plan = plan = _align_plan(rois, dt, self.scale, PH, PW, self.sr, self.aligned, H, W, N, self.ps)
        self.shape, self.dtype = x.shape, x.dtype
        K = rois.shape[0]
        Cp = C // P if self.ps else C
        o = _gather(plan, _rows(x.astype(dt, copy=False), self.ps, P), K, P) if K and N * C * H * W else \
            array_module(x).zeros((K, P, Cp), dt)
        if self.ps:
            o[plan.nan_rois] = np.nan
        return _out(o, PH, PW).astype(x.dtype, copy=False)

    def backward(self, g):
        return RoiScatter.apply(g, plan=self.plan, shape=self.shape, dtype=self.dtype, ps=self.ps,
                                op=self.op), None


class PsRoiAlign(RoiAlign, name="PSROIAlignFunctionBackward"):
    """torchvision::ps_roi_align: roi_align in which bin p of output channel c reads channel c * P + p;
    always half-pixel aligned, no 1x1 minimum; returns (output, channel_mapping)."""
    ps = True
    aligned = True
    nondiff_outputs = (1,)

    def forward(self, x, rois):
        o = RoiAlign.forward(self, x, rois)
        return o, _channel_mapping(o.shape)


def _channel_mapping(shape):
    K, Co, PH, PW = shape
    cm = (np.arange(Co)[:, None, None] * (PH * PW) + np.arange(PH * PW).reshape(PH, PW)).astype(np.int32)
    return np.ascontiguousarray(np.broadcast_to(cm, shape))


class PsRoiPool(Node, name="PSROIPoolFunctionBackward"):
    """torchvision::ps_roi_pool: the mean of each bin (rounded roi corners), bin p of output channel c
    reading channel c * P + p; returns (output, channel_mapping). The forward kernel clips bins to
    [0, size - 1], its backward to [0, size]: both kept."""
    nondiff_outputs = (1,)
    op = "ps_roi_pool"

    def forward(self, x, rois):
        _check(x.dtype in (np.float32, np.float64), "ps_roi_pool only supports float and double types")
        _check_rois(x, rois, self.op)
        N, C, H, W = x.shape
        PH, PW = self.PH, self.PW
        P = PH * PW
        _check(C % P == 0, "input channels must be a multiple of pooling height * pooling width")
        dt = x.dtype
        self.shape, self.dtype, self.rois = x.shape, dt, rois
        K = rois.shape[0]
        plan = _pool_plan(rois, dt, self.scale, PH, PW, H, W, N, H - 1, W - 1)
        o = _gather(plan, _rows(x, True, P), K, P) if K and x.size else array_module(x).zeros((K, P, C // P), dt)
        o = _out(o, PH, PW)
        return o, _channel_mapping(o.shape)

    def backward(self, g):
        N, C, H, W = self.shape
        plan = _pool_plan(self.rois, self.dtype, self.scale, self.PH, self.PW, H, W, N, H, W)
        return RoiScatter.apply(g, plan=plan, shape=self.shape, dtype=self.dtype, ps=True, op=self.op), None


# ------------------------------------------------------------------------------ roi_pool
class RoiPool(Node, name="ROIPoolFunctionBackward"):
    """torchvision::roi_pool: the max of each bin (rounded roi corners, bins clipped to the image; an
    empty bin is 0), with its flat position h * W + w (int32, -1 where nothing was pooled). The first
    maximum in row-major order; NaN never wins; a bin whose values are all <= -FLT_MAX gives -FLT_MAX
    and -1, as the kernel's running maximum starting at -FLT_MAX."""
    nondiff_outputs = (1,)
    op = "roi_pool"

    def forward(self, x, rois):
        _check(x.dtype in (np.float32, np.float64), "roi_pool only supports float and double types")
        _check_rois(x, rois, self.op)
        N, C, H, W = x.shape
        PH, PW = self.PH, self.PW
        dt = x.dtype
        T = dt.type
        b, box = _rois_of(rois, dt)
        K = len(b)
        st = _round(box * T(self.scale)).astype(np.int64)
        sw, sh, ew, eh = st[:, 0], st[:, 1], st[:, 2], st[:, 3]
        rw, rh = np.maximum(ew - sw + 1, 1), np.maximum(eh - sh + 1, 1)
        bh, bw = rh.astype(dt) / T(PH), rw.astype(dt) / T(PW)
        ph, pw = np.arange(PH, dtype=dt), np.arange(PW, dtype=dt)
        hs = np.clip(np.floor(ph[None] * bh[:, None]).astype(np.int64) + sh[:, None], 0, H)
        he = np.clip(np.ceil((ph[None] + 1) * bh[:, None]).astype(np.int64) + sh[:, None], 0, H)
        ws = np.clip(np.floor(pw[None] * bw[:, None]).astype(np.int64) + sw[:, None], 0, W)
        we = np.clip(np.ceil((pw[None] + 1) * bw[:, None]).astype(np.int64) + sw[:, None], 0, W)
        xp = array_module(x)
        out = xp.zeros((K, C, PH, PW), dt)
        arg = xp.full((K, C, PH, PW), -1, np.int32)
        lo = -_FLT_MAX.astype(dt)
        xt = np.ascontiguousarray(x.transpose(0, 2, 3, 1))                   # (N, H, W, C)
        for k in range(K):          # one roi at a time, one window offset at a time (bins padded to the largest)
            nh, nw = he[k] - hs[k], we[k] - ws[k]
            mh, mw = max(int(nh.max()), 0), max(int(nw.max()), 0)
            if mh == 0 or mw == 0 or C == 0:
                continue
            best = xp.full((PH, PW, C), lo, dt)
            pos = xp.full((PH, PW, C), -1, np.int64)
            img = xt[b[k]]
            for i in range(mh):     # row-major window order and a strict > : the first maximum wins, NaN never
                r, vr = np.minimum(hs[k] + i, H - 1), i < nh
                for j in range(mw):
                    c, vc = np.minimum(ws[k] + j, W - 1), j < nw
                    v = img[r[:, None], c[None, :]]                         # (PH, PW, C)
                    take = (v > best) & (vr[:, None] & vc[None, :])[..., None]
                    np.copyto(best, v, where=take)
                    np.copyto(pos, (r[:, None] * W + c[None, :])[..., None], where=take)
            best[(nh[:, None] <= 0) | (nw[None, :] <= 0)] = 0               # an empty bin is 0
            out[k] = best.transpose(2, 0, 1)
            arg[k] = pos.transpose(2, 0, 1)
        self.b, self.argmax, self.shape = b, arg, x.shape
        return out, arg

    def backward(self, g):
        return RoiPoolScatter.apply(g, b=self.b, argmax=self.argmax, shape=self.shape), None


# ------------------------------------------------------------------------------ deform_conv2d
def _deform_corners(x, off, H, W, kh, kw, sh, sw, ph, pw, dh, dw, OH, OW, og):
    """One image's sampling: per offset group g, kernel offset k and output position l, the four corners
    (flat index, C's validity, weight) of the bilinear sample at y = oy*sh - ph + i*dh + off_y (likewise x),
    and the fractions for the offset gradient. off: (og, 2K, L) in x's dtype."""
    K, L = kh * kw, OH * OW
    dt = x.dtype
    off = off.reshape(og, K, 2, L)
    oy, ox = np.divmod(np.arange(L), OW)
    i, j = np.divmod(np.arange(K), kw)
    by = (oy[None, :] * sh - ph) + i[:, None] * dh                       # (K, L) ints
    bx = (ox[None, :] * sw - pw) + j[:, None] * dw
    y = by.astype(dt) + off[:, :, 0]                                     # (og, K, L)
    xx = bx.astype(dt) + off[:, :, 1]
    with np.errstate(invalid="ignore"):
        yl, xl = np.floor(y), np.floor(xx)
    ly, lx = y - yl, xx - xl
    yl = np.nan_to_num(yl, nan=-2, posinf=-2, neginf=-2).astype(np.int64)
    xl = np.nan_to_num(xl, nan=-2, posinf=-2, neginf=-2).astype(np.int64)
    inside = (y > -1) & (y < H) & (xx > -1) & (xx < W)
    cy = (yl, yl, yl + 1, yl + 1)
    cx = (xl, xl + 1, xl, xl + 1)
    ok = tuple((a >= 0) & (a <= H - 1) & (c >= 0) & (c <= W - 1) for a, c in zip(cy, cx))
    idx = np.stack([np.where(o, a * W + c, 0) for o, a, c in zip(ok, cy, cx)], 1)      # (og, 4, K, L)
    hy, hx = 1 - ly, 1 - lx
    w = np.stack([hy * hx, hy * lx, ly * hx, ly * lx], 1)
    wv = np.where(np.stack(ok, 1) & inside[:, None], w, np.zeros((), dt))
    return idx.reshape(og, 4, K * L), np.stack(ok, 1).reshape(og, 4, K * L), wv.reshape(og, 4, K * L), \
        ly.reshape(og, K * L), lx.reshape(og, K * L)


class DeformConv2d(Node, name="DeformConv2dFunctionBackward"):
    """torchvision::deform_conv2d: a convolution whose every kernel tap samples the input bilinearly at its
    position plus a learned offset, times an optional mask (DCNv2); one image at a time, one GEMM per
    weight group. Gradients to input, weight, offset, mask and bias as torchvision's backward kernel (the
    offset gradient uses its coordinate weights, which read the corners without the [-1, size] check)."""
    save = (0, 1, 2, 3)
    saved_names = ("input", "weight", "offset", "mask")
    op = "deform_conv2d"

    def _geometry(self, x, w, off, mask):
        N, Cin, H, W = x.shape
        Cout, Cg, kh, kw = w.shape
        dh, dw, sh, sw, ph, pw = self.dil_h, self.dil_w, self.stride_h, self.stride_w, self.pad_h, self.pad_w
        OH = (H + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
        OW = (W + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
        return N, Cin, H, W, Cout, Cg, kh, kw, OH, OW

    def forward(self, x, w, off, mask, bias):
        _float(x, self.op)
        _check(x.ndim == 4 and off.ndim == 4 and w.ndim == 4, "Expected 4-D input, weight and offset")
        N, Cin, H, W, Cout, Cg, kh, kw, OH, OW = self._geometry(x, w, off, mask)
        gw, og = self.n_weight_grps, self.n_offset_grps
        _check(kh > 0 and kw > 0, f"weight_h: {kh} weight_w: {kw}")
        _check(self.stride_h > 0 and self.stride_w > 0, f"stride_h: {self.stride_h} stride_w: {self.stride_w}")
        _check(self.pad_h >= 0 and self.pad_w >= 0, f"pad_h: {self.pad_h} pad_w: {self.pad_w}")
        _check(self.dil_h > 0 and self.dil_w > 0, f"dilation_h: {self.dil_h} dilation_w: {self.dil_w}")
        _check(Cg * gw == Cin, "Expected weight.size(1) * n_weight_grps == input.size(1)")
        _check(Cout % gw == 0, "Expected weight.size(0) % n_weight_grps == 0")
        _check(off.shape[1] == og * 2 * kh * kw,
               f"offset.shape[1] is not valid: got: {off.shape[1]} expected: {og * 2 * kh * kw}")
        _check(Cin % og == 0, "Expected input.size(1) % n_offset_grps == 0")
        _check(off.shape[0] == N, "invalid batch size of offset")
        _check(off.shape[2] == OH and off.shape[3] == OW,
               f"offset output dims: ({off.shape[2]}, {off.shape[3]}) - computed output dims: ({OH}, {OW})")
        if self.use_mask:
            _check(mask.ndim == 4, "Expected 4-D mask")
            _check(mask.shape[1] == og * kh * kw,
                   f"mask.shape[1] is not valid: got: {mask.shape[1]} expected: {og * kh * kw}")
            _check(mask.shape[0] == N, "invalid batch size of mask")
            _check(mask.shape[2] == OH and mask.shape[3] == OW,
                   f"mask output dims: ({mask.shape[2]}, {mask.shape[3]}) - computed output dims: ({OH}, {OW})")
        _check(OH > 0 and OW > 0, f"Calculated output size too small - out_h: {OH} out_w: {OW}")
        self._geo = (N, Cin, H, W, Cout, Cg, kh, kw, OH, OW)
        out = array_module(x).zeros((N, Cout, OH * OW), x.dtype)
        wm = w.reshape(gw, Cout // gw, Cg * kh * kw)
        for n in range(N):
            cols, _ = self._columns(x, off, mask, n)
            out[n] = np.matmul(wm, cols.reshape(gw, -1, OH * OW)).reshape(Cout, -1)
        return (out.reshape(N, Cout, OH, OW) + bias.reshape(1, Cout, 1, 1)).astype(x.dtype, copy=False)

    def _columns(self, x, off, mask, n, keep=False):
        """Image n's columns (Cin * K, L) (mask applied) and, with keep, what backward needs."""
        N, Cin, H, W, Cout, Cg, kh, kw, OH, OW = self._geo
        og, K, L = self.n_offset_grps, kh * kw, OH * OW
        idx, ok, wv, ly, lx = _deform_corners(x[n], off[n].reshape(og, 2 * K, L), H, W, kh, kw, self.stride_h,
                                              self.stride_w, self.pad_h, self.pad_w, self.dil_h, self.dil_w,
                                              OH, OW, og)
        xf = x[n].reshape(og, Cin // og, H * W)
        v = xf[np.arange(og)[:, None, None, None], np.arange(Cin // og)[None, :, None, None], idx[:, None]]
        samp = np.einsum("gjm,gcjm->gcm", wv, v)                          # (og, Cg_off, K*L)
        m = mask[n].reshape(og, 1, K * L) if self.use_mask else None
        cols = samp * m if m is not None else samp
        extra = (idx, ok, wv, ly, lx, v, samp, m) if keep else None
        return cols.reshape(Cin * K, L), extra

    def backward(self, g):
        x, w, off, mask = (t._data for t in self.saved_values)
        res = self._grads(g._data, x, w, off, mask)
        nf = self.next_functions
        return tuple(_T(r) if nf[i][0] is not None else None for i, r in enumerate(res))

    def _grads(self, g, x, w, off, mask):
        """(grad input, weight, offset, mask, bias) as arrays: torchvision's backward kernel."""
        self._geo = geo = self._geometry(x, w, off, mask)
        N, Cin, H, W, Cout, Cg, kh, kw, OH, OW = geo
        gw, og, K, L = self.n_weight_grps, self.n_offset_grps, kh * kw, OH * OW
        Co = Cin // og
        dt = x.dtype
        gx, gwt = np.zeros_like(x), np.zeros((gw, Cout // gw, Cg * K), dt)
        goff = np.zeros_like(off)
        gmask = np.zeros_like(mask)
        wm = w.reshape(gw, Cout // gw, Cg * K)
        g3 = g.reshape(N, gw, Cout // gw, L)
        for n in range(N):
            cols, (idx, ok, wv, ly, lx, v, samp, m) = self._columns(x, off, mask, n, keep=True)
            gwt += np.matmul(g3[n], cols.reshape(gw, Cg * K, L).transpose(0, 2, 1))
            gc = np.matmul(wm.transpose(0, 2, 1), g3[n]).reshape(og, Co, K * L)     # grad of the columns
            gcm = gc * m if m is not None else gc
            # input: the adjoint of the bilinear gather
            pos = (np.arange(Cin).reshape(og, Co, 1, 1) * (H * W) + idx[:, None]).ravel()
            vals = (gcm[:, :, None, :] * wv[:, None]).ravel()
            gx[n] = np.bincount(pos, weights=vals, minlength=Cin * H * W).reshape(Cin, H, W)
            # offset: the kernel's coordinate weights (corner validity only)
            vc = np.where(ok[:, None], v, np.zeros((), dt))                        # (og, Co, 4, K*L)
            v1, v2, v3, v4 = vc[:, :, 0], vc[:, :, 1], vc[:, :, 2], vc[:, :, 3]
            cy = lx[:, None] * (v4 - v2) + (1 - lx[:, None]) * (v3 - v1)
            cx = ly[:, None] * (v4 - v3) + (1 - ly[:, None]) * (v2 - v1)
            oy = (gcm * cy).sum(1).reshape(og, K, L)
            ox = (gcm * cx).sum(1).reshape(og, K, L)
            goff[n] = np.stack([oy, ox], 2).reshape(og * 2 * K, OH, OW)
            if m is not None:
                gmask[n] = (gc * samp).sum(1).reshape(og * K, OH, OW)
        gb = g.sum((0, 2, 3)).astype(dt)
        return gx, gwt.reshape(w.shape), goff, gmask, gb


# ------------------------------------------------------------------------------ nms
def nms_indices(boxes, scores, iou_threshold):
    """torchvision::nms on arrays: indices (int64) of the kept boxes, by decreasing score (ties in index
    order). A box is dropped when its IoU with a kept box exceeds the threshold (compared in double)."""
    _check(boxes.ndim == 2, f"boxes should be a 2d tensor, got {boxes.ndim}D")
    _check(boxes.shape[1] == 4, f"boxes should have 4 elements in dimension 1, got {boxes.shape[1]}")
    _check(scores.ndim == 1, f"scores should be a 1d tensor, got {scores.ndim}D")
    _check(boxes.shape[0] == scores.shape[0], "boxes and scores should have same number of elements in "
           f"dimension 0, got {boxes.shape[0]} and {scores.shape[0]}")
    _check(boxes.dtype == scores.dtype, "dets should have the same type as scores")
    _float(boxes, "nms_kernel", half=False)
    n = boxes.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((-scores, ~np.isnan(scores)))    # descending, NaN first, ties stable
    b = boxes[order]
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    area = (x2 - x1) * (y2 - y1)
    alive = np.ones(n, bool)
    keep = []
    zero = np.zeros((), boxes.dtype)
    thr = float(iou_threshold)
    for i in range(n):
        if not alive[i]:
            continue
        keep.append(i)
        r = np.flatnonzero(alive[i + 1:]) + i + 1
        if not len(r):
            break
        # std::max / std::min exactly: max(a, b) = a < b ? b : a
        xx1 = np.where(x1[i] < x1[r], x1[r], x1[i])
        yy1 = np.where(y1[i] < y1[r], y1[r], y1[i])
        xx2 = np.where(x2[r] < x2[i], x2[r], x2[i])
        yy2 = np.where(y2[r] < y2[i], y2[r], y2[i])
        dw, dh = xx2 - xx1, yy2 - yy1
        inter = np.where(zero < dw, dw, zero) * np.where(zero < dh, dh, zero)
        with np.errstate(invalid="ignore", divide="ignore"):
            ovr = inter / (area[i] + area[r] - inter)
        alive[r[ovr.astype(np.float64) > thr]] = False
    return order[np.asarray(keep, np.int64)].astype(np.int64)


# ------------------------------------------------------------------------------ the operators
def _arr(t):
    return t._data if isinstance(t, Tensor) else np.asarray(t)


def nms(dets, scores, iou_threshold):
    return _T(nms_indices(_arr(dets), _arr(scores), iou_threshold))


def roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    return RoiAlign.apply(input, rois, scale=float(spatial_scale), PH=int(pooled_height), PW=int(pooled_width),
                          sr=int(sampling_ratio), aligned=bool(aligned), op="roi_align")


def _roi_align_backward(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size, channels, height,
                        width, sampling_ratio, aligned):
    g, r = _arr(grad), _arr(rois)
    plan = _align_plan(r, np.float32 if g.dtype == np.float16 else g.dtype, float(spatial_scale),
                       int(pooled_height), int(pooled_width), int(sampling_ratio), bool(aligned),
                       int(height), int(width), int(batch_size), False)
    return RoiScatter.apply(grad, rois, plan=plan, shape=(batch_size, channels, height, width), dtype=g.dtype,
                            ps=False, op="roi_align")


def ps_roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    return PsRoiAlign.apply(input, rois, scale=float(spatial_scale), PH=int(pooled_height),
                            PW=int(pooled_width), sr=int(sampling_ratio), op="ps_roi_align")


def _ps_roi_align_backward(grad, rois, channel_mapping, spatial_scale, pooled_height, pooled_width,
                           sampling_ratio, batch_size, channels, height, width):
    g, r = _arr(grad), _arr(rois)
    plan = _align_plan(r, np.float32 if g.dtype == np.float16 else g.dtype, float(spatial_scale),
                       int(pooled_height), int(pooled_width), int(sampling_ratio), True,
                       int(height), int(width), int(batch_size), True)
    return RoiScatter.apply(grad, rois, plan=plan, shape=(batch_size, channels, height, width), dtype=g.dtype,
                            ps=True, op="ps_roi_align")


def roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    return RoiPool.apply(input, rois, scale=float(spatial_scale), PH=int(pooled_height), PW=int(pooled_width))


def _roi_pool_backward(grad, rois, argmax, spatial_scale, pooled_height, pooled_width, batch_size, channels,
                       height, width):
    b, _ = _rois_of(_arr(rois), _arr(grad).dtype)
    return RoiPoolScatter.apply(grad, rois, argmax, b=b, argmax=_arr(argmax),
                                shape=(batch_size, channels, height, width))


def ps_roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    return PsRoiPool.apply(input, rois, scale=float(spatial_scale), PH=int(pooled_height), PW=int(pooled_width))


def _ps_roi_pool_backward(grad, rois, channel_mapping, spatial_scale, pooled_height, pooled_width, batch_size,
                          channels, height, width):
    g = _arr(grad)
    plan = _pool_plan(_arr(rois), g.dtype, float(spatial_scale), int(pooled_height), int(pooled_width),
                      int(height), int(width), int(batch_size), int(height), int(width))
    return RoiScatter.apply(grad, rois, plan=plan, shape=(batch_size, channels, height, width), dtype=g.dtype,
                            ps=True, op="ps_roi_pool")


def deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
                  n_weight_grps, n_offset_grps, use_mask):
    return DeformConv2d.apply(input, weight, offset, mask, bias,
                              **_deform_params(stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, n_weight_grps,
                                               n_offset_grps, use_mask))


def _deform_params(stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, n_weight_grps, n_offset_grps, use_mask):
    return dict(stride_h=int(stride_h), stride_w=int(stride_w), pad_h=int(pad_h), pad_w=int(pad_w),
                dil_h=int(dil_h), dil_w=int(dil_w), n_weight_grps=int(n_weight_grps),
                n_offset_grps=int(n_offset_grps), use_mask=bool(use_mask))


class DeformConv2dGrad(_GradNode, name="DeformConv2dBackwardFunctionBackward"):
    """torchvision::_deform_conv2d_backward: the five gradients of deform_conv2d."""
    op = "deform_conv2d"

    def forward(self, g, x, w, off, mask, bias):
        return DeformConv2d._grads(self, g, x, w, off, mask)


DeformConv2dGrad._geometry = DeformConv2d._geometry
DeformConv2dGrad._columns = DeformConv2d._columns


def _deform_conv2d_backward(grad, input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dil_h,
                            dil_w, n_weight_grps, n_offset_grps, use_mask):
    return DeformConv2dGrad.apply(grad, input, weight, offset, mask, bias,
                                  **_deform_params(stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, n_weight_grps,
                                                   n_offset_grps, use_mask))


def _cuda_version():
    return -1


def _unsupported(name, why):
    def kernel(*args, **kwargs):
        raise NotImplementedError(f"torchvision::{name} is not implemented in hookgrad ({why})")
    kernel.__name__ = name
    return kernel


# the operators of torchvision's _C library: name -> (schema, implementation)
OPERATORS = {
    "nms": ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor", nms),
    "roi_align": ("roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                  "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor", roi_align),
    "_roi_align_backward": ("_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, "
                            "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
                            "SymInt height, SymInt width, int sampling_ratio, bool aligned) -> Tensor",
                            _roi_align_backward),
    "roi_pool": ("roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                 "SymInt pooled_width) -> (Tensor, Tensor)", roi_pool),
    "_roi_pool_backward": ("_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
                           "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
                           "SymInt height, SymInt width) -> Tensor", _roi_pool_backward),
    "ps_roi_align": ("ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                     "SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)", ps_roi_align),
    "_ps_roi_align_backward": ("_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
                               "float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
                               "int sampling_ratio, SymInt batch_size, SymInt channels, SymInt height, "
                               "SymInt width) -> Tensor", _ps_roi_align_backward),
    "ps_roi_pool": ("ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                    "SymInt pooled_width) -> (Tensor, Tensor)", ps_roi_pool),
    "_ps_roi_pool_backward": ("_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
                              "float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
                              "SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
                              _ps_roi_pool_backward),
    "deform_conv2d": ("deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
                      "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
                      "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor",
                      deform_conv2d),
    "_deform_conv2d_backward": ("_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, "
                                "Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, "
                                "SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, "
                                "SymInt offset_groups, bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
                                _deform_conv2d_backward),
    "box_iou_rotated": ("box_iou_rotated(Tensor boxes1, Tensor boxes2) -> Tensor",
                        _unsupported("box_iou_rotated", "rotated boxes come later")),
    "qnms": ("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
             _unsupported("qnms", "hookgrad has no quantized tensors")),
    "qroi_align": ("qroi_align(Tensor input, Tensor rois, float input_scale, int input_zero_point, "
                   "float rois_scale, int rois_zero_point, float spatial_scale, SymInt pooled_height, "
                   "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
                   _unsupported("qroi_align", "hookgrad has no quantized tensors")),
    "_cuda_version": ("_cuda_version() -> int", _cuda_version),
}
