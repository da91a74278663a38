import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "oracle"))
sys.path.insert(0, os.path.dirname(__file__))

import backend  # noqa: E402  (tests/backend: HOOKGRAD_TEST_BACKEND=xarray runs the suites on XArray)

backend.activate()
if backend.NAME and os.environ.get("HOOKGRAD_TEST_BACKEND_SITES"):
    backend.watch_sites()


def pytest_terminal_summary(terminalreporter):
    if backend.SITES:
        terminalreporter.section("hookgrad lines that gave a Tensor a non-backend array")
        for line in backend.site_report():
            terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    yield
