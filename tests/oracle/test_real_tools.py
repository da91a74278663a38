"""torchinfo, torchsummary and thop, unmodified, give the same output on hookgrad as on PyTorch.

PyTorch runs the tools here; hookgrad runs them in one subprocess under the alias
(``python -m hookgrad``: the test process has real torch imported, so the alias cannot be installed
here), on the same weights (PyTorch's state_dicts saved with torch.save, loaded with hookgrad.load).
"""
import json
import os
import subprocess
import sys

import pytest
import torch

import _real_tools_cases as cases

pytestmark = pytest.mark.filterwarnings("ignore:distutils Version classes:DeprecationWarning")

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "src")


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    folder = tmp_path_factory.mktemp("real_tools")
    torch.manual_seed(0)
    ours = {}
    for name, shape in cases.MODELS.items():
        model = cases.build(torch, name, on_hookgrad=False)
        torch.save(model.state_dict(), folder / (name + ".pt"))
        ours[name] = cases.run_tools(torch, model, shape)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(SRC), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "hookgrad", os.path.join(HERE, "_real_tools_cases.py"),
                           str(folder)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return ours, json.loads(proc.stdout)


@pytest.mark.parametrize("model", list(cases.MODELS))
@pytest.mark.parametrize("tool", ["torchinfo", "torchinfo_cols", "torchsummary"])
def test_printed_summary_is_pytorchs(both, tool, model):
    ours, theirs = both
    assert theirs[model][tool] == ours[model][tool]


@pytest.mark.parametrize("model", list(cases.MODELS))
def test_thop_counts_are_pytorchs(both, model):
    ours, theirs = both
    want, got = ours[model]["thop"], theirs[model]["thop"]
    assert (got["macs"], got["params"], got["clever_format"]) == (want["macs"], want["params"],
                                                                   want["clever_format"])
    assert cases.normalise(got["printed"]) == want["printed"]


# ------------------------------------------------------------------ what clients branch on, and what thop writes
VERSIONS = ["2.13.0+cpu", "2.13.0+hookgrad.0.1.0", "1.10.0a0", "2.0.0.dev20230101", "2.1.0rc1", "2.13", "parrot"]
OTHERS = [(2, 13), (2, 13, 0), (2, 13, 1), (1,), "2.13", "2.13.0", "1.9", "2.14.0rc1", "2.13.0.post1",
          "2.13.0+cpu", "2.13.0+hookgrad.0.1.0", "2.0.0.dev2", "parrot", "", 2, None, [2, 13]]


def _compare(cls, version, other):
    out = []
    for op in ("__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"):
        try:
            out.append(getattr(cls(version), op)(other))
        except Exception as e:
            out.append(type(e).__name__)
    try:
        out.append(cls(version) < other)
    except Exception as e:
        out.append(type(e).__name__)
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_torch_version_compares_as_pytorchs(version):
    from torch.torch_version import TorchVersion

    import hookgrad.torch_version as hv
    from packaging.version import Version     # PyTorch compares only with its own vendored Version class
    for other in OTHERS + [Version("2.0"), Version("2.13.0+cpu")]:
        assert _compare(hv.TorchVersion, version, other) == _compare(TorchVersion, version, other), other
    assert hash(hv.TorchVersion(version)) == hash(version) and isinstance(hv.TorchVersion(version), str)


def test_setitem_drops_leading_unit_dims_of_the_value():
    import hookgrad
    cases = [((1,), 0, (1,)), ((3, 2), 1, (1, 1, 2)), ((3, 2), 1, (1, 3)), ((3, 2), 1, (2, 1, 2)),
             ((3, 2), (slice(None), 0), (1, 1, 4)), ((3, 2), [0, 1], (1, 1, 2)), ((3, 2), [0, 1], (1, 3))]

    def run(lib, shape, idx, value):
        t = lib.zeros(*shape)
        try:
            t[idx] = lib.ones(*value)   # thop: m.total_params[0] = torch.DoubleTensor([n])
            return t.tolist()
        except Exception as e:
            return type(e).__name__, str(e)
    for case in cases:
        assert run(hookgrad, *case) == run(torch, *case), case
