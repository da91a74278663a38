"""Each package's typical script runs unchanged on hookgrad and gives PyTorch's results.

The script (cases/<package>_case.py) runs twice in subprocesses of its own: under PyTorch 2.13, which saves the
weights it built, and under ``python -m hookgrad``, which loads them. Every recorded value is compared:
tensors by dtype, shape and value, everything else exactly.
"""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "src"))
PACKAGES = ["einops", "torchmetrics", "transformers", "torchvision", "timm", "kornia", "pytorch_lightning",
            "accelerate", "peft", "torch_geometric", "pytorch_grad_cam"]
# float32 models of a few layers: the results agree to a few ulps of their size, not bit for bit
RTOL, ATOL = 2e-4, 2e-5


def _run(package, mode, folder):
    cmd = [sys.executable] + (["-m", "hookgrad"] if mode == "hookgrad" else []) + [
        os.path.join(HERE, "runner.py"), package, mode, str(folder)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", PYTHONWARNINGS="ignore")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=str(folder))
    assert proc.returncode == 0, f"{package} under {mode} failed:\n{proc.stderr[-6000:]}"
    with open(os.path.join(folder, f"{package}.{mode}.pkl"), "rb") as f:
        return pickle.load(f)


def _compare(want, got, where):
    if isinstance(want, tuple) and want and want[0] == "tensor":
        assert isinstance(got, tuple) and got[0] == "tensor", f"{where}: {got!r} is not a tensor"
        assert got[1] == want[1], f"{where}: dtype {got[1]} != {want[1]}"
        assert got[2].shape == want[2].shape, f"{where}: shape {got[2].shape} != {want[2].shape}"
        if want[2].dtype.kind in "fc":
            np.testing.assert_allclose(got[2], want[2], rtol=RTOL, atol=ATOL, err_msg=where)
        else:
            np.testing.assert_array_equal(got[2], want[2], err_msg=where)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (w, g) in enumerate(zip(want, got)):
            _compare(w, g, f"{where}[{i}]")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for k in want:
            _compare(want[k], got[k], f"{where}.{k}")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=RTOL, abs=ATOL), f"{where}: {got} != {want}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("package", PACKAGES)
def test_typical_use_gives_torchs_results(package, tmp_path):
    pytest.importorskip(package)
    want = _run(package, "torch", tmp_path)
    got = _run(package, "hookgrad", tmp_path)
    assert sorted(got) == sorted(want)
    for name in want:
        _compare(want[name], got[name], f"{package}:{name}")
