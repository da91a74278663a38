"""Sampling primitives: interpolation (upsample_*), grid_sampler and affine_grid_generator.

Every interpolation mode is a separable linear map: along each spatial axis an output index o reads K input
indices ``idx[o, k]`` with weights ``w[o, k]`` (one tap for nearest, two for linear, four for cubic, a
variable number for the antialiased filters). The taps are PyTorch's, computed from the sizes alone by
``interp_taps``; ``Resample`` applies them and ``ResampleT`` (its adjoint) scatters gradients back. The two
backwards are each other, so every gradient is differentiable (PyTorch's ``Upsample*BackwardBackward0``).

``grid_sampler`` samples the input at the grid's points: each output reads a few taps whose weights are
functions of the grid coordinates. Its gradient formula is written with Tensor ops (gather/scatter_add of
the taps, the weights' derivatives as Tensor expressions), so a create_graph pass differentiates it again.
"""
import math

import numpy as np

from .._tensor import Tensor
from ..autograd.node import Node
from ..autograd.grad_mode import no_grad
from .._array import array_module


# ------------------------------------------------------------------------- interpolation taps
_CUBIC_A = -0.75


def _cc1(x, a):
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cc2(x, a):
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def _cubic_coeffs(t, a=_CUBIC_A):
    """PyTorch's get_cubic_upsample_coefficients: the weights of taps -1, 0, 1, 2 at fraction t."""
    return np.stack([_cc2(t + 1, a), _cc1(t, a), _cc1(1 - t, a), _cc2(2 - t, a)], -1)


def _aa_bilinear(x):
    x = np.abs(x)
    return np.where(x < 1, 1 - x, 0.0)


def _aa_bicubic(x, a=-0.5):
    x = np.abs(x)      # Keys' cubic, a = -0.5 (PIL's) when antialiasing
    return np.where(x < 1, _cc1(x, a), np.where(x < 2, _cc2(x, a), 0.0))


def _aa_lanczos(x):
    def sinc(v):
        return np.sinc(v)          # sin(pi v) / (pi v), 1 at 0
    return np.where((x >= -3) & (x < 3), sinc(x) * sinc(x / 3), 0.0)


_AA = {"bilinear": (2, _aa_bilinear), "bicubic": (4, _aa_bicubic), "lanczos": (6, _aa_lanczos)}


def _real(dt):
    """The type PyTorch computes scales in for a tensor of NumPy dtype ``dt`` (opmath: float for half too)."""
    return np.float64 if dt == np.float64 else np.float32


def _kernel_scale(n_in, n_out, scale, align_corners, rt):
    """area_pixel_compute_scale: the source step per output index, in the kernel's real type ``rt``."""
    if align_corners:
        return rt(n_in - 1) / rt(n_out - 1) if n_out > 1 else rt(0)
    return rt(1.0 / scale) if scale is not None and scale > 0 else rt(n_in) / rt(n_out)


def _aa_window(filt, n_in, n_out, sc):
    """_compute_indices_min_size_weights_aa for every output index: (xmin, w, wmax), w (n_out, K) zero past each
    window, normalised by its sequential total (rows totalling 0 left as they are), wmax the largest normalised
    weight (0 for those rows)."""
    size, filt = filt
    o = np.arange(n_out)
    support = size * 0.5 * sc if sc >= 1.0 else size * 0.5
    k = int(math.ceil(support)) * 2 + 1
    center = sc * (o + 0.5)
    inv = 1.0 / sc if sc >= 1.0 else 1.0
    xmin = np.maximum((center - support + 0.5).astype(np.int64), 0)
    xsize = np.clip(np.minimum((center + support + 0.5).astype(np.int64), n_in) - xmin, 0, k)
    j = np.arange(k)
    w = filt((j + xmin[:, None] - center[:, None] + 0.5) * inv)
    w = np.where(j < xsize[:, None], w, 0.0)
    tot = np.cumsum(w, 1)[:, -1:]            # left to right, as PyTorch adds them
    ok = tot != 0
    w = np.where(ok, w / np.where(ok, tot, 1), w)
    return xmin, w, float(np.where(ok, w, 0.0).max(initial=0.0))


def _window_weights(mode, n_in, n_out, sc, align_corners):
    """_compute_indices_min_size_weights (uint8, no antialias): the 2 or 4 taps of the float kernels, with the
    taps that fall outside the input added onto the edge ones. (xmin, w, wmax); wmax is PyTorch's: the largest
    running value of any weight as the taps are added in."""
    k, filt = (4, lambda v: _aa_bicubic(v, _CUBIC_A)) if mode == "bicubic" else (2, _aa_bilinear)
    support = k // 2
    o = np.arange(n_out, dtype=np.float64)
    src = sc * o if align_corners else sc * (o + 0.5) - 0.5
    if mode != "bicubic" and not align_corners:
        src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), n_in - 1)       # floorf
    lam = np.clip(src - i0, 0.0, 1.0)
    lo = i0 - support + 1
    xmin = np.maximum(lo, 0)
    xsize = np.clip(np.minimum(i0 + support + 1, n_in) - xmin, 0, k)
    w = np.zeros((n_out, k))
    rows, at, wmax = np.arange(n_out), np.zeros(n_out, np.int64), 0.0
    for j in range(k):
        at = np.where(lo + j <= 0, 0, np.where(lo + j >= n_in - 1, xsize - 1, at))
        w[rows, at] += filt(float(j + 1 - support) - lam)
        wmax = max(wmax, float(w[rows, at].max()))
        at = at + 1
    return xmin, w, wmax


def fixed_point_taps(mode, n_in, n_out, scale, align_corners, antialias):
    """PyTorch's uint8 bilinear/bicubic taps (_compute_index_ranges_int16_weights): the float64 weights
    scaled by 2**prec and rounded half away from zero to int16, ``prec`` the most bits that keep the largest
    weight under 2**15 (at most 22). (idx (n_out, K), w int16 (n_out, K), prec), or None for an axis whose
    size does not change (the uint8 kernels skip it)."""
    if n_in == n_out:
        return None
    sc = _kernel_scale(n_in, n_out, scale, align_corners, np.float64)
    if antialias:
        xmin, w, wmax = _aa_window(_AA[mode], n_in, n_out, float(sc))
    else:
        xmin, w, wmax = _window_weights(mode, n_in, n_out, float(sc), align_corners)
    prec = 0
    while prec < 22 and int(0.5 + wmax * (1 << (prec + 1))) < (1 << 15):
        prec += 1
    v = w * (1 << prec)
    wi = np.trunc(np.where(v < 0, v - 0.5, v + 0.5)).astype(np.int64).astype(np.int16)
    return np.minimum(xmin[:, None] + np.arange(w.shape[1]), n_in - 1), wi, prec


def interp_taps(mode, n_in, n_out, scale, align_corners, antialias, dt, shortcut=True):
    """(idx, w) of shapes (n_out, K) for one axis, PyTorch's indices and weights (weights in float64),
    or None where the axis is the identity. ``scale``: the user's scale factor for this axis, or None.
    ``shortcut``: nearest's same-size and 2x index shortcuts (PyTorch's nearest_idx), which its 1-d and 3-d
    forward kernels skip (their backward kernels, and the 2-d forward, take them)."""
    o = np.arange(n_out)
    if mode in ("nearest", "nearest-exact"):
        s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(n_in) / np.float32(n_out)
        if mode == "nearest":
            if n_out == n_in and shortcut:
                return None
            if n_out == 2 * n_in and shortcut:
                idx = o >> 1
            else:
                idx = np.floor(o.astype(np.float32) * s).astype(np.int64)
        else:
            idx = np.floor(((o + 0.5) * np.float64(s)).astype(np.float32)).astype(np.int64)
        return np.minimum(idx, n_in - 1)[:, None], np.ones((n_out, 1))
    rt = _real(dt)
    sc = _kernel_scale(n_in, n_out, scale, align_corners, rt)
    if antialias:
        xmin, w, _ = _aa_window(_AA[mode], n_in, n_out, float(sc))
        return np.minimum(xmin[:, None] + np.arange(w.shape[1]), n_in - 1), w
    if mode == "bicubic":
        of = o.astype(rt)
        src = sc * (of + rt(0.5)) - rt(0.5) if not align_corners else sc * of
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        t = np.clip(src.astype(np.float64) - i0, 0, 1)
        idx = np.clip(i0[:, None] + np.arange(-1, 3), 0, n_in - 1)
        return idx, _cubic_coeffs(t)
    # linear, bilinear, trilinear
    if n_out == n_in:
        return None
    of = o.astype(rt)
    src = sc * of if align_corners else np.maximum(sc * (of + rt(0.5)) - rt(0.5), rt(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = np.clip(src.astype(np.float64) - i0, 0, 1)
    i1 = i0 + (i0 < n_in - 1)
    return np.stack([i0, i1], 1), np.stack([1 - lam, lam], 1)


# ------------------------------------------------------------------------- the resampling pair
def _take_axis(x, axis, idx, w, xp):
    """x resampled along ``axis``: sum_k w[:, k] * x.take(idx[:, k])."""
    if idx.shape[1] == 1 and w is None:
        return xp.take(x, xp.asarray(idx[:, 0]), axis=axis)
    shape = [1] * x.ndim
    shape[axis] = idx.shape[0]
    out = None
    for k in range(idx.shape[1]):
        t = xp.take(x, xp.asarray(idx[:, k]), axis=axis) * xp.asarray(w[:, k].astype(x.dtype)).reshape(shape)
        out = t if out is None else out + t
    return out


def _fixed_point_axis(x, axis, idx, w, prec, xp):
    """uint8 x resampled along ``axis`` with int16 weights of ``prec`` bits: the int32 dot products plus half
    a unit, shifted down and clamped to uint8 (PyTorch's ImagingResample{Horizontal,Vertical})."""
    shape = [1] * x.ndim
    shape[axis] = idx.shape[0]
    acc = xp.full((), 1 << (prec - 1), dtype=np.int32)
    for k in range(idx.shape[1]):
        if w[:, k].any():
            acc = acc + xp.take(x, xp.asarray(idx[:, k]), axis=axis).astype(np.int32) * \
                xp.asarray(w[:, k].astype(np.int32)).reshape(shape)
    return xp.clip(acc >> prec, 0, 255).astype(np.uint8)


def _adjoint_axis(g, axis, idx, w, n_in, xp):
    """The adjoint of _take_axis: g (n_out along ``axis``) scattered back to n_in, as a dense matmul."""
    m = np.zeros((idx.shape[0], n_in))
    array_module(m).add.at(m, (np.repeat(np.arange(idx.shape[0]), idx.shape[1]), idx.ravel()),
              np.ones(idx.size) if w is None else w.ravel())
    gm = xp.moveaxis(g, axis, -1)
    out = xp.matmul(gm, xp.asarray(m.astype(g.dtype)))
    return xp.ascontiguousarray(xp.moveaxis(out, -1, axis))


class _Resample(Node):
    """x -> x resampled along each (axis, idx, w, n_in) of ``taps`` (w None: a plain copy, nearest; for uint8
    bilinear/bicubic, (int16 weights, precision) of fixed_point_taps, each pass rounded to uint8 as PyTorch's
    kernels do). ``btaps``: the taps of the backward kernel (the same but for nearest 1-d/3-d, see interp_taps)."""
    opmath = "forward"      # bf16/f16: every pass in float32, the result rounded once (_dtype.opmath)
    _pair = None

    def forward(self, x):
        xp = array_module(x)
        if not self.taps:
            return x.copy()
        for axis, idx, w, _ in self.taps:
            x = _fixed_point_axis(x, axis, idx, *w, xp) if isinstance(w, tuple) else _take_axis(x, axis, idx, w, xp)
        return x

    def backward(self, g):
        return self._pair[1].apply(g, taps=self.btaps, btaps=self.taps)


class _ResampleT(Node):
    """The adjoint of _Resample: gradients of the output scattered back onto the input grid."""
    opmath = "forward"      # bf16/f16: every pass in float32, the result rounded once (_dtype.opmath)
    _pair = None

    def forward(self, g):
        xp = array_module(g)
        for axis, idx, w, n_in in reversed(self.taps):
            g = _adjoint_axis(g, axis, idx, w, n_in, xp)
        return g

    def backward(self, gg):
        return self._pair[0].apply(gg, taps=self.btaps, btaps=self.taps)


def _resample_pair(name):
    # PyTorch's saved values: output_size, the scale per spatial dim (None: a size was given), align_corners
    # (not for nearest), the input's sizes
    n = int(name[-4] if name.endswith("DAa") else name[-2])
    scales = ("scales=scales[0]",) if n == 1 else tuple(f"scales_{d}=scales[{i}]" for i, d in
                                                         enumerate("dhw"[3 - n:]))
    attrs = ("output_size",) + ("align_corners",) * ("Nearest" not in name) + scales + \
        ("self_sym_sizes=input_sizes(0)",)
    fwd = type(name, (_Resample,), {"__module__": __name__, "saved_attrs": attrs}, name=name + "Backward0")
    bwd = type(name + "T", (_ResampleT,), {"__module__": __name__}, name=name + "BackwardBackward0")
    fwd._pair = bwd._pair = (fwd, bwd)
    return fwd


RESAMPLE = {(m, n): _resample_pair(f"Upsample{m}{n}D") for m, n in
            [("Nearest", 1), ("Nearest", 2), ("Nearest", 3), ("NearestExact", 1), ("NearestExact", 2),
             ("NearestExact", 3), ("Linear", 1), ("Bilinear", 2), ("Bicubic", 2), ("Trilinear", 3)]}
RESAMPLE.update({(m + "Aa", 2): _resample_pair(f"Upsample{m}2DAa") for m in ("Bilinear", "Bicubic", "Lanczos")})
_MODE_NAME = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear", "bilinear": "Bilinear",
              "bicubic": "Bicubic", "trilinear": "Trilinear", "lanczos": "Lanczos"}


def resample(input, mode, out_size, scales, align_corners, antialias):
    """PyTorch's upsample_<mode><n>d(input, out_size, align_corners, scales) (one of the nodes above)."""
    x = input._data
    n = x.ndim - 2

    fixed = x.dtype == np.uint8 and mode in ("bilinear", "bicubic")     # PyTorch's int16 fixed-point kernels

    def taps_of(shortcut):
        taps = []
        for i in range(n):
            args = (mode, x.shape[2 + i], out_size[i], None if scales is None else scales[i], bool(align_corners),
                    antialias)
            t = fixed_point_taps(*args) if fixed else interp_taps(*args, x.dtype, shortcut)
            if t is not None:
                idx, w = t[0], (t[1:] if fixed else t[1])
                taps.append((2 + i, idx, None if mode.startswith("nearest") else w, x.shape[2 + i]))
        return tuple(reversed(taps))        # the last axis first (width, then height, as PyTorch)
    taps = taps_of(n == 2)
    cls = RESAMPLE[(_MODE_NAME[mode] + ("Aa" if antialias else ""), n)]
    btaps = taps if n == 2 or mode != "nearest" else taps_of(True)
    if mode == "bicubic" and not antialias and list(out_size) == list(x.shape[2:]):
        btaps = ()          # PyTorch's bicubic backward copies a same-size gradient (its forward still filters)
    sc = (None,) * n if scales is None else tuple(None if s is None else float(s) for s in scales)
    return cls.apply(input, taps=taps, btaps=btaps, output_size=tuple(int(s) for s in out_size), scales=sc,
                     align_corners=bool(align_corners))


# ------------------------------------------------------------------------------- grid_sampler
def _reflect(c, lo2, hi2):
    """reflect_coordinates (floats, NumPy): c reflected into [lo2/2, hi2/2]; and d(result)/dc (+-1)."""
    if lo2 == hi2:
        return np.zeros_like(c), np.zeros_like(c)
    mn = lo2 / 2
    span = (hi2 - lo2) / 2
    d = c - mn
    sgn = np.where(d < 0, -1.0, 1.0)
    d = np.abs(d)
    extra = np.fmod(d, span)
    flips = np.floor(d / span)
    even = (flips % 2) == 0
    return np.where(even, extra + mn, span - extra + mn), np.where(even, sgn, -sgn)


def _pad_coord(c, size, padding, align_corners):
    """compute_coordinates on float coordinates (NumPy): the padded coordinate and its derivative."""
    one = np.ones_like(c)
    if padding == "border":
        return np.clip(c, 0, size - 1), np.where((c > 0) & (c < size - 1), one, 0.0)
    if padding == "reflection":
        r, m = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        return np.clip(r, 0, size - 1), np.where((r > 0) & (r < size - 1), m, 0.0)
    return c, one


def _pad_index(i, size, padding, align_corners):
    """compute_coordinates on integer tap indices (bicubic)."""
    if padding == "border":
        return np.clip(i, 0, size - 1)
    if padding == "reflection":
        c = i.astype(np.float64)
        r = _reflect(c, 0, 2 * (size - 1))[0] if align_corners else _reflect(c, -1, 2 * size - 1)[0]
        return np.clip(r, 0, size - 1).astype(np.int64)
    return i


def _axis_weights(mode, t):
    """Per-axis tap offsets and (weight, d weight / d t) as Tensor functions of the fraction t."""
    if mode == "bilinear":
        return (0, 1), [(1 - t, -1 + t * 0), (t, 1 + t * 0)]
    a = _CUBIC_A
    u1, u2 = t + 1, 1 - t
    return (-1, 0, 1, 2), [
        (_cc2(u1, a), (3 * a * u1 - 10 * a) * u1 + 8 * a),
        (_cc1(t, a), (3 * (a + 2) * t - 2 * (a + 3)) * t),
        (_cc1(u2, a), -((3 * (a + 2) * u2 - 2 * (a + 3)) * u2)),
        (_cc2(2 - t, a), -((3 * a * (2 - t) - 10 * a) * (2 - t) + 8 * a)),
    ]


def _grid_taps(grid, sizes, mode, padding, align_corners):
    """The taps of grid_sampler as (flat index array (N, P), weight Tensor (N, P) or None, [d weight / d grid
    coordinate a, Tensor (N, P), per axis a]). ``grid``: Tensor (N, *out, n) with x first; ``sizes``: the
    input's spatial sizes (D,) H, W. Weights are Tensors of the grid (differentiable); indices are not."""
    n = len(sizes)
    N = grid.shape[0]
    g = grid.reshape(N, -1, n)
    axes = []                     # per axis (x, y, z): (coord Tensor, floor array, d coord / d grid)
    for a in range(n):
        size = sizes[n - 1 - a]
        ga = g[:, :, a]
        if align_corners:
            c, f = (ga + 1) * ((size - 1) / 2), (size - 1) / 2
        else:
            c, f = ((ga + 1) * size - 1) / 2, size / 2
        if mode != "bicubic" and padding != "zeros":
            val, m = _pad_coord(c._data.astype(np.float64), size, padding, align_corners)
            xp = array_module(c._data)
            mt = Tensor._make(xp.asarray(m.astype(c._data.dtype)))
            c = c * mt + Tensor._make(xp.asarray((val - m * c._data).astype(c._data.dtype)))
            f = mt * f
        axes.append((c, size, f))
    per_axis = []
    for c, size, f in axes:
        cv = c._data.astype(np.float64)
        if mode == "nearest":          # weight 1 and derivative 0, as functions of the grid (PyTorch's graph)
            zero = c * 0
            per_axis.append([(np.rint(cv).astype(np.int64), zero + 1, zero)])
            continue
        fl = np.floor(cv)
        t = c - Tensor._make(array_module(c._data).asarray(fl.astype(c._data.dtype)))
        offs, ws = _axis_weights(mode, t)
        taps = []
        for o, (w, dw) in zip(offs, ws):
            i = fl.astype(np.int64) + o
            if mode == "bicubic":
                i = _pad_index(i, size, padding, align_corners)
            taps.append((i, w, dw * f))
        per_axis.append(taps)
    out = []

    def rec(a, flat, valid, w, dws):
        if a < 0:
            out.append((np.where(valid, flat, 0), valid, w, dws))
            return
        size = sizes[n - 1 - a]
        for i, wa, dwa in per_axis[a]:
            ok = valid & (i >= 0) & (i < size)
            nflat = flat * size + np.clip(i, 0, size - 1)
            if wa is None:
                rec(a - 1, nflat, ok, None, None)
            else:
                nw = wa if w is None else w * wa
                nd = [d * wa for d in dws] if dws is not None else []
                nd = nd + [dwa if w is None else w * dwa]
                rec(a - 1, nflat, ok, nw, nd)
    # the index is row-major over (z, y, x): recurse from the slowest axis (the last of x, y, z)
    xp = array_module(g._data)
    rec(n - 1, xp.zeros(g.shape[:2], np.int64), xp.ones(g.shape[:2], bool), None, None)
    # dws were collected slowest axis first: reverse to x, y, z order
    return [(flat, valid, w, None if d is None else d[::-1]) for flat, valid, w, d in out]


def _masked(w, valid, like):
    m = Tensor._make(array_module(like).asarray(valid.astype(like.dtype)))
    return m if w is None else w * m


def _grid_sample_value(x, grid, mode, padding, align_corners):
    """grid_sampler's output as Tensor ops (x: (N, C, *in), grid: (N, *out, n))."""
    N, C = x.shape[:2]
    sizes = tuple(x.shape[2:])
    xf = x.reshape(N, C, -1)
    out = None
    for flat, valid, w, _ in _grid_taps(grid, sizes, mode, padding, align_corners):
        idx = Tensor._make(array_module(x._data).asarray(flat))
        v = xf.gather(2, idx.unsqueeze(1).expand(N, C, flat.shape[1])) * _masked(w, valid, x._data).unsqueeze(1)
        out = v if out is None else out + v
    return out.reshape((N, C) + tuple(grid.shape[1:-1]))


class _GridSampler(Node):
    save = (0, 1)
    saved_names = ("input", "grid")
    saved_attrs = ("interpolation_mode=mode_enum", "padding_mode=padding_enum", "align_corners")

    def forward(self, x, grid):
        with no_grad():
            return _grid_sample_value(Tensor._make(x), Tensor._make(grid), self.mode, self.padding,
                                      self.align_corners)._data

    def backward(self, g):
        x, grid = self.saved_values
        N, C = x.shape[:2]
        n = grid.shape[-1]
        gf = g.reshape(N, C, -1)
        xf = x.reshape(N, C, -1)
        need_x, need_g = self.next_functions[0][0] is not None, self.next_functions[1][0] is not None
        gx = xf.new_zeros(xf.shape) if need_x else None
        gc = [None] * n
        for flat, valid, w, dws in _grid_taps(grid, tuple(x.shape[2:]), self.mode, self.padding,
                                              self.align_corners):
            idx = Tensor._make(array_module(x._data).asarray(flat)).unsqueeze(1).expand(N, C, flat.shape[1])
            m = _masked(w, valid, x._data).unsqueeze(1)
            if need_x:
                gx = gx.scatter_add(2, idx, gf * m)
            if need_g and dws is not None:
                gv = (gf * xf.gather(2, idx)).sum(1) * _masked(None, valid, x._data)
                for a in range(n):
                    d = gv * dws[a]
                    gc[a] = d if gc[a] is None else gc[a] + d
        gg = None
        if need_g:
            if gc[0] is None:                # nearest: a zero gradient (still a function of g, as PyTorch's)
                gg = (g.sum() * 0).expand(grid.shape)
            else:
                from .join import stack
                gg = stack(gc, -1).reshape(grid.shape)
        return (gx.reshape(x.shape) if need_x else None), gg


GridSampler2D = type("GridSampler2D", (_GridSampler,), {"__module__": __name__}, name="GridSampler2DBackward0")
GridSampler3D = type("GridSampler3D", (_GridSampler,), {"__module__": __name__}, name="GridSampler3DBackward0")


# ------------------------------------------------------------------------------ affine_grid
def _linspace(n, align_corners, dt):
    if n <= 1:
        return np.zeros(max(n, 1), dt)
    r = np.linspace(-1, 1, n).astype(dt)
    return r if align_corners else r * dt.type(n - 1) / dt.type(n)


def base_grid(size, align_corners, dt):
    """PyTorch's base grid of affine_grid_generator: (*spatial, n + 1) with x, y(, z), 1 (NumPy)."""
    sp = list(size[2:])
    n = len(sp)
    out = np.ones(sp + [n + 1], dt)
    for a in range(n):                       # coordinate a (x first) runs along spatial dim n - 1 - a
        shape = [1] * n
        shape[n - 1 - a] = sp[n - 1 - a]
        out[..., a] = _linspace(sp[n - 1 - a], align_corners, dt).reshape(shape)
    return out


class AffineGridGenerator(Node, name="AffineGridGeneratorBackward0"):
    """theta (N, n, n + 1) -> grid (N, *spatial, n) = base @ theta^T."""
    saved_attrs = ("align_corners", "size")

    def forward(self, theta):
        xp = array_module(theta)
        b = xp.asarray(base_grid(self.size, self.align_corners, theta.dtype))
        n = theta.shape[1]
        N = theta.shape[0]
        flat = b.reshape(-1, n + 1)
        out = xp.matmul(flat[None], xp.swapaxes(theta, 1, 2))
        return out.reshape((N,) + tuple(self.size[2:]) + (n,))

    def backward(self, g):
        from .linalg import matmul
        n = g.shape[-1]
        b = Tensor._make(array_module(g._data).asarray(base_grid(self.size, self.align_corners, g._data.dtype)))
        gf = g.reshape(g.shape[0], -1, n)
        return matmul(gf.transpose(1, 2), b.reshape(-1, n + 1))


# ---------------------------------------------------------------------------- channel shuffle
def _shuffle_pixels(x, r, up):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r) when ``up``, else the inverse; a contiguous copy."""
    xp = array_module(x)
    *b, c, h, w = x.shape
    nb = len(b)
    lead = tuple(range(nb))
    if up:
        y = x.reshape(tuple(b) + (c // (r * r), r, r, h, w)).transpose(lead + (nb, nb + 3, nb + 1, nb + 4, nb + 2))
        return xp.ascontiguousarray(y).reshape(tuple(b) + (c // (r * r), h * r, w * r))
    y = x.reshape(tuple(b) + (c, h // r, r, w // r, r)).transpose(lead + (nb, nb + 2, nb + 4, nb + 1, nb + 3))
    return xp.ascontiguousarray(y).reshape(tuple(b) + (c * r * r, h // r, w // r))


class PixelShuffle(Node, name="PixelShuffleBackward0"):
    """Depth to space by ``upscale_factor``; its gradient is PixelUnshuffle (and back), as in PyTorch."""
    saved_attrs = ("upscale_factor",)

    def forward(self, x):
        return _shuffle_pixels(x, self.upscale_factor, True)

    def backward(self, g):
        return PixelUnshuffle.apply(g, downscale_factor=self.upscale_factor)


class PixelUnshuffle(Node, name="PixelUnshuffleBackward0"):
    """Space to depth by ``downscale_factor``."""
    saved_attrs = ("downscale_factor",)

    def forward(self, x):
        return _shuffle_pixels(x, self.downscale_factor, False)

    def backward(self, g):
        return PixelShuffle.apply(g, upscale_factor=self.downscale_factor)


class ChannelShuffle(Node, name="ChannelShuffleBackward0"):
    """(N, g*k, *) -> (N, k*g, *): channel i*k + j moves to j*g + i; the backward shuffles with k groups."""

    def forward(self, x):
        n, c = x.shape[:2]
        rest = x.shape[2:]
        xp = array_module(x)
        return xp.ascontiguousarray(xp.swapaxes(x.reshape((n, self.groups, c // self.groups) + rest), 1, 2)
                                    ).reshape(x.shape)

    def backward(self, g):
        return ChannelShuffle.apply(g, groups=g.shape[1] // self.groups)
