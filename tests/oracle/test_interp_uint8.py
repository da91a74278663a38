"""F.interpolate on uint8 images (bilinear/bicubic, antialias on and off) against torch's int16 fixed-point
kernels, byte for byte (issue 22: torchvision's v2 Resize on uint8 images)."""
import numpy as np
import pytest
import torch

import hookgrad

R = np.random.default_rng(22)
# (input N, C, H, W; how): up, down, mixed, odd sizes, large reductions, one axis unchanged, 1 pixel
CASES = [((1, 3, 40, 50), dict(size=(32, 32))), ((2, 1, 7, 9), dict(size=(13, 5))),
         ((1, 4, 31, 17), dict(size=(8, 40))), ((3, 3, 64, 48), dict(size=(7, 11))),
         ((1, 1, 100, 90), dict(size=(3, 2))), ((2, 4, 5, 6), dict(size=(5, 19))), ((1, 3, 9, 9), dict(size=(23, 9))),
         ((1, 2, 1, 6), dict(size=(4, 1))), ((1, 3, 6, 6), dict(size=(1, 2))),
         ((1, 3, 12, 15), dict(scale_factor=0.37)), ((2, 1, 6, 7), dict(scale_factor=2.5)),
         ((1, 4, 10, 11), dict(scale_factor=(1.7, 0.45))), ((1, 3, 16, 16), dict(scale_factor=0.5)),
         ((1, 3, 11, 13), dict(scale_factor=0.6, recompute_scale_factor=True)),
         ((1, 3, 10, 10), dict(scale_factor=1.05)),
         ((1, 5, 9, 12), dict(size=(6, 17))), ((2, 7, 8, 5), dict(size=(13, 3)))]      # > 4 channels: torch's other loop


def _both(x, **kw):
    a = torch.nn.functional.interpolate(torch.tensor(x), **kw).numpy()
    b = hookgrad.nn.functional.interpolate(hookgrad.tensor(x), **kw)
    assert b.dtype == hookgrad.uint8
    return a, b.numpy()


def _image(shape):
    x = R.integers(0, 256, shape).astype(np.uint8)
    x[..., : shape[-2] // 3, :] = np.where(R.random(x[..., : shape[-2] // 3, :].shape) < 0.5, 0, 255)   # saturating
    return x


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("shape,how", CASES)
def test_uint8_bytes(mode, antialias, align_corners, shape, how):
    x = _image(shape)
    a, b = _both(x, mode=mode, antialias=antialias, align_corners=align_corners, **how)
    assert a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def test_torchvision_resize_case():
    """What torchvision.transforms.v2.Resize((32, 32), antialias=True) runs on a uint8 CHW image where torch
    reports AVX2/AVX512: F.interpolate(image[None], [32, 32], mode="bilinear", align_corners=False,
    antialias=True), uint8 in and out."""
    torch.manual_seed(0)
    img = torch.randint(0, 256, (3, 40, 50), dtype=torch.uint8)
    kw = dict(size=[32, 32], mode="bilinear", align_corners=False, antialias=True)
    a = torch.nn.functional.interpolate(img[None], **kw)[0].numpy()
    b = hookgrad.nn.functional.interpolate(hookgrad.tensor(img.numpy())[None], **kw)[0].numpy()
    np.testing.assert_array_equal(a, b)
    float_path = np.clip(np.floor(torch.nn.functional.interpolate(img[None].float(), **kw)[0].numpy() + 0.5), 0, 255)
    assert (float_path != a).any()          # the case tells the fixed-point kernel from rounding float results


def test_same_size_is_a_copy():
    x = _image((1, 3, 6, 7))
    for mode in ("bilinear", "bicubic", "nearest"):
        for aa in ([False, True] if mode != "nearest" else [False]):
            a, b = _both(x, size=(6, 7), mode=mode, antialias=aa)
            np.testing.assert_array_equal(a, b)
    t = hookgrad.tensor(x)
    y = hookgrad.nn.functional.interpolate(t, size=(6, 7), mode="bilinear")
    y[0, 0, 0, 0] = 7 if x[0, 0, 0, 0] != 7 else 8
    assert t[0, 0, 0, 0].item() == x[0, 0, 0, 0]


def test_channels_last_and_batch():
    x = _image((3, 3, 20, 18))
    tx = torch.tensor(x).contiguous(memory_format=torch.channels_last)
    hx = hookgrad.tensor(x).contiguous(memory_format=hookgrad.channels_last)
    for mode in ("bilinear", "bicubic"):
        for aa in (False, True):
            a = torch.nn.functional.interpolate(tx, size=(9, 31), mode=mode, antialias=aa).numpy()
            b = hookgrad.nn.functional.interpolate(hx, size=(9, 31), mode=mode, antialias=aa).numpy()
            np.testing.assert_array_equal(a, b)
