"""ResNet-18/34/50: torchvision checkpoints load into hookgrad.models unchanged and compute the same thing.

torchvision has no wheel here, so the oracle is a torch ResNet written below with torchvision's exact
structure (module names, init, forward); its state_dict is what a torchvision checkpoint contains.
"""
import numpy as np
import pytest
import torch
from torch import nn

import hookgrad
import hookgrad.models as hm

torch.set_num_threads(1)


# ------------------------------------------------------------------ torch reference (torchvision layout)
def _c3(i, o, s=1):
    return nn.Conv2d(i, o, 3, stride=s, padding=1, bias=False)


def _c1(i, o, s=1):
    return nn.Conv2d(i, o, 1, stride=s, bias=False)


class RefBasic(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1, self.bn1, self.relu = _c3(inplanes, planes, stride), nn.BatchNorm2d(planes), nn.ReLU(inplace=True)
        self.conv2, self.bn2 = _c3(planes, planes), nn.BatchNorm2d(planes)
        self.downsample, self.stride = downsample, stride

    def forward(self, x):
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        out += x if self.downsample is None else self.downsample(x)
        return self.relu(out)


class RefBottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1, self.bn1 = _c1(inplanes, planes), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = _c3(planes, planes, stride), nn.BatchNorm2d(planes)
        self.conv3, self.bn3 = _c1(planes, planes * 4), nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample, self.stride = downsample, stride

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += x if self.downsample is None else self.downsample(x)
        return self.relu(out)


class RefResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1, self.relu = nn.BatchNorm2d(64), nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2)
        self.layer3 = self._make_layer(block, 256, layers[2], 2)
        self.layer4 = self._make_layer(block, 512, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        down = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            down = nn.Sequential(_c1(self.inplanes, planes * block.expansion, stride),
                                 nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, down)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


ARCH = {"resnet18": (RefBasic, [2, 2, 2, 2]), "resnet34": (RefBasic, [3, 4, 6, 3]),
        "resnet50": (RefBottleneck, [3, 4, 6, 3])}


def _pretrained_like(name):
    """A torch reference whose BN statistics and affine params are not the trivial init (as after training)."""
    torch.manual_seed(0)
    ref = RefResNet(*ARCH[name])
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in ref.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.1 * torch.randn(n, generator=g))
                m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + torch.rand(n, generator=g))
                m.num_batches_tracked.fill_(7)
    return ref


def _load_into_hookgrad(ref, name, tmp_path):
    path = tmp_path / f"{name}.pth"
    torch.save(ref.state_dict(), path)               # what torchvision ships: a plain state_dict file
    model = getattr(hm, name)(weights=None)
    result = model.load_state_dict(hookgrad.load(path), strict=True)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    return model


def _close(h, t, what, rtol=1e-4, atol_rel=1e-5):
    a, b = t.detach().numpy(), h.detach().numpy()
    assert a.shape == b.shape, what
    np.testing.assert_allclose(b, a, rtol=rtol, atol=atol_rel * max(1.0, float(np.abs(a).max())), err_msg=what)


@pytest.mark.parametrize("name", ["resnet18", "resnet34", "resnet50"])
def test_state_dict_keys_are_torchvisions(name):
    ref = RefResNet(*ARCH[name])
    h = getattr(hm, name)()
    assert list(h.state_dict().keys()) == list(ref.state_dict().keys())
    for k, v in ref.state_dict().items():
        assert tuple(h.state_dict()[k].shape) == tuple(v.shape), k


def test_resnet18_same_init_as_torch_for_same_seed():
    torch.manual_seed(3)
    ref = RefResNet(*ARCH["resnet18"])
    hookgrad.manual_seed(3)
    h = hm.resnet18()
    hs = h.state_dict()
    for k, v in ref.state_dict().items():   # NOTE: normal_ on >=16 values is Box-Muller in float64 here and
        # float32 in torch, so draws agree to ~1 ulp, not bitwise (same tolerance as test_random.py)
        np.testing.assert_allclose(hs[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-7, err_msg=k)


@pytest.mark.parametrize("name", ["resnet18", "resnet34", "resnet50"])
def test_eval_outputs_match_torch(name, tmp_path):
    ref = _pretrained_like(name).eval()
    h = _load_into_hookgrad(ref, name, tmp_path).eval()
    x = np.random.randn(1, 3, 64, 64).astype(np.float32)
    with torch.no_grad():
        yt = ref(torch.tensor(x))
    with hookgrad.no_grad():
        yh = h(hookgrad.tensor(x))
    assert yh.dtype == hookgrad.float32
    _close(yh, yt, f"{name} eval logits")


def test_resnet18_train_mode_outputs_gradients_and_running_stats(tmp_path):
    ref = _pretrained_like("resnet18").train()
    h = _load_into_hookgrad(ref, "resnet18", tmp_path).train()
    x = np.random.randn(2, 3, 64, 64).astype(np.float32)
    w = np.random.randn(2, 1000).astype(np.float32)
    xt, xh = torch.tensor(x, requires_grad=True), hookgrad.tensor(x, requires_grad=True)
    yt, yh = ref(xt), h(xh)
    _close(yh, yt, "train logits")
    (yt * torch.tensor(w)).sum().backward()
    (yh * hookgrad.tensor(w)).sum().backward()
    _close(xh.grad, xt.grad, "input grad", rtol=1e-3)
    hp = dict(h.named_parameters())
    for k, p in ref.named_parameters():
        _close(hp[k].grad, p.grad, f"grad {k}", rtol=1e-3, atol_rel=1e-4)
    hs = h.state_dict()
    for k, v in ref.state_dict().items():          # running_mean/var/num_batches_tracked updated alike
        if "running" in k or "num_batches" in k:
            if v.dtype == torch.int64:
                assert int(hs[k]) == int(v), k
            else:
                _close(hs[k], v, k)


def test_hookgrad_exposes_models_and_hooks_fire_on_resnet():
    assert hookgrad.models.resnet18 is hm.resnet18
    model = hm.resnet18().eval()
    seen = []
    handle = model.avgpool.register_forward_hook(lambda m, i, o: seen.append(tuple(o.shape)))
    with hookgrad.no_grad():
        model(hookgrad.randn(1, 3, 32, 32))
    handle.remove()
    assert seen == [(1, 512, 1, 1)]


def test_seed14_feature_extraction_example_prints_the_seeds_shape():
    """examples/seed14_resnet_features.py (the torch side needs torchvision, so the expected line is the seed's)."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, os.path.join(root, "examples", "seed14_resnet_features.py")],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONIOENCODING="utf-8"), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "从 avgpool 中提取的特征形状: torch.Size([1, 512, 1, 1])\n"
