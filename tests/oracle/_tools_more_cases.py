"""Real third-party tools (captum, ptflops, torchviz) run unchanged on a small CNN and an MLP.

Run as a script twice by test_tools_more.py, each in a fresh process (the tools patch and cache torch's
functions, so the test process's own torch state must not leak in): ``python _tools_more_cases.py DIR torch``
on PyTorch and ``python -m hookgrad _tools_more_cases.py DIR hookgrad`` under the alias, where ``import torch``
gives hookgrad. Both load the weights PyTorch saved in DIR and print every tool's output as JSON. The tools'
code is the same unmodified code on both sides.
"""
import io
import json
import os
import re
import sys
import warnings

MODELS = {"cnn": (3, 12, 12), "mlp": (6,)}


def build(torch, name):
    nn = torch.nn
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.AvgPool2d(2),
                             nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(),
                             nn.Linear(32, 5))
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3))


def _rounded(t, nd=4):
    """A tensor as nested lists of floats rounded to ``nd`` significant-ish places (sums of float32
    products differ in the last bits between BLAS and NumPy)."""
    return [round(float(v), nd) for v in t.detach().reshape(-1).tolist()]


def run_captum(torch, model, shape):
    from captum import attr
    model.eval()
    torch.manual_seed(1)
    x = torch.randn((2,) + shape)
    target = 1
    out = {}
    out["ig"] = _rounded(attr.IntegratedGradients(model).attribute(x, target=target, n_steps=8))
    ig, delta = attr.IntegratedGradients(model).attribute(x, target=target, n_steps=8,
                                                          return_convergence_delta=True)
    out["ig_delta"] = _rounded(delta, 3)
    out["saliency"] = _rounded(attr.Saliency(model).attribute(x, target=target))
    out["saliency_signed"] = _rounded(attr.Saliency(model).attribute(x, target=target, abs=False))
    out["deeplift"] = _rounded(attr.DeepLift(model).attribute(x, target=target))
    out["guided_backprop"] = _rounded(attr.GuidedBackprop(model).attribute(x, target=target))
    out["input_x_gradient"] = _rounded(attr.InputXGradient(model).attribute(x, target=target))
    torch.manual_seed(2)
    out["noise_tunnel"] = _rounded(attr.NoiseTunnel(attr.Saliency(model)).attribute(
        x, nt_type="smoothgrad", nt_samples=3, stdevs=0.1, target=target))
    window = (1, 4, 4) if len(shape) == 3 else (2,)
    out["occlusion"] = _rounded(attr.Occlusion(model).attribute(x, target=target, sliding_window_shapes=window,
                                                                strides=(1, 3, 3) if len(shape) == 3 else 1))
    torch.manual_seed(3)
    if len(shape) == 3:
        mask = torch.arange(16).reshape(4, 4).repeat_interleave(3, 0).repeat_interleave(3, 1).expand((1, 3) + shape[1:])
    else:
        mask = torch.tensor([[0, 0, 1, 1, 2, 2]])
    out["kernel_shap"] = _rounded(attr.KernelShap(model).attribute(x, target=target, n_samples=20,
                                                                  feature_mask=mask), 3)
    layer = model[4] if len(shape) == 3 else model[2]
    out["layer_conductance"] = _rounded(attr.LayerConductance(model, layer).attribute(x, target=target, n_steps=8))
    out["layer_grad_cam"] = _rounded(attr.LayerGradCam(model, layer).attribute(x, target=target))
    out["layer_activation"] = _rounded(attr.LayerActivation(model, layer).attribute(x))
    return out


def run_ptflops(torch, model, shape):
    from ptflops import get_model_complexity_info
    out = {}
    for backend in ("pytorch", "aten"):
        buf = io.StringIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            macs, params = get_model_complexity_info(model, shape, as_strings=True, print_per_layer_stat=True,
                                                     ost=buf, backend=backend)
        out[backend] = {"macs": macs, "params": params, "printed": buf.getvalue()}
    return out


def run_torchviz(torch, model, shape):
    from torchviz import make_dot
    model.train()
    torch.manual_seed(4)
    x = torch.randn((2,) + shape, requires_grad=True)
    y = model(x).sum()
    out = {}
    params = dict(model.named_parameters())
    out["plain"] = normalise_dot(make_dot(y, params=params).source)
    out["attrs"] = normalise_dot(make_dot(y, params=params, show_attrs=True, show_saved=True).source)
    return out


def normalise_dot(text):
    """Node names are id()s of graph objects: number them in order of first appearance."""
    seen = {}
    return re.sub(r"(?<=\t)\d+\b|(?<=-> )\d+\b", lambda m: "n%d" % seen.setdefault(m.group(0), len(seen)), text)


def run_tools(torch, model, shape):
    return {"captum": run_captum(torch, model, shape), "ptflops": run_ptflops(torch, model, shape),
            "torchviz": run_torchviz(torch, model, shape)}


def main(folder, side):
    """Print every tool's output as JSON: ``side`` "torch" (plain PyTorch) or "hookgrad" (under the alias)."""
    import torch
    assert ("hookgrad" in torch.__version__) == (side == "hookgrad"), torch.__version__
    result = {}
    for name in MODELS:
        model = build(torch, name)
        model.load_state_dict(torch.load(os.path.join(folder, name + ".pt")))
        result[name] = run_tools(torch, model, MODELS[name])
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:3])
