import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "oracle"))


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    yield
