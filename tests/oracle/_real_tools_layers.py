"""Real third-party tools run unchanged on models built from issue 12's layers.

torchinfo, torchsummary, thop, ptflops (both backends), captum and torchviz special-case exactly these
layers (thop and ptflops count nn.LSTM/GRU cells, MultiheadAttention, Conv3d, pools, norms and upsampling
by rule; captum hooks an embedding, a recurrent layer or a Conv3d). Run as a script twice by
test_real_tools_layers.py, each in a fresh process (the tools patch and cache torch's functions):
``python _real_tools_layers.py DIR torch`` on PyTorch and ``python -m hookgrad _real_tools_layers.py DIR
hookgrad`` under the alias, where ``import torch`` gives hookgrad. Both load the weights and inputs that
PyTorch saved in DIR (``save``) and print every tool's output as JSON; a tool that raises is recorded as
its exception's type, so "fails on PyTorch too" compares as well. The tools' code is the same unmodified
code on both sides.
"""
import contextlib
import io
import json
import os
import re
import sys
import warnings

# name -> the shapes of the model's inputs (without the batch); "long" marks token-id inputs
MODELS = {
    "lstm_text": [("long", (5,))],
    "cells": [("float", (4, 5))],
    "transformer": [("float", (5, 8)), ("float", (4, 8))],
    "mha": [("float", (5, 8))],
    "cnn3d": [("float", (1, 6, 6, 6))],
    "cnn1d": [("float", (2, 8))],
    "embbag": [("long", (4,))],
    "norms": [("float", (3, 4, 4))],
}
VOCAB = 20


def build(torch, name):
    """The model ``name`` under the library ``torch`` (PyTorch or hookgrad), in eval mode."""
    nn = torch.nn

    class TextClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, 6)
            self.lstm = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
            self.gru = nn.GRU(10, 4, batch_first=True)
            self.head = nn.Linear(4, 3)

        def forward(self, tokens):
            out, _ = self.lstm(self.embedding(tokens))
            out, _ = self.gru(out)
            return self.head(out[:, -1])

    class CellLoop(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRUCell(5, 6)
            self.lstm = nn.LSTMCell(6, 4)
            self.rnn = nn.RNNCell(4, 3, nonlinearity="relu")
            self.head = nn.Linear(3, 2)

        def forward(self, x):
            h = self.gru(x[:, 0])
            state = self.lstm(h)
            r = self.rnn(state[0])
            for t in range(1, x.shape[1]):
                h = self.gru(x[:, t], h)
                state = self.lstm(h, state)
                r = self.rnn(state[0], r)
            return self.head(r)

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                              dim_feedforward=12, dropout=0.0, batch_first=True)
            self.out = nn.Linear(8, 3)

        def forward(self, src, tgt):
            mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
            return self.out(self.transformer(src, tgt, tgt_mask=mask))

    class AttentionBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
            self.norm = nn.LayerNorm(8)
            self.ff = nn.Sequential(nn.Linear(8, 12), nn.GELU(), nn.Linear(12, 8))
            self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0,
                                                                           batch_first=True, norm_first=True), 1,
                                                 enable_nested_tensor=False)

        def forward(self, x):
            a, _ = self.attn(x, x, x)
            x = self.norm(x + a)
            return self.encoder(x + self.ff(x)).mean(1)

    class BagModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = nn.EmbeddingBag(VOCAB, 6, mode="mean")
            self.head = nn.Linear(6, 3)

        def forward(self, tokens):
            return self.head(torch.relu(self.bag(tokens)))

    if name == "lstm_text":
        model = TextClassifier()
    elif name == "cells":
        model = CellLoop()
    elif name == "transformer":
        model = Seq2Seq()
    elif name == "mha":
        model = AttentionBlock()
    elif name == "cnn3d":
        model = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1), nn.BatchNorm3d(4), nn.ReLU(), nn.MaxPool3d(2),
                              nn.Conv3d(4, 6, 3, padding=1, bias=False), nn.ReLU(), nn.AvgPool3d(1),
                              nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(6, 3))
    elif name == "cnn1d":
        model = nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.ReLU(), nn.AvgPool1d(2),
                              nn.ConvTranspose1d(4, 3, 4, stride=2, padding=1), nn.Upsample(scale_factor=2),
                              nn.MaxPool1d(2), nn.Upsample(scale_factor=2, mode="linear"),
                              nn.AdaptiveMaxPool1d(4), nn.Flatten(), nn.Linear(12, 3))
    elif name == "embbag":
        model = BagModel()
    else:
        model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.InstanceNorm2d(4, affine=True), nn.GroupNorm(2, 4),
                              nn.PixelShuffle(2), nn.LayerNorm(8), nn.RMSNorm(8), nn.Flatten(), nn.Linear(64, 3))
    return model.eval()


def save(torch, folder):
    """PyTorch's side: every model's weights and a batch of 2 inputs, in ``folder``."""
    torch.manual_seed(0)
    for name, specs in MODELS.items():
        model = build(torch, name)
        inputs = [torch.randint(1, VOCAB, (2,) + shape) if kind == "long" else torch.randn((2,) + shape)
                  for kind, shape in specs]
        torch.save({"state": model.state_dict(), "inputs": inputs}, os.path.join(folder, name + ".pt"))


def _rounded(t, nd=4):
    return [round(float(v), nd) for v in t.detach().reshape(-1).tolist()]


def _guard(fn):
    """The tool's result, or the type of what it raised (so a tool that cannot run a model on PyTorch
    must fail the same way on hookgrad)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except Exception as e:
        return {"raised": type(e).__name__}


def _printed(fn):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        result = fn()
    return result, buf.getvalue()


def run_torchinfo(torch, name, model, inputs):
    import torchinfo
    specs = MODELS[name]
    sizes = [(2,) + shape for _, shape in specs]
    floats = all(kind == "float" for kind, _ in specs)
    return {
        "default": _guard(lambda: str(torchinfo.summary(model, sizes, verbose=0) if floats else
                                      torchinfo.summary(model, input_data=list(inputs), verbose=0))),
        # dtypes= makes torchinfo read torch.bfloat16
        "dtypes": _guard(lambda: str(torchinfo.summary(
            model, sizes, dtypes=[torch.long if kind == "long" else torch.float for kind, _ in specs], verbose=0))),
        "cols": _guard(lambda: str(torchinfo.summary(
            model, input_data=list(inputs), verbose=0, depth=5, row_settings=("depth", "var_names", "ascii_only"),
            col_names=("input_size", "output_size", "num_params", "params_percent", "kernel_size", "mult_adds",
                       "trainable")))),
    }


def run_torchsummary(torch, name, model, inputs):
    import torchsummary
    specs = MODELS[name]
    if any(kind == "long" for kind, _ in specs):
        return "float inputs only"              # torchsummary feeds torch.rand
    shapes = [shape for _, shape in specs]
    return _guard(lambda: _printed(lambda: torchsummary.summary(model, shapes if len(shapes) > 1 else shapes[0],
                                                                device="cpu"))[1])


def run_thop(torch, name, model, inputs):
    import thop

    def profile():
        (macs, params), printed = _printed(lambda: thop.profile(model, inputs=tuple(inputs)))
        return {"macs": float(macs), "params": float(params), "printed": normalise(printed),
                "clever_format": list(thop.clever_format([macs, params], "%.3f"))}
    return _guard(profile)


def run_ptflops(torch, name, model, inputs):
    from ptflops import get_model_complexity_info
    specs = MODELS[name]
    out = {}
    for backend in ("pytorch", "aten"):
        buf = io.StringIO()

        def count():
            macs, params = get_model_complexity_info(
                model, specs[0][1], as_strings=True, print_per_layer_stat=True, ost=buf, backend=backend,
                input_constructor=lambda res: inputs[0] if len(inputs) == 1 else dict(src=inputs[0], tgt=inputs[1]))
            return {"macs": macs, "params": params, "printed": buf.getvalue()}
        out[backend] = _guard(count)
    return out


def run_captum(torch, name, model, inputs):
    from captum import attr
    out = {}
    if name == "lstm_text":
        tokens = inputs[0]
        base = torch.zeros_like(tokens)
        lig = attr.LayerIntegratedGradients(model, model.embedding)
        out["lig_embedding"] = _guard(lambda: _rounded(lig.attribute(tokens, base, target=1, n_steps=6)))
        out["lig_lstm"] = _guard(lambda: [_rounded(a) for a in attr.LayerIntegratedGradients(
            model, model.lstm).attribute(tokens, base, target=0, n_steps=4, attribute_to_layer_input=True)])
        out["layer_activation_gru"] = _guard(lambda: [_rounded(a) for a in attr.LayerActivation(
            model, model.gru).attribute(tokens)])
    if name == "embbag":
        lig = attr.LayerIntegratedGradients(model, model.bag)
        out["lig_bag"] = _guard(lambda: _rounded(lig.attribute(inputs[0], torch.zeros_like(inputs[0]), target=2,
                                                               n_steps=6)))
    if name == "cells":
        out["conductance_lstmcell"] = _guard(lambda: _rounded(attr.LayerConductance(model, model.rnn).attribute(
            inputs[0], target=1, n_steps=6)))
        out["ig"] = _guard(lambda: _rounded(attr.IntegratedGradients(model).attribute(inputs[0], target=0, n_steps=6)))
    if name == "cnn3d":
        out["gradcam_conv3d"] = _guard(lambda: _rounded(attr.LayerGradCam(model, model[4]).attribute(
            inputs[0], target=2)))
        out["gradcam_upsampled"] = _guard(lambda: _rounded(attr.LayerAttribution.interpolate(
            attr.LayerGradCam(model, model[0]).attribute(inputs[0], target=1), (6, 6, 6), "trilinear")))
        out["conductance_bn3d"] = _guard(lambda: _rounded(attr.LayerConductance(model, model[1]).attribute(
            inputs[0], target=0, n_steps=5)))
    if name == "cnn1d":
        out["gradcam_convT1d"] = _guard(lambda: _rounded(attr.LayerGradCam(model, model[3]).attribute(
            inputs[0], target=1)))
        out["deeplift"] = _guard(lambda: _rounded(attr.DeepLift(model).attribute(inputs[0], target=1)))
    if name == "mha":
        out["lig_norm"] = _guard(lambda: _rounded(attr.LayerIntegratedGradients(
            lambda x: model(x)[:, 0], model.norm).attribute(inputs[0], n_steps=5)))
        out["saliency"] = _guard(lambda: _rounded(attr.Saliency(lambda x: model(x)[:, 1]).attribute(inputs[0])))
    if name == "transformer":
        out["lig_decoder"] = _guard(lambda: _rounded(attr.LayerIntegratedGradients(
            lambda s, t: model(s, t)[:, -1, 0], model.transformer.decoder).attribute(
                (inputs[0], inputs[1]), n_steps=4)))
    if name == "norms":
        out["gradcam_gn"] = _guard(lambda: _rounded(attr.LayerGradCam(model, model[2]).attribute(inputs[0], target=1)))
        out["conductance_shuffle"] = _guard(lambda: _rounded(attr.LayerConductance(model, model[3]).attribute(
            inputs[0], target=0, n_steps=5)))
    return out


def run_torchviz(torch, name, model, inputs):
    from torchviz import make_dot
    inputs = [x.clone().requires_grad_() if x.is_floating_point() else x for x in inputs]
    y = model(*inputs).sum()
    params = dict(model.named_parameters())
    return {"plain": _guard(lambda: normalise_dot(make_dot(y, params=params).source)),
            "attrs": _guard(lambda: normalise_dot(make_dot(y, params=params, show_attrs=True).source))}


def normalise_dot(text):
    """Node names are id()s of graph objects: number them in order of first appearance."""
    seen = {}
    return re.sub(r"(?<=\t)\d+\b|(?<=-> )\d+\b", lambda m: "n%d" % seen.setdefault(m.group(0), len(seen)), text)


def normalise(text):
    """hookgrad's classes live in hookgrad.nn.modules.x where PyTorch's live in torch.nn.modules.x."""
    return re.sub(r"'hookgrad\.nn\.", "'torch.nn.", text)


CAPTUM = {"lstm_text": ["lig_embedding", "lig_lstm", "layer_activation_gru"], "embbag": ["lig_bag"],
          "cells": ["conductance_lstmcell", "ig"], "cnn3d": ["gradcam_conv3d", "gradcam_upsampled", "conductance_bn3d"],
          "cnn1d": ["gradcam_convT1d", "deeplift"], "mha": ["lig_norm", "saliency"], "transformer": ["lig_decoder"],
          "norms": ["gradcam_gn", "conductance_shuffle"]}

TOOLS = {"torchinfo": run_torchinfo, "torchsummary": run_torchsummary, "thop": run_thop, "ptflops": run_ptflops,
         "captum": run_captum, "torchviz": run_torchviz}


def main(folder, side):
    """Print every tool's output as JSON: ``side`` "torch" (plain PyTorch) or "hookgrad" (under the alias)."""
    import torch
    assert ("hookgrad" in torch.__version__) == (side == "hookgrad"), torch.__version__
    torch.set_num_threads(1)
    result = {}
    stray = io.StringIO()                        # what a tool prints outside the captures below
    for name in MODELS:
        saved = torch.load(os.path.join(folder, name + ".pt"))
        result[name] = {}
        for tool, run in TOOLS.items():
            model = build(torch, name)           # a fresh model per tool: thop leaves buffers behind
            model.load_state_dict(saved["state"])
            torch.manual_seed(1)
            with contextlib.redirect_stdout(stray):
                result[name][tool] = run(torch, name, model, saved["inputs"])
    result["stray_output"] = stray.getvalue()
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:3])
