"""torch_geometric on hookgrad's sparse tensors: the same script (_sparse_cases/pyg_sparse.py) under torch and
under ``python -m hookgrad`` computes the same adjacencies, sparse products, convolutions and gradients."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch_geometric")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_sparse_cases", "pyg_sparse.py")


def _run(tmp_path, *prefix):
    out = tmp_path / ("h.pkl" if prefix else "t.pkl")
    proc = subprocess.run([sys.executable, *prefix, SCRIPT, str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and out.exists(), proc.stderr[-3000:]
    return pickle.loads(out.read_bytes()), proc.stderr


def test_torch_geometric_sparse_paths(tmp_path):
    ref, _ = _run(tmp_path)
    got, err = _run(tmp_path, "-m", "hookgrad")
    assert ref["steps"][-1] == "backward", ref["steps"]
    assert got["steps"] == ref["steps"], err[-3000:]
    for k, a in ref.items():
        b = got[k]
        if isinstance(a, np.ndarray):
            assert isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype, k
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=k)
        else:
            assert a == b, k
