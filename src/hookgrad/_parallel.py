"""How many threads hookgrad's CPU work uses, and the pool that spreads it over them.

One number, set by ``torch.set_num_threads(n)`` and read by ``torch.get_num_threads()``, governs all of it:

- NumPy's BLAS (OpenBLAS or MKL, found among the loaded libraries and set through its C API), for the
  products; OpenBLAS's idle workers are made to sleep after ~0.4 ms instead of spinning for ~0.1 s, so that they
  leave the cores to the pool between products (``_short_spin``);
- this module's pool, on which the ops run their batch-, channel- or chunk-parallel work: im2col and pooling
  per image, the compiled kernels (``_jit``) per range of elements or rows, the small products of a batched
  matmul per group. NumPy and the compiled kernels release the GIL, so the chunks really run at once.

The default is ``OMP_NUM_THREADS`` when set, else the number of cores this process may run on, as PyTorch's
is (NumPy's BLAS is set to it on the first ``set_num_threads``; OpenBLAS starts with its own count). ``parallel_for(n, fn)`` is
the one entry point: it calls ``fn(lo, hi)`` over chunks of ``range(n)`` on the pool and the calling
thread, or once over everything when the work is too small to share (``grain``), when one thread is set, or
from inside a pool task. After ``fork`` the child starts with a fresh pool (the parent's threads are gone).
"""
import ctypes
import os
import threading

import numpy as np

__all__ = ["get_num_threads", "set_num_threads", "parallel_for", "chunks", "tiles", "ufunc"]


def _default_threads():
    """OMP_NUM_THREADS or MKL_NUM_THREADS when set (PyTorch reads them too), else the cores this process
    may run on."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        v = os.environ.get(var, "").split(",")[0].strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_threads = _default_threads()


def get_num_threads():
    return _threads


def set_num_threads(n):
    """``torch.set_num_threads``: the threads of the pool and of NumPy's BLAS."""
    global _threads
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _threads = n
    _blas_set(n)


# ------------------------------------------------------------------------------------------- BLAS threads
_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "MKL_Set_Num_Threads", "mkl_set_num_threads")


def _loaded_blas():
    """The thread setters of the BLAS libraries loaded in this process (Linux: read from /proc/self/maps)."""
    import numpy  # noqa: F401  (loads NumPy's BLAS before the search)
    found, seen = [], set()
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if ".so" in line and "/" in line}
    except OSError:
        return found
    for path in sorted(paths):
        name = os.path.basename(path).lower()
        if ("openblas" not in name and "mkl_rt" not in name) or path in seen:
            continue
        seen.add(path)
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
        except OSError:
            continue
        for sym in _SETTERS:
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_int], None
                found.append(fn)
                break
        _short_spin(lib)
    return found


_SPIN = "20"    # log2 of the cycles an idle OpenBLAS worker spins before it sleeps: ~0.4 ms, not OpenBLAS's 2^28


def _short_spin(lib):
    """OpenBLAS's workers spin for 2^28 cycles (~0.1 s) after every threaded product before they sleep
    (THREAD_TIMEOUT). Each spinning worker takes a core from the pool's threads, which work in the gaps between
    products (im2col, normalisation, elementwise kernels): 20% of a core through a ResNet-18 step on 2 threads,
    ~100% through an LSTM or BERT step. Unless the user chose a timeout, it is set to 2^20 cycles, long enough to
    bridge the Python between back-to-back products (an MLP step), through OpenBLAS's own path for it: its
    environment is read again and its threads are stopped, to start again, with the new timeout, at the next
    threaded call (as after a fork). The process's environment is left as it was. Done at import, when no other
    thread should be inside BLAS (stopping the threads then would be unsafe)."""
    if any(v in os.environ for v in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")):
        return
    read, stop = getattr(lib, "openblas_read_env", None), getattr(lib, "blas_thread_shutdown_", None)
    now = getattr(lib, "openblas_thread_timeout", None)
    if read is None or stop is None or now is None or now() != 0:     # 0: OpenBLAS's default, not set yet
        return
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = _SPIN
    try:
        read()
    finally:
        del os.environ["OPENBLAS_THREAD_TIMEOUT"]
    stop()


_blas = _loaded_blas()      # the setters, found at import (while no product runs: see _short_spin)


def _blas_set(n):
    for fn in _blas:
        fn(n)


# ------------------------------------------------------------------------------------------------ the pool
class _Pool:
    """Worker threads that take batches from one queue and help run their chunks."""

    def __init__(self):
        import queue
        self.tasks = queue.SimpleQueue()
        self.workers = 0
        self.lock = threading.Lock()

    def grow(self, n):
        err = np.geterr()       # NumPy's error state is per thread: the workers take the library's (no warnings)
        with self.lock:
            while self.workers < n:
                threading.Thread(target=self._work, args=(err,), name=f"hookgrad-pool-{self.workers}",
                                 daemon=True).start()
                self.workers += 1

    def _work(self, err):
        _local.in_pool = True
        np.seterr(**err)
        while True:
            self.tasks.get().work()


class _Batch:
    """The chunks of one parallel_for. Every thread that works on it (the caller first, then the workers
    that the queue wakes) claims the next chunk until none is left, so the caller never waits for a worker
    that the OS has not scheduled yet; it waits only for chunks already running. The first error is kept
    and re-raised in the caller."""

    def __init__(self, fn, bounds):
        self.fn, self.bounds = fn, bounds
        self.next = 0
        self.left = len(bounds) - 1
        self.error = None
        self.lock = threading.Lock()
        self.done = threading.Event()

    def work(self):
        fn, bounds, lock = self.fn, self.bounds, self.lock
        while True:
            with lock:
                i = self.next
                if i >= len(bounds) - 1:
                    return
                self.next = i + 1
            try:
                fn(bounds[i], bounds[i + 1])
            except BaseException as e:      # carried to the caller, which raises it
                self.error = self.error or e
            with lock:
                self.left -= 1
                last = self.left == 0
            if last:
                self.done.set()


_local = threading.local()
_pool = None


def _reset_after_fork():
    global _pool
    _pool = None
    _local.in_pool = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


_SPLIT = 4      # chunks per thread: claimed dynamically, so a thread slowed down (by BLAS threads that still spin
                # after a product, by another process) does fewer of them and the caller seldom waits


def chunks(n, grain):
    """How many chunks ``parallel_for(n, ..., grain)`` makes: 1 when it would run ``fn`` once."""
    if _threads <= 1 or n < 2 * grain or getattr(_local, "in_pool", False):
        return 1
    return min(_SPLIT * _threads, n // grain)


def parallel_for(n, fn, grain=1 << 15):
    """``fn(lo, hi)`` over ``range(n)`` split into chunks of at least ``grain`` (up to 4 per thread), run by
    the calling thread and up to get_num_threads() - 1 pool threads; returns when all are done. ``fn`` must
    only write what its own chunk owns."""
    global _pool
    k = chunks(n, grain)
    if k == 1:
        fn(0, n)
        return
    helpers = min(_threads, k) - 1
    if _pool is None:
        _pool = _Pool()
    _pool.grow(helpers)
    batch = _Batch(fn, [n * i // k for i in range(k + 1)])
    for _ in range(helpers):
        _pool.tasks.put(batch)
    _local.in_pool = True               # the caller's share: nested parallel_for calls run inline
    try:
        batch.work()
    finally:
        _local.in_pool = False
    batch.done.wait()
    if batch.error is not None:
        raise batch.error


def tiles(k, fn, reduce=False):
    """``fn(i)`` for the ``k`` tiles of a tiled op (a convolution's images), spread on the pool with BLAS on one
    thread meanwhile: each thread runs its tiles' products itself, so that there is one set of threads at a
    time, never the pool's and BLAS's at once. Returns the results in tile order, or with ``reduce`` their sum
    (each chunk of tiles summed in order by the thread that ran it, then the chunks in order)."""
    res = [None] * k

    def run(lo, hi):
        acc = fn(lo)
        for i in range(lo + 1, hi):
            r = fn(i)
            if reduce:
                acc += r
            else:
                res[i] = r
        res[lo] = acc

    one = _threads > 1 and not getattr(_local, "in_pool", False)
    if one:
        _blas_set(1)
    try:
        parallel_for(k, run, max(1, k // _threads) if reduce else 1)
    finally:
        if one:
            _blas_set(_threads)
    if not reduce:
        return res
    parts = [r for r in res if r is not None]
    acc = parts[0]
    for r in parts[1:]:
        acc += r
    return acc


_UFUNC_GRAIN = 1 << 17      # elements of a chunk of a large elementwise op: ~50-100 us of streaming


def ufunc(f, *args, out=None):
    """``f(*args)`` for a NumPy ufunc, split over the pool when it is large: when every array argument is a
    C-contiguous NumPy ndarray of one shape (the others Python numbers or 0-d arrays), the chunks of the flat
    range run on the pool's threads (NumPy releases the GIL in its loops) into one new result; when they
    broadcast against one of the result's size, chunks of the result's rows as with ``out``. Otherwise f
    itself.

    With ``out`` (a C-contiguous ndarray, written in place, e.g. a bias added to a product): chunks of out's rows,
    each argument of out's shape sliced like them and one that broadcasts along the rows (fewer dims, or a first
    dim of 1) passed whole."""
    n = getattr(out, "size", 0) if out is not None else max(getattr(args[0], "size", 0), getattr(args[-1], "size", 0))
    if _threads <= 1 or n < 2 * _UFUNC_GRAIN:     # the common, small case: f itself
        return f(*args) if out is None else f(*args, out=out)
    import numpy as np
    if out is not None:
        rows = out.shape[0] if out.ndim else 0
        if type(out) is not np.ndarray or not out.flags.c_contiguous or not rows or \
                chunks(out.size, _UFUNC_GRAIN) == 1:
            return f(*args, out=out)
        cut = [type(a) is np.ndarray and a.ndim == out.ndim and a.shape[0] == rows and a.shape[0] > 1 for a in args]
        per = out.size // rows
        parallel_for(rows, lambda lo, hi: f(*[a[lo:hi] if c else a for a, c in zip(args, cut)], out=out[lo:hi]),
                     max(1, _UFUNC_GRAIN // max(1, per)))
        return out
    shape, big, same = None, None, True
    for a in args:
        if type(a) is np.ndarray and a.ndim:
            if shape is None:
                shape, big = a.shape, a
            elif a.shape != shape:
                same = False
                big = a if a.size > big.size else big
            if not a.flags.c_contiguous:
                return f(*args)
        elif not (isinstance(a, (int, float, np.generic)) or (type(a) is np.ndarray and a.ndim == 0)):
            return f(*args)
    if big is None or chunks(big.size, _UFUNC_GRAIN) == 1:
        return f(*args)
    flat = [a.reshape(-1) if type(a) is np.ndarray and a.ndim else a for a in args]

    def part(lo, hi, out=None):
        return f(*[a[lo:hi] if type(a) is np.ndarray and a.ndim else a for a in flat], out=out)

    if not same:        # broadcasting (a mask or a bias against a large array): into a new result, by rows
        try:
            full = np.broadcast_shapes(*[a.shape for a in args if type(a) is np.ndarray])
        except ValueError:
            return f(*args)         # (NumPy's own error)
        if full != shape and not any(type(a) is np.ndarray and a.shape == full for a in args):
            return f(*args)         # no argument is the result's size: nothing large to split
        return ufunc(f, *args, out=np.empty(full, part(0, 1).dtype))
    out = np.empty(shape, part(0, 1).dtype)         # the result's dtype: NumPy's, from one element
    of = out.reshape(-1)
    parallel_for(of.size, lambda lo, hi: part(lo, hi, of[lo:hi]), _UFUNC_GRAIN)
    return out
