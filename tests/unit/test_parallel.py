"""The thread count (torch.set_num_threads), the pool (_parallel.parallel_for) and the compiled-kernel
machinery (_jit): errors as PyTorch's, every index covered once, errors carried back, forks, nesting,
concurrent callers; the float32 scalar helpers against NumPy's float64 maths."""
import ctypes
import multiprocessing as mp
import os
import threading

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad import _jit, _parallel
from hookgrad.primitives import _kernels as K


@pytest.fixture
def threads():
    was = hookgrad.get_num_threads()
    yield
    hookgrad.set_num_threads(was)


@pytest.mark.parametrize("bad", [0, -3, "2", 2.0, True, None])
def test_set_num_threads_errors_are_torchs(bad, threads):
    with pytest.raises(Exception) as t:
        torch.set_num_threads(bad)
    before = hookgrad.get_num_threads()
    with pytest.raises(type(t.value)) as h:
        hookgrad.set_num_threads(bad)
    assert str(h.value) == str(t.value)
    assert hookgrad.get_num_threads() == before


def test_default_is_the_cores_this_process_may_use(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _parallel._default_threads() == expected
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert _parallel._default_threads() == 3


def test_omp_num_threads_is_read_as_torch_reads_it():
    import subprocess
    import sys
    code = "import {0}; print({0}.get_num_threads())"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    outs = [subprocess.run([sys.executable, "-c", code.format(m)], env=env, capture_output=True, text=True,
                           timeout=120).stdout.strip() for m in ("torch", "hookgrad")]
    assert outs[0] == outs[1] == "1"


def test_set_num_threads_reaches_numpys_blas(threads):
    setters = _parallel._loaded_blas()
    if not setters:
        pytest.skip("no OpenBLAS/MKL found among the loaded libraries")
    getter = None
    for path in _blas_paths():
        for sym in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads",
                    "scipy_openblas_get_num_threads", "openblas_get_num_threads64_"):
            getter = getter or getattr(ctypes.CDLL(path), sym, None)
    if getter is None:
        pytest.skip("the BLAS has no thread getter")
    getter.restype = ctypes.c_int
    for n in (1, 2, 3):
        hookgrad.set_num_threads(n)
        assert hookgrad.get_num_threads() == n
        assert getter() == n


_SPIN_PROBE = """
import ctypes, os, sys, time
import numpy as np
import hookgrad
paths = sorted({l.split()[-1] for l in open("/proc/self/maps") if "openblas" in l.lower() and ".so" in l})
if not paths or not hasattr(ctypes.CDLL(paths[0]), "openblas_thread_timeout"):
    print("skip"); sys.exit()
hookgrad.set_num_threads(2)
a = np.random.default_rng(0).random((256, 256), dtype=np.float32)
for _ in range(3):
    a @ a
t0 = time.process_time(); a @ a; time.sleep(0.3)
print(ctypes.CDLL(paths[0]).openblas_thread_timeout(), (time.process_time() - t0) * 1e3,
      "OPENBLAS_THREAD_TIMEOUT" in os.environ and os.environ["OPENBLAS_THREAD_TIMEOUT"])
"""


@pytest.mark.parametrize("user", [None, "20"])
def test_openblas_workers_sleep_soon_after_a_product(user):
    """NumPy's OpenBLAS keeps its idle workers spinning for ~0.1 s after each threaded product (2^28 cycles),
    taking cores from the pool; importing hookgrad shortens that to 2^20 cycles unless the user chose a
    timeout, and leaves the environment as it was."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if not k.endswith("THREAD_TIMEOUT")}
    if user:
        env["OPENBLAS_THREAD_TIMEOUT"] = user
    out = subprocess.run([sys.executable, "-c", _SPIN_PROBE], env=env, capture_output=True, text=True,
                         timeout=120).stdout.split()
    if out == ["skip"]:
        pytest.skip("NumPy's BLAS is not an OpenBLAS with a thread timeout")
    timeout, cpu_ms, left = int(out[0]), float(out[1]), out[2]
    if user:
        assert (timeout, left) == (20, user)        # the user's choice, untouched
    else:
        assert (timeout, left) == (int(_parallel._SPIN), "False")
        assert cpu_ms < 60, f"{cpu_ms:.0f} ms of CPU in a 300 ms sleep after a product: BLAS workers still spin"


def test_blas_found_without_taking_over_other_libraries_symbols():
    """hookgrad opens NumPy's OpenBLAS (64-bit integers) to set its threads; a library loaded after, such as SciPy's
    own OpenBLAS (32-bit), must still bind its symbols to itself (opened RTLD_GLOBAL, NumPy's library took them
    over and SciPy's LAPACK workspace queries returned garbage)."""
    import subprocess
    import sys
    pytest.importorskip("scipy.linalg")
    code = ("import hookgrad, numpy as np, scipy.linalg as L; rng = np.random.default_rng(0); "
            "a, b = rng.random((20, 5), dtype=np.float32), rng.random(20, dtype=np.float32); "
            "print(np.abs(L.lstsq(a, b)[0] - np.linalg.lstsq(a, b)[0]).max())")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert float(run.stdout) < 1e-4


def _blas_paths():
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line})


@pytest.mark.parametrize("n,grain,nthreads", [(0, 4, 2), (1, 4, 2), (7, 4, 2), (8, 4, 2), (1000, 7, 3),
                                              (1000, 7, 1), (10, 1, 8)])
def test_parallel_for_covers_every_index_once(n, grain, nthreads, threads):
    hookgrad.set_num_threads(nthreads)
    hits = np.zeros(n, np.int64)
    seen = []
    lock = threading.Lock()

    def fn(lo, hi):
        hits[lo:hi] += 1
        with lock:
            seen.append((lo, hi))
    _parallel.parallel_for(n, fn, grain)
    assert (hits == 1).all()
    assert len(seen) == _parallel.chunks(n, grain)
    assert len(seen) <= 4 * nthreads
    assert all(hi - lo >= min(grain, n) for lo, hi in seen)


def test_an_error_in_a_chunk_reaches_the_caller_and_the_pool_stays_usable(threads):
    hookgrad.set_num_threads(2)

    def fn(lo, hi):
        if lo > 0:
            raise ValueError(f"chunk {lo}")
    with pytest.raises(ValueError, match="chunk"):
        _parallel.parallel_for(100, fn, 10)
    out = np.zeros(100)
    _parallel.parallel_for(100, lambda lo, hi: out.__setitem__(slice(lo, hi), 1.0), 10)
    assert out.sum() == 100


def test_nested_parallel_for_runs_inline(threads):
    hookgrad.set_num_threads(2)
    inner = []

    def outer(lo, hi):
        _parallel.parallel_for(100, lambda a, b: inner.append(threading.get_ident()), 10)
    _parallel.parallel_for(100, outer, 10)
    assert len(inner) == _parallel.chunks(100, 10) > 1      # each outer chunk ran its inner loop as one call


def test_concurrent_callers(threads):
    hookgrad.set_num_threads(2)
    results = {}

    def user(k):
        out = np.zeros(10000)
        for _ in range(20):
            _parallel.parallel_for(10000, lambda lo, hi: out.__setitem__(slice(lo, hi), out[lo:hi] + k), 100)
        results[k] = out
    ts = [threading.Thread(target=user, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for k in range(4):
        assert (results[k] == 20 * k).all()


def _child(q):
    out = np.zeros(1000)
    _parallel.parallel_for(1000, lambda lo, hi: out.__setitem__(slice(lo, hi), 1.0), 10)
    q.put(out.sum())


def test_pool_works_in_a_forked_child(threads):
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork")
    hookgrad.set_num_threads(2)
    _parallel.parallel_for(1000, lambda lo, hi: None, 10)      # the parent's pool has threads
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert q.get(timeout=5) == 1000


# ------------------------------------------------------------------------------------------------ _jit
def test_fast_applies_to_float32_numpy_arrays_only():
    x = np.zeros(3, np.float32)
    assert _jit.fast(x) == _jit.available()
    assert not _jit.fast(x.astype(np.float64))
    assert not _jit.fast(x, np.zeros(3, np.int64))
    assert not _jit.fast(x.view(type("Sub", (np.ndarray,), {})))
    assert not _jit.fast([1.0])
    with _jit.disabled():
        assert not _jit.available()
        assert not _jit.fast(x)
    assert _jit.fast(x) == _jit.available()


needs_numba = pytest.mark.skipif(not _jit.available(), reason="numba is not installed")


@_jit.kernel
def _twice(x):
    return x + x


@_jit.kernel
def _twice_all(x, out):
    for i in range(x.size):
        out[i] = _twice(x[i])


@needs_numba
def test_a_kernel_calls_kernels_and_runs_in_chunks(threads):
    hookgrad.set_num_threads(2)
    x = np.arange(300000, dtype=np.float32).reshape(3, -1)[:, ::2]      # not contiguous
    out = _jit.elementwise(_twice_all, x, grain=1000)
    assert out.shape == x.shape and out.dtype == np.float32
    np.testing.assert_array_equal(out, 2 * x)
    assert _twice.py(np.float32(2)) == 4           # the Python function is kept as it is


@_jit.kernel
def _helpers(x, exp_out, erf_out):
    for i in range(x.size):
        exp_out[i] = _exp32(x[i])
        erf_out[i] = _erf32(x[i])


_exp32, _erf32 = K.exp32, K.erf32_as


def _apply_helpers(x):
    e, f = np.empty_like(x), np.empty_like(x)
    _helpers(x, e, f)
    return e, f


@needs_numba
def test_exp32_is_within_one_ulp():
    x = np.concatenate([np.linspace(-110, 89, 200001, dtype=np.float32),
                        np.array([0, -0.0, 1e-30, -1e-30, 88.72, 88.73, -87.33, -87.34, -103, 100, np.inf, -np.inf,
                                  np.nan], np.float32)])
    got = _apply_helpers(x)[0]
    ref = np.exp(x.astype(np.float64))
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32)
    finite = np.isfinite(ref32)
    ulp = np.spacing(np.abs(ref32[finite]))           # subnormals included: their ulp is 2^-149
    assert (np.abs(got[finite] - ref[finite]) <= 1.0 * ulp).all()
    np.testing.assert_array_equal(got[np.isinf(ref32)], ref32[np.isinf(ref32)])
    assert np.isnan(got[-1])


@needs_numba
def test_erf32_as_equals_its_numpy_form():
    x = np.concatenate([np.linspace(-6, 6, 100001, dtype=np.float32),
                        np.array([0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
    got = _apply_helpers(x)[1]
    ref = K.erf_as(x)          # the same float32 arithmetic in NumPy (near 0 both lose digits to 1 - r t e^-x^2)
    np.testing.assert_allclose(got[:-1], ref[:-1], rtol=0, atol=5e-7)   # FMA contraction: a few ulp
    assert np.isnan(got[-1])
    assert got[-3] == 1 and got[-2] == -1


def _gates(x, out):          # arithmetic per element, as in the kernels made wide (GELU, the LSTM's step)
    for i in range(x.size):
        v = x[i]
        out[i] = v / (np.float32(1) + v * v) * np.float32(0.5) + v


@needs_numba
def test_a_wide_kernel_is_marked_for_512_bit_vectors_and_computes_the_same_bits():
    """_jit.wide: the compiled function carries LLVM's prefer-vector-width=512 (a numba pipeline adds it: dropping
    the attribute, or the pipeline, fails the first check), its cache entry is its own, and an elementwise loop
    gives the plain kernel's bits, specials included."""
    import numba
    pipeline = _jit._wide_pipeline()
    assert pipeline is not None             # this numba has the parts (the kernel falls back otherwise)
    marked = numba.njit(nogil=True, pipeline_class=pipeline, fastmath=_jit.kernel.fastmath)(_gates)
    plain = numba.njit(nogil=True, fastmath=_jit.kernel.fastmath)(_gates)
    x = np.concatenate([np.linspace(-120, 100, 100003, dtype=np.float32),
                        np.array([0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
    a, b = np.empty_like(x), np.empty_like(x)
    marked(x, a)
    plain(x, b)
    assert '"prefer-vector-width"="512"' in next(iter(marked.inspect_llvm().values()))
    assert '"prefer-vector-width"' not in next(iter(plain.inspect_llvm().values()))
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    k, w = _jit.kernel(_gates), _jit.wide(_gates)          # hookgrad's two forms of one loop: two cache entries
    k(x, a)
    w(x, b)
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    assert k.compile().__qualname__ != w.compile().__qualname__
