"""Every example script prints, under hookgrad, exactly what it prints under PyTorch 2.13.

The torch version of a script is the same file with the hookgrad imports changed back to torch.
Scripts whose output depends on random initialisation are compared with numbers masked.
"""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
RANDOM = {"seed10_legacy_backward_hook.py", "seed03_weight_hook.py", "seed08_modify_grad_x2.py", "seed09_forward_hook_print.py",
          "seed12_forward_hook_activations.py", "seed13_full_backward_hook.py", "seed11_forward_pre_hook.py",
          "seed15_weight_grad_norm.py", "seed14_resnet_features.py"}
NEEDS_TORCHVISION = {"seed14_resnet_features.py"}


def _to_torch(src):
    src = src.replace("import hookgrad as torch", "import torch")
    src = re.sub(r"import hookgrad\.(\S+) as", r"import torch.\1 as", src)
    src = re.sub(r"from hookgrad(\S*) import", r"from torch\1 import", src)
    return src


def _start(src, tmp_path, name):
    path = tmp_path / name
    path.write_text(src, encoding="utf-8")
    env = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONWARNINGS="ignore")
    return subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=EXAMPLES)


def _finish(proc):
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


def _mask(text):
    text = re.sub(r" \(hookgrad: [^)]*\)", "", text)    # where hookgrad's error message says more
    text = re.sub(r"-?\d+\.\d*(e[+-]\d+)?", "N", text)
    text = re.sub(r"0x[0-9a-f]+", "ADDR", text)
    return re.sub(r"\s+", "", text)   # alignment spaces depend on the values


SEEDS = sorted(f for f in os.listdir(EXAMPLES) if f.startswith("seed") and f.endswith(".py"))


@pytest.mark.parametrize("name", SEEDS)
def test_seed_example_prints_like_torch(name, tmp_path):
    if name in NEEDS_TORCHVISION:
        pytest.skip("the torch side needs torchvision, which has no CPU wheel here")
    src = open(os.path.join(EXAMPLES, name), encoding="utf-8").read()
    # the two interpreters side by side (most of each run is its start-up)
    ph, pt = _start(src, tmp_path, "hg_" + name), _start(_to_torch(src), tmp_path, "torch_" + name)
    (rc_h, out_h, err_h), (rc_t, out_t, err_t) = _finish(ph), _finish(pt)
    assert rc_t == 0, err_t
    assert rc_h == 0, err_h
    if name in RANDOM:
        assert _mask(out_h) == _mask(out_t)
    else:
        assert out_h == out_t
