"""Neural-network primitives (softmax, conv, pooling, dropout, embedding, norms, losses): forward and
backward side by side. Installs its own Tensor methods at import (softmax, log_softmax, ...).

Linear maps come in pairs whose backwards are each other (conv / conv-transpose / conv-weight,
pooling / its scatter, pad / crop ...), so every gradient here is itself differentiable.
Backwards that are not linear in the gradient (softmax, norms) are written with Tensor ops.
"""
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .._tensor import Tensor
from ..autograd.graph import Node
from ..autograd.formulas import TENSORS
from ..autograd.grad_mode import _state
from .._array import array_module


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
class Softmax(Node, name="SoftmaxBackward0"):
    save = (-1,)
    saved_names = ("result",)
    saved_attrs = ("dim",)

    def forward(self, x):
        e = np.exp(x - x.max(axis=self.dim, keepdims=True))
        e /= e.sum(axis=self.dim, keepdims=True)
        return e

    def backward(self, g, F=TENSORS):
        (y,) = F.saved(self)
        gy = g * y
        return gy - y * F.sum(gy, self.dim, True)


class LogSoftmax(Node, name="LogSoftmaxBackward0"):
    save = (-1,)
    saved_names = ("result",)
    saved_attrs = ("dim",)

    def forward(self, x):
        s = x - x.max(axis=self.dim, keepdims=True)
        s -= np.log(np.exp(s).sum(axis=self.dim, keepdims=True))
        return s

    def backward(self, g, F=TENSORS):
        (y,) = F.saved(self)
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
    if x._data.dtype.kind != "f":
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
def _im2col(x, k, s, p, d):
    """x (N, C, H, W) -> columns (N, C*kh*kw, OH*OW) and (OH, OW); p = (top, bottom, left, right)."""
    if any(p):
        x = np.pad(x, ((0, 0), (0, 0), (p[0], p[1]), (p[2], p[3])))
    n, c, hp, wp = x.shape
    oh = (hp - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (wp - d[1] * (k[1] - 1) - 1) // s[1] + 1
    sn, sc, sh, sw = x.strides
    win = as_strided(x, (n, c, k[0], k[1], oh, ow), (sn, sc, sh * d[0], sw * d[1], sh * s[0], sw * s[1]),
                     subok=True, writeable=False)
    return win.reshape(n, c * k[0] * k[1], oh * ow), oh, ow


def _wide_cols(x, k, p, d):
    """Stride-1 im2col over the flattened padded image: the column of kernel offset (i, j) is one
    contiguous run of that image shifted by i*dh*Wp + j*dw, so the copy moves long runs instead of
    OW-wide rows (2-3x faster). The output grid is OH x Wp ("wide"): its last Wp - OW columns are
    junk that the forward crops and the adjoints feed zeros into. Returns (cols (N, C*kh*kw, OH*Wp), OH, OW, Wp)."""
    n, c, h, w = x.shape
    hp, wp = h + p[0] + p[1], w + p[2] + p[3]
    oh, ow = hp - d[0] * (k[0] - 1), wp - d[1] * (k[1] - 1)
    flat = array_module(x).zeros((n, c, hp * wp + d[1] * (k[1] - 1)), x.dtype)
    flat[:, :, :hp * wp].reshape(n, c, hp, wp)[:, :, p[0]:p[0] + h, p[2]:p[2] + w] = x
    sn, sc, se = flat.strides
    win = as_strided(flat, (n, c, k[0], k[1], oh * wp), (sn, sc, d[0] * wp * se, d[1] * se, se), subok=True,
                     writeable=False)
    return win.reshape(n, c * k[0] * k[1], oh * wp), oh, ow, wp


def _columns(x, k, s, p, d):
    """im2col by the faster layout for this geometry: (cols, OH, OW, row width of the column grid)."""
    if s == (1, 1) and k != (1, 1):
        return _wide_cols(x, k, p, d)
    cols, oh, ow = _im2col(x, k, s, p, d)
    return cols, oh, ow, ow


def _col2im(cols, shape, k, s, p, d, oh, ow):
    """Adjoint of _im2col: sum the columns back into an (N, C, H, W) image (one slice-add per offset)."""
    n, c, h, w = shape
    xp = array_module(cols)
    out = xp.zeros((n, c, h + p[0] + p[1], w + p[2] + p[3]), cols.dtype)
    cols = cols.reshape(n, c, k[0], k[1], oh, ow)
    he, we = s[0] * (oh - 1) + 1, s[1] * (ow - 1) + 1
    for i in range(k[0]):
        for j in range(k[1]):
            out[:, :, i * d[0]:i * d[0] + he:s[0], j * d[1]:j * d[1] + we:s[1]] += cols[:, :, i, j]
    if any(p):
        out = xp.ascontiguousarray(out[:, :, p[0]:p[0] + h, p[2]:p[2] + w])
    return out


def _conv2d(x, w, b, s, p, d, g):
    """Convolution of arrays (N, C, H, W) * (O, C/g, kh, kw): one batched GEMM over the columns.
    Returns (out, cols, wp): the columns and their row width, which the weight gradient reuses."""
    n, o = x.shape[0], w.shape[0]
    cols, oh, ow, wp = _columns(x, w.shape[2:], s, p, d)
    if g == 1:
        out = np.matmul(w.reshape(o, -1), cols)
    else:
        out = np.matmul(w.reshape(g, o // g, -1), cols.reshape(n, g, -1, cols.shape[-1]))
    out = out.reshape(n, o, oh, wp)
    if wp != ow:  # crop the junk columns, adding the bias on the way
        res = array_module(out).empty((n, o, oh, ow), out.dtype)
        if b is None:
            np.copyto(res, out[..., :ow])
        else:
            np.add(out[..., :ow], b[:, None, None], out=res)
        return res, cols, wp
    if b is not None:
        out += b[:, None, None]
    return out, cols, wp


def _conv2d_weight(x, y, ws, s, p, d, g, cols=None, wp=None):
    """d<y, conv(x, w)>/dw: the columns of x (reused from the forward when given) against y."""
    if cols is None:
        cols, _, _, wp = _columns(x, ws[2:], s, p, d)
    n, o, oh, ow = y.shape
    if wp != ow:  # zeros against the junk columns
        yw = array_module(y).zeros((n, o, oh, wp), y.dtype)
        yw[..., :ow] = y
        y = yw
    gw = np.matmul(y.reshape(n, g, o // g, -1), cols.reshape(n, g, -1, cols.shape[-1]).transpose(0, 1, 3, 2))
    return gw.sum(0).reshape(ws)


def _conv2d_transpose(y, w, out_hw, s, p, d, g):
    """Adjoint of _conv2d in x: y (N, O, OH, OW) -> (N, C, H, W). With stride 1 it is a convolution of
    y with the flipped, transposed kernel (no scatter-add); otherwise columns summed back by _col2im."""
    n, o, oh, ow = y.shape
    _, cg, kh, kw = w.shape
    (h, wd), ek = out_hw, (d[0] * (kh - 1), d[1] * (kw - 1))
    if s == (1, 1):
        top, left = ek[0] - p[0], ek[1] - p[2]
        pads = (top, h - oh - top + ek[0], left, wd - ow - left + ek[1])
        if min(pads) >= 0:
            wt = w.reshape(g, o // g, cg, kh, kw).transpose(0, 2, 1, 3, 4).reshape(g * cg, o // g, kh, kw)
            return _conv2d(y, wt[..., ::-1, ::-1], None, s, pads, d, g)[0]
    if g == 1:
        cols = np.matmul(w.reshape(o, -1).T, y.reshape(n, o, -1))
    else:
        cols = np.matmul(w.reshape(g, o // g, -1).transpose(0, 2, 1), y.reshape(n, g, o // g, -1))
    return _col2im(cols, (n, cg * g, h, wd), (kh, kw), s, p, d, oh, ow)


# --------------------------------------------------------------------------- convolution
# Three bilinear maps, each one's backward written with the other two:
#   Conv(x, w)      = A_w x             (+ bias)
#   ConvTr(y, w)    = A_w^T y           (grad of Conv wrt x; conv_transpose)
#   ConvW(x, y)     = d<y, A_w x>/dw    (grad of Conv wrt w)
# 1-d convs run as 2-d with H = 1 (the nodes add and drop that axis themselves).

class _ConvBase(Node):
    stride = (1, 1)
    padding = (0, 0, 0, 0)
    dilation = (1, 1)
    groups = 1

    def _args(self):
        return self.stride, self.padding, self.dilation, self.groups

    def _geo(self):
        return dict(zip(("stride", "padding", "dilation", "groups"), self._args()))


class Conv(_ConvBase, name="ConvolutionBackward0"):
    save = (0, 1)
    saved_names = ("input", "weight")
    saved_attrs = ("stride", "padding=padding[::2]", "dilation", "groups", "transposed=False", "output_padding=(0,) * len(stride)",
                   "bias_sym_sizes_opt=input_sizes(2) if len(_in_meta) > 2 and _in_meta[2] is not None else (0,)")
    _cols_cache = None

    def forward(self, x, w, b=None):
        x0, one = x, x.ndim == 3
        if one:
            x, w = x[:, :, None], w[:, :, None]
        out, cols, wp = _conv2d(x, w, b, *self._args())
        self._cols_cache = (x0, cols, wp)
        return out[:, :, 0] if one else out

    def backward(self, gy):
        x, w = self.saved_values
        geo = self._geo()
        cache, self._cols_cache = self._cols_cache, None
        gx = ConvTr.apply(gy, w, out_hw=x.shape[2:], **geo) if _need(self, 0) else None
        gw = None
        if _need(self, 1):
            cols = cache[1:] if cache is not None and cache[0] is x._data else None
            gw = ConvW.apply(x, gy, wshape=w.shape, cols=cols, **geo)
        gb = gy.sum((0, 2, 3) if gy.dim() == 4 else (0, 2)) if len(self.next_functions) > 2 and _need(self, 2) else None
        return gx, gw, gb


class ConvTr(_ConvBase, name="ConvolutionBackward0"):
    """y (N, O, OH, OW), w (O, C/g, kh, kw) -> (N, C, H, W) with (H, W) = out_hw."""
    save = (0, 1)
    saved_names = ("input", "weight")

    def forward(self, y, w, b=None):
        one = y.ndim == 3
        if one:
            y, w = y[:, :, None], w[:, :, None]
        out = _conv2d_transpose(y, w, (1,) + tuple(self.out_hw) if one else tuple(self.out_hw), *self._args())
        if b is not None:
            out += b[:, None, None]
        return out[:, :, 0] if one else out

    def backward(self, gx):
        y, w = self.saved_values
        geo = self._geo()
        gy = Conv.apply(gx, w, **geo) if _need(self, 0) else None
        gw = ConvW.apply(gx, y, wshape=w.shape, **geo) if _need(self, 1) else None
        gb = gx.sum((0, 2, 3) if gx.dim() == 4 else (0, 2)) if len(self.next_functions) > 2 and _need(self, 2) else None
        return gy, gw, gb


class ConvW(_ConvBase, name="ConvolutionBackwardBackward0"):
    """d<y, conv(x, w)>/dw for x (N, C, H, W), y (N, O, OH, OW)."""
    save = (0, 1)
    saved_names = ("input", "grad_output")
    cols = None

    def forward(self, x, y):
        one = x.ndim == 3
        if one:
            x, y = x[:, :, None], y[:, :, None]
        ws = self.wshape
        cached, self.cols = self.cols, None      # (columns, row width) kept by Conv's forward, once
        gw = _conv2d_weight(x, y, (ws[0], ws[1], 1, ws[2]) if one else ws, *self._args(), *(cached or ()))
        return gw.reshape(ws)

    def backward(self, gw):
        x, y = self.saved_values
        geo = self._geo()
        gx = ConvTr.apply(y, gw, out_hw=x.shape[2:], **geo) if _need(self, 0) else None
        gy = Conv.apply(x, gw, **geo) if _need(self, 1) else None
        return gx, gy


# ------------------------------------------------------------------------------ unfold / fold
class Im2col(_ConvBase, name="Im2ColBackward0"):
    def forward(self, x):
        self.in_shape = x.shape
        cols, self.oh, self.ow = _im2col(x, self.kernel, self.stride, self.padding, self.dilation)
        return cols

    def backward(self, g):
        return Col2im.apply(g, out_shape=self.in_shape, kernel=self.kernel, oh=self.oh, ow=self.ow, **self._geo())


class Col2im(_ConvBase, name="Col2ImBackward0"):
    def forward(self, cols):
        return _col2im(cols, self.out_shape, self.kernel, self.stride, self.padding, self.dilation, self.oh, self.ow)

    def backward(self, g):
        return Im2col.apply(g, kernel=self.kernel, **self._geo())


# ------------------------------------------------------------------------------- pooling
class _PoolGeo(Node):
    """Window geometry shared by a pooling op and its adjoint: per-offset strided slices."""

    def _slices(self):
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.stride, self.dilation
        he, we = sh * (self.oh - 1) + 1, sw * (self.ow - 1) + 1
        for i in range(kh):
            for j in range(kw):
                yield i * kw + j, (Ellipsis, slice(i * dh, i * dh + he, sh), slice(j * dw, j * dw + we, sw))

    def _padded(self, x, fill):
        p = self.pads
        if not any(p):
            return x
        return np.pad(x, ((0, 0),) * (x.ndim - 2) + ((p[0], p[1]), (p[2], p[3])), constant_values=fill)

    def _scatter(self, parts, like):
        """Sum per-offset (N, C, OH, OW) arrays ``parts(k, out_view)`` back into the (unpadded) input shape.

        Without overlap (stride >= window extent) each offset writes its own pixels: parts() fills the strided
        view in place (no temporary, no add); otherwise the parts are added. ``like``: the array whose shape,
        dtype and module the result has."""
        shape, dtype, xp = like.shape, like.dtype, array_module(like)
        p = self.pads
        h, w = self.in_hw
        full = shape[:-2] + (h + p[0] + p[1], w + p[2] + p[3])
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.stride, self.dilation
        disjoint = sh >= dh * (kh - 1) + 1 and sw >= dw * (kw - 1) + 1
        tiled = disjoint and sh == kh and sw == kw and dh == dw == 1 and full[-2] == self.oh * sh \
            and full[-1] == self.ow * sw
        out = xp.empty(full, dtype) if tiled else xp.zeros(full, dtype)
        for k, sl in self._slices():
            if disjoint:
                parts(k, out[sl])
            else:
                out[sl] += parts(k, None)
        return xp.ascontiguousarray(out[..., p[0]:p[0] + h, p[2]:p[2] + w]) if any(p) else out

    def _geo(self):
        return {k: getattr(self, k) for k in ("kernel", "stride", "dilation", "pads", "oh", "ow", "in_hw")}


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
        xpad = self._padded(x, -np.inf)
        arg, out = self._separable(xpad) if x.size else (None, None)
        if arg is None:
            arg, out = self._windowed(xpad)
        self.arg = arg
        xp = array_module(x)
        if not self.want_indices:
            return out, xp.empty(0, np.int64)
        kw = self.kernel[1]
        oh = xp.arange(self.oh)[:, None] * self.stride[0] - self.pads[0]
        ow = xp.arange(self.ow)[None, :] * self.stride[1] - self.pads[2]
        hh = oh + (arg // kw) * self.dilation[0]
        ww = ow + (arg % kw) * self.dilation[1]
        return out, (hh * self.in_hw[1] + ww).astype(np.int64)

    def _separable(self, xpad):
        """Max over rows of the per-row max over columns: each pass compares whole strided planes, and
        the first maximum in row-major window order is the first row's first column. (None, None) when
        the result has a NaN (left to _windowed)."""
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.stride, self.dilation
        he, we = sh * (self.oh - 1) + 1, sw * (self.ow - 1) + 1
        m1, j1 = _first_max([xpad[..., j * dw:j * dw + we:sw] for j in range(kw)])
        out, i2 = _first_max([m1[..., i * dh:i * dh + he:sh, :] for i in range(kh)])
        if np.isnan(out).any():
            return None, None
        if kh == 1:
            return j1[..., :he:sh, :].copy(), out
        dt = _index_dtype(kh * kw)
        # the column index of the chosen row, by arithmetic (a masked copy is ~10x slower)
        rows = [j1[..., i * dh:i * dh + he:sh, :] for i in range(kh)]
        arg = np.multiply(i2, kw, dtype=dt)
        arg += rows[0]
        for i in range(1, kh):
            d = np.subtract(rows[i], rows[0], dtype=dt)
            d *= i2 == i
            arg += d
        return arg, out

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
        return MaxPoolScatter.apply(g, x, arg=self.arg, **self._geo())


class MaxPoolScatter(_PoolGeo, name="MaxPool2DWithIndicesBackwardBackward0"):
    """The gradient scattered to the argmax positions; ``x`` is only a graph edge, as in PyTorch
    (max_pool2d_with_indices_backward(grad, self, ...) requires grad when self does; its grad is zero)."""

    def forward(self, g, x=None):
        arg = self.arg
        return self._scatter(lambda k, o: np.multiply(g, arg == k, out=o), g)

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
        return MaxPoolScatter.apply(g, arg=self.arg, **self._geo())


class AvgPool(_PoolGeo, name="AvgPool2DBackward0"):
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
        return AvgPoolScatter.apply(g, x, div=self.div, **self._geo())


class AvgPoolScatter(_PoolGeo, name="AvgPool2DBackwardBackward0"):
    def forward(self, g, x=None):
        gd = g / self.div
        return self._scatter(lambda k, o: gd if o is None else np.copyto(o, gd), g)

    def backward(self, gg):
        return AvgPool.apply(gg, div=self.div, **self._geo()), _zero_grad(self, 1, gg)


class AdaptiveMaxPool(Node, name="AdaptiveMaxPool2DBackward0"):
    """Max over PyTorch's adaptive regions [floor(i*H/OH), ceil((i+1)*H/OH)); indices flat in H*W."""
    nondiff_outputs = (1,)
    save = (0,)
    saved_names = ("self",)

    def forward(self, x):
        h, w = x.shape[-2:]
        oh, ow = self.out_hw
        xp = array_module(x)
        out = xp.empty(x.shape[:-2] + (oh, ow), x.dtype)
        idx = xp.empty(out.shape, np.int64)
        for i in range(oh):
            h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            for j in range(ow):
                w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
                reg = x[..., h0:h1, w0:w1].reshape(x.shape[:-2] + (-1,))
                a = reg.argmax(-1)
                nan = np.isnan(reg)
                if nan.any():  # the region's last NaN, as PyTorch's kernel
                    a = np.where(nan.any(-1), nan.shape[-1] - 1 - nan[..., ::-1].argmax(-1), a)
                out[..., i, j] = np.take_along_axis(reg, a[..., None], -1)[..., 0]
                idx[..., i, j] = (h0 + a // (w1 - w0)) * w + w0 + a % (w1 - w0)
        self.idx, self.in_shape = idx, x.shape
        return out, idx

    def backward(self, g):
        (x,) = self.saved_values
        return FlatScatter.apply(g, x, idx=self.idx, in_shape=self.in_shape)


class FlatScatter(Node, name="AdaptiveMaxPool2DBackwardBackward0"):
    """g (..., OH, OW) summed into zeros (..., H, W) at flat spatial indices idx. ``x`` is only a graph
    edge, as in PyTorch (adaptive_max_pool2d_backward(grad, self, indices) requires grad when self does)."""

    def forward(self, g, x=None):
        h, w = self.in_shape[-2:]
        lead = int(np.prod(self.in_shape[:-2]))
        rows = array_module(g).arange(lead)[:, None] * (h * w)
        flat = (rows + self.idx.reshape(lead, -1)).ravel()
        out = np.bincount(flat, weights=g.ravel(), minlength=lead * h * w)
        return out.astype(g.dtype).reshape(self.in_shape)

    def backward(self, gg):
        return FlatGather.apply(gg, idx=self.idx, in_shape=self.in_shape), _zero_grad(self, 1, gg)


class FlatGather(FlatScatter, name="FlatGatherBackward0"):
    def forward(self, x):
        flat = x.reshape(x.shape[:-2] + (-1,))
        return np.take_along_axis(flat, self.idx.reshape(self.idx.shape[:-2] + (-1,)), -1).reshape(self.idx.shape)

    def backward(self, g):
        return FlatScatter.apply(g, idx=self.idx, in_shape=self.in_shape)


# ------------------------------------------------------------------------------ padding
from .join import ConstantPad  # noqa: E402,F401  (constant padding: one node, in join.py)


# ------------------------------------------------------------------------ normalization
class Norm(Node, name="NativeBatchNormBackward0"):
    """out = (x - mean) * invstd * w + b, with (mean, invstd) given per stats group.

    ``sshape``: x reshaped so that the statistics reduce over ``axes`` (keepdims shapes for mean/invstd);
    ``pshape``: the broadcast shape of w and b against x; ``batch_stats``: whether mean/invstd come from x
    (training) or are constants (running statistics).
    """
    save = (0, 1)
    saved_names = ("input", "weight")
    saved_attrs = ("eps", "training=batch_stats", "result1=mean.reshape(-1)", "result2=invstd.reshape(-1)")

    def forward(self, x, w=None, b=None):
        xr = x.reshape(self.sshape)
        out = ((xr - self.mean) * self.invstd).reshape(x.shape)
        if w is not None:
            out *= w.reshape(self.pshape)
        if b is not None:
            out += b.reshape(self.pshape)
        return out.astype(x.dtype, copy=False)

    def backward(self, g):
        x, w = self.saved_values
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
        if len(nf) > 1 and nf[1][0] is not None:
            gw = (g * xhat.reshape(x.shape)).sum(pdims).reshape(w.shape)
        if len(nf) > 2 and nf[2][0] is not None:
            gb = g.sum(pdims).reshape(self.wshape)
        return gx, gw, gb


class LayerNormNode(Norm, name="NativeLayerNormBackward0"):
    saved_attrs = ("normalized_shape=wshape", "result1=mean", "result2=invstd")
    pass


class GroupNormNode(Norm, name="NativeGroupNormBackward0"):
    pass


def norm_stats(x, axes, eps):
    """(mean, invstd, biased var) over axes with keepdims, accumulated in float64 for float32 inputs."""
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


class EmbeddingScatter(Node, name="EmbeddingDenseBackward0"):
    def forward(self, g):
        d = g.shape[-1]
        flat = self.idx.reshape(-1)
        gf = g.reshape(-1, d)
        if self.padding_idx is not None:
            keep = flat != self.padding_idx
            flat, gf = flat[keep], gf[keep]
        out = array_module(g).zeros((self.num, d), g.dtype)
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
    saved_attrs = ('ignore_index', 'reduction=("none", "mean", "sum").index(reduction)', 'weight=wt', 'target=ts')

    def forward(self, x, t, w=None):
        c = x.shape[1] if x.ndim > 1 else x.shape[0]
        xc = x if x.ndim == 2 else np.moveaxis(x, 1, -1).reshape(-1, c) if x.ndim > 1 else x.reshape(1, c)
        tf = t.reshape(-1)
        n = len(tf)
        xp = array_module(x)
        rows = xp.arange(n)
        lo, hi = (int(tf.min()), int(tf.max())) if n else (0, -1)
        if w is None and n and 0 <= lo and hi < c and not lo <= self.ignore_index <= hi:
            ts, wt = tf, None       # the common case: every target a class, no weights (no masks to build)
            picked = -xc[rows, tf]
            total = x.dtype.type(n)
        else:
            valid = tf != self.ignore_index
            bad = valid & ((tf < 0) | (tf >= c))
            if bad.any():
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


# adaptive average pooling: one primitive (AdaptiveAvgPool2DBackward0), as PyTorch
def _adaptive_avg_matrix(size, o, xp):
    """(o, size) in module ``xp``: row i averages PyTorch's adaptive region [floor(i*size/o), ceil((i+1)*size/o))."""
    m = xp.zeros((o, size), np.float64)
    for i in range(o):
        a, b = (i * size) // o, -(-((i + 1) * size) // o)
        m[i, a:b] = 1.0 / (b - a)
    return m


class AdaptiveAvgPool(Node, name="AdaptiveAvgPool2DBackward0"):
    """Mean over PyTorch's adaptive regions of the last two dims: ``A_h @ x @ A_w.T`` with averaging
    matrices (computed in float64). Linear: its gradient is AdaptiveAvgPoolGrad, whose gradient is this."""
    save = (0,)
    saved_names = ("self",)

    def forward(self, x):
        h, w = x.shape[-2:]
        oh, ow = self.out_hw
        xp = array_module(x)
        self.mats = _adaptive_avg_matrix(h, oh, xp), _adaptive_avg_matrix(w, ow, xp)
        return (self.mats[0] @ x.astype(np.float64) @ self.mats[1].T).astype(x.dtype)

    def backward(self, g):
        (x,) = self.saved_values
        return AdaptiveAvgPoolGrad.apply(g, x, mats=self.mats)


class AdaptiveAvgPoolGrad(Node, name="AdaptiveAvgPool2DBackwardBackward0"):
    """``A_h.T @ g @ A_w``: g spread evenly over each region. ``x`` is only a graph edge, as in PyTorch."""

    def forward(self, g, x=None):
        ah, aw = self.mats
        return (ah.T @ g.astype(np.float64) @ aw).astype(g.dtype)

    def backward(self, gg):
        ah, aw = self.mats
        return AdaptiveAvgPool.apply(gg, out_hw=(ah.shape[0], aw.shape[0])), None


# ----------------------------------------------------------------- pointwise losses (one node each, as PyTorch)
_REDUCTIONS = ("none", "mean", "sum")


class _PointLoss(Node):
    """A pointwise loss of (input, target) with its reduction; forward on arrays, backward with Tensor ops
    (so the gradient is differentiable again). Gradients come at the broadcast shape (reduced by the engine)."""
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
