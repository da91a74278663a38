"""Grad-CAM / Grad-CAM++ / feature_maps vs a torch reference computed with plain torch hooks on the same weights."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.gradcam import GradCAM, GradCAMPlusPlus, feature_maps

torch.set_num_threads(1)


def build(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
        nn.Conv2d(6, 8, 3, stride=2, padding=1), nn.ReLU(),
        nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))


def pair():
    tm = build(torch)
    with torch.no_grad():      # non-trivial batch-norm statistics
        tm[1].running_mean.uniform_(-0.5, 0.5)
        tm[1].running_var.uniform_(0.5, 2.0)
    tm.eval()
    hm = build(hookgrad)
    hm.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    hm.eval()
    return tm, hm


def torch_reference(model, layer, x, target, plus):
    """Grad-CAM(++) written the usual way: forward hook keeps A, a tensor hook on A keeps dS/dA."""
    keep = {}

    def fwd(m, args, out):
        keep["A"] = out
        out.register_hook(lambda g: keep.__setitem__("g", g))
    h = model.get_submodule(layer).register_forward_hook(fwd)
    out = model(x)
    h.remove()
    n = out.shape[0]
    classes = out.argmax(1).tolist() if target is None else ([target] * n if isinstance(target, int) else list(target))
    out[range(n), classes].sum().backward()
    A, g = keep["A"].detach(), keep["g"]
    if plus:
        g2, g3 = g ** 2, g ** 3
        denom = 2 * g2 + A.sum((2, 3), keepdim=True) * g3
        alpha = torch.where(denom != 0, g2 / torch.where(denom != 0, denom, torch.ones_like(denom)), torch.zeros_like(g))
        w = (alpha * torch.relu(g)).sum((2, 3))
    else:
        w = g.mean((2, 3))
    cam = torch.relu((w[:, :, None, None] * A).sum(1, keepdim=True))
    cam = torch.nn.functional.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)[:, 0]
    lo = cam.amin((1, 2), keepdim=True)
    span = cam.amax((1, 2), keepdim=True) - lo
    cam = torch.where(span > 0, (cam - lo) / torch.where(span > 0, span, torch.ones_like(span)), torch.zeros_like(cam))
    return cam.detach().numpy(), classes, A.numpy(), g.numpy()


@pytest.mark.parametrize("plus", [False, True], ids=["gradcam", "gradcam++"])
@pytest.mark.parametrize("layer,target", [("3", None), ("0", 2), ("5", [0, 4, 1]), ("5.1", None), ("2", [3, 3, 0])])
def test_cam_matches_torch_hooks(plus, layer, target):
    tm, hm = pair()
    x = np.random.randn(3, 3, 13, 11).astype(np.float32)
    ref, ref_cls, A, g = torch_reference(tm, layer, torch.tensor(x), target, plus)
    tool = (GradCAMPlusPlus if plus else GradCAM)(hm, layer)
    maps, classes = tool.cam(hookgrad.tensor(x), target)
    assert classes == ref_cls
    assert tuple(maps.shape) == (3, 13, 11) and maps.dtype == hookgrad.float32
    np.testing.assert_allclose(tool.activations.numpy(), A, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tool.gradients.numpy(), g, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(maps.numpy(), ref, rtol=0, atol=1e-5)
    m = maps.numpy()
    assert m.min() >= 0 and m.max() <= 1
    assert all(mx == 1.0 or (mx == 0.0 and not r.any()) for mx, r in zip(m.max((1, 2)), ref))
    # nothing left behind: no hooks, no .grad accumulated into the parameters
    assert all(not mod.hooks() for mod in hm.modules())
    assert all(p.grad is None for p in hm.parameters())


def test_layer_given_as_module_and_call_alias():
    tm, hm = pair()
    x = np.random.randn(2, 3, 8, 8).astype(np.float32)
    ref, cls, _, _ = torch_reference(tm, "3", torch.tensor(x), 1, False)
    maps, classes = GradCAM(hm, hm[3])(hookgrad.tensor(x), target=1)
    assert classes == [1, 1]
    np.testing.assert_allclose(maps.numpy(), ref, atol=1e-5)


def test_errors_name_the_layer():
    _, hm = pair()
    with pytest.raises(ValueError, match=r"layer '8' \(Linear\) must output an N,C,H,W tensor, got \(2, 5\)"):
        GradCAM(hm, "8").cam(hookgrad.randn(2, 3, 8, 8))
    assert not hm[8].hooks()      # removed even though the hook raised
    with pytest.raises(AttributeError, match="no layer 'nope'"):
        GradCAM(hm, "nope")
    with pytest.raises(ValueError, match="not a submodule"):
        GradCAM(hm, hookgrad.nn.Conv2d(1, 1, 1))


def test_feature_maps_match_torch_forward_hooks():
    tm, hm = pair()
    x = np.random.randn(2, 3, 8, 8).astype(np.float32)
    ref = {}
    hs = [m.register_forward_hook(lambda m, a, o, n=n: ref.__setitem__(n, o.detach().numpy()))
          for n, m in tm.named_modules() if n.startswith("5") or n == "0"]
    tm(torch.tensor(x))
    for h in hs:
        h.remove()
    got = feature_maps(hm, ["0", "5*"], hookgrad.tensor(x))
    assert sorted(got) == sorted(ref) == ["0", "5", "5.0", "5.1"]
    for k in ref:
        np.testing.assert_allclose(got[k].numpy(), ref[k], rtol=1e-5, atol=1e-6)
        assert not got[k].requires_grad
    assert all(not mod.hooks() for mod in hm.modules())
