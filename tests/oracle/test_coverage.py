"""docs/coverage.md and the README's coverage section are what scripts/coverage.py writes from this tree,
and the script's comparison tells torch's results from hookgrad's."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import hookgrad

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "coverage.py")


@pytest.fixture(scope="module")
def cov():
    spec = importlib.util.spec_from_file_location("_coverage_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_page_and_readme_are_current():
    """One run of the script in a fresh interpreter (no state left by other tests): any difference from
    the committed page or README section fails, with the command that refreshes them."""
    r = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.fail(r.stdout + r.stderr, pytrace=False)


def test_compare_tells_results_apart(cov):
    t, h = torch.tensor([1.0, 2.0]), hookgrad.tensor([1.0, 2.0])
    assert cov.compare(t, h) is None
    assert cov.compare(t, hookgrad.tensor([1.0, 2.5])) == "values differ"
    assert cov.compare(t, hookgrad.tensor([1.0, 2.0], dtype=hookgrad.float64)) == \
        "dtype torch.float32 vs torch.float64"
    assert cov.compare(t, hookgrad.tensor([[1.0, 2.0]])) == "shape (2,) vs (1, 2)"
    assert cov.compare(t, np.array([1.0, 2.0], dtype=np.float32)) == "torch returns a Tensor, hookgrad ndarray"
    assert cov.compare(3, 3) is None and cov.compare(3, np.int64(3)) == "torch returns int, hookgrad int64"
    assert cov.compare(torch.Size([2]), hookgrad.Size([2])) is None
    assert cov.compare(torch.Size([2]), hookgrad.Size([3])) == "item 0: 2 vs 3"
    assert cov.compare(torch.float32, hookgrad.float32) is None
    assert cov.compare(torch.float32, hookgrad.float64) == "torch.float32 vs torch.float64"
    mx_t, mx_h = torch.tensor([[1.0, 3.0]]).max(1), hookgrad.tensor([[1.0, 3.0]]).max(1)
    assert cov.compare(mx_t, mx_h) is None
    assert cov.compare(mx_t, tuple(mx_h)) == "torch returns max, hookgrad tuple"
    # errors: compared by their built-in class (torch's LinAlgError is a RuntimeError)
    assert cov.compare(TypeError("a"), TypeError("b")) is None
    assert cov.compare(torch.linalg.LinAlgError("a"), RuntimeError("b")) is None
    assert cov.compare(TypeError("a"), RuntimeError("b")) == "torch raises TypeError, hookgrad raises RuntimeError"
    assert cov.compare(TypeError("a"), h) == "torch raises TypeError, hookgrad returns Tensor"
    assert cov.compare(t, ValueError("b")) == "torch returns Tensor, hookgrad raises ValueError"


def test_calls_find_a_difference_and_agree_where_equal(cov):
    """check_calls on names both libraries have: one that agrees everywhere, and a stand-in hookgrad
    function that differs on the second pattern only."""
    real = hookgrad.neg
    try:
        with cov.calling():
            assert cov.check_calls("", "sigmoid") == (True, None, None)
            hookgrad.neg = lambda *a: real(*a) if len(a) != 1 or a[0].shape != (2, 3) else real(a[0]) + 1
            accepted, result, error = cov.check_calls("", "neg")
    finally:
        hookgrad.neg = real
    assert accepted and result == "(float32[2,3]): values differ", result


def test_readme_section_replaced_in_place(cov, tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n## Coverage of PyTorch's API\n\n" + cov.README_START + "\nold\n" + cov.README_END +
                      "\n\n## Speed\n")
    monkeypatch.setattr(cov, "README", str(readme))
    new = cov.readme_with(cov.README_START + "\nnew\n" + cov.README_END)
    assert new == readme.read_text().replace("old", "new")
    readme.write_text("# x\n\n## Speed\n")
    assert cov.readme_with("S") == "# x\n\n## Coverage of PyTorch's API\n\nS\n\n## Speed\n"
