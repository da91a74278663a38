"""Real third-party tools (torchinfo, torchsummary, thop) run unchanged on a CNN, an MLP and ResNet-18.

Imported by test_real_tools.py, where ``torch`` is PyTorch; run as a script under the alias
(``python -m hookgrad _real_tools_cases.py DIR``), where ``import torch`` gives hookgrad: it loads the
weights PyTorch saved in DIR and prints every tool's output as JSON. The tools' code is the same
unmodified code on both sides.
"""
import contextlib
import io
import json
import os
import re
import sys

MODELS = {"cnn": (3, 16, 16), "mlp": (20,), "resnet18": (3, 32, 32)}
RESNET = os.path.join(os.path.dirname(__file__), "..", "..", "src", "hookgrad", "models", "resnet.py")


def build(torch, name, on_hookgrad):
    """The model ``name`` under the library ``torch``. ResNet-18 is hookgrad.models.resnet18 on hookgrad;
    PyTorch (no torchvision wheel here) runs the same torchvision-layout source with torch.nn."""
    nn = torch.nn
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(8, 16, 3, stride=2, bias=False), nn.LeakyReLU(0.1), nn.Dropout(0.2),
                             nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(64, 10))
    if name == "mlp":
        return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.LayerNorm(32),
                             nn.Linear(32, 5), nn.Softmax(dim=1))
    if not on_hookgrad:
        ns = {"__name__": "hookgrad.models.resnet"}        # thop prints the class path of unknown modules
        with open(RESNET) as f:
            exec(compile(f.read().replace("from .. import nn", "from torch import nn"), RESNET, "exec"), ns)
        return ns["resnet18"](num_classes=10)
    import hookgrad.models
    return hookgrad.models.resnet18(num_classes=10)


def run_tools(torch, model, shape):
    import thop
    import torchinfo
    import torchsummary
    out = {}
    out["torchinfo"] = str(torchinfo.summary(model, (2,) + shape, verbose=0))
    out["torchinfo_cols"] = str(torchinfo.summary(
        model, (1,) + shape, verbose=0, depth=4, row_settings=("depth", "var_names"),
        col_names=("input_size", "output_size", "num_params", "params_percent", "kernel_size", "mult_adds",
                   "trainable")))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        torchsummary.summary(model, shape, device="cpu")
    out["torchsummary"] = buf.getvalue()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        macs, params = thop.profile(model, inputs=(torch.randn((1,) + shape),))
    out["thop"] = {"macs": float(macs), "params": float(params), "printed": buf.getvalue(),
                   "clever_format": list(thop.clever_format([macs, params], "%.3f"))}
    return out


def normalise(text):
    """hookgrad's classes live in hookgrad.nn.modules.x where PyTorch's live in torch.nn.modules.x."""
    return re.sub(r"'hookgrad\.nn\.", "'torch.nn.", text)


def main(folder):
    import torch                                 # hookgrad, through the alias
    assert "hookgrad" in torch.__version__, torch.__version__
    result = {}
    torch.set_num_threads(1)
    for name, shape in MODELS.items():
        model = build(torch, name, on_hookgrad=True)
        model.load_state_dict(torch.load(os.path.join(folder, name + ".pt")))
        result[name] = run_tools(torch, model, shape)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
