"""Stand-in for torch.testing._internal.common_utils: the names test_autograd.py imports, written for this
runner, the same under both libraries (``torch`` is whichever library the runner made ``torch``)."""
import contextlib
import functools
import gc
import itertools
import math
import os
import random
import subprocess
import sys
import tempfile
import unittest
import warnings
from numbers import Number

import numpy as np
import torch

IS_WINDOWS = sys.platform == "win32"
IS_MACOS = sys.platform == "darwin"
TEST_WITH_TORCHDYNAMO = False
SEED = 1234

# which library the runner installed: "torch" or "hookgrad" (runWithPytorchAPIUsageStderr runs the same one)
LIBRARY = os.environ.get("HG_UPSTREAM_LIB", "torch")


def _identity(fn):
    return fn


def _decorator_or_factory(*args, **kwargs):
    """``@skipIfX`` and ``@skipIfX("reason")`` both leave the test as it is (the condition never holds here)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return _identity


skipIfTorchDynamo = _decorator_or_factory
skipIfNoLapack = _decorator_or_factory
skipIfSlowGradcheckEnv = _decorator_or_factory
skipIfWindows = _decorator_or_factory
skipIfXpu = _decorator_or_factory
skipIfMPS = _decorator_or_factory


def skipCUDANonDefaultStreamIf(condition):
    return _identity


def slowTest(fn):
    return unittest.skip("slow test (PyTorch runs it only with PYTORCH_TEST_WITH_SLOW)")(fn)


def scoped_load_inline(fn):
    """C++ extensions are out of scope for this runner: the test is skipped under both libraries."""
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        raise unittest.SkipTest("C++ extensions (load_inline) are not built by this runner")
    return wrapper


@contextlib.contextmanager
def disable_gc():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def set_warn_always_context(new_val):
    old = torch.is_warn_always_enabled()
    torch.set_warn_always(new_val)
    try:
        yield
    finally:
        torch.set_warn_always(old)


def _with_defaults(kwargs):
    for key, value in (("check_batched_grad", True), ("fast_mode", True)):
        if kwargs.get(key) is None:
            kwargs[key] = value
    return kwargs


def gradcheck(fn, inputs, **kwargs):
    """PyTorch's test wrapper: batched-gradient checks and fast mode on unless the test says otherwise."""
    return torch.autograd.gradcheck(fn, inputs, **_with_defaults(kwargs))


def gradgradcheck(fn, inputs, grad_outputs=None, **kwargs):
    return torch.autograd.gradgradcheck(fn, inputs, grad_outputs, **_with_defaults(kwargs))


# ------------------------------------------------------------------ parametrize

def _value_name(name, idx, value):
    if isinstance(value, torch.dtype):
        return f"{name}_{str(value).rpartition('.')[2]}"
    if isinstance(value, (bool, int, float, str)):
        return f"{name}_{str(value).replace('.', '_')}"
    return f"{name}{idx}"


class parametrize:
    """``@parametrize("a,b", [(1, 2), ...])``: one test per value set, expanded by instantiate_parametrized_tests."""

    def __init__(self, arg_str, arg_values, name_fn=None):
        self.names = [s.strip() for s in arg_str.split(",") if s.strip()]
        self.values = list(arg_values)
        self.name_fn = name_fn

    def cases(self):
        for idx, value in enumerate(self.values):
            values = value if len(self.names) > 1 else (value,)
            if self.name_fn is not None:
                suffix = self.name_fn(*values)
            else:
                suffix = "_".join(_value_name(n, idx, v) for n, v in zip(self.names, values))
            yield suffix, dict(zip(self.names, values))

    def __call__(self, fn):
        fn.__dict__.setdefault("_hg_parametrize", []).insert(0, self)
        return fn


def _expand(fn):
    """(name suffix, kwargs) for each combination of the parametrize decorators on ``fn``."""
    params = getattr(fn, "_hg_parametrize", None)
    if not params:
        return [("", {})]
    out = []
    for combo in itertools.product(*(list(p.cases()) for p in params)):
        out.append(("_".join(s for s, _ in combo if s), {k: v for _, kw in combo for k, v in kw.items()}))
    return out


def _bind(fn, kwargs):
    @functools.wraps(fn)
    def test(self, *args):
        return fn(self, *args, **kwargs)
    test.__dict__.pop("_hg_parametrize", None)
    return test


def instantiate_parametrized_tests(cls):
    for name, fn in list(vars(cls).items()):
        if not name.startswith("test") or not callable(fn) or not hasattr(fn, "_hg_parametrize"):
            continue
        delattr(cls, name)
        for suffix, kwargs in _expand(fn):
            setattr(cls, f"{name}_{suffix}" if suffix else name, _bind(fn, kwargs))
    return cls


# ------------------------------------------------------------------ comparison

_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def _dtype_name(t):
    return str(t.dtype).rpartition(".")[2]


def _to_numpy(t):
    t = t.detach()
    if getattr(t, "is_sparse", False) or str(getattr(t, "layout", "torch.strided")) != "torch.strided":
        t = t.to_dense()
    if hasattr(t, "resolve_conj"):
        t = t.resolve_conj()
    if hasattr(t, "resolve_neg"):
        t = t.resolve_neg()
    if _dtype_name(t) == "bfloat16":
        t = t.float()
    return np.asarray(t.cpu().numpy())


def _is_tensor(x):
    return isinstance(x, torch.Tensor)


class TestCase(unittest.TestCase):
    """The assertions test_autograd.py uses. assertEqual follows PyTorch's: tensors (and numbers against
    tensors) are compared with per-dtype tolerances, NaN equal to NaN; sequences element by element."""

    precision = 1e-5
    rel_tol = 0
    _expected = None            # {key: str} from expect.json (assertExpected)
    _record_expected = None     # dict to fill when recording

    def setUp(self):
        super().setUp()
        torch.manual_seed(SEED)
        random.seed(SEED)
        np.random.seed(SEED)

    # ---------------------------------------------------------- equality
    def _tols(self, dtypes, atol, rtol):
        if atol is not None and rtol is not None:
            return rtol, atol
        r, a = 0.0, 0.0
        for d in dtypes:
            dr, da = _TOLERANCES.get(d, (0.0, 0.0))
            r, a = max(r, dr), max(a, da)
        return (r if rtol is None else rtol), (a if atol is None else atol)

    def assertEqual(self, x, y, msg=None, *, atol=None, rtol=None, equal_nan=True, exact_dtype=True,
                    exact_device=False, exact_layout=False, exact_stride=False, exact_is_coalesced=False):
        if _is_tensor(x) or _is_tensor(y):
            self._assert_tensor_equal(x, y, msg, atol, rtol, equal_nan, exact_dtype)
        elif isinstance(x, (torch.Size, tuple, list)) and isinstance(y, (torch.Size, tuple, list)):
            self.assertEqual(len(x), len(y), msg=msg or f"lengths differ: {len(x)} vs {len(y)}")
            for a, b in zip(x, y):
                self.assertEqual(a, b, msg, atol=atol, rtol=rtol, equal_nan=equal_nan, exact_dtype=exact_dtype)
        elif isinstance(x, dict) and isinstance(y, dict):
            self.assertEqual(sorted(x), sorted(y), msg)
            for k in x:
                self.assertEqual(x[k], y[k], msg, atol=atol, rtol=rtol, equal_nan=equal_nan,
                                 exact_dtype=exact_dtype)
        elif isinstance(x, Number) and isinstance(y, Number) and not isinstance(x, bool) \
                and not isinstance(y, bool):
            if isinstance(x, (int, np.integer)) and isinstance(y, (int, np.integer)):
                super().assertEqual(x, y, msg)
                return
            r, a = self._tols(("float64",), atol, rtol)
            if equal_nan and cmath_isnan(x) and cmath_isnan(y):
                return
            if not (x == y or abs(complex(x) - complex(y)) <= a + r * abs(complex(y))):
                self.fail(msg or f"Scalars are not close: {x} vs {y} (atol={a}, rtol={r})")
        else:
            super().assertEqual(x, y, msg)

    def _assert_tensor_equal(self, x, y, msg, atol, rtol, equal_nan, exact_dtype):
        xt, yt = _is_tensor(x), _is_tensor(y)
        if xt and yt:
            if exact_dtype and x.dtype != y.dtype:
                self.fail(msg or f"The values for attribute 'dtype' do not match: {x.dtype} != {y.dtype}.")
            if tuple(x.shape) != tuple(y.shape):
                self.fail(msg or f"The values for attribute 'shape' do not match: {x.shape} != {y.shape}.")
            dtypes = (_dtype_name(x), _dtype_name(y))
            a, b = _to_numpy(x), _to_numpy(y)
        else:
            t, other = (x, y) if xt else (y, x)
            if not isinstance(other, (Number, bool, np.ndarray, list, tuple)):
                self.fail(msg or f"cannot compare a tensor with {type(other).__name__}")
            dtypes = (_dtype_name(t),)
            a = _to_numpy(t)
            b = np.asarray(other)
            if isinstance(other, (list, tuple)) and b.shape != a.shape:
                self.fail(msg or f"shapes differ: {a.shape} vs {b.shape}")
            if not isinstance(other, (list, tuple, np.ndarray)) and a.size != 1:
                self.fail(msg or f"a tensor of shape {a.shape} compared with the number {other}")
            a, b = (a, b) if xt else (b, a)
        r, tol = self._tols(dtypes, atol, rtol)
        a = np.asarray(a)
        b = np.asarray(b)
        if a.dtype == bool or b.dtype == bool:
            ok = np.array_equal(a.astype(bool), b.astype(bool)) if a.shape == b.shape or a.size == 1 or \
                b.size == 1 else False
            if not ok and not (a.size == b.size == 0):
                self.fail(msg or f"Tensors are not equal:\n{a}\n{b}")
            return
        a = a.astype(np.complex128) if np.iscomplexobj(a) or np.iscomplexobj(b) else a.astype(np.float64)
        b = b.astype(a.dtype)
        if a.size == 0 and b.size == 0:
            return
        close = np.isclose(a, b, rtol=r, atol=tol, equal_nan=equal_nan)
        if not np.all(close):
            diff = np.abs(a - b)
            self.fail(msg or f"Tensor-likes are not close!\nMismatched elements: {int((~close).sum())} / "
                      f"{close.size}\nGreatest absolute difference: {np.nanmax(diff) if diff.size else 0} "
                      f"(up to {tol} allowed)\n{a}\n{b}")

    def assertNotEqual(self, x, y, msg=None, *, atol=None, rtol=None, **kwargs):
        try:
            self.assertEqual(x, y, msg, atol=atol, rtol=rtol, **kwargs)
        except AssertionError:
            return
        self.fail(msg or f"{x!r} == {y!r}")

    # ---------------------------------------------------------- expect files
    def _expect_key(self, name):
        cls, _, method = self.id().rpartition(".")
        return f"{cls.rpartition('.')[2]}.{method}.{name}"

    def assertExpected(self, s, subname=None):
        key = self._expect_key(subname or "")
        if TestCase._record_expected is not None:
            TestCase._record_expected[key] = s
            return
        expected = (TestCase._expected or {}).get(key)
        if expected is None:
            self.fail(f"no expected value recorded for {key}")
        self.assertMultiLineEqual(expected, s)

    def assertExpectedInline(self, actual, expect, skip=0):
        self.assertMultiLineEqual(expect, actual)

    # ---------------------------------------------------------- warnings
    def assertNotWarn(self, callable, msg=""):
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            with set_warn_always_context(True):
                callable()
        self.assertTrue(len(ws) == 0, msg or f"unexpected warnings: {[str(w.message) for w in ws]}")

    @contextlib.contextmanager
    def assertWarnsOnceRegex(self, category, regex=""):
        import re
        pattern = re.compile(regex)
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            with set_warn_always_context(True):
                yield
        found = [w for w in ws if issubclass(w.category, category) and pattern.search(str(w.message))]
        if not found:
            self.fail(f"{category.__name__} not triggered matching {regex!r}: {[str(w.message) for w in ws]}")

    # ---------------------------------------------------------- helpers
    def genSparseTensor(self, size, sparse_dim, nnz, is_uncoalesced, device, dtype):
        from torch.testing import make_tensor
        v_size = [nnz] + list(size[sparse_dim:])
        v = make_tensor(v_size, device=device, dtype=dtype, low=-1, high=1)
        i = torch.rand(sparse_dim, nnz, device=device)
        i.mul_(torch.tensor(size[:sparse_dim]).unsqueeze(1).to(i))
        i = i.to(torch.long)
        if is_uncoalesced:
            i = torch.cat([i[:, : nnz // 2], i[:, : (nnz + 1) // 2]], 1)
            v = torch.cat([v[: nnz // 2], v[: (nnz + 1) // 2]], 0) if nnz else v
        x = torch.sparse_coo_tensor(i, v, torch.Size(size), dtype=dtype, device=device)
        x = x.detach().clone()._coalesced_(False) if is_uncoalesced else x.coalesce()
        return x, x._indices().clone(), x._values().clone()

    @staticmethod
    def runWithPytorchAPIUsageStderr(code):
        env = dict(os.environ, PYTORCH_API_USAGE_STDERR="1")
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(code)
        try:
            cmd = [sys.executable, "-m", "hookgrad", f.name] if LIBRARY == "hookgrad" else [sys.executable, f.name]
            return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120).stderr
        finally:
            os.unlink(f.name)


def cmath_isnan(x):
    return isinstance(x, (float, complex, np.floating, np.complexfloating)) and (
        math.isnan(x.real) or math.isnan(x.imag))


def run_tests():
    unittest.main()


def load_tests(loader, tests, pattern):
    return tests
