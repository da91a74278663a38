"""Test backends: array modules that are not NumPy, to run the suites under.

``HOOKGRAD_TEST_BACKEND=xarray`` (or ``=cupylike``, CuPy's manners on the CPU: tests/backend/cupylike.py) makes tests/conftest.py call ``activate()`` before any test runs: new
tensors then live in ``xarray.XArray`` (``xarray.xp`` is the default array module), and the oracle checks
that every hookgrad result, gradient and hooked tensor stays one (``array_type()``).
"""
import os

NAME = os.environ.get("HOOKGRAD_TEST_BACKEND", "")
_KNOWN = ("xarray", "cupylike")
# HOOKGRAD_FAKE_CUDA=cupylike: the cupylike module is the array module of hookgrad's "cuda" device (a test-only
# stand-in for CuPy, so that device="cuda", .to("cuda"), mixing errors and Module.to run without a GPU)
FAKE_CUDA = os.environ.get("HOOKGRAD_FAKE_CUDA", "")


def _module(name=None):
    name = name or NAME
    if name not in _KNOWN:
        raise ValueError(f"HOOKGRAD_TEST_BACKEND={name!r}: known backends are {', '.join(_KNOWN)}")
    if name == "cupylike":
        from . import cupylike
        return cupylike
    from . import xarray
    return xarray


def activate():
    """Make the selected backend the default array module (nothing when none is selected); with
    HOOKGRAD_FAKE_CUDA=cupylike, give the "cuda" device the cupylike module."""
    if NAME:
        _module().use()
    if FAKE_CUDA:
        if FAKE_CUDA != "cupylike":
            raise ValueError(f"HOOKGRAD_FAKE_CUDA={FAKE_CUDA!r}: the known stand-in is cupylike")
        _module("cupylike").use_as_cuda()


def array_type():
    """The array type every hookgrad tensor must hold under the selected backend, or None."""
    if not NAME:
        return None
    m = _module()
    return m.ndarray if NAME == "cupylike" else m.XArray


# ---- finding where arrays leave the module: HOOKGRAD_TEST_BACKEND_SITES=1 ----------------------------------------
# Under a backend, a test fails where a result is checked, far from the line that made the NumPy array. With
# HOOKGRAD_TEST_BACKEND_SITES=1 every Tensor given an array of another type records the hookgrad lines that gave it
# (the innermost three frames under src/hookgrad, innermost first); the pytest summary lists them, most frequent first.
SITES = {}


def watch_sites():
    """Record the hookgrad lines that store a non-backend array in a Tensor (a diagnostic: slow)."""
    import sys
    import hookgrad
    from hookgrad._tensor import Tensor
    kind = array_type()
    slot = Tensor.__dict__["_data"]
    root = os.path.dirname(hookgrad.__file__)

    def set_data(t, value):
        if not isinstance(value, kind):
            f, chain = sys._getframe(1), []
            while f is not None and len(chain) < 3:
                if f.f_code.co_filename.startswith(root):
                    chain.append(f"{os.path.relpath(f.f_code.co_filename, root)}:{f.f_lineno} {f.f_code.co_name}")
                f = f.f_back
            if chain:
                site = " <- ".join(chain)
                SITES[site] = SITES.get(site, 0) + 1
        slot.__set__(t, value)

    Tensor._data = property(slot.__get__, set_data)


def site_report(limit=40):
    """The recorded lines, most frequent first (one per line)."""
    rows = sorted(SITES.items(), key=lambda kv: -kv[1])[:limit]
    return [f"{n:7d}  {s}" for s, n in rows]
