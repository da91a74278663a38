"""captum, ptflops and torchviz, unmodified, give the same output on hookgrad as on PyTorch; the "later"
layers tools name at import are placeholders; scalars from tensors warn and format as PyTorch.

PyTorch and hookgrad (under the alias, ``python -m hookgrad``) each run the tools in a fresh subprocess, on
the same weights (see _tools_more_cases.py).
"""
import json
import os
import subprocess
import sys
import pytest
import torch

import _tools_more_cases as cases

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "src")
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(SRC), os.environ.get("PYTHONPATH", "")]))


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tools_more")
    torch.manual_seed(0)
    for name in cases.MODELS:
        torch.save(cases.build(torch, name).state_dict(), folder / (name + ".pt"))
    script = os.path.join(HERE, "_tools_more_cases.py")
    procs = [subprocess.Popen([sys.executable, "-W", "ignore"] + alias + [script, str(folder), side],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
             for side, alias in (("torch", []), ("hookgrad", ["-m", "hookgrad"]))]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-4000:]
        out.append(json.loads(stdout))
    return tuple(out)


CAPTUM = ["ig", "ig_delta", "saliency", "saliency_signed", "deeplift", "guided_backprop", "input_x_gradient",
          "noise_tunnel", "occlusion", "kernel_shap", "layer_conductance", "layer_grad_cam", "layer_activation"]


@pytest.mark.parametrize("model", list(cases.MODELS))
@pytest.mark.parametrize("method", CAPTUM)
def test_captum_attributions_are_pytorchs(both, model, method):
    ours, theirs = both
    want, got = ours[model]["captum"][method], theirs[model]["captum"][method]
    assert len(got) == len(want)
    assert got == pytest.approx(want, abs=2e-3 if method in ("kernel_shap", "ig_delta") else 2e-4)


@pytest.mark.parametrize("model", list(cases.MODELS))
@pytest.mark.parametrize("backend", ["pytorch", "aten"])
def test_ptflops_is_pytorchs(both, model, backend):
    ours, theirs = both
    assert theirs[model]["ptflops"][backend] == ours[model]["ptflops"][backend]


@pytest.mark.parametrize("model", list(cases.MODELS))
@pytest.mark.parametrize("kind", ["plain", "attrs"])
def test_torchviz_graph_is_pytorchs(both, model, kind):
    ours, theirs = both
    got, want = theirs[model]["torchviz"][kind], ours[model]["torchviz"][kind]
    assert got == want


# ------------------------------------------------------------------ tools import: "later" layers are placeholders
def _alias(code):
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "-c", code], capture_output=True, text=True, env=ENV,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_tools_that_key_dicts_on_later_layers_import_under_the_alias():
    out = _alias("import torch, thop, ptflops, captum.attr, torchviz\n"
                 "from torch.distributions.categorical import Categorical\n"
                 "from ptflops.pytorch_ops import MODULES_MAPPING\n"
                 "import torch.nn as nn\n"
                 "print(nn.LSTM in MODULES_MAPPING, nn.Conv3d in MODULES_MAPPING, nn.Linear in MODULES_MAPPING,\n"
                 "      Categorical.__module__)")
    assert out.split() == ["True", "True", "True", "hookgrad.distributions.categorical"]


# ------------------------------------------------------------------ scalars from tensors (what tools print)
# in this order, in one fresh process per library: PyTorch warns once per process (TORCH_WARN_ONCE)
SCALAR_CASES = [
    "int(torch.tensor(2., requires_grad=True))",
    "torch.tensor(2.5, requires_grad=True).item()",
    "float(torch.tensor(2.5))",
    "float(torch.tensor([2.5], requires_grad=True) * 2)",
    "float(torch.tensor(2.5, requires_grad=True))",
    "float(torch.nn.Parameter(torch.tensor(1.)))",
]


def _scalar_run(lib):
    code = [f"import {lib} as torch, warnings", "out = []"]
    for expr in SCALAR_CASES:
        code += ["with warnings.catch_warnings(record=True) as w:", "    warnings.simplefilter('always')",
                 f"    v = {expr}",
                 "    out.append((repr(v), [(str(x.message).split(' (Triggered')[0], x.category.__name__, x.lineno)"
                 " for x in w]))"]
    code.append("print(out)")
    proc = subprocess.run([sys.executable, "-c", "\n".join(code)], capture_output=True, text=True, env=ENV,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_scalar_conversion_warns_once_as_pytorch():
    got, want = _scalar_run("hookgrad"), _scalar_run("torch")
    assert "Converting a tensor with requires_grad=True to a scalar" in want
    assert got == want


FORMATS = ["{}", "{:.2f}", "{:>8}", "{:e}", "{!r}", "{!s}"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_format_of_tensors_is_pytorchs(fmt):
    import hookgrad

    def run(lib):
        out = []
        for make in (lambda: lib.tensor(0.3), lambda: lib.tensor(3), lambda: lib.tensor(0.3, requires_grad=True) * 2,
                     lambda: lib.tensor([1., 2.]), lambda: lib.nn.Parameter(lib.tensor(1.5)),
                     lambda: lib.arange(4.)[1], lambda: lib.tensor(True)):
            try:
                out.append(fmt.format(make()))
            except Exception as e:
                out.append((type(e).__name__, str(e)))
        return out
    assert run(hookgrad) == run(torch)
