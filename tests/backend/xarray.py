"""A test array module: NumPy's API over an array type that is not ``numpy.ndarray``.

``XArray`` subclasses ndarray, and every NumPy function or ufunc applied to XArrays returns XArrays
(through ``__array_function__`` / ``__array_ufunc__``), as CuPy's functions return CuPy arrays. What
does not stay an XArray is what hookgrad makes through the global ``numpy`` instead of the inputs'
module: ``np.zeros(...)``, ``np.asarray(x)``, ``np.array(x)`` come back as plain ndarrays. Running the
suites with this module as the default (``HOOKGRAD_TEST_BACKEND=xarray``) and checking that every
result is an XArray finds those places; the CUDA device is built through CuPy on the same seam.
"""
import numpy as np

import hookgrad._array as _array
from hookgrad._kept import KeptArray, KeptModule


class XArray(KeptArray):
    """An ndarray subclass whose NumPy functions keep it (the test backend's array type)."""

    def __reduce__(self):           # pickles as an XArray
        return (_rebuild, (np.asarray(self),))


def _rebuild(a):
    return a.view(XArray)


xp = KeptModule("hookgrad_test_xarray", XArray)
_array.register(XArray, xp)


def use():
    """Make the test backend the default array module (new tensors are XArrays)."""
    return _array.set_default_module(xp)
