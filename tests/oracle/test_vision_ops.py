"""torchvision's operators (torch.ops.torchvision.*, hookgrad.primitives.vision), torch.library and
torch._custom_ops.

The oracles: (a) torchvision's CPU kernels transcribed as loops (_vision_refs.py); (b) hookgrad's gradcheck of
every backward in float64, and the same forward run in PyTorch where it is expressible there (torchvision's own
pure-torch roi_align, ps_roi_align as a channel gather of it, deform_conv2d with zero offsets as conv2d), values
and gradients; (c) nms against a brute-force loop, ties and batched_nms included; (d) the same torch.library
programs under torch and hookgrad; (e) torchvision's own Python on hookgrad, in a subprocess.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import hookgrad
import _vision_refs as R
from hookgrad.primitives import vision as V

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def H(a, rg=False):
    t = hookgrad.tensor(a)
    return t.requires_grad_(True) if rg else t


def rois_for(rng, K, N, H_, W_, scale=1.0, dtype="float64", margin=2.0, inside=False):
    """K random rois (batch index, x1, y1, x2, y2) in input coordinates (before spatial_scale); ``inside``:
    within the image."""
    b = rng.integers(0, N, K)
    if inside:
        x1, y1 = rng.uniform(0, W_ / scale / 2, K), rng.uniform(0, H_ / scale / 2, K)
        x2, y2 = x1 + rng.uniform(0.2, W_ / scale / 2, K), y1 + rng.uniform(0.2, H_ / scale / 2, K)
        return np.stack([b, x1, y1, x2, y2], 1).astype(dtype)
    x1 = rng.uniform(-margin, W_ / scale, K)
    y1 = rng.uniform(-margin, H_ / scale, K)
    x2 = x1 + rng.uniform(0.2, W_ / scale, K)
    y2 = y1 + rng.uniform(0.2, H_ / scale, K)
    return np.stack([b, x1, y1, x2, y2], 1).astype(dtype)


def gradcheck(fn, *inputs):
    assert hookgrad.autograd.gradcheck(fn, tuple(inputs), eps=1e-6, atol=1e-6, rtol=1e-4)


# ------------------------------------------------------------------------------ roi_align
@pytest.mark.parametrize("sr", [2, 0, -1])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_roi_align_matches_the_kernel(sr, aligned, dtype):
    rng = np.random.default_rng(sr + 2 + 10 * aligned)
    x = rng.standard_normal((2, 3, 9, 11)).astype(dtype)
    rois = rois_for(rng, 5, 2, 9, 11, 0.7, dtype)
    rois[0, 1:] = [-3, -2, 30, 40]          # beyond the image on every side
    rois[1, 1:] = [4, 4, 4, 4]              # empty (forced to 1x1 when not aligned)
    ref = R.roi_align(x, rois, 0.7, 3, 4, sr, aligned)
    got = V.roi_align(H(x), H(rois), 0.7, 3, 4, sr, aligned)
    assert got.dtype == getattr(hookgrad, dtype) and tuple(got.shape) == (5, 3, 3, 4)
    tol = 1e-12 if dtype == "float64" else 2e-6
    np.testing.assert_allclose(got.numpy(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("sr,aligned", [(2, False), (0, True), (3, True)])
def test_roi_align_against_torchvisions_pure_torch_version(sr, aligned):
    """Values and input gradients against torchvision's own differentiable roi_align, run in PyTorch. That
    version clamps samples instead of zeroing those beyond [-1, size] (and caps the adaptive grid at the image
    size), so the rois lie inside the image, where it and the C++ kernel agree."""
    ref_fn = R.torchvision_roi_align()
    if ref_fn is None:
        pytest.skip("torchvision is not installed")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 10, 8))
    rois = rois_for(rng, 6, 2, 10, 8, 0.5, inside=True)
    g = rng.standard_normal((6, 4, 2, 3))
    tx = torch.tensor(x, requires_grad=True)
    ty = ref_fn(tx, torch.tensor(rois), 0.5, 2, 3, sr, aligned)
    ty.backward(torch.tensor(g))
    hx = H(x, True)
    hy = hookgrad.ops.torchvision.roi_align(hx, H(rois), 0.5, 2, 3, sr, aligned) if _loaded() else \
        V.roi_align(hx, H(rois), 0.5, 2, 3, sr, aligned)
    hy.backward(H(g))
    np.testing.assert_allclose(hy.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sr,aligned", [(2, False), (0, True), (-1, False)])
def test_roi_align_gradcheck(sr, aligned):
    rng = np.random.default_rng(1)
    x = H(rng.standard_normal((2, 2, 7, 6)), True)
    rois = H(rois_for(rng, 4, 2, 7, 6, 0.8))
    gradcheck(lambda a: V.roi_align(a, rois, 0.8, 2, 3, sr, aligned), x)


def test_roi_align_float16_and_errors():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 6, 6)).astype("float16")
    rois = np.array([[0, 0.5, 1, 4, 5]], "float16")
    got = V.roi_align(H(x), H(rois), 1.0, 2, 2, 2, True)
    assert got.dtype == hookgrad.float16
    ref = R.roi_align(x.astype("float32"), rois.astype("float32"), 1.0, 2, 2, 2, True)
    np.testing.assert_allclose(got.numpy().astype("float32"), ref, rtol=2e-3, atol=2e-3)
    with pytest.raises(RuntimeError, match="rois must have shape"):
        V.roi_align(H(x), H(rois[:, :4]), 1.0, 2, 2, 2, True)
    with pytest.raises(RuntimeError, match="same type"):
        V.roi_align(H(x.astype("float32")), H(rois.astype("float64")), 1.0, 2, 2, 2, True)
    empty = V.roi_align(H(x), H(np.zeros((0, 5), "float16")), 1.0, 2, 2, 2, True)
    assert tuple(empty.shape) == (0, 2, 2, 2)


# ------------------------------------------------------------------------------ ps_roi_align
def test_ps_roi_align_matches_the_kernel():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 12, 8, 9))
    rois = rois_for(rng, 5, 2, 8, 9, 0.9)
    rois[2, 1:] = [3, 3, 3, 3]              # zero size: 0 samples, 0 / 0 is NaN in the kernel
    for sr in (2, 0):
        ref, cmap = R.ps_roi_align(x, rois, 0.9, 2, 3, sr)
        got, gmap = V.ps_roi_align(H(x), H(rois), 0.9, 2, 3, sr)
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12, equal_nan=True)
        assert gmap.dtype == hookgrad.int32 and (gmap.numpy() == cmap).all()


def test_ps_roi_align_against_torch_and_gradcheck():
    """ps_roi_align is roi_align (aligned) read at channel c_out * P + p for bin p: that, in PyTorch."""
    ref_fn = R.torchvision_roi_align()
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 8, 7, 7))
    rois = rois_for(rng, 4, 2, 7, 7, 1.0, inside=True)
    g = rng.standard_normal((4, 2, 2, 2))
    hx = H(x, True)
    out, _ = V.ps_roi_align(hx, H(rois), 1.0, 2, 2, 2)
    out.backward(H(g))
    if ref_fn is not None:
        tx = torch.tensor(x, requires_grad=True)
        full = ref_fn(tx, torch.tensor(rois), 1.0, 2, 2, 2, True)          # (K, C, 2, 2)
        c = torch.arange(2)[:, None, None] * 4 + torch.arange(4).reshape(2, 2)
        ref = full[:, c, torch.arange(2)[:, None], torch.arange(2)[None, :]]      # (K, 2, 2, 2)
        ref.backward(torch.tensor(g))
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    gradcheck(lambda a: V.ps_roi_align(a, H(rois), 1.0, 2, 2, -1)[0], H(x, True))


# ------------------------------------------------------------------------------ roi_pool / ps_roi_pool
def test_roi_pool_matches_the_kernel_and_gradcheck():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 9, 10))
    x[0, 1, 2:4, 2:4] = 5.0                 # ties: the first maximum in row-major order
    x[1, 0, :, :3] = -np.inf                # nothing above -FLT_MAX: -FLT_MAX and argmax -1
    x[0, 2, 5, 5] = np.nan                  # NaN never wins
    rois = rois_for(rng, 6, 2, 9, 10, 0.6)
    rois[0] = [0, 0, 0, 8, 8]
    rois[1] = [1, 0, 0, 3, 15]
    rois[2] = [0, 40, 40, 50, 50]           # outside the image: empty bins, 0 and -1
    ref, rarg = R.roi_pool(x, rois, 0.6, 3, 2)
    got, arg = V.roi_pool(H(x), H(rois), 0.6, 3, 2)
    assert arg.dtype == hookgrad.int32
    np.testing.assert_array_equal(arg.numpy(), rarg)
    np.testing.assert_array_equal(got.numpy(), ref)
    xs = H(rng.standard_normal((2, 3, 9, 10)), True)           # no ties: the gradient is defined
    gradcheck(lambda a: V.roi_pool(a, H(rois), 0.6, 3, 2)[0], xs)


def test_ps_roi_pool_matches_the_kernel_forward_and_backward():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 8, 9, 9))
    rois = rois_for(rng, 5, 2, 9, 9, 1.0)
    rois[0] = [0, 0, 0, 9, 9]               # touches the border: forward clips to size-1, backward to size
    ref = R.ps_roi_pool(x, rois, 1.0, 2, 2)
    hx = H(x, True)
    got, cmap = V.ps_roi_pool(hx, H(rois), 1.0, 2, 2)
    np.testing.assert_allclose(got.detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(ref.shape)
    got.backward(H(g))
    np.testing.assert_allclose(hx.grad.numpy(), R.ps_roi_pool_backward(g, rois, 1.0, 2, 2, x.shape),
                               rtol=1e-12, atol=1e-12)
    inner = H(np.array([[0, 1, 1, 6, 5], [1, 0.4, 2, 7, 7]], "float64"))       # away from the border
    gradcheck(lambda a: V.ps_roi_pool(a, inner, 1.0, 2, 2)[0], H(x, True))


def test_double_backward_is_refused_as_in_torchvision():
    x = H(np.random.default_rng(8).standard_normal((1, 2, 5, 5)), True)
    out = V.roi_align(x, H(np.array([[0, 0.5, 0.5, 4, 4.]])), 1.0, 2, 2, 2, False)
    (g,) = hookgrad.autograd.grad(out, x, H(np.ones((1, 2, 2, 2)), True), create_graph=True)
    with pytest.raises(RuntimeError, match="double backwards on roi_align not supported"):
        g.sum().backward()


# ------------------------------------------------------------------------------ deform_conv2d
def _deform_inputs(rng, N=2, Cin=4, Cout=6, H_=6, W_=5, k=(3, 2), groups=2, og=2, stride=(1, 2), pad=(1, 0),
                   dil=(1, 2)):
    OH = (H_ + 2 * pad[0] - (dil[0] * (k[0] - 1) + 1)) // stride[0] + 1
    OW = (W_ + 2 * pad[1] - (dil[1] * (k[1] - 1) + 1)) // stride[1] + 1
    x = rng.standard_normal((N, Cin, H_, W_))
    w = rng.standard_normal((Cout, Cin // groups) + k)
    off = rng.uniform(-2.5, 2.5, (N, og * 2 * k[0] * k[1], OH, OW))
    mask = rng.uniform(0, 1, (N, og * k[0] * k[1], OH, OW))
    b = rng.standard_normal(Cout)
    return x, w, off, mask, b, stride, pad, dil, groups, og


def _deform(x, w, off, mask, b, stride, pad, dil, groups, og, use_mask):
    return V.deform_conv2d(x, w, off, mask, b, stride[0], stride[1], pad[0], pad[1], dil[0], dil[1], groups, og,
                           use_mask)


@pytest.mark.parametrize("use_mask", [True, False])
def test_deform_conv2d_matches_the_kernel(use_mask):
    x, w, off, mask, b, *geo = _deform_inputs(np.random.default_rng(9))
    ref = R.deform_conv2d(x, w, off, mask, b, *geo, use_mask)
    got = _deform(H(x), H(w), H(off), H(mask), H(b), *geo, use_mask)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("use_mask", [True, False])
def test_deform_conv2d_gradcheck(use_mask):
    x, w, off, mask, b, *geo = _deform_inputs(np.random.default_rng(10), N=1, Cin=2, Cout=2, H_=4, W_=4, k=(2, 2),
                                              groups=1, og=1, stride=(1, 1), pad=(1, 0), dil=(1, 1))
    args = [H(a, True) for a in (x, w, off, mask, b)]
    if not use_mask:
        args[3] = H(np.zeros((1, 1)))         # what torchvision passes without a mask
    gradcheck(lambda *a: _deform(*a, *geo, use_mask), *args)


def test_deform_conv2d_zero_offsets_is_conv2d_in_torch():
    """With zero offsets and a constant mask m, deform_conv2d is m * conv2d + bias: values and the gradients of
    input, weight and bias against PyTorch's conv2d."""
    rng = np.random.default_rng(11)
    x, w, off, mask, b, stride, pad, dil, groups, og = _deform_inputs(rng)
    off[:] = 0
    mask[:] = 0.75
    g = None
    hx, hw, hb = H(x, True), H(w, True), H(b, True)
    out = _deform(hx, hw, H(off), H(mask), hb, stride, pad, dil, groups, og, True)
    g = rng.standard_normal(tuple(out.shape))
    out.backward(H(g))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ref = 0.75 * torch.nn.functional.conv2d(tx, tw, None, stride, pad, dil, groups) + tb[:, None, None]
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-10)
    for h, t in ((hx, tx), (hw, tw), (hb, tb)):
        np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_deform_conv2d_backward_operator_and_errors():
    x, w, off, mask, b, *geo = _deform_inputs(np.random.default_rng(12), N=1)
    args = [H(a, True) for a in (x, w, off, mask, b)]
    out = _deform(*args, *geo, True)
    g = np.random.default_rng(13).standard_normal(tuple(out.shape))
    out.backward(H(g))
    (s, p, d, groups, og) = geo
    grads = V._deform_conv2d_backward(H(g), *[H(a) for a in (x, w, off, mask, b)], s[0], s[1], p[0], p[1], d[0], d[1],
                                      groups, og, True)
    for a, gr in zip(args, grads):
        np.testing.assert_allclose(gr.numpy(), a.grad.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="offset.shape\\[1\\] is not valid"):
        _deform(H(x), H(w), H(off[:, :-1]), H(mask), H(b), *geo, True)


# ------------------------------------------------------------------------------ nms
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nms_against_brute_force(dtype):
    rng = np.random.default_rng(14)
    for trial in range(6):
        n = int(rng.integers(1, 60))
        xy = rng.uniform(0, 50, (n, 2))
        wh = rng.uniform(1, 25, (n, 2))
        boxes = np.concatenate([xy, xy + wh], 1).astype(dtype)
        scores = rng.choice([0.1, 0.5, 0.9], n).astype(dtype) if trial % 2 else rng.random(n).astype(dtype)
        if n > 3:
            boxes[1] = boxes[0]                 # identical boxes, same score: the lower index is kept
            scores[1] = scores[0]
        for thr in (0.0, 0.3, 0.7, 1.0):
            got = V.nms(H(boxes), H(scores), thr)
            assert got.dtype == hookgrad.int64
            np.testing.assert_array_equal(got.numpy(), R.nms(boxes, scores, thr))


def test_batched_nms_by_the_coordinate_trick():
    """torchvision's batched_nms offsets each category's boxes by idx * (max coordinate + 1) and runs nms once:
    the same as nms per category, merged by score."""
    rng = np.random.default_rng(15)
    n = 80
    xy = rng.uniform(0, 40, (n, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(2, 20, (n, 2))], 1)
    scores = rng.choice(np.linspace(0, 1, 7), n)
    idxs = rng.integers(0, 4, n)
    off = idxs[:, None] * (boxes.max() + 1)
    got = V.nms(H(boxes + off), H(scores), 0.4).numpy()
    np.testing.assert_array_equal(got, R.batched_nms(boxes, scores, idxs, 0.4))


def test_nms_errors_and_empty():
    assert tuple(V.nms(H(np.zeros((0, 4))), H(np.zeros(0)), 0.5).shape) == (0,)
    with pytest.raises(RuntimeError, match="boxes should have 4 elements"):
        V.nms(H(np.zeros((3, 3))), H(np.zeros(3)), 0.5)
    with pytest.raises(RuntimeError, match="same number of elements"):
        V.nms(H(np.zeros((3, 4))), H(np.zeros(2)), 0.5)
    with pytest.raises(RuntimeError, match="\"nms_kernel\" not implemented for 'Half'"):   # float and double only
        V.nms(H(np.zeros((3, 4), "float16")), H(np.zeros(3, "float16")), 0.5)
    with pytest.raises(RuntimeError, match="roi_pool only supports float and double"):
        V.roi_pool(H(np.zeros((1, 1, 4, 4), "float16")), H(np.zeros((1, 5), "float16")), 1.0, 2, 2)


# ------------------------------------------------------------------------------ torch.ops.load_library
def _loaded():
    return any("torchvision" in p for p in hookgrad.ops.loaded_libraries)


def _torchvision_c():
    import importlib.util
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        return None
    d = list(spec.submodule_search_locations)[0]
    for f in os.listdir(d):
        if f.startswith("_C.") and f.endswith(".so"):
            return os.path.join(d, f)
    return None


def test_load_library_registers_torchvisions_operators(tmp_path):
    path = _torchvision_c()
    if path is None:        # a stand-in file at torchvision's place in a fake package
        (tmp_path / "torchvision").mkdir()
        path = str(tmp_path / "torchvision" / "_C.so")
        open(path, "wb").close()
    hookgrad.ops.load_library(path)
    hookgrad.ops.load_library(path)         # a second load is a no-op, as dlopen
    tv = hookgrad.ops.torchvision
    assert tv._cuda_version() == -1
    assert repr(tv.nms) == "<OpOverloadPacket(op='torchvision.nms')>"
    assert tv.nms.default.name() == "torchvision::nms" and tv.nms._qualified_op_name == "torchvision::nms"
    assert str(tv.roi_pool.default._schema).startswith("torchvision::roi_pool(Tensor input, Tensor rois")
    out = tv.nms.default(H(np.array([[0, 0, 10, 10], [1, 1, 11, 11.]])), H(np.array([0.8, 0.9])), 0.5)
    assert out.tolist() == [1]
    with pytest.raises(NotImplementedError, match="quantized"):
        tv.qnms(H(np.zeros((1, 4))), H(np.zeros(1)), 0.5)


def test_load_library_refuses_other_libraries(tmp_path):
    p = tmp_path / "libmyops.so"
    p.write_bytes(b"\x7fELF")
    with pytest.raises(OSError, match="cannot load compiled libtorch extensions") as e:
        hookgrad.ops.load_library(str(p))
    assert str(p) in str(e.value)
    with pytest.raises(OSError):
        torch.ops.load_library(str(p))      # torch: OSError as well
    with pytest.raises(OSError, match="no such file"):
        hookgrad.ops.load_library(str(tmp_path / "missing.so"))


# ------------------------------------------------------------------------------ torch.library on both libraries
_count = [0]


def _ns(tag):
    _count[0] += 1
    return f"hgtest_{tag}_{_count[0]}"


def _both(scenario):
    """scenario(lib, ns) under torch and under hookgrad, each in its own fresh namespace."""
    ns = _ns(scenario.__name__.strip("_"))
    return scenario(torch, ns), scenario(hookgrad, ns)


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(a) for a in x]
    return x.detach().numpy() if hasattr(x, "detach") else x


def test_library_define_impl_same_results():
    def scenario(lib, ns):
        L = lib.library.Library(ns, "DEF")
        assert L.define("scale(Tensor x, float a) -> Tensor") == "scale"
        L.define("scale.twice(Tensor x) -> Tensor")
        L.impl("scale", lambda x, a: x * a, "CPU")
        L.impl("scale.twice", lambda x: x * 2)          # CompositeImplicitAutograd: differentiable through its ops
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        op = getattr(lib.ops, ns).scale
        y = op(x, 3.0) + op.twice(x) + op.default(x, 0.5)
        y.sum().backward()
        res = (_np(y), _np(x.grad), sorted(op.overloads()), op.default.name(), str(op.twice),
               type(y.grad_fn).__name__)
        L._destroy()
        gone = not hasattr(getattr(lib.ops, ns), "scale")
        return res + (gone,)
    t, h = _both(scenario)
    np.testing.assert_allclose(h[0], t[0])
    np.testing.assert_allclose(h[1], t[1])
    assert h[2:] == t[2:]


def test_library_module_functions_same_results():
    def scenario(lib, ns):
        lib.library.define(f"{ns}::mul3", "(Tensor x) -> Tensor")

        @lib.library.impl(f"{ns}::mul3", "cpu")
        def _(x):
            return x * 3

        @lib.library.register_fake(f"{ns}::mul3")
        def _(x):
            return lib.empty_like(x)
        lib.library.register_kernel(f"{ns}::mul3", "cpu", lambda x: x * 4)
        return _np(getattr(lib.ops, ns).mul3(lib.ones(2)))
    t, h = _both(scenario)
    np.testing.assert_array_equal(h, t)


def test_library_keywords_and_defaults():
    def scenario(lib, ns):
        with lib.library._scoped_library(ns, "FRAGMENT") as L:
            L.define("axpy(Tensor x, Tensor y, float a=2.0, bool neg=False) -> Tensor")
            L.impl("axpy", lambda x, y, a=2.0, neg=False: -(a * x + y) if neg else a * x + y, "CPU")
            op = getattr(lib.ops, ns).axpy
            x, y = lib.tensor([1.0, 2.0]), lib.tensor([0.5, -1.0])
            res = [_np(op(x, y)), _np(op(x, y=y, a=3.0)), _np(op.default(x, y, neg=True))]
            try:
                op(x)
            except Exception as e:      # noqa: BLE001
                res.append(type(e).__name__)
        return res
    t, h = _both(scenario)
    for a, b in zip(h[:3], t[:3]):
        np.testing.assert_array_equal(a, b)
    assert h[3:] == t[3:]


def test_library_errors_as_torch():
    def scenario(lib, ns):
        errs = []
        L = lib.library.Library(ns, "DEF")
        L.define("f(Tensor x) -> Tensor")
        for call in (lambda: L.define("f(Tensor x) -> Tensor"),              # duplicate definition
                     lambda: lib.library.Library(ns, "DEF"),                  # a second DEF library
                     lambda: lib.library.Library(ns, "BAD"),
                     lambda: lib.library.define(f"{ns}::g", "not a schema"),
                     lambda: L.impl("f", 42, "CPU"),
                     lambda: getattr(lib.ops, ns).f(lib.ones(1)),             # no kernel
                     lambda: lib.library.Library(ns, "IMPL").define("h(Tensor x) -> Tensor")):
            try:
                call()
                errs.append(None)
            except Exception as e:      # noqa: BLE001
                errs.append(type(e).__name__)
        L.impl("f", lambda x: x + 1, "CPU")
        try:
            L.impl("f", lambda x: x + 2, "CPU", allow_override=False)
        except RuntimeError as e:
            errs.append(("RuntimeError", "already a kernel registered" in str(e)))
        L._destroy()
        lib.library.Library(ns, "DEF")._destroy()     # the namespace is free again
        return errs
    t, h = _both(scenario)
    assert h == t


def test_custom_op_with_register_autograd_same_results_and_gradients():
    def scenario(lib, ns):
        T = lib.Tensor

        @lib.library.custom_op(f"{ns}::mysin", mutates_args=())
        def mysin(x: T, k: float) -> T:
            return lib.sin(x) * k

        x = lib.tensor([0.5, 1.0, -2.0], requires_grad=True)
        try:
            mysin(x, 2.0).sum().backward()
            no_formula = None
        except RuntimeError as e:
            no_formula = "no autograd formula was registered" in str(e)

        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.k = inputs[1]

        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * lib.cos(x) * ctx.k, None
        mysin.register_autograd(backward, setup_context=setup_context)

        @mysin.register_fake
        def _(x, k):
            return lib.empty_like(x)
        y = getattr(lib.ops, ns).mysin(x, 3.0)
        (gx,) = lib.autograd.grad(y.sum(), x)
        y2 = mysin(x, 2.0)
        y2.backward(lib.ones(3))
        return (no_formula, _np(y), _np(gx), _np(x.grad), type(y.grad_fn).__name__.replace(ns, "NS"),
                type(mysin).__name__)
    t, h = _both(scenario)
    assert h[0] == t[0] is True
    for a, b in zip(h[1:4], t[1:4]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert h[4:] == t[4:]


def test_register_autograd_on_a_defined_operator_and_opcheck():
    def scenario(lib, ns):
        lib.library.define(f"{ns}::cube", "(Tensor x) -> Tensor")
        lib.library.impl(f"{ns}::cube", "cpu", lambda x: x * x * x)

        def setup(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
        lib.library.register_autograd(f"{ns}::cube", lambda ctx, g: g * 3 * ctx.saved_tensors[0] ** 2,
                                      setup_context=setup)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        getattr(lib.ops, ns).cube(x).sum().backward()

        @lib.library.custom_op(f"{ns}::neg", mutates_args=())
        def neg(x: lib.Tensor) -> lib.Tensor:
            return -x
        checked = lib.library.opcheck(neg, (lib.randn(3),), test_utils=("test_schema",))
        return _np(x.grad), checked
    t, h = _both(scenario)
    np.testing.assert_allclose(h[0], t[0])
    assert h[1] == t[1]


def test_custom_ops_old_api():
    """torch._custom_ops: custom_op + impl + impl_abstract + impl_save_for_backward + impl_backward."""
    import warnings

    def scenario(lib, ns):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            co = sys.modules[lib.__name__ + "._custom_ops"] if (lib.__name__ + "._custom_ops") in sys.modules else \
                __import__(lib.__name__ + "._custom_ops", fromlist=["x"])
            co.custom_op(f"{ns}::square", "(Tensor x) -> Tensor")
            co.impl(f"{ns}::square", func=lambda x: x * x)
            co.impl_abstract(f"{ns}::square", func=lambda x: lib.empty_like(x))
            co.impl_save_for_backward(f"{ns}::square", func=lambda inputs, output: inputs.x)
            co.impl_backward(f"{ns}::square", func=lambda ctx, saved, g: {"x": 2 * saved * g})
            x = lib.tensor([1.5, -3.0], requires_grad=True)
            y = getattr(lib.ops, ns).square(x)
            y.sum().backward()
            return _np(y), _np(x.grad)
    t, h = _both(scenario)
    np.testing.assert_allclose(h[0], t[0])
    np.testing.assert_allclose(h[1], t[1])


# ------------------------------------------------------------------------------ torchvision's own Python on hookgrad
_TV_SCRIPT = textwrap.dedent("""
    import json, sys, importlib, importlib.util, types, os
    import numpy as np
    import torch
    data = json.load(open(sys.argv[1]))
    res = {}
    try:
        import torchvision
        res["import"] = "ok"
    except Exception as e:      # torchvision's package may need names hookgrad lacks elsewhere: its op modules
        res["import"] = f"{type(e).__name__}: {e}"          # are then read through a package without __init__
        for k in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[k]
        spec = importlib.util.find_spec("torchvision")
        pkg = types.ModuleType("torchvision")
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["torchvision"] = pkg
        import torchvision.extension, torchvision._meta_registrations, torchvision._autograd_registrations
    import torchvision.extension as ext
    res["has_ops"] = ext._has_ops()
    res["cuda_version"] = torch.ops.torchvision._cuda_version()
    T = lambda k: torch.tensor(np.array(data[k]))
    x = T("x").requires_grad_(True)
    # through the autograd torchvision registers (torchvision/_autograd_registrations.py)
    y = torch.ops.torchvision.roi_align(x, T("rois"), 0.5, 2, 3, 2, True)
    y.backward(T("g_align"))
    res["roi_align"], res["roi_align_grad"] = y.detach().numpy().tolist(), x.grad.numpy().tolist()
    res["roi_align_grad_fn"] = type(y.grad_fn).__name__
    x.grad = None
    p, arg = torch.ops.torchvision.roi_pool(x, T("rois"), 0.5, 2, 3)
    p.backward(T("g_align"))
    res["roi_pool"], res["roi_pool_arg"] = p.detach().numpy().tolist(), arg.numpy().tolist()
    res["roi_pool_grad"] = x.grad.numpy().tolist()
    try:
        import torchvision.ops as O
    except Exception as e:
        res["ops_import"] = f"{type(e).__name__}: {e}"
    else:
        res["ops_import"] = "ok"
        res["nms"] = O.nms(T("boxes"), T("scores"), 0.4).tolist()
        res["batched_nms"] = O.batched_nms(T("boxes"), T("scores"), T("idxs"), 0.4).tolist()
        res["box_iou"] = O.box_iou(T("boxes")[:5], T("boxes")[5:9]).numpy().tolist()
        res["tv_roi_align"] = O.roi_align(x.detach(), T("rois"), (2, 3), 0.5, 2, True).numpy().tolist()
        res["tv_roi_pool"] = O.roi_pool(x.detach(), T("rois"), (2, 3), 0.5).numpy().tolist()
        xd = T("xd").requires_grad_(True)
        dc = O.deform_conv2d(xd, T("off"), T("w"), None, (1, 1), (1, 1), (1, 1), T("mask"))
        dc.sum().backward()
        res["deform"], res["deform_grad"] = dc.detach().numpy().tolist(), xd.grad.numpy().tolist()
        res["deform_nomask"] = O.deform_conv2d(xd.detach(), T("off"), T("w"), T("b"), padding=(1, 1)).numpy().tolist()
        res["ps_roi_align"] = O.ps_roi_align(T("xps"), T("rois"), (2, 3), 0.5, 2).numpy().tolist()
        res["ps_roi_pool"] = O.ps_roi_pool(T("xps"), T("rois"), (2, 3), 0.5).numpy().tolist()
        res["tv_roi_align_list"] = O.roi_align(x.detach(), [T("rois")[:2, 1:], T("rois")[2:, 1:]], (2, 3), 0.5, 2,
                                               True).numpy().tolist()
    print(json.dumps(res))
""")


def test_torchvision_python_on_hookgrad(tmp_path):
    if _torchvision_c() is None:
        pytest.skip("torchvision is not installed")
    rng = np.random.default_rng(16)
    x = rng.standard_normal((2, 3, 8, 9))
    rois = rois_for(rng, 4, 2, 8, 9, 0.5)
    n = 40
    xy = rng.uniform(0, 30, (n, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(2, 15, (n, 2))], 1)
    scores = rng.choice(np.linspace(0, 1, 9), n)
    idxs = rng.integers(0, 3, n)
    g = rng.standard_normal((4, 3, 2, 3))
    xd, w, off, mask, b, *_ = _deform_inputs(rng, N=1, Cin=2, Cout=3, H_=5, W_=5, k=(3, 3), groups=1, og=1,
                                             stride=(1, 1), pad=(1, 1), dil=(1, 1))
    xps = rng.standard_normal((2, 12, 8, 9))
    data = {"xd": xd.tolist(), "w": w.tolist(), "off": off.tolist(), "mask": mask.tolist(), "b": b.tolist(),
            "xps": xps.tolist(), "x": x.tolist(), "rois": rois.tolist(), "boxes": boxes.tolist(),
            "scores": scores.tolist(),
            "idxs": idxs.tolist(), "g_align": g.tolist()}
    (tmp_path / "data.json").write_text(json.dumps(data))
    (tmp_path / "tv.py").write_text(_TV_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    p = subprocess.run([sys.executable, "-m", "hookgrad", str(tmp_path / "tv.py"), str(tmp_path / "data.json")],
                       capture_output=True, text=True, timeout=240, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["has_ops"] is True and res["cuda_version"] == -1
    assert res["roi_align_grad_fn"] == "GeneratedBackwardFor_torchvision_roi_align_defaultBackward"
    ref = R.roi_align(x, rois, 0.5, 2, 3, 2, True)
    np.testing.assert_allclose(res["roi_align"], ref, rtol=1e-12, atol=1e-12)
    hx = H(x, True)
    V.roi_align(hx, H(rois), 0.5, 2, 3, 2, True).backward(H(g))
    np.testing.assert_allclose(res["roi_align_grad"], hx.grad.numpy(), rtol=1e-12, atol=1e-12)
    pref, aref = R.roi_pool(x, rois, 0.5, 2, 3)
    np.testing.assert_array_equal(res["roi_pool"], pref)
    np.testing.assert_array_equal(res["roi_pool_arg"], aref)
    gp = np.zeros_like(x)
    for k, roi in enumerate(rois):
        for c in range(3):
            for i in range(2):
                for j in range(3):
                    a = aref[k, c, i, j]
                    if a >= 0:
                        gp[int(roi[0]), c].reshape(-1)[a] += g[k, c, i, j]
    np.testing.assert_allclose(res["roi_pool_grad"], gp, rtol=1e-12, atol=1e-12)
    if res["ops_import"] != "ok":
        pytest.skip(f"torchvision.ops does not import on hookgrad yet (outside the operators): {res['ops_import']}")
    np.testing.assert_array_equal(res["nms"], R.nms(boxes, scores, 0.4))
    np.testing.assert_array_equal(res["batched_nms"], R.batched_nms(boxes, scores, idxs, 0.4))
    np.testing.assert_allclose(res["tv_roi_align"], ref, rtol=1e-12, atol=1e-12)
    listed = rois.copy()
    listed[:, 0] = [0, 0, 1, 1]             # a list of boxes per image: the batch index is the list position
    np.testing.assert_allclose(res["tv_roi_align_list"], R.roi_align(x, listed, 0.5, 2, 3, 2, True), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(res["tv_roi_pool"], pref)
    geo = ((1, 1), (1, 1), (1, 1), 1, 1)
    np.testing.assert_allclose(res["deform"], R.deform_conv2d(xd, w, off, mask, np.zeros(3), *geo, True), rtol=1e-11,
                               atol=1e-11)
    np.testing.assert_allclose(res["deform_nomask"], R.deform_conv2d(xd, w, off, mask, b, *geo, False), rtol=1e-11,
                               atol=1e-11)
    hx = H(xd, True)
    _deform(hx, H(w), H(off), H(mask), H(np.zeros(3)), *geo, True).sum().backward()
    np.testing.assert_allclose(res["deform_grad"], hx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res["ps_roi_align"], R.ps_roi_align(xps, rois, 0.5, 2, 3, 2)[0], rtol=1e-12,
                               atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(res["ps_roi_pool"], R.ps_roi_pool(xps, rois, 0.5, 2, 3), rtol=1e-12, atol=1e-12)
    tb = torch.tensor(boxes)
    area = lambda b: (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])  # noqa: E731
    lt = torch.max(tb[:5, None, :2], tb[5:9, None, :2].transpose(0, 1))
    rb = torch.min(tb[:5, None, 2:], tb[5:9, None, 2:].transpose(0, 1))
    inter = (rb - lt).clamp(min=0).prod(2)
    iou = inter / (area(tb[:5])[:, None] + area(tb[5:9])[None] - inter)
    np.testing.assert_allclose(res["box_iou"], iou.numpy(), rtol=1e-12)
