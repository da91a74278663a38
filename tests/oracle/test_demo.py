"""The main job runs end to end: training with hooks, Grad-CAM, the report (short run)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "demo"))


def test_demo_trains_and_writes_report(tmp_path):
    import train_digits
    acc = train_digits.main(["--epochs", "4", "--out", str(tmp_path)])
    assert acc >= 0.9
    for f in ("index.html", "loss.png", "grad_norms.png", "gradcam.png", "features.png"):
        assert (tmp_path / f).stat().st_size > 1000, f
    page = (tmp_path / "index.html").read_text()
    assert "Test accuracy" in page and "gradcam.png" in page
