"""Compiled kernels, when numba is installed (``pip install hookgrad[fast]``); NumPy otherwise.

An op that has a fused kernel writes it beside its forward as a plain Python loop over arrays, decorated
with ``@kernel``, and keeps its NumPy code as the fallback::

    @kernel
    def _gelu_kernel(x, out):                 # 1-D arrays in, written in place
        for i in range(x.size):
            ...

    def forward(self, x):
        if fast(x):
            return elementwise(_gelu_kernel, x)
        ...                                   # the NumPy path

Nothing here imports numba until a kernel first runs. A kernel is compiled on that first call for the
argument types seen (numba caches the machine code on disk beside the source, so later processes load
it), with the GIL released, so that ``_parallel`` can run chunks of one call on several cores. Kernels
may call other ``@kernel`` functions; those are compiled inline.

``fast(*arrays)`` says whether the compiled path applies: numba importable, not switched off (environment
``HOOKGRAD_JIT=0``, or ``disabled()`` in tests), and every array a NumPy ndarray of float32 (other dtypes: NumPy).
The kernels must give what the NumPy path gives, to the same closeness to PyTorch; the tests run both.
"""
import contextlib
import os
import threading
import types

import numpy as np

__all__ = ["kernel", "strict", "wide", "fast", "available", "disabled", "elementwise", "rows"]

_state = {"numba": None, "on": os.environ.get("HOOKGRAD_JIT", "1") != "0"}
_compile_lock = threading.RLock()      # a kernel compiles the kernels it calls
_FLOATS = (np.dtype(np.float32),)        # the kernels are written in float32
# IEEE semantics stay (no nnan / ninf: NaN and inf propagate as in NumPy); reassociation lets reductions
# vectorise, contraction allows FMA
_FASTMATH = {"contract", "reassoc"}


def available():
    """Whether numba can be imported (checked once) and the compiled path is on."""
    if not _state["on"]:
        return False
    if _state["numba"] is None:
        try:
            import numba
            _state["numba"] = numba
        except Exception:           # not installed, or broken: the NumPy path serves
            _state["numba"] = False
    return _state["numba"] is not False


def fast(*arrays):
    """Whether the compiled kernels apply to these arrays."""
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype not in _FLOATS:
            return False
    return available()


@contextlib.contextmanager
def disabled():
    """Inside: every op takes its NumPy path (the tests compare both paths with torch)."""
    was = _state["on"]
    _state["on"] = False
    try:
        yield
    finally:
        _state["on"] = was


class kernel:
    """A Python loop compiled by numba on first use (nogil, cached on disk)."""
    fastmath = _FASTMATH
    wide = False        # see ``wide``

    def __init__(self, fn):
        self.py = fn
        self.compiled = None
        self.__name__, self.__doc__ = fn.__name__, fn.__doc__

    def __call__(self, *args):
        c = self.compiled
        if c is None:
            c = self.compile()
        return c(*args)

    def compile(self):
        with _compile_lock:
            if self.compiled is None:
                numba = _state["numba"]
                g = dict(self.py.__globals__)
                for name in self.py.__code__.co_names:      # kernels it calls: their compiled form
                    v = g.get(name)
                    if isinstance(v, kernel):
                        g[name] = v.compile()
                fn = types.FunctionType(self.py.__code__, g, self.py.__name__, self.py.__defaults__,
                                        self.py.__closure__)
                # numba's disk cache checks only this function's own source file: the code of the kernels it
                # calls goes into the cached name, so that editing one of them (another file) compiles anew
                fn.__qualname__, fn.__module__ = self.py.__qualname__ + self._callees_tag(), self.py.__module__
                opts = {}
                pipeline = _wide_pipeline() if self.wide else None
                if pipeline is not None:        # (its own name in the cache: the code differs)
                    opts["pipeline_class"], fn.__qualname__ = pipeline, fn.__qualname__ + "_w512"
                self.compiled = numba.njit(nogil=True, cache=True, error_model="numpy",
                                           fastmath=self.fastmath, **opts)(fn)
            return self.compiled


    def _callees_tag(self, seen=None):
        """'' for a kernel that calls no other kernel; else a short hash of the called kernels' code."""
        import hashlib
        seen = set() if seen is None else seen
        h = hashlib.sha1()
        for name in self.py.__code__.co_names:
            v = self.py.__globals__.get(name)
            if isinstance(v, kernel) and name not in seen:
                seen.add(name)
                code = v.py.__code__
                h.update(code.co_code + repr(code.co_consts).encode() + repr(code.co_names).encode())
                h.update(v._callees_tag(seen).encode())
        return "" if not seen else "_" + h.hexdigest()[:10]


class wide(kernel):
    """A kernel whose loops may use 512-bit vectors. On CPUs with AVX-512, LLVM's cost model prefers 256-bit vectors
    (``prefer-256-bit``: 512-bit instructions lower the clock on older Xeons), which halves the throughput of
    loops that compute rather than stream (an exp per element: GELU, the LSTM's gates); PyTorch's CPU kernels use
    512-bit vectors there. The function gets LLVM's ``"prefer-vector-width"="512"`` attribute, through a numba
    pipeline whose lowering adds it (``_wide_pipeline``); the other kernels, and numba's setting for the
    user's own code, are left as they are. Where the pipeline cannot be built, a plain kernel. The same operations
    in the same order: elementwise loops give the same bits either way (a reduction under reassociation may add
    in another grouping). For long loops only: a 16-wide vector loop leaves a short row to its scalar tail."""
    wide = True


_WIDE = {}


def _wide_pipeline():
    """numba's nopython pipeline with a lowering that marks the compiled function ``"prefer-vector-width"="512"``;
    None if this numba lacks the parts (the kernel is then compiled as any other)."""
    if "p" not in _WIDE:
        _WIDE["p"] = None
        try:
            from numba.core import lowering
            from numba.core.compiler import CompilerBase, DefaultPassBuilder
            from numba.core.compiler_machinery import register_pass
            from numba.core.typed_passes import NativeLowering

            class _WideLower(lowering.Lower):
                def post_lower(self):
                    super().post_lower()
                    # (llvmlite's attribute set admits only its known names; a string attribute is written as is)
                    set.add(self.function.attributes, '"prefer-vector-width"="512"')

            @register_pass(mutates_CFG=True, analysis_only=False)
            class _WideLowering(NativeLowering):
                _name = "hookgrad_wide_lowering"

                @property
                def lowering_class(self):
                    return _WideLower

            class _WidePipeline(CompilerBase):
                def define_pipelines(self):
                    pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
                    pm.passes = [(_WideLowering if p is NativeLowering else p, d) for p, d in pm.passes]
                    pm.finalize()
                    return [pm]

            _WIDE["p"] = _WidePipeline
        except Exception:       # another numba: plain kernels
            _WIDE["p"] = None
    return _WIDE["p"]


class strict(kernel):
    """A kernel compiled without fast-math: every operation rounded in the order written (no reassociation, no
    fused multiply-add), for loops that must give another library's bits (``primitives/_reduce_order.py``).
    The kernels it calls should be ``strict`` too."""
    fastmath = False


def elementwise(k, *inputs, out=None, grain=1 << 16):
    """Run an elementwise kernel ``k(*flat_inputs, flat_out)`` over same-shaped arrays, in chunks on the
    pool. Inputs that are not C-contiguous are copied once. Returns ``out`` (new, of the first input's
    shape and dtype, unless given)."""
    from . import _parallel
    flat = [np.ascontiguousarray(a).reshape(-1) for a in inputs]
    if out is None:
        out = np.empty(inputs[0].shape, inputs[0].dtype)
    of = out.reshape(-1)
    _parallel.parallel_for(of.size, lambda lo, hi: k(*[f[lo:hi] for f in flat], of[lo:hi]), grain)
    return out


def rows(k, x, *extra, outs=(), grain_elems=1 << 16):
    """Run a row kernel ``k(x2d, *extra, *outs2d)`` over the rows of ``x`` viewed as (rows, last dim), in
    chunks of rows on the pool. ``outs`` are arrays whose first dims are ``x``'s rows (viewed the same way)."""
    from . import _parallel
    n = x.shape[-1] if x.ndim else 1
    x2 = np.ascontiguousarray(x).reshape(-1, n)
    o2 = [o.reshape(x2.shape[0], -1) for o in outs]
    grain = max(1, grain_elems // max(n, 1))
    _parallel.parallel_for(x2.shape[0], lambda lo, hi: k(x2[lo:hi], *extra, *[o[lo:hi] for o in o2]), grain)
    return outs
