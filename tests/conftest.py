import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "oracle"))
sys.path.insert(0, os.path.dirname(__file__))
# torchvision beside the CPU torch oracle, in this process and in every subprocess (tests/torch_site)
_TORCH_SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_site")
sys.path.insert(0, _TORCH_SITE)
os.environ["PYTHONPATH"] = os.pathsep.join([_TORCH_SITE] + [p for p in os.environ.get("PYTHONPATH", "").split(
    os.pathsep) if p and p != _TORCH_SITE])
import _before_torchvision  # noqa: E402

_before_torchvision.install()

import backend  # noqa: E402  (tests/backend: HOOKGRAD_TEST_BACKEND=xarray runs the suites on XArray)

backend.activate()
if backend.NAME and os.environ.get("HOOKGRAD_TEST_BACKEND_SITES"):
    backend.watch_sites()


def pytest_terminal_summary(terminalreporter):
    if backend.SITES:
        terminalreporter.section("hookgrad lines that gave a Tensor a non-backend array")
        for line in backend.site_report():
            terminalreporter.write_line(line)


@pytest.fixture(params=["compiled", "numpy"])
def path(request):
    """Run a test on the compiled kernels (numba) and on the NumPy paths (``_jit.disabled()``), with two pool
    threads so that the work is split even on a one-core machine."""
    import hookgrad
    from hookgrad import _jit
    if request.param == "compiled" and not _jit.available():
        pytest.skip("numba is not installed")
    was = hookgrad.get_num_threads()
    hookgrad.set_num_threads(2)
    try:
        if request.param == "numpy":
            with _jit.disabled():
                yield request.param
        else:
            yield request.param
    finally:
        hookgrad.set_num_threads(was)


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    yield


@pytest.fixture
def fake_cuda():
    """The CuPy-like CPU module (tests/backend/cupylike.py) as the "cuda" device's, for one test; the device
    table is restored after it. (Files that use it skip themselves under HOOKGRAD_TEST_BACKEND=cupylike.)"""
    from hookgrad import _array
    from backend import cupylike
    saved = dict(_array._DEVICE_MODULE), dict(_array._MODULE_DEVICE), set(_array._probed)
    cupylike.use_as_cuda()
    try:
        yield cupylike
    finally:
        for d, s in zip((_array._DEVICE_MODULE, _array._MODULE_DEVICE, _array._probed), saved):
            d.clear()
            d.update(s)
