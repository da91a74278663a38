"""PyTorch's own test/test_autograd.py, run unmodified on hookgrad (issue 27).

tests/upstream/autograd/run_upstream.py runs the upstream file under either library with the same stand-in for
torch.testing._internal. Two lists are kept beside it:

- ``torch_pass.txt``: the tests that pass on torch 2.13 with that stand-in (the target's denominator);
- ``hookgrad_pass.txt``: the tests hookgrad passes today.

This test runs the hookgrad list on hookgrad in a subprocess (``torch`` must mean hookgrad there) and fails if
any of them stops passing; the count against the torch total is printed. Regenerate the lists with
``python tests/upstream/autograd/run_upstream.py --lib torch|hookgrad --pass-list <file>``.

The upstream file itself is PyTorch's and is not kept in git (tests/upstream/autograd/README.md says where it
comes from); without it this test is skipped, saying so.
"""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograd")
UPSTREAM = os.path.join(HERE, "upstream_test_autograd.py")


def _names(path, slow=True):
    """The test names of a list; ``slow=False`` leaves out those marked ``# slow``."""
    with open(path) as f:
        lines = [line for line in f if line.strip() and not line.startswith("#")]
    return [line.split("#")[0].strip() for line in lines if slow or "# slow" not in line]


def test_upstream_autograd_hookgrad_keeps_passing(tmp_path, record_property):
    if not os.path.exists(UPSTREAM):
        pytest.skip("PyTorch's test/test_autograd.py is not at tests/upstream/autograd/upstream_test_autograd.py "
                    "(see tests/upstream/autograd/README.md)")
    torch_pass = set(_names(os.path.join(HERE, "torch_pass.txt")))
    all_pass = _names(os.path.join(HERE, "hookgrad_pass.txt"))
    assert set(all_pass) <= torch_pass, sorted(set(all_pass) - torch_pass)
    hookgrad_pass = _names(os.path.join(HERE, "hookgrad_pass.txt"), slow=False)
    only = tmp_path / "only.txt"
    only.write_text("".join(f"{name}\n" for name in hookgrad_pass))
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "run_upstream.py"), "--lib", "hookgrad",
                           "--only", str(only), "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(out.read_text())
    missing = [name for name in hookgrad_pass if name not in results]
    broken = {name: results[name] for name in hookgrad_pass if name in results and results[name][0] != "pass"}
    passed = sum(1 for status, *_ in results.values() if status == "pass")
    slow = len(all_pass) - len(hookgrad_pass)
    summary = (f"hookgrad passes {passed} (+ {slow} slow ones not run here) of the {len(torch_pass)} tests of "
               f"test_autograd.py that pass on torch")
    print(summary)
    record_property("upstream_autograd", summary)
    assert not missing, f"tests no longer collected: {missing}"
    assert not broken, f"{summary}; these stopped passing: " + json.dumps(broken, indent=1)
