"""Each package's typical script runs unchanged on hookgrad and gives PyTorch's results.

The script (cases/<package>_case.py) runs twice in subprocesses of its own: under PyTorch 2.13, which saves the
weights it built, and under ``python -m hookgrad``, which loads them. Every recorded value is compared:
tensors by dtype, shape and value, everything else exactly.
"""
import importlib.util
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
# float32 models of a few layers: the results agree to a few ulps of their size, not bit for bit (ATOL is
# relative to each array's largest magnitude)
RTOL, ATOL = 2e-4, 2e-5


def _command(package, mode, folder):
    cmd = [sys.executable] + (["-m", "hookgrad"] if mode == "hookgrad" else []) + [
        os.path.join(HERE, "runner.py"), package, mode, str(folder)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONWARNINGS="ignore",
               OMP_NUM_THREADS="1")
    return cmd, env


def _run_all(packages, mode, folder, at_once=2):
    """Runs every package's script under ``mode``, ``at_once`` processes at a time (one per core here);
    returns {package: (returncode, stderr)}."""
    pending, running, done = list(packages), [], {}
    while pending or running:
        while pending and len(running) < at_once:
            pkg = pending.pop(0)
            cmd, env = _command(pkg, mode, folder)
            err = open(os.path.join(folder, f"{pkg}.{mode}.err"), "w+")
            running.append((pkg, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                                  cwd=str(folder)), err))
        for item in list(running):
            pkg, proc, err = item
            try:
                proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            err.seek(0)
            done[pkg] = (proc.returncode, err.read())
            err.close()
            running.remove(item)
    return done


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Both sides of every installed package, run once: PyTorch first (it saves the weights), then hookgrad."""
    folder = tmp_path_factory.mktemp("ecosystem")
    installed = [p for p in PACKAGES if importlib.util.find_spec(p) is not None]
    return folder, {mode: _run_all(installed, mode, folder) for mode in ("torch", "hookgrad")}


def _load(results, package, mode):
    folder, runs = results
    code, stderr = runs[mode][package]
    assert code == 0, f"{package} under {mode} failed:\n{stderr[-6000:]}"
    with open(os.path.join(folder, f"{package}.{mode}.pkl"), "rb") as f:
        return pickle.load(f)


def _compare(want, got, where):
    if isinstance(want, tuple) and want and want[0] == "tensor":
        assert isinstance(got, tuple) and got[0] == "tensor", f"{where}: {got!r} is not a tensor"
        assert got[1] == want[1], f"{where}: dtype {got[1]} != {want[1]}"
        assert got[2].shape == want[2].shape, f"{where}: shape {got[2].shape} != {want[2].shape}"
        if want[2].dtype.kind in "fc":
            # absolute tolerance on the array's scale: an element near zero computed from large ones (kornia's Lab
            # from RGB, up to 100) carries the rounding of those
            scale = max(1.0, float(np.abs(want[2]).max())) if want[2].size else 1.0
            np.testing.assert_allclose(got[2], want[2], rtol=RTOL, atol=ATOL * scale, err_msg=where)
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
def test_typical_use_gives_torchs_results(package, results):
    pytest.importorskip(package)
    want = _load(results, package, "torch")
    got = _load(results, package, "hookgrad")
    assert sorted(got) == sorted(want)
    for name in want:
        _compare(want[name], got[name], f"{package}:{name}")
