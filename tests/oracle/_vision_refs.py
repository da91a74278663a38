"""Reference implementations of torchvision's CPU kernels (torchvision/csrc/ops/cpu/*.cpp) as plain loops over
NumPy scalars of the input's dtype, transcribed statement by statement (small sizes only), and torchvision's
own pure-torch roi_align (``torchvision.ops.roi_align._roi_align``) lifted out of its file, to run under the
PyTorch oracle with autograd."""
import ast
import math
import os

import numpy as np


# ------------------------------------------------------------------------------ roi_align (roi_align_kernel.cpp)
def _bilinear(img, H, W, y, x, T):
    """pre_calc_for_bilinear_interpolate / bilinear_interpolate: value and [(pos, weight)] of one sample."""
    if not (y >= -1.0 and y <= H and x >= -1.0 and x <= W):
        return T(0), []
    if y <= 0:
        y = T(0)
    if x <= 0:
        x = T(0)
    yl, xl = int(y), int(x)
    if yl >= H - 1:
        yh = yl = H - 1
        y = T(yl)
    else:
        yh = yl + 1
    if xl >= W - 1:
        xh = xl = W - 1
        x = T(xl)
    else:
        xh = xl + 1
    ly, lx = T(y - T(yl)), T(x - T(xl))
    hy, hx = T(T(1) - ly), T(T(1) - lx)
    ws = [(yl * W + xl, T(hy * hx)), (yl * W + xh, T(hy * lx)), (yh * W + xl, T(ly * hx)), (yh * W + xh, T(ly * lx))]
    flat = img.reshape(-1) if img is not None else None
    val = T(sum(T(w * flat[p]) for p, w in ws)) if img is not None else T(0)
    return val, ws


def _align_geometry(roi, scale, PH, PW, sr, aligned, T, clamp):
    off = T(0.5) if aligned else T(0)
    sc = T(scale)
    sw, sh, ew, eh = (T(T(roi[i]) * sc) - off for i in (1, 2, 3, 4))
    rw, rh = T(ew - sw), T(eh - sh)
    if clamp:
        rw, rh = max(rw, T(1)), max(rh, T(1))
    bh, bw = T(rh / T(PH)), T(rw / T(PW))
    gh = sr if sr > 0 else int(math.ceil(rh / T(PH)))
    gw = sr if sr > 0 else int(math.ceil(rw / T(PW)))
    return sw, sh, bh, bw, gh, gw


def _samples(sw, sh, bh, bw, gh, gw, ph, pw, T):
    for iy in range(gh):
        y = T(T(sh + T(T(ph) * bh)) + T(T(T(iy + .5) * bh) / T(gh)))
        for ix in range(gw):
            x = T(T(sw + T(T(pw) * bw)) + T(T(T(ix + .5) * bw) / T(gw)))
            yield y, x


def roi_align(x, rois, scale, PH, PW, sr, aligned):
    T = x.dtype.type
    N, C, H, W = x.shape
    out = np.zeros((len(rois), C, PH, PW), x.dtype)
    for n, roi in enumerate(rois):
        b = int(roi[0])
        sw, sh, bh, bw, gh, gw = _align_geometry(roi, scale, PH, PW, sr, aligned, T, not aligned)
        count = T(max(gh * gw, 1))
        for c in range(C):
            for ph in range(PH):
                for pw in range(PW):
                    acc = T(0)
                    for y, xx in _samples(sw, sh, bh, bw, gh, gw, ph, pw, T):
                        acc = T(acc + _bilinear(x[b, c], H, W, y, xx, T)[0])
                    out[n, c, ph, pw] = acc / count
    return out


def ps_roi_align(x, rois, scale, PH, PW, sr):
    T = x.dtype.type
    N, C, H, W = x.shape
    Co = C // (PH * PW)
    out = np.zeros((len(rois), Co, PH, PW), x.dtype)
    cmap = np.zeros(out.shape, np.int32)
    for n, roi in enumerate(rois):
        b = int(roi[0])
        sw, sh, bh, bw, gh, gw = _align_geometry(roi, scale, PH, PW, sr, True, T, False)
        count = T(gh * gw)
        c_in = 0
        for co in range(Co):
            for ph in range(PH):
                for pw in range(PW):
                    acc = T(0)
                    for y, xx in _samples(sw, sh, bh, bw, gh, gw, ph, pw, T):
                        acc = T(acc + _bilinear(x[b, c_in], H, W, y, xx, T)[0])
                    with np.errstate(invalid="ignore", divide="ignore"):
                        out[n, co, ph, pw] = acc / count
                    cmap[n, co, ph, pw] = c_in
                    c_in += 1
    return out, cmap


# ------------------------------------------------------------------------------ roi_pool (roi_pool_kernel.cpp)
def _cround(v):
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def _pool_bins(roi, scale, PH, PW, H, W, T, plus_one, hi_h, hi_w):
    sw, sh, ew, eh = (_cround(T(T(roi[i]) * T(scale))) for i in (1, 2, 3, 4))
    rw = max(ew - sw + plus_one, 1)
    rh = max(eh - sh + plus_one, 1)
    bh, bw = T(T(rh) / T(PH)), T(T(rw) / T(PW))
    for ph in range(PH):
        for pw in range(PW):
            hs = int(math.floor(T(T(ph) * bh)))
            ws = int(math.floor(T(T(pw) * bw)))
            he = int(math.ceil(T(T(ph + 1) * bh)))
            we = int(math.ceil(T(T(pw + 1) * bw)))
            hs = min(max(hs + sh, 0), hi_h)
            he = min(max(he + sh, 0), hi_h)
            ws = min(max(ws + sw, 0), hi_w)
            we = min(max(we + sw, 0), hi_w)
            yield ph, pw, hs, he, ws, we


def roi_pool(x, rois, scale, PH, PW):
    T = x.dtype.type
    N, C, H, W = x.shape
    out = np.zeros((len(rois), C, PH, PW), x.dtype)
    arg = np.zeros(out.shape, np.int32)
    for n, roi in enumerate(rois):
        b = int(roi[0])
        for ph, pw, hs, he, ws, we in _pool_bins(roi, scale, PH, PW, H, W, T, 1, H, W):
            empty = he <= hs or we <= ws
            for c in range(C):
                m = T(0) if empty else -T(np.finfo(np.float32).max)
                mi = -1
                for h in range(hs, he):
                    for w in range(ws, we):
                        if x[b, c, h, w] > m:
                            m, mi = x[b, c, h, w], h * W + w
                out[n, c, ph, pw], arg[n, c, ph, pw] = m, mi
    return out, arg


def ps_roi_pool(x, rois, scale, PH, PW):
    T = x.dtype.type
    N, C, H, W = x.shape
    Co = C // (PH * PW)
    out = np.zeros((len(rois), Co, PH, PW), x.dtype)
    for n, roi in enumerate(rois):
        b = int(roi[0])
        for ph, pw, hs, he, ws, we in _pool_bins(roi, scale, PH, PW, H, W, T, 0, H - 1, W - 1):
            empty = he <= hs or we <= ws
            for co in range(Co):
                c = (co * PH + ph) * PW + pw
                s = T(0)
                for h in range(hs, he):
                    for w in range(ws, we):
                        s = T(s + x[b, c, h, w])
                out[n, co, ph, pw] = T(0) if empty else s / T((he - hs) * (we - ws))
    return out


def ps_roi_pool_backward(g, rois, scale, PH, PW, shape):
    """ps_roi_pool_backward_kernel_impl: its bins are clipped to [0, size], not [0, size - 1]."""
    T = g.dtype.type
    N, C, H, W = shape
    Co = C // (PH * PW)
    gi = np.zeros(shape, g.dtype)
    for n, roi in enumerate(rois):
        b = int(roi[0])
        for ph, pw, hs, he, ws, we in _pool_bins(roi, scale, PH, PW, H, W, T, 0, H, W):
            empty = he <= hs or we <= ws
            for co in range(Co):
                c = (co * PH + ph) * PW + pw
                d = T(0) if empty else g[n, co, ph, pw] / T((he - hs) * (we - ws))
                gi[b, c, hs:he, ws:we] += d
    return gi


# ------------------------------------------------------------------------------ deform_conv2d (its kernel.cpp)
def _deform_bilinear(img, H, W, h, w):
    if h <= -1 or H <= h or w <= -1 or W <= w:
        return 0.0
    hl, wl = math.floor(h), math.floor(w)
    hh_, wh = hl + 1, wl + 1
    lh, lw = h - hl, w - wl
    v = lambda a, b: img[a, b] if 0 <= a <= H - 1 and 0 <= b <= W - 1 else 0.0  # noqa: E731
    return ((1 - lh) * (1 - lw) * v(hl, wl) + (1 - lh) * lw * v(hl, wh) + lh * (1 - lw) * v(hh_, wl)
            + lh * lw * v(hh_, wh))


def deform_conv2d(x, w, off, mask, bias, stride, pad, dil, groups, og, use_mask):
    N, Cin, H, W = x.shape
    Cout, Cg, kh, kw = w.shape
    sh, sw = stride
    ph, pw = pad
    dh, dw = dil
    OH = (H + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    OW = (W + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    out = np.zeros((N, Cout, OH, OW))
    cpo = Cin // og
    for n in range(N):
        cols = np.zeros((Cin, kh, kw, OH, OW))
        for c in range(Cin):
            g = c // cpo
            for i in range(kh):
                for j in range(kw):
                    k = i * kw + j
                    for oy in range(OH):
                        for ox in range(OW):
                            y = (oy * sh - ph) + i * dh + off[n, g * 2 * kh * kw + 2 * k, oy, ox]
                            xx = (ox * sw - pw) + j * dw + off[n, g * 2 * kh * kw + 2 * k + 1, oy, ox]
                            m = mask[n, g * kh * kw + k, oy, ox] if use_mask else 1.0
                            cols[c, i, j, oy, ox] = m * _deform_bilinear(x[n, c], H, W, y, xx)
        for o in range(Cout):
            gi = o // (Cout // groups)
            cs = slice(gi * Cg, (gi + 1) * Cg)
            out[n, o] = np.einsum("cij,cijyx->yx", w[o], cols[cs]) + bias[o]
    return out


# ------------------------------------------------------------------------------ nms (nms_kernel.cpp)
def nms(boxes, scores, thr):
    """Brute force: visit boxes by decreasing score (ties by index), keep one unless a kept box overlaps it
    by IoU > thr (IoU in the boxes' dtype, compared in double)."""
    T = boxes.dtype.type
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    keep = []
    area = lambda b: T(T(b[2] - b[0]) * T(b[3] - b[1]))  # noqa: E731
    for i in order:
        ok = True
        for k in keep:
            a, b = boxes[k], boxes[i]
            w = max(T(0), T(min(a[2], b[2]) - max(a[0], b[0])))
            h = max(T(0), T(min(a[3], b[3]) - max(a[1], b[1])))
            inter = T(w * h)
            if float(T(inter / T(T(area(a) + area(b)) - inter))) > thr:
                ok = False
                break
        if ok:
            keep.append(i)
    return np.array(keep, np.int64)


def batched_nms(boxes, scores, idxs, thr):
    """torchvision's batched_nms: nms within each category, the kept indices by decreasing score (ties by index,
    as its coordinate trick's single nms orders them)."""
    keep = []
    for c in np.unique(idxs):
        sel = np.flatnonzero(idxs == c)
        keep.extend(sel[nms(boxes[sel], scores[sel], thr)])
    return np.array(sorted(keep, key=lambda i: (-float(scores[i]), i)), np.int64)


# ------------------------------------------------------------------------------ torchvision's pure-torch roi_align
def torchvision_roi_align():
    """torchvision.ops.roi_align._roi_align (with its helpers) taken from torchvision's file without importing
    torchvision (whose CUDA _C cannot load beside the CPU torch oracle): the functions' source, undecorated,
    run in a namespace holding torch. None if torchvision is not installed."""
    import importlib.util
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "ops", "roi_align.py")
    tree = ast.parse(open(path).read())
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef)
            and n.name in ("_bilinear_interpolate", "maybe_cast", "_roi_align")]
    for n in keep:
        n.decorator_list = []
    import torch
    ns = {"torch": torch}
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)
    return ns["_roi_align"]
