"""The digits demo with ``--device cuda``: on the "cuda" device (the CPU stand-in of CuPy here: the device logic, not
the GPU), and on a machine without CUDA, where it stops with PyTorch's error before training."""
import os
import sys

import pytest
import torch

import hookgrad
from hookgrad import _array

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "demo"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import backend  # noqa: E402

if backend.NAME == "cupylike":
    pytest.skip("the cupylike module is the default array module here; the stand-in device needs it free",
                allow_module_level=True)


def test_demo_trains_on_the_cuda_device(fake_cuda, tmp_path, capsys, monkeypatch):
    import train_digits
    seen = []
    step = hookgrad.optim.Adam.step

    def watched(self, *a, **k):
        seen.append({p.device.type for g in self.param_groups for p in g["params"]})
        return step(self, *a, **k)
    monkeypatch.setattr(hookgrad.optim.Adam, "step", watched)
    acc = train_digits.main(["--epochs", "2", "--device", "cuda", "--out", str(tmp_path)])
    assert acc >= 0.85
    assert seen and all(s == {"cuda"} for s in seen)          # every step trained the model on the device
    assert "on cuda" in capsys.readouterr().out
    for f in ("index.html", "gradcam.png", "features.png"):
        assert (tmp_path / f).stat().st_size > 1000, f


@pytest.mark.skipif(_array._DEVICE_MODULE.get("cuda") is not None, reason="a cuda device is registered")
def test_demo_without_cuda_raises_pytorchs_error(tmp_path):
    if hookgrad.cuda.is_available():
        pytest.skip("this machine has CuPy and a GPU")
    import train_digits
    with pytest.raises(AssertionError) as te:
        torch.nn.Linear(2, 2).to("cuda")
    with pytest.raises(AssertionError) as he:
        train_digits.main(["--epochs", "1", "--device", "cuda", "--out", str(tmp_path)])
    assert str(he.value).startswith(str(te.value)) and str(te.value) == "Torch not compiled with CUDA enabled"
    assert not (tmp_path / "index.html").exists()
