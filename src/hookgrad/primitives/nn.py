"""Neural-network primitives (softmax, conv, pooling, dropout, embedding, norms, losses): forward and
backward side by side. Installs its own Tensor methods at import (softmax, log_softmax, ...).

Linear maps come in pairs whose backwards are each other (conv / conv-transpose / conv-weight,
pooling / its scatter, pad / crop ...), so every gradient here is itself differentiable.
Backwards that are not linear in the gradient (softmax, norms) are written with Tensor ops.
"""
import math

import numpy as np
from .._array import as_strided
from .. import _array, _dtype as D

from .._tensor import Tensor
from ..autograd.node import Node
from ..autograd.formulas import TENSORS, ARRAYS
from ..autograd.grad_mode import _state
from ..autograd.saved import _FREED
from .._array import array_module
from .. import _parallel
from .._jit import fast, kernel, rows
from ._kernels import exp32, _f32
from .elementwise import _fused


def _T(a):
    return Tensor._make(a)


def _need(node, i):
    return node.next_functions[i][0] is not None


def _zero_grad(node, i, like):
    """PyTorch's ``zeros_like(self)`` for an input a backward kernel takes only for its shape (the ``self``
    of max_pool2d_with_indices_backward, nll_loss_backward...): a zero tensor of the module of the Tensor
    ``like``, no graph; None if unneeded."""
    if node.next_functions[i][0] is None:
        return None
    shape, dt = node._in_meta[i]
    return Tensor._make(array_module(like._data).zeros(shape, dt))


# ------------------------------------------------------------------------------ softmax
@kernel
def _row_max(x, r):
    """The largest value of row r of x, by 8 running maxima (one does not vectorise: 5x slower). A NaN need not
    win here: the softmaxes' sums make the row NaN."""
    n = x.shape[1]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = _f32(-np.inf)
    e = n - n % 8
    for j in range(0, e, 8):
        m0, m1, m2, m3 = max(m0, x[r, j]), max(m1, x[r, j + 1]), max(m2, x[r, j + 2]), max(m3, x[r, j + 3])
        m4, m5, m6, m7 = max(m4, x[r, j + 4]), max(m5, x[r, j + 5]), max(m6, x[r, j + 6]), max(m7, x[r, j + 7])
    m = max(max(max(m0, m1), max(m2, m3)), max(max(m4, m5), max(m6, m7)))
    for j in range(e, n):
        m = max(m, x[r, j])
    return m


@kernel
def _softmax_rows(x, out):
    """Each row: exp(x - max) times 1 / sum, as PyTorch's vectorised last-dim kernel (a row with NaN, or one
    all -inf, is NaN)."""
    n = x.shape[1]
    for r in range(x.shape[0]):
        m = _row_max(x, r)
        s = _f32(0)
        for j in range(n):
            e = exp32(x[r, j] - m)
            out[r, j] = e
            s += e
        inv = _f32(1) / s
        for j in range(n):
            out[r, j] *= inv


@kernel
def _softmax_grad_rows(g, y, out):
    """Each row: y (g - sum(g y)), PyTorch's softmax_backward_data."""
    n = g.shape[1]
    for r in range(g.shape[0]):
        d = _f32(0)
        for j in range(n):
            d += g[r, j] * y[r, j]
        for j in range(n):
            out[r, j] = y[r, j] * (g[r, j] - d)


@kernel
def _log_softmax_rows(x, out):
    """Each row: x - max - log(sum(exp(x - max))), as PyTorch's vectorised last-dim kernel."""
    n = x.shape[1]
    for r in range(x.shape[0]):
        m = _row_max(x, r)
        s = _f32(0)
        for j in range(n):
            s += exp32(x[r, j] - m)
        lse = m + np.log(s)
        for j in range(n):
            out[r, j] = x[r, j] - lse


@kernel
def _log_softmax_grad_rows(g, y, out):
    """Each row: g - exp(y) sum(g), PyTorch's log_softmax_backward_data."""
    n = g.shape[1]
    for r in range(g.shape[0]):
        s = _f32(0)
        for j in range(n):
            s += g[r, j]
        for j in range(n):
            out[r, j] = g[r, j] - exp32(y[r, j]) * s


class Softmax(Node, name="SoftmaxBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (-1,)
    saved_names = ("result",)
    saved_attrs = ("dim",)

    def jvp(self, p, t, out):
        # forward AD: y * (t - sum(y * t)) along dim
        yt = out * t[0]
        return yt - out * yt.sum(self.dim, keepdim=True)

    def forward(self, x):
        if fast(x) and x.size and self.dim == x.ndim - 1:
            out = np.empty(x.shape, x.dtype)
            return rows(_softmax_rows, x, outs=(out,))[0]
        if not x.size:          # (NumPy's max refuses an empty row)
            return array_module(x).empty_like(x)
        k = _fused(x) if x.ndim else None
        if k is not None:       # the CUDA device: fused kernels (_cuda_kernels)
            return k.softmax(x, self.dim)
        e = np.exp(x - x.max(axis=self.dim, keepdims=True))
        e /= e.sum(axis=self.dim, keepdims=True)
        return e

    def backward(self, g, F=TENSORS):
        (y,) = F.saved(self)
        if fast(g, y) and g.shape == y.shape and g.size and self.dim == g.ndim - 1:     # arrays: a plain backward
            out = np.empty(g.shape, g.dtype)
            return rows(_softmax_grad_rows, g, outs=(y, out))[1]     # y rides along row by row, read only
        k = None if F is TENSORS or not g.ndim else _fused(g, y)
        if k is not None:
            return k.softmax_grad(g, y, self.dim)
        gy = g * y
        return gy - y * F.sum(gy, self.dim, True)


class LogSoftmax(Node, name="LogSoftmaxBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (-1,)
    saved_names = ("result",)
    saved_attrs = ("dim",)

    def jvp(self, p, t, out):
        # forward AD: t - sum(exp(y) * t) along dim
        return t[0] - (out.exp() * t[0]).sum(self.dim, keepdim=True)

    def forward(self, x):
        if not x.size:
            return array_module(x).empty_like(x)
        if fast(x) and self.dim == x.ndim - 1:
            return rows(_log_softmax_rows, x, outs=(np.empty(x.shape, x.dtype),))[0]
        k = _fused(x) if x.ndim else None
        if k is not None:       # the CUDA device: fused kernels (_cuda_kernels)
            return k.log_softmax(x, self.dim)
        s = x - x.max(axis=self.dim, keepdims=True)
        s -= np.log(np.exp(s).sum(axis=self.dim, keepdims=True))
        return s

    def backward(self, g, F=TENSORS):
        (y,) = F.saved(self)
        if fast(g, y) and g.shape == y.shape and g.size and self.dim == g.ndim - 1:     # arrays: a plain backward
            return rows(_log_softmax_grad_rows, g, outs=(y, np.empty(g.shape, g.dtype)))[1]
        k = None if F is TENSORS or not g.ndim else _fused(g, y)
        if k is not None:
            return k.log_softmax_grad(g, y, self.dim)
        return g - F.exp(y) * F.sum(g, self.dim, True)


def _softmax_dim(ndim):
    import warnings
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


_SCALAR = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int", "int16": "Short",
           "int8": "Char", "uint8": "Byte", "bool": "Bool", "bfloat16": "BFloat16"}


def _softmax_prep(x, dim, dtype, name="softmax"):
    if not isinstance(x, Tensor):
        from .._errors import not_tensor
        raise not_tensor(name, x)
    if dtype is not None:
        x = x.to(dtype)
    if x._data.dtype.kind != "f" and not D.has_float_kernels(x._data.dtype):
        raise NotImplementedError(f'"{name}_lastdim_kernel_impl" not implemented for '
                                  f'\'{_SCALAR.get(x.dtype.name, x.dtype.name)}\'')
    nd = x._data.ndim
    if dim is None:
        dim = _softmax_dim(nd)
    if not -max(nd, 1) <= dim < max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, {max(nd, 1) - 1}], "
                         f"but got {dim})")
    return x, (dim % nd if nd else None)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    x, d = _softmax_prep(input, dim, dtype)
    return Softmax.apply(x, dim=d)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    x, d = _softmax_prep(input, dim, dtype, "log_softmax")
    return LogSoftmax.apply(x, dim=d)


# ----------------------------------------------------------------------- im2col / col2im
# The helpers below work for any number of spatial dims n (1-d, 2-d, 3-d): x is (N, C, *S), the kernel
# k, stride s and dilation d have n entries, the padding p has 2n (before, after) per spatial dim.
def _prod(v):
    r = 1
    for e in v:
        r *= e
    return r


def _pad_spatial(x, p, fill=0):
    """x with its last len(p) // 2 dims padded by p (before, after per dim) with ``fill``; x itself when p is
    all zero. (A fill and one slice assignment: np.pad is several times slower.)"""
    if not any(p):
        return x
    nd = len(p) // 2
    lead, sp = x.shape[:x.ndim - nd], x.shape[x.ndim - nd:]
    out = array_module(x).full(lead + tuple(sp[i] + p[2 * i] + p[2 * i + 1] for i in range(nd)), fill, x.dtype)
    out[(Ellipsis,) + tuple(slice(p[2 * i], p[2 * i] + sp[i]) for i in range(nd))] = x
    return out


def _im2col(x, k, s, p, d):
    """x (N, C, *S) -> columns (N, C*prod(k), prod(O)) and the output grid O (unfold's layout)."""
    x = _pad_spatial(x, p)
    n, c, sp = x.shape[0], x.shape[1], x.shape[2:]
    o = tuple((sp[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(len(k)))
    st = x.strides
    win = as_strided(x, (n, c) + tuple(k) + o, st[:2] + tuple(st[2 + i] * d[i] for i in range(len(k))) +
                     tuple(st[2 + i] * s[i] for i in range(len(k))))
    return win.reshape(n, c * _prod(k), _prod(o)), o


_GRAIN = 1 << 18        # elements moved by one pool chunk at least (~100 us of strided copying)


def _blocks(n, c, per, fn):
    """``fn(n0, n1, c0, c1)`` over blocks of the images or of the channels, whichever are more, on the pool
    (``_parallel``); ``per``: elements moved per image and channel. Each block writes only its own part."""
    if c >= n:
        _parallel.parallel_for(c, lambda lo, hi: fn(0, n, lo, hi), max(1, _GRAIN // max(1, per * n)))
    else:
        _parallel.parallel_for(n, lambda lo, hi: fn(lo, hi, 0, c), max(1, _GRAIN // max(1, per * c)))


def _columns(x, k, s, p, d, outc=1):
    """im2col in the batch layout: x (N, C, *S) -> columns (C*prod(k), N*prod(grid)), the images side by side,
    so that one GEMM covers the batch (N GEMMs are slow when an image has few output positions, and the
    weight gradient becomes one product instead of N and a sum). Filled on the pool by blocks of images or
    channels. Returns (cols, O, grid).

    With stride 1 and a kernel > 1 the columns are "wide" when their junk costs the GEMM (``outc`` output
    channels per column) less than the copy saves (junk fraction x outc <= 12): the column of a kernel offset is
    one contiguous run of the flattened padded image shifted by the offset's flat position, so the copy moves
    long runs instead of short rows (2-3x faster). The grid is then O[0] x P[1:] (P the padded sizes): the
    entries past O[i] in the later dims are junk that the forward crops and the adjoints feed zeros into."""
    n, c, sp = x.shape[0], x.shape[1], x.shape[2:]
    nd = len(k)
    ps = tuple(sp[i] + p[2 * i] + p[2 * i + 1] for i in range(nd))
    o = tuple((ps[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd))
    grid = o[:1] + ps[1:]
    wide = all(v == 1 for v in s) and any(v != 1 for v in k) and (_prod(grid) - _prod(o)) * outc <= 12 * _prod(o)
    if not wide:
        grid = o
    xp = array_module(x)
    cols = xp.empty((c * _prod(k), n * _prod(grid)), x.dtype)
    dst = cols.reshape((c,) + tuple(k) + (n,) + grid)
    perm = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))    # win -> dst axes
    inner = tuple(slice(p[2 * i], p[2 * i] + sp[i]) for i in range(nd))

    def fill(n0, n1, c0, c1):
        xs = x[n0:n1, c0:c1]
        if wide:
            es = tuple(_prod(ps[i + 1:]) for i in range(nd))          # flat element strides of the padded image
            size = _prod(ps)
            flat = xp.zeros(xs.shape[:2] + (size + sum(d[i] * (k[i] - 1) * es[i] for i in range(1, nd)),), x.dtype)
            flat[:, :, :size].reshape(xs.shape[:2] + ps)[(Ellipsis,) + inner] = xs
            sn, sc, se = flat.strides
            win = as_strided(flat, xs.shape[:2] + tuple(k) + grid, (sn, sc) + tuple(d[i] * es[i] * se for i in range(nd))
                             + tuple(es[i] * se for i in range(nd)))
        else:
            xpd = _pad_spatial(xs, p)
            st = xpd.strides
            win = as_strided(xpd, xs.shape[:2] + tuple(k) + o, st[:2] + tuple(st[2 + i] * d[i] for i in range(nd)) +
                             tuple(st[2 + i] * s[i] for i in range(nd)))
        dst[(slice(c0, c1),) + (slice(None),) * nd + (slice(n0, n1),)] = win.transpose(perm)

    _blocks(n, c, _prod(k) * _prod(grid), fill)
    return cols, o, grid


def _images(y, osz, b=None, out=None):
    """The GEMM's (O, N, *grid) -> the images' (N, O, *osz) (into ``out`` when given): cropped to osz (wide
    grids), the bias added on the way, on the pool."""
    o, n = y.shape[0], y.shape[1]
    bb = None if b is None else b.reshape((o,) + (1,) * len(osz))
    if out is None and n == 1 and tuple(y.shape[2:]) == tuple(osz):     # a view of the GEMM's fresh result
        out = y.reshape((1, o) + tuple(osz))
        if bb is not None:
            out += bb
        return out
    src = y[_crop(osz)].swapaxes(0, 1)
    if out is None:
        out = array_module(y).empty((n, o) + tuple(osz), y.dtype)

    def part(n0, n1, c0, c1):
        if bb is None:
            out[n0:n1, c0:c1] = src[n0:n1, c0:c1]
        else:
            np.add(src[n0:n1, c0:c1], bb[c0:c1], out=out[n0:n1, c0:c1])

    _blocks(n, o, _prod(osz), part)
    return out


def _batched(y, grid):
    """The images' (N, O, *osz) -> (O, N*prod(grid)), the columns' layout (zeros in a wide grid's junk), on the
    pool: the inverse of _images."""
    n, o, osz = y.shape[0], y.shape[1], tuple(y.shape[2:])
    if n == 1 and osz == tuple(grid):
        return y.reshape(o, -1)
    xp = array_module(y)
    yb = (xp.empty if osz == tuple(grid) else xp.zeros)((o, n) + tuple(grid), y.dtype)
    dst = yb[_crop(osz)]

    def part(n0, n1, c0, c1):
        dst[c0:c1, n0:n1] = y[n0:n1, c0:c1].swapaxes(0, 1)

    _blocks(n, o, _prod(osz), part)
    return yb.reshape(o, -1)


@kernel
def _col2im2d_kernel(cols, n0, n1, c0, c1, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, out):
    """out (N, C, H, W), images n0:n1 and channels c0:c1: each plane zeroed, then the columns (C*kh*kw, N*oh*ow)
    added back in _col2im's order (kernel offsets row by row), each offset over the output positions that land
    inside the image (no padded copy to crop)."""
    hh, ww = out.shape[2], out.shape[3]
    for c in range(c0, c1):
        for b in range(n0, n1):
            for iy in range(hh):
                for ix in range(ww):
                    out[b, c, iy, ix] = 0
            for ki in range(kh):
                y0, y1 = max(0, -((ki * dh - ph) // sh)), min(oh, (hh - 1 + ph - ki * dh) // sh + 1)
                for kj in range(kw):
                    x0, x1 = max(0, -((kj * dw - pw) // sw)), min(ow, (ww - 1 + pw - kj * dw) // sw + 1)
                    row = (c * kh + ki) * kw + kj
                    for oy in range(y0, y1):
                        iy = oy * sh + ki * dh - ph
                        src = (b * oh + oy) * ow
                        for ox in range(x0, x1):
                            out[b, c, iy, ox * sw + kj * dw - pw] += cols[row, src + ox]


def _col2im(cols, shape, k, s, p, d, o, batch=False, out=None):
    """Adjoint of im2col: sum the columns back into an (N, C, *S) image, one slice-add per kernel offset, on the
    pool by blocks of images or channels. ``cols``: (N, C*prod(k), prod(o)) (unfold's layout), or with
    ``batch`` (C*prod(k), N*prod(o)) (_columns' layout, no junk). Written into ``out`` when given. Compiled for
    2-d float images in the batch layout (NumPy's slice-adds are slow on small images: ResNet's 4x4 layers)."""
    n, c, sp = shape[0], shape[1], tuple(shape[2:])
    nd = len(k)
    xp = array_module(cols)
    if batch and nd == 2 and fast(cols) and cols.flags.c_contiguous and \
            (out is None or (out.flags.c_contiguous and out.dtype == cols.dtype)):
        res = np.empty(tuple(shape), cols.dtype) if out is None else out
        cols = cols.reshape(_prod(cols.shape[:-1]), cols.shape[-1])      # groups: (g, C/g*prod(k), M)
        geo = (k[0], k[1], s[0], s[1], p[0], p[2], d[0], d[1], o[0], o[1])
        _blocks(n, c, _prod(k) * _prod(o), lambda n0, n1, c0, c1: _col2im2d_kernel(cols, n0, n1, c0, c1, *geo, res))
        return res
    if out is not None and not any(p):
        out[...] = 0
        acc = out
    else:
        acc = xp.zeros((n, c) + tuple(sp[i] + p[2 * i] + p[2 * i + 1] for i in range(nd)), cols.dtype)
    cv = cols.reshape(((c,) + tuple(k) + (n,) if batch else (n, c) + tuple(k)) + tuple(o))
    ext = tuple(s[i] * (o[i] - 1) + 1 for i in range(nd))
    res = out if out is not None else (xp.empty((n, c) + sp, cols.dtype) if any(p) else acc)
    inner = (Ellipsis,) + tuple(slice(p[2 * i], p[2 * i] + sp[i]) for i in range(nd))

    def part(n0, n1, c0, c1):
        blk = acc[n0:n1, c0:c1]
        for off in np.ndindex(*k):
            if batch:
                src = cv[(slice(c0, c1),) + off + (slice(n0, n1),)].swapaxes(0, 1)
            else:
                src = cv[(slice(n0, n1), slice(c0, c1)) + off]
            blk[(Ellipsis,) + tuple(slice(off[i] * d[i], off[i] * d[i] + ext[i], s[i]) for i in range(nd))] += src
        if res is not acc:
            res[n0:n1, c0:c1] = blk[inner]

    _blocks(n, c, _prod(k) * _prod(o), part)
    return res


def _crop(o):
    """The index of the real outputs in a wide column grid (whose first dim is already O[0])."""
    return (Ellipsis,) + tuple(slice(0, v) for v in o[1:])


_BLOCK_BYTES = 8 << 20       # the columns of one tile of images: cache-sized


def _tiles(x, per):
    """The batch of x split into tiles of images, ``per`` bytes of columns each: cache-sized, and on the CPU at
    least as many as threads (a multiple of them), so that each thread runs its own im2col and its own
    single-threaded GEMM on its tile (``_parallel.tiles``) and the copies scale with the products, as oneDNN
    does. One tile on other devices, or when the batch has one image. Returns the tiles' bounds."""
    n = x.shape[0]
    t = _parallel.get_num_threads() if array_module(x) is np else 1
    k = min(max(n, 1), max(-(-n * per // _BLOCK_BYTES), min(n, t), 1))
    if t > 1 and k > 1:
        k = min(n, -(-k // t) * t)
    return [n * i // k for i in range(k + 1)]


# Winograd F(2x2, 3x3): a 3x3 stride-1 convolution as 16 GEMMs over 4x4 input tiles (stride 2), 2.25x fewer
# multiplications than the columns' GEMM and a quarter of their copying. Used on the compiled path for float32
# images with enough channels (the transforms are adds; the products are BLAS's).


_WINO_MIN_TILES = 256


def _all_finite(*arrays):
    """Whether every value of the arrays is finite (one summing pass each: an inf or NaN makes the sum non-finite;
    an overflowing sum says no too, which only costs the fast path)."""
    return all(bool(np.isfinite(np.add.reduce(a, axis=None))) for a in arrays)


def _winograd_ok(ws, s, d, g, *arrays):
    """Whether a convolution of weight shape ws goes by Winograd: 3x3, stride 1, no dilation or groups, >= 16
    channels in and out, enough tiles of the batch for the transforms to pay (about the output's pixels / 4;
    fewer: the columns' GEMM is as fast), the arrays float32 on the compiled path and every value finite (the
    tiles mix neighbours: an inf would turn into NaNs beside it). ``arrays[0]``: the images (N, C, H, W)."""
    x = arrays[0]
    return (len(ws) == 4 and tuple(ws[2:]) == (3, 3) and tuple(s) == (1, 1) and tuple(d) == (1, 1) and g == 1
            and ws[0] >= 16 and ws[1] >= 16 and x.ndim == 4
            and x.shape[0] * ((x.shape[2] + 1) // 2) * ((x.shape[3] + 1) // 2) >= _WINO_MIN_TILES and fast(*arrays)
            and _all_finite(*arrays))


@kernel
def _wino_in_kernel(xp, r0, r1, v):
    """Padded images xp (n, C, 2th+2, 2tw+2), tile rows r0:r1 of the batch (row r: image r // th, row r % th)
    -> v (16, C, (r1-r0)*tw): the 4x4 window of tile (i, j) at (2i, 2j) as B^T d B, in column (r - r0)*tw + j.
    B^T d is taken once per column of a row of tiles, into its even and odd columns (contiguous loads after)."""
    th, tw = (xp.shape[2] - 2) // 2, (xp.shape[3] - 2) // 2
    ev = np.empty((4, tw + 1), xp.dtype)
    od = np.empty((4, tw + 1), xp.dtype)
    for c in range(xp.shape[1]):
        for row in range(r0, r1):
            b, i = row // th, row % th
            for h in range(2):
                e = ev if h == 0 else od
                for q in range(tw + 1):
                    x0, x1 = xp[b, c, 2 * i, 2 * q + h], xp[b, c, 2 * i + 1, 2 * q + h]
                    x2, x3 = xp[b, c, 2 * i + 2, 2 * q + h], xp[b, c, 2 * i + 3, 2 * q + h]
                    e[0, q] = x0 - x2
                    e[1, q] = x1 + x2
                    e[2, q] = x2 - x1
                    e[3, q] = x1 - x3
            t0 = (row - r0) * tw
            for k in range(4):
                for j in range(tw):
                    a0, a1, a2, a3 = ev[k, j], od[k, j], ev[k, j + 1], od[k, j + 1]
                    v[4 * k, c, t0 + j] = a0 - a2
                    v[4 * k + 1, c, t0 + j] = a1 + a2
                    v[4 * k + 2, c, t0 + j] = a2 - a1
                    v[4 * k + 3, c, t0 + j] = a1 - a3


@kernel
def _wino_out_kernel(m, r0, r1, th, tw, bias, out):
    """Products m (16, K, (r1-r0)*tw) of the batch's tile rows r0:r1 -> images out (n, K, OH, OW): A^T m A for
    each tile, plus bias (K,), cropped."""
    oh, ow = out.shape[2], out.shape[3]
    s = np.empty((8, tw), m.dtype)
    for k in range(out.shape[1]):
        bk = bias[k]
        for row in range(r0, r1):
            b, i = row // th, row % th
            t0 = (row - r0) * tw
            for q in range(4):            # rows: A^T m
                for j in range(tw):
                    a1, a2 = m[4 + q, k, t0 + j], m[8 + q, k, t0 + j]
                    s[q, j] = m[q, k, t0 + j] + a1 + a2
                    s[4 + q, j] = a1 - a2 - m[12 + q, k, t0 + j]
            for r in range(2):
                rr = 2 * i + r
                if rr < oh:
                    for j in range(tw):
                        qq = 2 * j
                        out[b, k, rr, qq] = s[4 * r, j] + s[4 * r + 1, j] + s[4 * r + 2, j] + bk
                        if qq + 1 < ow:
                            out[b, k, rr, qq + 1] = s[4 * r + 1, j] - s[4 * r + 2, j] - s[4 * r + 3, j] + bk


@kernel
def _wino_w_kernel(w, u):
    """The weight w (K, C, 3, 3) -> u (16, K, C): G w G^T for each (k, c)."""
    t = np.empty(12, w.dtype)
    for k in range(w.shape[0]):
        for c in range(w.shape[1]):
            for j in range(3):              # G g: rows
                g0, g1, g2 = w[k, c, 0, j], w[k, c, 1, j], w[k, c, 2, j]
                t[j], t[3 + j], t[6 + j], t[9 + j] = g0, (g0 + g1 + g2) * 0.5, (g0 - g1 + g2) * 0.5, g2
            for a in range(4):              # (G g) G^T: columns
                g0, g1, g2 = t[3 * a], t[3 * a + 1], t[3 * a + 2]
                u[4 * a, k, c] = g0
                u[4 * a + 1, k, c] = (g0 + g1 + g2) * 0.5
                u[4 * a + 2, k, c] = (g0 - g1 + g2) * 0.5
                u[4 * a + 3, k, c] = g2


def _staggered(shape, dtype):
    """An array (16, *shape) whose planes start one cache line apart from a multiple of 4 KiB: 16 planes a power
    of two in size would map the kernels' 16 streams to one cache set (4K aliasing: 4x slower)."""
    size = _prod(shape)
    return np.empty((16, size + 16), dtype)[:, :size].reshape((16,) + tuple(shape))


def _winograd_weight(w):
    """The weight (K, C, 3, 3) as G w G^T: (16, K, C), by blocks of K on the pool (512 x 512 channels: 4 ms on
    one thread)."""
    u = _staggered(w.shape[:2], w.dtype)
    _parallel.parallel_for(w.shape[0], lambda lo, hi: _wino_w_kernel(w[lo:hi], u[:, lo:hi]),
                           max(1, _GRAIN // max(1, 16 * w.shape[1])))
    return u


_WINO_BLOCK = 4 << 20       # bytes of transformed input per band of tile rows: cache-sized


def _wino_padded(x, p, th, tw):
    """x (n, C, H, W) in a zero frame (n, C, 2th+2, 2tw+2): p[0] rows above, p[2] columns to the left."""
    hh, ww = x.shape[2], x.shape[3]
    xp = np.zeros(x.shape[:2] + (2 * th + 2, 2 * tw + 2), x.dtype)
    rows, cols = min(hh, 2 * th + 2 - p[0]), min(ww, 2 * tw + 2 - p[2])
    xp[:, :, p[0]:p[0] + rows, p[2]:p[2] + cols] = x[:, :, :rows, :cols]
    return xp


@kernel
def _wino_grad_out_kernel(gy, r0, r1, th, tw, gm):
    """The adjoint of _wino_out_kernel: gradients gy (n, K, OH, OW) of the batch's tile rows r0:r1 -> gm (16, K,
    (r1-r0)*tw), A dy A^T for each 2x2 tile of gy (zeros past the edges)."""
    oh, ow = gy.shape[2], gy.shape[3]
    for k in range(gy.shape[1]):
        for row in range(r0, r1):
            b, i = row // th, row % th
            t0 = (row - r0) * tw
            for j in range(tw):
                y00 = gy[b, k, 2 * i, 2 * j]
                y01 = gy[b, k, 2 * i, 2 * j + 1] if 2 * j + 1 < ow else gy.dtype.type(0)
                y10 = gy[b, k, 2 * i + 1, 2 * j] if 2 * i + 1 < oh else gy.dtype.type(0)
                y11 = gy[b, k, 2 * i + 1, 2 * j + 1] if 2 * i + 1 < oh and 2 * j + 1 < ow else gy.dtype.type(0)
                for e in range(4):          # row e of A dy, then its columns times A^T
                    if e == 0:
                        a0, a1 = y00, y01
                    elif e == 1:
                        a0, a1 = y00 + y10, y01 + y11
                    elif e == 2:
                        a0, a1 = y00 - y10, y01 - y11
                    else:
                        a0, a1 = -y10, -y11
                    gm[4 * e, k, t0 + j] = a0
                    gm[4 * e + 1, k, t0 + j] = a0 + a1
                    gm[4 * e + 2, k, t0 + j] = a0 - a1
                    gm[4 * e + 3, k, t0 + j] = -a1


@kernel
def _wino_w_grad_kernel(gu, gw):
    """The adjoint of _wino_w_kernel: gu (16, K, C) -> gw (K, C, 3, 3), G^T gu G for each (k, c)."""
    t = np.empty(12, gw.dtype)
    h = np.float32(0.5)
    for k in range(gw.shape[0]):
        for c in range(gw.shape[1]):
            for b in range(4):              # G^T s: rows
                s0, s1, s2, s3 = gu[b, k, c], gu[4 + b, k, c], gu[8 + b, k, c], gu[12 + b, k, c]
                t[b], t[4 + b], t[8 + b] = s0 + (s1 + s2) * h, (s1 - s2) * h, (s1 + s2) * h + s3
            for i in range(3):              # (G^T s) G: columns
                s0, s1, s2, s3 = t[4 * i], t[4 * i + 1], t[4 * i + 2], t[4 * i + 3]
                gw[k, c, i, 0] = s0 + (s1 + s2) * h
                gw[k, c, i, 1] = (s1 - s2) * h
                gw[k, c, i, 2] = (s1 + s2) * h + s3


def _winograd_weight_grad(x, gy, p):
    """d<gy, conv(x, w)>/dw for a 3x3 stride-1 convolution of x (n, C, H, W) with padding p, gy (n, K, OH, OW):
    per band of tile rows, the input's transform (as the forward's) and gy's (A dy A^T), 16 products
    (K, tiles) x (tiles, C) summed over the bands, then G^T . G back to (K, C, 3, 3)."""
    n, c = x.shape[0], x.shape[1]
    k, oh, ow = gy.shape[1], gy.shape[2], gy.shape[3]
    th, tw = -(-oh // 2), -(-ow // 2)
    band = max(1, min(n * th, _WINO_BLOCK // (64 * max(c, k) * tw)))
    xp = _wino_padded(x, p, th, tw)
    v, gm = _staggered((c, band * tw), x.dtype), _staggered((k, band * tw), x.dtype)
    gu = None
    for r0 in range(0, n * th, band):
        r1 = min(n * th, r0 + band)
        nt = (r1 - r0) * tw
        vb, gb = (v, gm) if nt == band * tw else (v[:, :, :nt], gm[:, :, :nt])
        _wino_in_kernel(xp, r0, r1, vb)
        _wino_grad_out_kernel(gy, r0, r1, th, tw, gb)
        if gu is None:
            gu = _staggered((k, c), x.dtype)
            np.matmul(gb, vb.transpose(0, 2, 1), out=gu)
        else:
            gu += np.matmul(gb, vb.transpose(0, 2, 1))
    gw = np.empty((k, c, 3, 3), x.dtype)
    _wino_w_grad_kernel(gu, gw)
    return gw


def _winograd(x, u, bias, p, out):
    """x (n, C, H, W) convolved with the transformed weight u (16, K, C), padding p: into out (n, K, OH, OW).
    Per band of the batch's tile rows (cache-sized): the band's transform, its 16 products, their transform back."""
    n, c, hh, ww = x.shape
    oh, ow = out.shape[2], out.shape[3]
    th, tw = -(-oh // 2), -(-ow // 2)
    band = max(1, min(n * th, _WINO_BLOCK // (64 * c * tw)))
    xp = _wino_padded(x, p, th, tw)
    v, m = _staggered((c, band * tw), x.dtype), _staggered((u.shape[1], band * tw), x.dtype)
    for r0 in range(0, n * th, band):
        r1 = min(n * th, r0 + band)
        nt = (r1 - r0) * tw
        vb, mb = (v, m) if nt == band * tw else (v[:, :, :nt], m[:, :, :nt])
        _wino_in_kernel(xp, r0, r1, vb)
        np.matmul(u, vb, out=mb)
        _wino_out_kernel(mb, r0, r1, th, tw, bias, out)
    return out


@kernel
def _pad_plane(src, top, left, wp, dst):
    """A plane src (H, W) into a flat padded plane: row iy at dst[(iy + top) * wp + left:], rows ``wp`` long; the
    padding around it is left as it is (the caller's fill: zeros for a convolution, -inf for max-pool)."""
    for iy in range(src.shape[0]):
        for ix in range(src.shape[1]):
            dst[(iy + top) * wp + left + ix] = src[iy, ix]


# A direct convolution for few channels: with few output channels and a short inner dimension (the first layers
# of small CNNs, their input gradients) the columns' GEMM runs far below BLAS's speed and the copies around it
# dominate; here each output plane accumulates its taps straight from the padded image, four output channels at a
# time sharing each load.

# O * C * kh * kw of the convolutions that go direct, by the kernel's width (1, 2, 3 or more taps a row: the kernels
# take up to three taps of a row per pass over their accumulators, so wider rows stay direct further); above, the
# columns' GEMM or Winograd wins (measured on 2 threads, forward and backward: 3 -> 64 channels at 32 x 32 2.5x faster
# direct, 16 -> 32 at 14 x 14 1.1x, 32 -> 32 1.08x slower; 1 x 1, 32 -> 32 1.5x slower)
_DIRECT_MAX = (256, 1152, 4608)
# and any convolution with few output channels over planes of 14 x 14 or more (rows of three taps or more): the
# columns' GEMM of so few rows runs far below BLAS's speed while the copy into C x kh x kw columns costs as much as
# for many (512 -> 8 channels at 28 x 28: 61 -> 24 ms forward and backward, 64 -> 16 at 56 x 56: 27.6 -> 19.9 ms;
# on 7 x 7 planes the columns win)
_DIRECT_FEW, _DIRECT_PLANE = 16, 196


def _direct_ok(ws, s, g, *arrays):
    """Whether a convolution of weight shape ws goes direct: 2-d, stride 1, no groups, few channels (O * C * kh * kw
    at most _DIRECT_MAX for its width, or at most _DIRECT_FEW output channels on large planes), the arrays float32 on
    the compiled path. ``arrays[0]``: the images (N, C, H, W)."""
    x = arrays[0]
    if len(ws) != 4 or tuple(s) != (1, 1) or g != 1 or x.ndim != 4:
        return False
    few = ws[0] <= _DIRECT_FEW and ws[3] >= 3 and x.shape[2] * x.shape[3] >= _DIRECT_PLANE
    return (few or _prod(ws) <= _DIRECT_MAX[max(1, min(ws[3], 3)) - 1]) and fast(*arrays)


@kernel
def _direct_conv2d_kernel(x, w, b, lo, hi, pt, pl, hp, wp, dh, dw, out):
    """out = conv(x, w) + b, stride 1, for the units lo:hi of (image, block of four output channels) pairs in image
    order (a pool chunk's; so that one image's blocks can go to several threads): per image its planes padded and
    flattened (rows ``wp`` long), then per block of four output channels every tap added as a shifted run of a flat
    plane over the wide grid OH x wp (so that the loop is long; the entries past OW are junk, not copied out). Three
    taps of a kernel row at a time (one pass over the four accumulator rows for twelve products: one tap a pass was
    bound by their loads and stores, 1.3-1.5x slower), added in the taps' order: the same bits as one at a time."""
    cc = x.shape[1]
    oc, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    oh, ow = out.shape[2], out.shape[3]
    m = oh * wp
    xf = np.zeros((cc, hp * wp + (kw - 1) * dw), x.dtype)
    acc = np.empty((4, m), x.dtype)
    wb = np.empty((4, kw), x.dtype)         # the block's weights of one kernel row (zeros past the last channel)
    zero = _f32(0)
    nblk = (oc + 3) // 4
    padded = -1
    for u in range(lo, hi):
        n, o0 = u // nblk, 4 * (u % nblk)
        if n != padded:
            for c in range(cc):
                _pad_plane(x[n, c], pt, pl, wp, xf[c])
            padded = n
        nb = min(4, oc - o0)
        for j in range(4):
            bv = b[o0 + j] if j < nb else zero
            for q in range(m):
                acc[j, q] = bv
        a0, a1, a2, a3 = acc[0], acc[1], acc[2], acc[3]
        for c in range(cc):
            for ki in range(kh):
                for j in range(4):
                    for kj in range(kw):
                        wb[j, kj] = w[o0 + j, c, ki, kj] if j < nb else zero
                kj = 0
                while kj < kw:
                    off = ki * dh * wp + kj * dw
                    if kj + 3 <= kw:
                        y0, y1, y2 = xf[c, off:off + m], xf[c, off + dw:off + dw + m], \
                            xf[c, off + 2 * dw:off + 2 * dw + m]
                        p0, q0, r0 = wb[0, kj], wb[0, kj + 1], wb[0, kj + 2]
                        p1, q1, r1 = wb[1, kj], wb[1, kj + 1], wb[1, kj + 2]
                        p2, q2, r2 = wb[2, kj], wb[2, kj + 1], wb[2, kj + 2]
                        p3, q3, r3 = wb[3, kj], wb[3, kj + 1], wb[3, kj + 2]
                        for q in range(m):
                            u0, u1, u2 = y0[q], y1[q], y2[q]
                            a0[q] = a0[q] + p0 * u0 + q0 * u1 + r0 * u2
                            a1[q] = a1[q] + p1 * u0 + q1 * u1 + r1 * u2
                            a2[q] = a2[q] + p2 * u0 + q2 * u1 + r2 * u2
                            a3[q] = a3[q] + p3 * u0 + q3 * u1 + r3 * u2
                        kj += 3
                    else:
                        w0, w1, w2, w3 = wb[0, kj], wb[1, kj], wb[2, kj], wb[3, kj]
                        xr = xf[c, off:off + m]
                        for q in range(m):
                            v = xr[q]
                            a0[q] += w0 * v
                            a1[q] += w1 * v
                            a2[q] += w2 * v
                            a3[q] += w3 * v
                        kj += 1
        for j in range(nb):
            for oy in range(oh):
                for ox in range(ow):
                    out[n, o0 + j, oy, ox] = acc[j, oy * wp + ox]


@kernel
def _direct_wgrad2d_kernel(x, gy, n0, n1, pt, pl, hp, wp, dh, dw, gw):
    """gw (O, C, kh, kw) += d<gy, conv(x, w)>/dw over images n0:n1, stride 1: per image its planes padded and
    flattened as _direct_conv2d_kernel's, gy laid on the same wide grid (zeros past OW), then per block of four
    output channels and per three taps of a kernel row twelve dot products sharing the shifted runs' loads (one tap at
    a time: bound by the loads, 1.15-1.45x slower)."""
    cc = x.shape[1]
    oc, kh, kw = gw.shape[0], gw.shape[2], gw.shape[3]
    oh = gy.shape[2]
    m = oh * wp
    xf = np.zeros((cc, hp * wp + (kw - 1) * dw), x.dtype)
    g = np.zeros((oc + 3, m), x.dtype)             # rows past O stay zero: the last block's missing channels
    s = np.empty((4, 3), x.dtype)
    for n in range(n0, n1):
        for c in range(cc):
            _pad_plane(x[n, c], pt, pl, wp, xf[c])
        for o in range(oc):
            _pad_plane(gy[n, o], 0, 0, wp, g[o])
        for o0 in range(0, oc, 4):
            nb = min(4, oc - o0)
            g0, g1, g2, g3 = g[o0], g[o0 + 1], g[o0 + 2], g[o0 + 3]
            for c in range(cc):
                for ki in range(kh):
                    kj = 0
                    while kj < kw:
                        off = ki * dh * wp + kj * dw
                        if kj + 3 <= kw:
                            t = 3
                            y0, y1, y2 = xf[c, off:off + m], xf[c, off + dw:off + dw + m], \
                                xf[c, off + 2 * dw:off + 2 * dw + m]
                            s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = s30 = s31 = s32 = _f32(0)
                            for q in range(m):
                                u0, u1, u2 = y0[q], y1[q], y2[q]
                                h0, h1, h2, h3 = g0[q], g1[q], g2[q], g3[q]
                                s00 += h0 * u0
                                s01 += h0 * u1
                                s02 += h0 * u2
                                s10 += h1 * u0
                                s11 += h1 * u1
                                s12 += h1 * u2
                                s20 += h2 * u0
                                s21 += h2 * u1
                                s22 += h2 * u2
                                s30 += h3 * u0
                                s31 += h3 * u1
                                s32 += h3 * u2
                            s[0, 0], s[0, 1], s[0, 2], s[1, 0], s[1, 1], s[1, 2] = s00, s01, s02, s10, s11, s12
                            s[2, 0], s[2, 1], s[2, 2], s[3, 0], s[3, 1], s[3, 2] = s20, s21, s22, s30, s31, s32
                        else:
                            xr = xf[c, off:off + m]
                            s0 = s1 = s2 = s3 = _f32(0)
                            for q in range(m):
                                v = xr[q]
                                s0 += g0[q] * v
                                s1 += g1[q] * v
                                s2 += g2[q] * v
                                s3 += g3[q] * v
                            t = 1
                            s[0, 0], s[1, 0], s[2, 0], s[3, 0] = s0, s1, s2, s3
                        for j in range(nb):
                            for e in range(t):
                                gw[o0 + j, c, ki, kj + e] += s[j, e]
                        kj += t


def _direct(x, w, b, p, d):
    """The direct convolution of x (N, C, H, W) and w (O, C, kh, kw), stride 1, padding p (4 values), by runs of
    (image, block of four output channels) pairs on the pool (a single image's blocks on several threads)."""
    n, _, hh, ww = x.shape
    hp, wp = hh + p[0] + p[1], ww + p[2] + p[3]
    oh, ow = hp - d[0] * (w.shape[2] - 1), wp - d[1] * (w.shape[3] - 1)
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    b = np.zeros(w.shape[0], x.dtype) if b is None else np.ascontiguousarray(b, x.dtype)
    out = np.empty((n, w.shape[0], max(oh, 0), max(ow, 0)), x.dtype)
    if out.size:
        units = n * (-(-w.shape[0] // 4))       # (image, block of four output channels) pairs
        _parallel.parallel_for(units, lambda lo, hi: _direct_conv2d_kernel(
            x, w, b, lo, hi, p[0], p[2], hp, wp, d[0], d[1], out), max(1, _GRAIN // max(1, 4 * _prod(w.shape[1:]) * oh * wp)))
    return out


def _direct_wgrad(x, y, ws, p, d):
    """d<y, conv(x, w)>/dw for the convolutions that go direct: the blocks of images on the pool, each summing into
    its own gradient, then the blocks' sums added in order."""
    n, _, hh, ww = x.shape
    hp, wp = hh + p[0] + p[1], ww + p[2] + p[3]
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y, x.dtype)
    k = _parallel.chunks(n, max(1, _GRAIN // max(1, _prod(ws) * y.shape[2] * wp)))
    bounds = [n * i // k for i in range(k + 1)]

    def part(i):
        gw = np.zeros(ws, x.dtype)
        _direct_wgrad2d_kernel(x, y, bounds[i], bounds[i + 1], p[0], p[2], hp, wp, d[0], d[1], gw)
        return gw

    return part(0) if k == 1 else _parallel.tiles(k, part, reduce=True)


def _gemm(wm, cols, out=None):
    """The weight as (g, O/g, C/g*prod(k)) (``_conv``'s, contiguous) against columns (C*prod(k), M): (O, M),
    one product per group; into ``out`` (O, M) when given."""
    g = wm.shape[0]
    if g == 1:
        return np.matmul(wm[0], cols, out=out)
    y = np.matmul(wm, cols.reshape(g, cols.shape[0] // g, cols.shape[-1]),
                  out=None if out is None else out.reshape(g, wm.shape[1], cols.shape[-1]))
    return y.reshape(g * wm.shape[1], cols.shape[-1])


def _conv(x, w, b, s, p, d, g, keep=True):
    """Convolution of arrays (N, C, *S) * (O, C/g, *k): per tile of images (_tiles), the tile's columns and one
    GEMM (per group), or Winograd's bands where it applies (_winograd_ok), written into the output; few channels
    go direct (_direct_ok). Returns (out, tiles): with ``keep`` and columns made, the tiles' bounds, columns and
    grid, which the weight gradient reuses; else None."""
    n, o, k = x.shape[0], w.shape[0], w.shape[2:]
    if _direct_ok(w.shape, s, g, x, w):
        return _direct(x, w, b, p, d), None
    wino = _winograd_ok(w.shape, s, d, g, x, w)
    if wino:
        u, bias = _winograd_weight(w), (np.zeros(o, x.dtype) if b is None else np.ascontiguousarray(b, x.dtype))
        bounds = _tiles(x, x.itemsize * 4 * x.shape[1] * _prod(x.shape[2:]))
    else:       # the weight as the GEMM's matrix, once for all tiles (a transposed or flipped view is copied here)
        wm = array_module(w).ascontiguousarray(w).reshape(g, o // g, -1)
        bounds = _tiles(x, x.itemsize * x.shape[1] * _prod(k) * _prod(x.shape[2:]))
    nt = len(bounds) - 1
    cols_of, grid_of = [None] * nt, [None]
    out = None if nt == 1 and not wino else array_module(x).empty(
        (n, o) + _conv_size(x.shape[2:], k, s, p, d), x.dtype)

    def tile(i):
        n0, n1 = bounds[i], bounds[i + 1]
        if wino:
            return _winograd(x[n0:n1], u, bias, p, out[n0:n1])
        cols, osz, grid = _columns(x[n0:n1], k, s, p, d, o)
        if keep:
            cols_of[i], grid_of[0] = cols, grid
        if out is not None and n1 - n0 == 1 and grid == osz:    # one image: the product is its output's layout
            y = _gemm(wm, cols, out[n0].reshape(o, -1))
            if b is not None:
                y += b.reshape(o, 1)
            return out[n0:n1]
        return _images(_gemm(wm, cols).reshape((o, -1) + grid), osz, b, None if out is None else out[n0:n1])

    if nt == 1:
        out = tile(0)
    else:
        _parallel.tiles(nt, tile)
    return out, ((bounds, cols_of, grid_of[0]) if keep and not wino else None)


def _conv_size(sp, k, s, p, d):
    return tuple((sp[i] + p[2 * i] + p[2 * i + 1] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(len(k)))


_BIG_WEIGHT = 1 << 18      # elements of a weight gradient whose transposition costs more than the product's best orientation


def _conv_weight(x, y, ws, s, p, d, g, tiles=None):
    """d<y, conv(x, w)>/dw: per tile of images, the tile's columns (kept by the forward when given) against
    its part of y, one GEMM (per group) whose inner dimension runs over the tile's output positions; the
    tiles' products summed."""
    o, osz, nd = y.shape[1], tuple(y.shape[2:]), len(ws) - 2
    if _direct_ok(ws, s, g, x, y) and _all_finite(x):     # (the wide grid's junk reads image values: 0 * inf
        return _direct_wgrad(x, y, ws, p, d)                # would make NaN)
    if _winograd_ok(ws, s, d, g, x, y):
        bounds = _tiles(x, x.itemsize * 4 * x.shape[1] * _prod(x.shape[2:]))
        return _parallel.tiles(len(bounds) - 1, lambda i: _winograd_weight_grad(
            x[bounds[i]:bounds[i + 1]], y[bounds[i]:bounds[i + 1]], p), reduce=True)
    if tiles is None:
        bounds = _tiles(x, x.itemsize * x.shape[1] * _prod(ws[2:]) * _prod(x.shape[2:]))
        kept, grid = [None] * (len(bounds) - 1), None
    else:
        bounds, kept, grid = tiles
    big = o * _prod(ws[1:]) >= _BIG_WEIGHT      # a transposing copy of a large gradient costs more (cache misses)

    def tile(i):
        cols, gr = kept[i], grid
        kept[i] = None                 # each tile's columns are used once
        if cols is None:
            cols, _, gr = _columns(x[bounds[i]:bounds[i + 1]], ws[2:], s, p, d, ws[0])
        if tuple(gr) != osz:  # NOTE: junk columns hold image values (inf, NaN): zeroed, or 0 * inf makes NaN
            cv = cols.reshape(cols.shape[:1] + (-1,) + tuple(gr))
            for j in range(1, nd):
                cv[(Ellipsis, slice(osz[j], None)) + (slice(None),) * (nd - 1 - j)] = 0
        yb = _batched(y[bounds[i]:bounds[i + 1]], gr)
        cg, yg = cols.reshape(g, cols.shape[0] // g, cols.shape[-1]), yb.reshape(g, o // g, yb.shape[-1])
        if big:             # y cols^T: the result in the weight's layout
            return np.matmul(yg, cg.swapaxes(1, 2))
        # (cols y^T)^T: OpenBLAS is 5-45% faster with a long inner dimension in this orientation; the transposed
        # result is small enough to copy into the weight's layout once the tiles are summed
        return np.matmul(cg, yg.swapaxes(1, 2)).swapaxes(1, 2)

    nt = len(bounds) - 1
    gw = tile(0) if nt == 1 else _parallel.tiles(nt, tile, reduce=True)
    return array_module(gw).ascontiguousarray(gw).reshape(ws)     # .grad is taken as it is when contiguous (no copy there)


def _conv_transpose(y, w, out_sz, s, p, d, g):
    """Adjoint of _conv in x: y (N, O, *OS) -> (N, C, *out_sz). With stride 1 it is a convolution of
    y with the flipped, transposed kernel (no scatter-add), unless there are more input channels than output
    positions (the kernel's flipped copy would cost more than the scatter-add); otherwise columns summed back by
    _col2im."""
    n, o, osz = y.shape[0], y.shape[1], y.shape[2:]
    cg, k = w.shape[1], w.shape[2:]
    nd = len(k)
    if all(v == 1 for v in s) and cg * g <= n * _prod(osz):
        pads = []
        for i in range(nd):
            ek = d[i] * (k[i] - 1)
            lo = ek - p[2 * i]
            pads += [lo, out_sz[i] - osz[i] - lo + ek]
        if min(pads) >= 0:
            wt = w.reshape((g, o // g, cg) + k).swapaxes(1, 2).reshape((g * cg, o // g) + k)
            return _conv(y, wt[(Ellipsis,) + (slice(None, None, -1),) * nd], None, s, tuple(pads), d, g, False)[0]
    bounds = _tiles(y, y.itemsize * cg * g * _prod(k) * _prod(osz))
    nt = len(bounds) - 1
    out = None if nt == 1 else array_module(y).empty((n, cg * g) + tuple(out_sz), y.dtype)

    def tile(i):
        n0, n1 = bounds[i], bounds[i + 1]
        yb = _batched(y[n0:n1], tuple(osz))
        if g == 1:
            cols = np.matmul(w.reshape(o, -1).T, yb)
        else:
            cols = np.matmul(w.reshape(g, o // g, -1).swapaxes(1, 2), yb.reshape(g, o // g, -1))
        return _col2im(cols, (n1 - n0, cg * g) + tuple(out_sz), k, s, p, d, osz, batch=True,
                       out=None if out is None else out[n0:n1])

    if nt == 1:
        return tile(0)
    _parallel.tiles(nt, tile)
    return out


# --------------------------------------------------------------------------- convolution
# Three bilinear maps, each one's backward written with the other two:
#   Conv(x, w)      = A_w x             (+ bias)
#   ConvTr(y, w)    = A_w^T y           (grad of Conv wrt x; conv_transpose)
#   ConvW(x, y)     = d<y, A_w x>/dw    (grad of Conv wrt w)
# Any number of spatial dims: the geometry (stride, dilation: n values; padding: 2n) says how many.

class _ConvBase(Node):
    opmath = "forward"     # bfloat16: computed in float32, rounded once; backward: products (_dtype.opmath)
    stride = (1, 1)
    padding = (0, 0, 0, 0)
    dilation = (1, 1)
    groups = 1
    output_padding = None

    def _args(self):
        return self.stride, self.padding, self.dilation, self.groups

    def _geo(self):
        return dict(zip(("stride", "padding", "dilation", "groups"), self._args()))


def _bias_grad(node, g):
    """A convolution's bias gradient: g summed over the batch and the spatial dims. In a plain backward, NumPy's sum
    of the float array: PyTorch's CPU convolutions compute it inside their backward (oneDNN's order, not
    torch.sum's), so the sum in torch.sum's order (_reduce_order: 7x slower here, 0.4 ms a layer of the small
    CNN) would buy no bits; under create_graph, the differentiable sum."""
    if len(node.next_functions) > 2 and _need(node, 2):
        dims = (0,) + tuple(range(2, g.dim()))
        a = g._data
        if not _state.enabled and type(a) is np.ndarray and a.dtype in (np.float32, np.float64):
            return Tensor._make(ARRAYS.sum(a, dims))
        return g.sum(dims)
    return None


_CONV_ATTRS = ("stride", "padding=padding[::2]", "dilation", "groups",
               "bias_sym_sizes_opt=input_sizes(2) if len(_in_meta) > 2 and _in_meta[2] is not None else (0,)")


class Conv(_ConvBase, name="ConvolutionBackward0"):
    save = (0, 1)
    saved_names = ("input", "weight")
    saved_attrs = _CONV_ATTRS + ("transposed=False", "output_padding=(0,) * len(stride)")
    _cols_cache = None

    def forward(self, x, w, b=None):
        keep = _state.enabled           # the columns, for the weight gradient (none without grad mode)
        out, tiles = _conv(x, w, b, *self._args(), keep)
        if keep:
            self._cols_cache = (x, tiles)
        return out

    def backward(self, gy):
        x, w = self.saved_values
        geo = self._geo()
        cache, self._cols_cache = self._cols_cache, None
        gx = ConvTrGrad.apply(gy, w, out_hw=x.shape[2:], **geo) if _need(self, 0) else None
        gw = None
        if _need(self, 1):
            tiles = cache[1] if cache is not None and cache[0] is x._data else None
            gw = ConvW.apply(x, gy, wshape=w.shape, tiles=tiles, **geo)
        return gx, gw, _bias_grad(self, gy)


class ConvTr(_ConvBase, name="ConvolutionBackward0"):
    """y (N, O, *OS), w (O, C/g, *k) -> (N, C, *out_hw). ``output_padding`` is set by conv_transpose
    (for grad_fn._saved_output_padding); as a gradient of Conv it is None."""
    save = (0, 1)
    saved_names = ("input", "weight")
    saved_attrs = _CONV_ATTRS + ("transposed=True", "output_padding")

    def forward(self, y, w, b=None):
        out = _conv_transpose(y, w, tuple(self.out_hw), *self._args())
        if b is not None:
            out += b.reshape((-1,) + (1,) * (out.ndim - 2))
        return out

    def backward(self, gx):
        y, w = self.saved_values
        geo = self._geo()
        gy = ConvGrad.apply(gx, w, **geo) if _need(self, 0) else None
        gw = ConvW.apply(gx, y, wshape=w.shape, **geo) if _need(self, 1) else None
        return gy, gw, _bias_grad(self, gx)


class ConvGrad(Conv, name="ConvolutionBackwardBackward0"):
    """Conv as a gradient (of conv_transpose), under PyTorch's name for a convolution's backward."""


class ConvTrGrad(ConvTr, name="ConvolutionBackwardBackward0"):
    """ConvTr as a gradient (of a convolution), under PyTorch's name for a convolution's backward."""


class ConvW(_ConvBase, name="ConvolutionBackwardBackward0"):
    """d<y, conv(x, w)>/dw for x (N, C, *S), y (N, O, *OS)."""
    save = (0, 1)
    saved_names = ("input", "grad_output")
    tiles = None

    def forward(self, x, y):
        cached, self.tiles = self.tiles, None    # the columns kept by Conv's forward, used once
        return _conv_weight(x, y, tuple(self.wshape), *self._args(), cached)

    def backward(self, gw):
        x, y = self.saved_values
        geo = self._geo()
        gx = ConvTr.apply(y, gw, out_hw=x.shape[2:], **geo) if _need(self, 0) else None
        gy = Conv.apply(x, gw, **geo) if _need(self, 1) else None
        return gx, gy


# ------------------------------------------------------------------------------ unfold / fold
class Im2col(_ConvBase, name="Im2ColBackward0"):
    saved_attrs = ("dilation", "kernel_size=kernel", "padding=padding[::2]", "stride",
                   "self_sym_argsize_minus_1=in_shape[-1]", "self_sym_argsize_minus_2=in_shape[-2]")

    def forward(self, x):
        self.in_shape = x.shape
        cols, (self.oh, self.ow) = _im2col(x, self.kernel, self.stride, self.padding, self.dilation)
        return cols

    def backward(self, g):
        return Col2im.apply(g, out_shape=self.in_shape, kernel=self.kernel, oh=self.oh, ow=self.ow, **self._geo())


class Col2im(_ConvBase, name="Col2ImBackward0"):
    def forward(self, cols):
        return _col2im(cols, self.out_shape, self.kernel, self.stride, self.padding, self.dilation, (self.oh, self.ow))

    def backward(self, g):
        return Im2col.apply(g, kernel=self.kernel, **self._geo())


# ------------------------------------------------------------------------------- pooling
# Every pool works over n spatial dims (the last n): kernel, stride, dilation and the output sizes ``osz``
# and input sizes ``in_sz`` have n entries, ``pads`` 2n (before, after; the after-pads include what
# ceil_mode adds). The 3-d forms are subclasses that differ only in PyTorch's grad_fn names.
class _PoolGeo(Node):
    """Window geometry shared by a pooling op and its adjoint: per-offset strided slices."""

    def _slices(self):
        k, s, d, o = self.kernel, self.stride, self.dilation, self.osz
        ext = [s[i] * (o[i] - 1) + 1 for i in range(len(k))]
        for n, off in enumerate(np.ndindex(*k)):
            yield n, (Ellipsis,) + tuple(slice(off[i] * d[i], off[i] * d[i] + ext[i], s[i]) for i in range(len(k)))

    def _padded(self, x, fill):
        return _pad_spatial(x, self.pads, fill)

    def _blocks(self, n, per, fn):
        """``fn(lo, hi)`` over cache-sized blocks of the first dim (``per`` elements each), spread on the pool.
        Each block writes only its own part of the results."""
        step = max(1, (1 << 18) // max(1, per))

        def run(lo, hi):
            for b in range(lo, hi, step):
                fn(b, min(b + step, hi))

        _parallel.parallel_for(n, run, max(1, _GRAIN // max(1, per)))

    def _scatter(self, parts, like):
        """Sum per-offset (N, C, *O) arrays ``parts(k, out_view, lo, hi)`` (of the entries lo..hi of the first
        dim) back into the (unpadded) input shape, by blocks of the first dim on the pool.

        Without overlap (stride >= window extent) each offset writes its own pixels: parts() fills the strided
        view in place (no temporary, no add); otherwise the parts are added. ``like``: the array whose shape,
        dtype and module the result has."""
        shape, dtype, xp = like.shape, like.dtype, array_module(like)
        p, sz, nd = self.pads, self.in_sz, len(self.kernel)
        k, s, d, o = self.kernel, self.stride, self.dilation, self.osz
        full = shape[:-nd] + tuple(sz[i] + p[2 * i] + p[2 * i + 1] for i in range(nd))
        disjoint = all(s[i] >= d[i] * (k[i] - 1) + 1 for i in range(nd))
        tiled = disjoint and all(s[i] == k[i] and d[i] == 1 and full[i - nd] == o[i] * s[i] for i in range(nd))
        out = xp.empty(full, dtype) if tiled else xp.zeros(full, dtype)
        res = xp.empty(shape[:-nd] + tuple(sz), dtype) if any(p) else out
        crop = (Ellipsis,) + tuple(slice(p[2 * i], p[2 * i] + sz[i]) for i in range(nd))

        def run(lo, hi):
            blk = out[lo:hi]
            for n, sl in self._slices():
                if disjoint:
                    parts(n, blk[sl], lo, hi)
                else:
                    blk[sl] += parts(n, None, lo, hi)
            if res is not out:
                res[lo:hi] = blk[crop]

        self._blocks(full[0], _prod(full[1:]), run)
        return res

    def _geo(self):
        return {k: getattr(self, k) for k in ("kernel", "stride", "dilation", "pads", "osz", "in_sz")}


_POOL_GRAIN = 1 << 16     # input elements per chunk of the compiled max-pool (~80 us on one thread)


def _index_dtype(n):
    return np.int8 if n < 128 else np.int32


def _first_max(views):
    """Elementwise max of equally shaped views and the index of the first view attaining it (NaN-free)."""
    if len(views) == 1:
        return views[0].copy(), array_module(views[0]).zeros(views[0].shape, np.int8)
    out = np.maximum(views[0], views[1])
    idx = views[0] != out
    idx = idx.view(np.int8) if len(views) < 128 else idx.astype(np.int32)
    for k, v in enumerate(views[2:], 2):
        np.copyto(idx, k, where=v > out)
        np.maximum(out, v, out=out)
    return out, idx


class MaxPool(_PoolGeo, name="MaxPool2DWithIndicesBackward0"):
    saved_attrs = ("kernel_size=kernel", "stride", "padding=pads[::2]", "dilation", "ceil_mode=False", "result1=arg.astype(\"int64\")")
    nondiff_outputs = (1,)
    save = (0,)
    saved_names = ("self",)

    def forward(self, x):
        arg, out = self._max(x) if x.size else (None, None)
        if arg is None:
            arg, out = self._windowed(self._padded(x, -np.inf))
        if any(self.pads) and out.size and not out.min() > -np.inf:
            self._first_inside(arg, out)
        self.arg = arg
        xp = array_module(x)
        if not self.want_indices:
            return out, xp.empty(0, np.int64)
        k, nd = self.kernel, len(self.kernel)
        a, flat, mult = arg.astype(np.int64), None, 1
        for i in range(nd - 1, -1, -1):    # the window offset of each dim, from the last
            a, off = np.divmod(a, k[i])
            pos = (xp.arange(self.osz[i]) * self.stride[i] - self.pads[2 * i]).reshape((-1,) + (1,) * (nd - 1 - i))
            pos = pos + off * self.dilation[i]
            flat = pos * mult if flat is None else flat + pos * mult
            mult *= self.in_sz[i]
        return out, flat

    def _first_inside(self, arg, out):
        """A window whose max is -inf points, as PyTorch's, at its first offset inside the input (padding is
        -inf too, and may come first)."""
        neg = np.isneginf(out)
        if not neg.any():
            return
        xp, k, s, d, p = array_module(out), self.kernel, self.stride, self.dilation, self.pads
        nd, first = len(k), 0
        for i in range(nd):     # per dim: the smallest offset j with pos + j * d >= 0
            pos = xp.arange(self.osz[i]) * s[i] - p[2 * i]
            first = first * k[i] + xp.maximum(0, -(pos // d[i])).reshape((-1,) + (1,) * (nd - 1 - i))
        np.copyto(arg, xp.broadcast_to(first, arg.shape).astype(arg.dtype), where=neg)

    def _max(self, x):
        """_separable by blocks of the first dim on the pool, each block padding its own part; (None, None)
        when a block meets a NaN. Compiled: _max_pool2d_kernel on the planes of each block."""
        nd, xp = len(self.kernel), array_module(x)
        lead = x.shape[:x.ndim - nd]
        out = xp.empty(lead + tuple(self.osz), x.dtype)
        arg = xp.empty(out.shape, _index_dtype(_prod(self.kernel)))   # the blocks' index dtypes fit in it
        nan = []
        if nd == 2 and fast(x):
            k, s, d, p = self.kernel, self.stride, self.dilation, self.pads
            x3, o3, a3 = np.ascontiguousarray(x).reshape((-1,) + x.shape[-2:]), out.reshape((-1,) + out.shape[-2:]), \
                arg.reshape((-1,) + out.shape[-2:])
            _parallel.parallel_for(x3.shape[0], lambda lo, hi: _max_pool2d_kernel(
                x3[lo:hi], k[0], k[1], s[0], s[1], p[0], p[2], d[0], d[1], o3[lo:hi], a3[lo:hi]),
                max(1, _POOL_GRAIN // max(1, _prod(x.shape[-2:]))))
            return arg, out

        def part(lo, hi):
            a, m = self._separable(self._padded(x[lo:hi], -np.inf))
            if a is None:
                nan.append(True)
            else:
                out[lo:hi], arg[lo:hi] = m, a

        self._blocks(x.shape[0], _prod(x.shape[1:]), part)
        return (None, None) if nan else (arg, out)

    def _separable(self, xpad):
        """The max over each spatial dim in turn, the last first: each pass compares whole strided planes,
        and the first maximum in row-major window order is the first maximum of the outer dim's window
        among the inner dims' first maxima. (None, None) when the result has a NaN (left to _windowed)."""
        k, s, d, o = self.kernel, self.stride, self.dilation, self.osz
        nd = len(k)
        m, arg = xpad, None
        for ax in range(nd - 1, -1, -1):
            e, rest = s[ax] * (o[ax] - 1) + 1, (slice(None),) * (nd - 1 - ax)
            sl = [(Ellipsis, slice(i * d[ax], i * d[ax] + e, s[ax])) + rest for i in range(k[ax])]
            m, j = _first_max([m[v] for v in sl])
            if arg is None:
                arg = j
            elif k[ax] == 1:
                arg = arg[sl[0]].copy()
            else:   # the inner index of the chosen row, by arithmetic (a masked copy is ~10x slower)
                dt, inner = _index_dtype(_prod(k[ax:])), _prod(k[ax + 1:])
                rows = [arg[v] for v in sl]
                new = np.multiply(j, inner, dtype=dt)
                new += rows[0]
                for i in range(1, k[ax]):
                    dd = np.subtract(rows[i], rows[0], dtype=dt)
                    dd *= j == i
                    new += dd
                arg = new
        if np.isnan(m).any():
            return None, None
        return arg, m

    def _windowed(self, xpad):
        views = [xpad[sl] for _, sl in self._slices()]
        out = views[0].copy() if len(views) == 1 else np.maximum(views[0], views[1])
        for v in views[2:]:
            np.maximum(out, v, out=out)
        # argmax = first offset attaining the max; in a window with NaNs, its last NaN (PyTorch's kernel
        # takes every NaN it meets)
        arg = array_module(out).full(out.shape, len(views) - 1, _index_dtype(len(views)))
        for k in range(len(views) - 2, -1, -1):
            np.copyto(arg, k, where=views[k] == out)
        if np.isnan(out).any():
            for k, v in enumerate(views):
                np.copyto(arg, k, where=np.isnan(v))
        return arg, out

    def backward(self, g):
        (x,) = self.saved_values
        return self._grad.apply(g, x, arg=self.arg, **self._geo())


@kernel
def _max_tap(xs, base, step, tap, cnt, ob, ab):
    """One window offset (``tap``) against the running maxima ob[:cnt] and their offsets ab: the scratch plane's
    elements xs[base + step * q]. Branch-free (a compare and two selects), so that it is vectorised; a caller
    passes a constant step where it can (a strided load of a known stride). Takes a greater value and every
    NaN, so that ties keep the first offset and a NaN the last, as PyTorch's kernel."""
    for q in range(cnt):
        v, b = xs[np.uintp(base + step * q)], ob[q]
        take = (v > b) or (v != v)
        ob[q] = v if take else b
        ab[q] = tap if take else ab[q]


@kernel
def _max_pool2d_kernel(x, kh, kw, sh, sw, ph, pw, dh, dw, out, arg):
    """Planes x (P, H, W) -> out, arg (P, OH, OW): each window's max over its positions inside the input, and
    the row-major offset of the first one attaining it, or of its last NaN (PyTorch's kernel takes every NaN
    it meets); a window whose max is -inf gets offset 0 (the forward corrects it where padding comes first).

    Each plane is copied once into a scratch plane with -inf around it (the padding, and the reads past its
    edges), its rows ``wp`` long, a multiple of the column stride; then each window offset is one long
    vectorised pass (_max_tap) over a run of outputs: one output row when the rows are long, else all the rows
    at once, as a grid ``rr`` = sh * wp / sw wide whose entries past OW are junk (rows of a few outputs would
    leave the vector loop unused)."""
    hh, ww = x.shape[1], x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    wp = -(-(ww + 2 * pw + sw) // sw) * sw
    rr = sh * wp // sw
    if ow < 32:
        band, cnt = oh, (oh - 1) * rr + ow
    else:
        band, cnt = 1, -(-ow // 32) * 32
    need = (oh - band) * sh * wp + (kh - 1) * dh * wp + (kw - 1) * dw + sw * (cnt - 1) + 1
    xs = np.full(max(need, (hh + ph) * wp), -np.inf, x.dtype)
    ob = np.empty(cnt, x.dtype)
    ab = np.empty(cnt, np.int32)
    for c in range(x.shape[0]):
        _pad_plane(x[c], ph, pw, wp, xs)
        for r0 in range(0, oh, band):
            for q in range(cnt):
                ob[q] = -np.inf
                ab[q] = 0
            for i in range(kh):
                for j in range(kw):
                    base = (r0 * sh + i * dh) * wp + j * dw
                    if sw == 2:
                        _max_tap(xs, base, 2, i * kw + j, cnt, ob, ab)
                    elif sw == 1:
                        _max_tap(xs, base, 1, i * kw + j, cnt, ob, ab)
                    else:
                        _max_tap(xs, base, sw, i * kw + j, cnt, ob, ab)
            for r in range(r0, min(oh, r0 + band)):
                for q in range(ow):
                    out[c, r, q] = ob[(r - r0) * rr + q]
                    arg[c, r, q] = ab[(r - r0) * rr + q]


@kernel
def _max_scatter2d_kernel(g, arg, kh, kw, sh, sw, ph, pw, dh, dw, out):
    """Planes of g and arg (P, OH, OW) -> out (P, H, W), zeroed here (on the pool's threads: a calloc of reused
    memory is a memset on one): each gradient added at its window's argmax (a window offset in row-major order), in
    output order as PyTorch's kernel adds them; none into padding. The offsets' rows and columns come from a table
    (two integer divisions per output cost more than the rest)."""
    hh, ww = out.shape[1], out.shape[2]
    rows, cols = np.empty(kh * kw, np.int64), np.empty(kh * kw, np.int64)
    for a in range(kh * kw):
        rows[a], cols[a] = (a // kw) * dh - ph, (a % kw) * dw - pw
    for c in range(g.shape[0]):
        for h in range(hh):
            for w in range(ww):
                out[c, h, w] = 0
        for r in range(g.shape[1]):
            for q in range(g.shape[2]):
                a = arg[c, r, q]
                h, w = r * sh + rows[a], q * sw + cols[a]
                if h >= 0 and h < hh and w >= 0 and w < ww:
                    out[c, h, w] += g[c, r, q]


class MaxPoolScatter(_PoolGeo, name="MaxPool2DWithIndicesBackwardBackward0"):
    """The gradient scattered to the argmax positions; ``x`` is only a graph edge, as in PyTorch
    (max_pool2d_with_indices_backward(grad, self, ...) requires grad when self does; its grad is zero)."""

    def forward(self, g, x=None):
        arg = self.arg
        if len(self.kernel) == 2 and fast(g):
            k, s, p, d, sz = self.kernel, self.stride, self.pads, self.dilation, tuple(self.in_sz)
            out = np.empty(g.shape[:-2] + sz, g.dtype)
            g3, a3 = np.ascontiguousarray(g).reshape((-1,) + g.shape[-2:]), arg.reshape((-1,) + arg.shape[-2:])
            o3 = out.reshape((-1,) + sz)
            _parallel.parallel_for(g3.shape[0], lambda lo, hi: _max_scatter2d_kernel(
                g3[lo:hi], a3[lo:hi], k[0], k[1], s[0], s[1], p[0], p[2], d[0], d[1], o3[lo:hi]),
                max(1, _GRAIN // max(1, _prod(g.shape[-2:]))))
            return out
        return self._scatter(lambda k, o, lo, hi: np.multiply(g[lo:hi], arg[lo:hi] == k, out=o), g)

    def backward(self, gg):
        return MaxPoolGather.apply(gg, arg=self.arg, **self._geo()), _zero_grad(self, 1, gg)


class MaxPoolGather(_PoolGeo, name="MaxPoolGatherBackward0"):
    def forward(self, x):
        xpad = self._padded(x, 0)
        out = array_module(x).zeros(self.arg.shape, x.dtype)
        for k, sl in self._slices():
            np.copyto(out, xpad[sl], where=self.arg == k)
        return out

    def backward(self, g):
        return type(self)._scatter_of.apply(g, arg=self.arg, **self._geo())


class MaxPool3D(MaxPool, name="MaxPool3DWithIndicesBackward0"):
    pass


class MaxPool3DScatter(MaxPoolScatter, name="MaxPool3DWithIndicesBackwardBackward0"):
    pass


MaxPool._grad, MaxPool3D._grad = MaxPoolScatter, MaxPool3DScatter
MaxPoolGather._scatter_of = MaxPoolScatter


class AvgPool(_PoolGeo, name="AvgPool2DBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0,)
    saved_names = ("self",)
    saved_attrs = ("kernel_size=kernel", "stride", "padding=pads[::2]", "ceil_mode=False", "count_include_pad=True", "divisor_override=None")

    def forward(self, x):
        xpad = self._padded(x, 0)
        out = None
        for k, sl in self._slices():
            out = xpad[sl].copy() if out is None else out.__iadd__(xpad[sl])
        out /= self.div
        return out

    def backward(self, g):
        (x,) = self.saved_values
        return self._grad.apply(g, x, div=self.div, **self._geo())


class AvgPoolScatter(_PoolGeo, name="AvgPool2DBackwardBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    def forward(self, g, x=None):
        gd = g / self.div
        return self._scatter(lambda k, o, lo, hi: gd[lo:hi] if o is None else np.copyto(o, gd[lo:hi]), g)

    def backward(self, gg):
        return self._pool.apply(gg, div=self.div, **self._geo()), _zero_grad(self, 1, gg)


class AvgPool3D(AvgPool, name="AvgPool3DBackward0"):
    pass


class AvgPool3DScatter(AvgPoolScatter, name="AvgPool3DBackwardBackward0"):
    pass


AvgPool._grad, AvgPool3D._grad, AvgPoolScatter._pool, AvgPool3DScatter._pool = \
    AvgPoolScatter, AvgPool3DScatter, AvgPool, AvgPool3D


# ----------------------------------------------------- pools that pick by flat spatial index
class FlatScatter(Node, name="AdaptiveMaxPool2DBackwardBackward0"):
    """g (..., *O) summed into zeros (..., *S) (S = in_shape's last ``nd`` dims) at flat spatial indices
    idx. ``x`` is only a graph edge, as in PyTorch (adaptive_max_pool2d_backward(grad, self, indices)
    requires grad when self does). The subclasses differ only in PyTorch's grad_fn name."""
    nd = 2

    def forward(self, g, x=None):
        nd, shape = self.nd, self.in_shape
        size = _prod(shape[-nd:])
        lead = _prod(shape[:-nd])
        rows = array_module(g).arange(lead)[:, None] * size
        flat = (rows + self.idx.reshape(lead, -1)).ravel()
        out = np.bincount(flat, weights=g.ravel(), minlength=lead * size)
        return out.astype(g.dtype).reshape(shape)

    def backward(self, gg):
        return FlatGather.apply(gg, idx=self.idx, in_shape=self.in_shape, nd=self.nd, back=type(self)), \
            _zero_grad(self, 1, gg)


class FlatGather(Node, name="FlatGatherBackward0"):
    """x (..., *S) at flat spatial indices idx (..., *O): the adjoint of FlatScatter (``back``)."""

    def forward(self, x):
        nd, idx = self.nd, self.idx
        flat = x.reshape(x.shape[:-nd] + (-1,))
        return np.take_along_axis(flat, idx.reshape(idx.shape[:-nd] + (-1,)), -1).reshape(idx.shape)

    def backward(self, g):
        return self.back.apply(g, idx=self.idx, in_shape=self.in_shape, nd=self.nd)


def _windows_argmax(x, starts, k, nd):
    """Flat spatial index (into x's last nd dims) of the max of each window: window o of dim i starts at
    starts[i][..., o] (arrays whose leading dims broadcast against x's) and spans k[i]. First maximum in
    row-major order; in a window with NaNs its last NaN, as PyTorch's kernels."""
    sz, lead = x.shape[-nd:], x.shape[:-nd]
    flat = x.reshape(lead + (-1,))
    mults = [_prod(sz[i + 1:]) for i in range(nd)]
    osz = tuple(s.shape[-1] for s in starts)
    best = idx = None
    for off in np.ndindex(*k):
        pos = 0
        for i in range(nd):
            pi = (starts[i] + off[i]) * mults[i]
            pos = pos + pi.reshape(pi.shape[:-1] + (1,) * i + (osz[i],) + (1,) * (nd - 1 - i))
        pos = np.broadcast_to(pos, lead + osz)
        v = np.take_along_axis(flat, pos.reshape(lead + (-1,)), -1).reshape(pos.shape)
        if best is None:
            best, idx = v.copy(), pos.copy()
        else:
            take = (v > best) | np.isnan(v)
            np.copyto(best, v, where=take)
            np.copyto(idx, pos, where=take)
    return idx


class _IndexPool(Node):
    """A max pool that picks each output by a flat spatial index (``_indices``), and whose gradient
    scatters there (``_grad``, a FlatScatter)."""
    nondiff_outputs = (1,)
    save = (0,)
    saved_names = ("self",)
    nd = 2

    def forward(self, x):
        idx = self._indices(x)
        self.idx, self.in_shape = idx, x.shape
        return FlatGather.forward(self, x), idx

    def backward(self, g):
        (x,) = self.saved_values
        return self._grad.apply(g, x, idx=self.idx, in_shape=self.in_shape, nd=self.nd)


class AdaptiveMaxPool(_IndexPool, name="AdaptiveMaxPool2DBackward0"):
    """Max over PyTorch's adaptive regions [floor(i*S/O), ceil((i+1)*S/O)) of each spatial dim."""

    def _indices(self, x):
        nd, osz = self.nd, self.osz
        sz = x.shape[-nd:]
        xp = array_module(x)
        idx = xp.empty(x.shape[:-nd] + tuple(osz), np.int64)
        bounds = [[((i * s) // o, -(-((i + 1) * s) // o)) for i in range(o)] for s, o in zip(sz, osz)]
        mults = [_prod(sz[i + 1:]) for i in range(nd)]
        for cell in np.ndindex(*osz):
            box = [bounds[i][cell[i]] for i in range(nd)]
            reg = x[(Ellipsis,) + tuple(slice(a, b) for a, b in box)].reshape(x.shape[:-nd] + (-1,))
            a = reg.argmax(-1)
            nan = np.isnan(reg)
            if nan.any():  # the region's last NaN, as PyTorch's kernel
                a = np.where(nan.any(-1), nan.shape[-1] - 1 - nan[..., ::-1].argmax(-1), a)
            flat = 0
            for i in range(nd - 1, -1, -1):
                w = box[i][1] - box[i][0]
                a, r = np.divmod(a, w)
                flat = flat + (box[i][0] + r) * mults[i]
            idx[(Ellipsis,) + cell] = flat
        return idx


class FractionalMaxPool(_IndexPool, name="FractionalMaxPool2DBackward0"):
    """Max over kernel-sized windows starting at PyTorch's pseudo-random intervals: per plane and dim,
    with u = samples[n, c, dim], start[i] = int((i + u) * a) - int(u * a) with a = (S - k) / (O - 1),
    computed in the input's dtype, and the last window at S - k."""

    def _indices(self, x):
        nd, k, osz = self.nd, self.kernel, self.osz
        sz = x.shape[-nd:]
        u = self.samples            # (N, C, nd) in x's dtype
        dt = u.dtype.type
        xp = array_module(x)
        starts = []
        for i in range(nd):
            o = osz[i]
            ui = u[..., i][..., None]
            st = xp.empty(u.shape[:-1] + (o,), np.int64)
            if o > 1:
                a = dt(sz[i] - k[i]) / dt(o - 1)
                st[..., :-1] = ((xp.arange(o - 1).astype(u.dtype) + ui) * a).astype(np.int64) - \
                    (ui * a).astype(np.int64)
            st[..., -1] = sz[i] - k[i]
            starts.append(st)
        if x.ndim == nd + 1:        # unbatched: the samples' batch of one
            starts = [s[0] for s in starts]
        return _windows_argmax(x, starts, k, nd)


class AdaptiveMaxPool3D(AdaptiveMaxPool, name="AdaptiveMaxPool3DBackward0"):
    nd = 3


class FractionalMaxPool3D(FractionalMaxPool, name="FractionalMaxPool3DBackward0"):
    nd = 3


class AdaptiveMaxPool3DScatter(FlatScatter, name="AdaptiveMaxPool3DBackwardBackward0"):
    pass


class FractionalMaxPoolScatter(FlatScatter, name="FractionalMaxPool2DBackwardBackward0"):
    pass


class FractionalMaxPool3DScatter(FlatScatter, name="FractionalMaxPool3DBackwardBackward0"):
    pass


AdaptiveMaxPool._grad, AdaptiveMaxPool3D._grad = FlatScatter, AdaptiveMaxPool3DScatter
FractionalMaxPool._grad, FractionalMaxPool3D._grad = FractionalMaxPoolScatter, FractionalMaxPool3DScatter


class MaxUnpool(Node, name="MaxUnpool2DBackward0"):
    """x (..., *I) written into zeros (..., *osz) at the flat spatial indices idx (PyTorch's kernel
    assigns; with repeated indices one of the writes wins). Its gradient gathers at idx, written with
    Tensor ops as PyTorch's max_pool_double_backward (so its own grad_fn is a view's)."""
    nd = 2

    def forward(self, x):
        nd, idx = self.nd, self.idx
        lead = x.shape[:-nd]
        out = array_module(x).zeros(lead + (_prod(self.osz),), x.dtype)
        np.put_along_axis(out, idx.reshape(lead + (-1,)), x.reshape(lead + (-1,)), -1)
        return out.reshape(lead + tuple(self.osz))

    def backward(self, g):
        nd, idx = self.nd, _T(self.idx)
        return g.flatten(-nd).gather(-1, idx.flatten(-nd)).view_as(idx)


class MaxUnpool3D(MaxUnpool, name="MaxUnpool3DBackward0"):
    nd = 3


# adaptive average pooling: one primitive (AdaptiveAvgPool2DBackward0), as PyTorch
def _adaptive_avg_matrix(size, o, xp):
    """(o, size) in module ``xp``: row i averages PyTorch's adaptive region [floor(i*size/o), ceil((i+1)*size/o))."""
    m = xp.zeros((o, size), np.float64)
    for i in range(o):
        a, b = (i * size) // o, -(-((i + 1) * size) // o)
        m[i, a:b] = 1.0 / (b - a)
    return m


def _along(x, mats, transpose=False):
    """Apply one (o, s) matrix per trailing dim of x (``mats[-1]`` to the last): ``A_h @ x @ A_w.T`` in 2-d."""
    nd = len(mats)
    for i, m in enumerate(mats):
        m = m.T if transpose else m
        ax = i - nd
        if ax == -1:
            x = x @ m.T
        elif ax == -2:
            x = m @ x
        else:
            x = np.swapaxes(m @ np.swapaxes(x, ax, -2), ax, -2)
    return x


class AdaptiveAvgPool(Node, name="AdaptiveAvgPool2DBackward0"):
    """Mean over PyTorch's adaptive regions of the last n dims: averaging matrices applied along each
    dim (computed in float64). Linear: its gradient is AdaptiveAvgPoolGrad, whose gradient is this."""
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0,)
    saved_names = ("self",)

    def forward(self, x):
        osz = self.osz
        xp = array_module(x)
        self.mats = tuple(_adaptive_avg_matrix(s, o, xp) for s, o in zip(x.shape[-len(osz):], osz))
        return _along(x.astype(np.float64), self.mats).astype(x.dtype)

    def backward(self, g):
        (x,) = self.saved_values
        return self._grad.apply(g, x, mats=self.mats)


class AdaptiveAvgPoolGrad(Node, name="AdaptiveAvgPool2DBackwardBackward0"):
    """g spread evenly over each region (the transposed matrices). ``x`` is only a graph edge, as in PyTorch."""
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)

    def forward(self, g, x=None):
        return _along(g.astype(np.float64), self.mats, transpose=True).astype(g.dtype)

    def backward(self, gg):
        return self._pool.apply(gg, osz=tuple(m.shape[0] for m in self.mats)), None


class AdaptiveAvgPool3D(AdaptiveAvgPool, name="AdaptiveAvgPool3DBackward0"):
    pass


class AdaptiveAvgPool3DGrad(AdaptiveAvgPoolGrad, name="AdaptiveAvgPool3DBackwardBackward0"):
    pass


AdaptiveAvgPool._grad, AdaptiveAvgPool3D._grad = AdaptiveAvgPoolGrad, AdaptiveAvgPool3DGrad
AdaptiveAvgPoolGrad._pool, AdaptiveAvgPool3DGrad._pool = AdaptiveAvgPool, AdaptiveAvgPool3D


# ------------------------------------------------------------------------------ padding
from .join import ConstantPad  # noqa: E402,F401  (constant padding: one node, in join.py)


# ------------------------------------------------------------------------ normalization


def _fast_norm(*arrays):
    """Whether the compiled norm kernels apply: float32 NumPy arrays (absent ones: None), none empty."""
    arrays = [a for a in arrays if a is not None]
    return fast(*arrays) and all(a.size for a in arrays)


def _plane_grain(m):
    """Rows (planes) of ``m`` elements per pool chunk: ~256K elements a chunk (these kernels stream at ~0.2-0.4 ns
    an element, so a chunk is 50-100 us of work, above the pool's overhead)."""
    return max(1, (1 << 18) // max(m, 1))


@kernel
def _chan_stats_kernel(x, lo, hi, eps, mean, invstd, var):
    """Per channel c in [lo, hi) of x (N, C, M), over (N, M): mean and biased variance in one pass, accumulated
    in float64, the squares taken about the channel's first element (no cancellation: as close as two passes);
    invstd = 1 / sqrt(var + eps) in float64; as norm_stats' NumPy path (NaN and inf give what it gives). The
    rows of layer and group norm are the channels of a (1, rows, n) array."""
    nb, m = x.shape[0], x.shape[2]
    cnt = nb * m
    for c in range(lo, hi):
        x0 = np.float64(x[0, c, 0])
        s = 0.0
        q = 0.0
        for i in range(nb):
            for j in range(m):
                v = np.float64(x[i, c, j])
                s += v
                d = v - x0
                q += d * d
        mu = s / cnt
        v = q / cnt - (mu - x0) * (mu - x0)
        if v < 0.0:
            v = 0.0
        mean[c] = mu
        var[c] = v
        invstd[c] = 1.0 / np.sqrt(v + eps)


@kernel
def _scale_shift_kernel(x, alpha, beta, out, p0):
    """Planes of x (P, M), the planes p0, p0 + 1, ... of the whole (a pool chunk's), plane p scaled by
    alpha[p % K] and shifted by beta[p % K] (K = alpha.size): batch and group norm's output as PyTorch computes
    it, x * (w invstd) + (b - mean w invstd)."""
    k = alpha.size
    for i in range(x.shape[0]):
        p = (p0 + i) % k
        a = alpha[p]
        b = beta[p]
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * a + b


@kernel
def _ln_kernel(x, mean, invstd, w, b, out):
    """Rows of x (rows, n): layer norm's output (x - mean) invstd w + b, as the NumPy path computes it.

    NOTE: not PyTorch's x invstd + (-mean invstd): contracted to an FMA here, that leaves the rounding of
    mean * invstd in a constant row's output (PyTorch's is exactly b there); x - mean is exact near the mean."""
    n = x.shape[1]
    for r in range(x.shape[0]):
        s = invstd[r, 0]
        m = mean[r, 0]
        for j in range(n):
            out[r, j] = (x[r, j] - m) * s * w[j] + b[j]


@kernel
def _ln_grad_kernel(g, x, mean, invstd, w, gx, gw, gb):
    """Rows of g, x (rows, n): gx = (gh - mean(gh) - xhat mean(gh xhat)) invstd with gh = g w, the row sums in
    float32 as the NumPy path's means (and PyTorch's) take them; gw, gb (float64, (n,)) accumulate sum(g xhat) and
    sum(g) over the rows (more exact than the NumPy path's float32 sums)."""
    n = x.shape[1]
    for r in range(x.shape[0]):
        s = invstd[r, 0]
        m = mean[r, 0]
        a = _f32(0)
        d = _f32(0)
        for j in range(n):
            xh = (x[r, j] - m) * s
            gr = g[r, j]
            gh = gr * w[j]
            a += gh
            d += gh * xh
            gw[j] += gr * xh
            gb[j] += gr
        a1 = _f32(a / n)
        d1 = _f32(d / n)
        for j in range(n):
            xh = (x[r, j] - m) * s
            gx[r, j] = (g[r, j] * w[j] - a1 - xh * d1) * s


@kernel
def _chan_grad_sums_kernel(g, x, lo, hi, mean, sg, sgx):
    """Per channel c in [lo, hi) of g, x (N, C, M): sum(g) and sum(g (x - mean)) in float64."""
    nb, m = x.shape[0], x.shape[2]
    for c in range(lo, hi):
        mu = mean[c]
        a = 0.0
        d = 0.0
        for i in range(nb):
            for j in range(m):
                gr = g[i, c, j]
                a += gr
                d += gr * (x[i, c, j] - mu)
        sg[c] = a
        sgx[c] = d


@kernel
def _bn_grad_kernel(g, x, mean, k, gm, scale, gx, p0):
    """Planes of g, x (P, M), the planes p0, p0 + 1, ... of the whole (a pool chunk's), plane p of channel
    c = p % C: gx = (g - gm[c] - (x - mean[c]) k[c]) scale[c] (PyTorch's batch norm backward with batch
    statistics)."""
    nc = mean.size
    for p in range(x.shape[0]):
        c = (p0 + p) % nc
        mu = mean[c]
        kc = k[c]
        gc = gm[c]
        sc = scale[c]
        for j in range(x.shape[1]):
            gx[p, j] = (g[p, j] - gc - (x[p, j] - mu) * kc) * sc


def _planes(a, m):
    return np.ascontiguousarray(a).reshape(-1, m)


class Norm(Node, name="NativeBatchNormBackward0"):
    """out = (x - mean) * invstd * w + b, with (mean, invstd) given per stats group.

    ``sshape``: x reshaped so that the statistics reduce over ``axes`` (keepdims shapes for mean/invstd);
    ``pshape``: the broadcast shape of w and b against x; ``batch_stats``: whether mean/invstd come from x
    (training) or are constants (running statistics).

    Float32 NumPy arrays take compiled kernels (``_fused_forward`` / ``_fused_grads``, one per layout: batch norm
    here, layer and group norm below): the output in one pass, and in a plain backward the gradients in two
    (the per-channel or per-row sums, then gx). The NumPy path below is the fallback and create_graph's
    differentiable composition.
    """
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0, 1)
    saved_names = ("input", "weight")
    # the running statistics are saved as the buffers themselves (None without them); in eval mode PyTorch's
    # result1/result2 are empty (nothing was computed from the batch)
    saved_attrs = ("eps", "training=batch_stats", "running_mean=running[0]", "running_var=running[1]",
                   "result1=mean.reshape(-1)[:mean.size if batch_stats else 0]",
                   "result2=invstd.reshape(-1)[:invstd.size if batch_stats else 0]")
    running = (None, None)

    def forward(self, x, w=None, b=None):
        if _fast_norm(x, w, b, self.mean, self.invstd):
            out = self._fused_forward(x, w, b)
            if out is not None:
                return out
        xr = x.reshape(self.sshape)
        out = ((xr - self.mean) * self.invstd).reshape(x.shape)
        if w is not None:
            out *= w.reshape(self.pshape)
        if b is not None:
            out += b.reshape(self.pshape)
        return out.astype(x.dtype, copy=False)

    def _affine(self, mean, invstd, w, b):
        """Per-channel (alpha, beta) = (w invstd, b - mean w invstd) in float32, as PyTorch computes them."""
        alpha = invstd if w is None else invstd * w
        beta = (_f32(0) if b is None else b) - mean * alpha
        return np.ascontiguousarray(alpha, _f32).reshape(-1), np.ascontiguousarray(beta, _f32).reshape(-1)

    def _fused_forward(self, x, w, b):
        c = self.pshape[1]
        alpha, beta = self._affine(self.mean.reshape(c), self.invstd.reshape(c), w, b)
        return _scale_shift(x, alpha, beta, x.size // (x.shape[0] * c))

    def backward(self, g, F=TENSORS):
        x, w = F.saved(self)
        if F is TENSORS:
            return self._composed(g, x, w)
        # a plain backward, on arrays: the compiled kernels where they apply, else the composition on arrays
        if _fast_norm(g, x, w):
            gs = self._fused_grads(g, x, w)
            if gs is not None:
                return gs
        gs = self._composed(_T(g), _T(x), None if w is None else _T(w))
        return tuple(None if t is None else t._data for t in gs)

    def _composed(self, g, x, w):
        axes = self.axes
        xr = x.reshape(self.sshape)
        if self.batch_stats and _state.enabled:     # double backward: the statistics depend on x
            mean = xr.mean(axes, keepdim=True)
            xc = xr - mean
            invstd = ((xc * xc).mean(axes, keepdim=True) + self.eps).rsqrt()
        else:
            mean, invstd = _T(self.mean), _T(self.invstd)
            xc = xr - mean
        xhat = xc * invstd
        gx = gw = gb = None
        nf = self.next_functions
        if nf[0][0] is not None:
            gh = (g * w.reshape(self.pshape) if w is not None else g).reshape(self.sshape)
            if self.batch_stats:
                gh = gh - gh.mean(axes, keepdim=True) - xhat * (gh * xhat).mean(axes, keepdim=True)
            gx = (gh * invstd).reshape(x.shape)
        pdims = tuple(i for i, s in enumerate(self.pshape) if s == 1)
        total = (lambda t: t.sum(pdims)) if pdims else (lambda t: t)     # sum(()) would sum everything
        if len(nf) > 1 and nf[1][0] is not None:
            gw = total(g * xhat.reshape(x.shape)).reshape(w.shape)
        if len(nf) > 2 and nf[2][0] is not None:
            gb = total(g).reshape(self.wshape)
        return gx, gw, gb

    def _fused_grads(self, g, x, w):
        nb, c = x.shape[:2]
        m = x.size // (nb * c)
        g3, x3 = _planes(g, m).reshape(nb, c, m), _planes(x, m).reshape(nb, c, m)
        mean, invstd = self.mean.reshape(c), self.invstd.reshape(c)
        sg, sgx = np.empty(c), np.empty(c)
        _parallel.parallel_for(c, lambda lo, hi: _chan_grad_sums_kernel(g3, x3, lo, hi, mean, sg, sgx),
                               _plane_grain(nb * m))
        nf = self.next_functions
        gx = gw = gb = None
        if nf[0][0] is not None:
            scale = invstd if w is None else invstd * w
            if self.batch_stats:
                cnt = nb * m
                k = (sgx * invstd * invstd / cnt).astype(_f32)
                gm = (sg / cnt).astype(_f32)
                gx = np.empty(x.shape, _f32)
                g2, x2, o2 = g3.reshape(-1, m), x3.reshape(-1, m), gx.reshape(-1, m)
                _parallel.parallel_for(nb * c, lambda lo, hi: _bn_grad_kernel(
                    g2[lo:hi], x2[lo:hi], mean, k, gm, scale, o2[lo:hi], lo), _plane_grain(m))
            else:                                   # running statistics: gx = g w invstd
                gx = g * scale.reshape(self.pshape)
        if len(nf) > 1 and nf[1][0] is not None:
            gw = (sgx * invstd).astype(_f32)
        if len(nf) > 2 and nf[2][0] is not None:
            gb = sg.astype(_f32)
        return gx, gw, gb


def _scale_shift(x, alpha, beta, m):
    """x * alpha + beta per plane of ``m`` elements (alpha, beta per plane, repeating), on the pool."""
    out = np.empty(x.shape, _f32)
    x2, o2 = _planes(x, m), out.reshape(-1, m)
    _parallel.parallel_for(x2.shape[0], lambda lo, hi: _scale_shift_kernel(x2[lo:hi], alpha, beta, o2[lo:hi], lo),
                           _plane_grain(m))
    return out


class LayerNormNode(Norm, name="NativeLayerNormBackward0"):
    saved_attrs = ("normalized_shape=wshape", "result1=mean", "result2=invstd")

    def forward(self, x, w=None, b=None):
        k = _fused(x, self.mean, self.invstd, *(a for a in (w, b) if a is not None))
        if k is not None:       # the CUDA device: one fused kernel (_cuda_kernels)
            return k.layer_norm(x, self.mean, self.invstd, w, b, math.prod(self.wshape))
        return Norm.forward(self, x, w, b)

    def backward(self, g, F=TENSORS):
        if F is not TENSORS and _fused(g) is not None:      # the CUDA device, a plain backward: fused kernels
            x, w = F.saved(self)
            k = _fused(g, x, self.mean, self.invstd, *(() if w is None else (w,)))
            if k is not None:
                return k.layer_norm_grad(g, x, self.mean, self.invstd, w, self.wshape, self.needs_input_grad)
        return Norm.backward(self, g, F)

    def _rows(self, x):
        n = math.prod(self.wshape)
        return n, _planes(x, n), self.mean.reshape(-1, 1), self.invstd.reshape(-1, 1)

    def _fused_forward(self, x, w, b):
        n, x2, mean, invstd = self._rows(x)
        # PyTorch's absent gamma and beta: 1 and 0 (so a -0 result is +0, as there)
        w1 = np.ones(n, _f32) if w is None else np.ascontiguousarray(w).reshape(n)
        b1 = np.zeros(n, _f32) if b is None else np.ascontiguousarray(b).reshape(n)
        out = np.empty(x.shape, _f32)
        o2 = out.reshape(-1, n)
        _parallel.parallel_for(x2.shape[0], lambda lo, hi: _ln_kernel(
            x2[lo:hi], mean[lo:hi], invstd[lo:hi], w1, b1, o2[lo:hi]), _plane_grain(n))
        return out

    def _fused_grads(self, g, x, w):
        n, x2, mean, invstd = self._rows(x)
        g2 = _planes(g, n)
        w1 = np.ones(n, _f32) if w is None else np.ascontiguousarray(w).reshape(n)
        gx = np.empty(x.shape, _f32)
        o2 = gx.reshape(-1, n)
        parts = []

        def run(lo, hi):
            gw, gb = np.zeros(n), np.zeros(n)
            _ln_grad_kernel(g2[lo:hi], x2[lo:hi], mean[lo:hi], invstd[lo:hi], w1, o2[lo:hi], gw, gb)
            parts.append((gw, gb))
        _parallel.parallel_for(x2.shape[0], run, _plane_grain(n))
        nf = self.next_functions
        gw = gb = None
        if len(nf) > 1 and nf[1][0] is not None:
            gw = sum(p[0] for p in parts).astype(_f32).reshape(self.wshape)
        if len(nf) > 2 and nf[2][0] is not None:
            gb = sum(p[1] for p in parts).astype(_f32).reshape(self.wshape)
        return (gx if nf[0][0] is not None else None), gw, gb


class GroupNormNode(Norm, name="NativeGroupNormBackward0"):
    saved_attrs = ("eps", "training=batch_stats", "result1=mean.reshape(-1)", "result2=invstd.reshape(-1)")

    def _fused_forward(self, x, w, b):
        nb, groups = self.sshape[:2]
        c = x.shape[1]
        cg = c // groups
        mean = np.repeat(self.mean.reshape(nb, groups), cg, axis=1)     # per (n, channel)
        invstd = np.repeat(self.invstd.reshape(nb, groups), cg, axis=1)
        alpha, beta = self._affine(mean, invstd, w, b)
        return _scale_shift(x, alpha, beta, x.size // (nb * c))

    def _fused_grads(self, g, x, w):
        return None


def norm_stats(x, axes, eps):
    """(mean, invstd, biased var) over axes with keepdims, accumulated in float64 for float32 inputs; a bfloat16
    or float16 input's statistics are float32 (PyTorch's opmath)."""
    if D.is_reduced(x.dtype):
        x = x.astype(_f32)
    if _fast_norm(x):
        nd = x.ndim
        if axes == tuple(range(nd - len(axes), nd)):            # trailing dims (layer and group norm): rows
            n = math.prod(x.shape[nd - len(axes):])
            keep = x.shape[:nd - len(axes)] + (1,) * len(axes)
            x3 = _planes(x, n)[None]
            r = x3.shape[1]
            mean, invstd, var = np.empty(r, _f32), np.empty(r, _f32), np.empty(r)
            _parallel.parallel_for(r, lambda lo, hi: _chan_stats_kernel(x3, lo, hi, eps, mean, invstd, var),
                                   _plane_grain(n))
            return mean.reshape(keep), invstd.reshape(keep), var.reshape(keep)
        if nd >= 2 and axes == (0,) + tuple(range(2, nd)):      # all but dim 1 (batch norm): channels
            nb, c = x.shape[:2]
            m = x.size // (nb * c)
            x3 = _planes(x, m).reshape(nb, c, m)
            mean, invstd, var = np.empty(c, _f32), np.empty(c, _f32), np.empty(c)
            _parallel.parallel_for(c, lambda lo, hi: _chan_stats_kernel(x3, lo, hi, eps, mean, invstd, var),
                                   _plane_grain(nb * m))
            keep = (1, c) + (1,) * (nd - 2)
            return mean.reshape(keep), invstd.reshape(keep), var.reshape(keep)
    acc = x.astype(np.float64) if x.dtype == np.float32 else x
    mean = acc.mean(axis=axes, keepdims=True)
    xc = acc - mean
    var = (xc * xc).mean(axis=axes, keepdims=True)
    invstd = 1.0 / np.sqrt(var + eps)
    return mean.astype(x.dtype), invstd.astype(x.dtype), var


# ------------------------------------------------------------------------ dropout, embedding
class Dropout(Node, name="NativeDropoutBackward0"):
    """x * mask / (1 - p); mask may broadcast (dropout2d drops whole channels)."""

    def forward(self, x):
        return x * self.mask

    def backward(self, g):
        return g * _T(self.mask)


class Embedding(Node, name="EmbeddingBackward0"):
    saved_attrs = ("indices=idx", "padding_idx=-1 if padding_idx is None else padding_idx", "scale_grad_by_freq=False", "sparse=False", "weight_sym_argsize_0=num")
    padding_idx = None

    def forward(self, w, idx):
        self.idx, self.num = idx, w.shape[0]
        return w[idx]

    def backward(self, g, *_):
        return EmbeddingScatter.apply(g, idx=self.idx, num=self.num, padding_idx=self.padding_idx), None


@kernel
def _embedding_grad_kernel(g, idx, out):
    """Row i of g added to row idx[i] of out, in order (np.add.at's sums, ~20x faster)."""
    for i in range(idx.size):
        k = idx[i]
        for j in range(g.shape[1]):
            out[k, j] += g[i, j]


class EmbeddingScatter(Node, name="EmbeddingDenseBackward0"):
    def forward(self, g):
        d = g.shape[-1]
        flat = self.idx.reshape(-1)
        gf = g.reshape(-1, d)
        if self.padding_idx is not None:
            keep = flat != self.padding_idx
            flat, gf = flat[keep], gf[keep]
        out = array_module(g).zeros((self.num, d), g.dtype)
        if fast(gf) and flat.size:
            _embedding_grad_kernel(np.ascontiguousarray(gf), flat.astype(np.int64, copy=False), out)
        else:
            np.add.at(out, flat, gf)
        return out

    def backward(self, gg):
        out = Embedding.apply(gg, _T(self.idx))
        if self.padding_idx is not None:
            out = out * _T((self.idx != self.padding_idx)[..., None].astype(gg._data.dtype))
        return out


# ----------------------------------------------------------------------------- nll loss
class NllLoss(Node, name="NllLossBackward0"):
    """Negative log-likelihood of class-index targets; the grad is g times a constant sparse matrix."""
    save = (0,)
    saved_names = ("self",)
    saved_attrs = ('ignore_index', 'reduction=("none", "mean", "sum").index(reduction)', 'weight=_weight',
                   'target=_target', 'total_weight=_total_weight')

    # the tensors PyTorch saves (released after a pass, as the input is): the weight and target as given, the
    # total weight (the sum of the weights of the counted targets; 0 for reduction="none")
    def _kept(self, v):
        if self._freed:
            raise RuntimeError(_FREED)
        return v

    _weight = property(lambda self: self._kept(self.w_in))
    _target = property(lambda self: self._kept(self.t_in))

    @property
    def _total_weight(self):
        dt, xp = self.xdtype, array_module(self.ts)
        if self.reduction == "none":
            return self._kept(xp.zeros((), dt))
        return self._kept(xp.asarray(len(self.ts) if self.wt is None else self.wt.sum(), dt))

    def forward(self, x, t, w=None):
        self.w_in, self.t_in, self.xdtype = w, t, x.dtype
        c = x.shape[1] if x.ndim > 1 else x.shape[0]
        xc = x if x.ndim == 2 else np.moveaxis(x, 1, -1).reshape(-1, c) if x.ndim > 1 else x.reshape(1, c)
        tf = t.reshape(-1)
        n = len(tf)
        xp = array_module(x)
        rows = xp.arange(n)
        on_host = type(tf) is np.ndarray or _array.device_type(tf) == "cpu"
        if on_host:
            lo, hi = (int(tf.min()), int(tf.max())) if n else (0, -1)
        else:   # NOTE: a device's targets are not read back to be checked (PyTorch's CUDA kernel asserts there)
            lo, hi = -1, -1     # the masked path, which needs no host read
        if w is None and n and 0 <= lo and hi < c and not lo <= self.ignore_index <= hi:
            ts, wt = tf, None       # the common case: every target a class, no weights (no masks to build)
            picked = -xc[rows, tf]
            total = x.dtype.type(n)
        else:
            valid = tf != self.ignore_index
            bad = valid & ((tf < 0) | (tf >= c))
            if on_host and bad.any():
                raise IndexError(f"Target {int(tf[bad][0])} is out of bounds.")
            ts = np.where(valid, tf, 0)
            wt = (w[ts] if w is not None else xp.ones(n, x.dtype)) * valid
            picked = -xc[rows, ts] * wt
            total = None
        self.wt, self.ts, self.xshape = wt, ts, x.shape
        if self.reduction == "none":
            return picked.reshape(t.shape).astype(x.dtype, copy=False)
        if self.reduction == "sum":
            self.denom = 1.0
            return xp.asarray(picked.sum(dtype=x.dtype))
        self.denom = total if total is not None else wt.sum(dtype=x.dtype)
        return xp.asarray(picked.sum(dtype=x.dtype) / self.denom, dtype=x.dtype)

    def _factor(self, dtype, xp):
        """The input-shaped constant the loss gradient is multiplied by: PyTorch's -1 / total_weight
        (mean) or -1, times the target's weight, at each target; zero elsewhere."""
        xs, ts = self.xshape, self.ts
        c = xs[1] if len(xs) > 1 else xs[0]
        v = -1 if self.reduction != "mean" else -(1 / self.denom)
        m = xp.zeros((len(ts), c), dtype)
        m[xp.arange(len(ts)), ts] = v if self.wt is None else self.wt * v
        if len(xs) > 2:
            m = xp.ascontiguousarray(np.moveaxis(m.reshape((xs[0],) + xs[2:] + (c,)), -1, 1))
        elif len(xs) == 1:
            m = m.reshape(c)
        return m

    def backward(self, g, F=TENSORS):
        (x,) = F.saved(self)        # (the version check of the input on arrays)
        d = F.array(g)
        m = self._factor(d.dtype, array_module(d))
        if self.reduction == "none" and len(self.xshape) > 1:
            g = F.unsqueeze(g, 1)
        return F.scale(g, m, x, ScaleGrad), None, None


class NllLoss2d(NllLoss, name="NllLoss2DBackward0"):
    """NllLoss of a 4-D (N, C, H, W) input, PyTorch's nll_loss2d (every K-d input goes through it)."""


class ScaleGrad(Node, name="NllLossBackwardBackward0"):
    """g * f for a constant array f. ``x`` (the forward input) is only a graph edge: PyTorch's backward
    kernels take the input, so a create_graph gradient requires grad even where it does not depend on x."""

    def forward(self, g, x=None):
        return np.multiply(g, self.f, dtype=self.f.dtype)

    def backward(self, gg):
        return ScaleGrad.apply(gg, f=self.f), _zero_grad(self, 1, gg)


# --------------------------------------------------------------------- Tensor methods
def _install():
    Tensor.softmax = lambda self, dim=None, dtype=None: softmax(self, dim, dtype=dtype)
    Tensor.log_softmax = lambda self, dim=None, dtype=None: log_softmax(self, dim, dtype=dtype)


_install()


# ------------------------------------------------------------------ packed sequences (nn.utils.rnn)
class PackPaddedSequence(Node, name="PackPaddedSequenceBackward0"):
    """The time-major concatenation of the first batch_sizes[t] rows of each step t of a padded batch
    (lengths sorted decreasing): torch._pack_padded_sequence's data."""
    saved_attrs = ("batch_first", "input_sym_sizes=in_shape", "result1=batch_sizes")

    def forward(self, x):
        self.in_shape = x.shape
        xt = np.swapaxes(x, 0, 1) if self.batch_first else x
        return np.concatenate([xt[t, :int(b)] for t, b in enumerate(self.batch_sizes)], axis=0)

    def backward(self, g):
        return PackPaddedSequenceGrad.apply(g, batch_sizes=self.batch_sizes, batch_first=self.batch_first,
                                            shape=self.in_shape)


class PackPaddedSequenceGrad(Node, name="PackPaddedSequenceBackwardBackward0"):
    """Scatter packed rows back into a zero padded batch: the backward of PackPaddedSequence."""

    def forward(self, g):
        shape = self.shape
        xp = array_module(g)
        out = xp.zeros((shape[1], shape[0]) + shape[2:] if self.batch_first else shape, g.dtype)
        off = 0
        for t, b in enumerate(self.batch_sizes):
            out[t, :int(b)] = g[off:off + int(b)]
            off += int(b)
        return xp.ascontiguousarray(np.swapaxes(out, 0, 1)) if self.batch_first else out

    def backward(self, gg):
        return PackPaddedSequence.apply(gg, batch_sizes=self.batch_sizes, batch_first=self.batch_first)


# ----------------------------------------------------------------- pointwise losses (one node each, as PyTorch)
_REDUCTIONS = ("none", "mean", "sum")


class _PointLoss(Node):
    """A pointwise loss of (input, target) with its reduction; forward on arrays, backward with Tensor ops
    (so the gradient is differentiable again). Gradients come at the broadcast shape (reduced by the engine)."""
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0, 1)
    saved_names = ("self", "target")
    saved_attrs = ('reduction=("none", "mean", "sum").index(reduction)',)

    def _reduce(self, loss, dt):
        r = self.reduction
        self.n = loss.size
        if r == "none":
            return loss.astype(dt, copy=False)
        s = loss.sum(dtype=dt)
        if r == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                s = s / dt.type(loss.size)
        return array_module(loss).asarray(s, dt)

    def _scaled(self, g):
        """g (the loss's gradient) with the mean's 1/N."""
        if self.reduction == "mean":
            return g / self.n if self.n else g * float("nan")
        return g

    def backward(self, g, *_):
        x, y = self.saved_values
        gx, gy = self._grads(self._scaled(g), x, y)
        return (gx if _need(self, 0) else None), (gy if _need(self, 1) else None)


class MseLoss(_PointLoss, name="MseLossBackward0"):
    def forward(self, x, y):
        d = np.subtract(x, y)
        return self._reduce(d * d, x.dtype)

    def _grads(self, g, x, y):
        gx = 2 * (x - y) * g
        return gx, -gx


class HuberLoss(_PointLoss, name="HuberLossBackward0"):
    saved_attrs = ("delta", 'reduction=("none", "mean", "sum").index(reduction)')

    def forward(self, x, y):
        d = np.subtract(x, y)
        z = np.abs(d)
        dl = x.dtype.type(self.delta)
        return self._reduce(np.where(z < dl, 0.5 * d * d, dl * (z - 0.5 * dl)), x.dtype)

    def _grads(self, g, x, y):
        gx = (x - y).clamp(-self.delta, self.delta) * g
        return gx, -gx


class SmoothL1Loss(_PointLoss, name="SmoothL1LossBackward0"):
    saved_attrs = ("beta", 'reduction=("none", "mean", "sum").index(reduction)')

    def forward(self, x, y):
        d = np.subtract(x, y)
        z = np.abs(d)
        b = x.dtype.type(self.beta)
        return self._reduce(np.where(z < b, 0.5 * d * d / b, z - 0.5 * b), x.dtype)

    def _grads(self, g, x, y):
        gx = ((x - y) / self.beta).clamp(-1.0, 1.0) * g
        return gx, -gx


class BinaryCrossEntropy(_PointLoss, name="BinaryCrossEntropyBackward0"):
    saved_attrs = ('reduction=("none", "mean", "sum").index(reduction)', "weight=w")
    w = None

    def forward(self, x, y):
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = (y - 1) * np.maximum(np.log1p(-x), -100) - y * np.maximum(np.log(x), -100)
        if self.w is not None:
            loss = loss * self.w
        return self._reduce(loss, x.dtype)

    def _grads(self, g, x, y):
        if self.w is not None:
            g = g * _T(self.w)
        gx = g * (x - y) / ((1 - x) * x).clamp_min(1e-12)
        gy = g * ((-x).log1p().clamp_min(-100.0) - x.log().clamp_min(-100.0)) if _need(self, 1) else None
        return gx, gy


class BinaryCrossEntropyWithLogits(_PointLoss, name="BinaryCrossEntropyWithLogitsBackward0"):
    saved_attrs = ("pos_weight=pw", 'reduction=("none", "mean", "sum").index(reduction)', "weight=w")
    w = pw = None

    def forward(self, x, y):
        mv = np.maximum(-x, 0)
        sp = np.log(np.exp(-mv) + np.exp(-x - mv)) + mv          # softplus(-x), as PyTorch computes it
        loss = (1 - y) * x + (sp if self.pw is None else (1 + (self.pw - 1) * y) * sp)
        if self.w is not None:
            loss = loss * self.w
        return self._reduce(loss, x.dtype)

    def _grads(self, g, x, y):
        if self.w is not None:
            g = g * _T(self.w)
        if self.pw is None:
            gx = (x.sigmoid() - y) * g
            gy = -x * g if _need(self, 1) else None
        else:
            pw = _T(self.pw)
            t = pw * y
            gx = ((t + 1 - y) * x.sigmoid() - t) * g
            gy = -(x + (pw - 1) * x.sigmoid().log()) * g if _need(self, 1) else None
        return gx, gy


class Glu(Node, name="GluBackward0"):
    """a * sigmoid(b) for the two halves of x along dim."""
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0,)
    saved_names = ("self",)
    saved_attrs = ("dim=odim if odim >= 0 else odim + 2 ** 64",)     # the dim as given, as a uint64

    def forward(self, x):
        a, b = np.split(x, 2, axis=self.dim)
        with np.errstate(over="ignore"):
            return (a / (1 + np.exp(-b))).astype(x.dtype, copy=False)

    def backward(self, g):
        (x,) = self.saved_values
        h = x.shape[self.dim] // 2
        a, b = x.narrow(self.dim, 0, h), x.narrow(self.dim, h, h)
        s = b.sigmoid()
        gs = g * s
        return _cat2(gs, gs * a * (1 - s), self.dim)


def _cat2(a, b, dim):
    from .join import cat
    return cat([a, b], dim)
