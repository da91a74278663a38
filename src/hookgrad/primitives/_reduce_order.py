"""PyTorch's CPU accumulation order for float sums and 2-norms, in NumPy, so that results match to the bit.

A float sum depends on the order of its additions. NumPy sums pairwise in blocks of 8; PyTorch's CPU kernels
(``aten/src/ATen/native/cpu/SumKernel.cpp``, ``ReduceOpsKernel.cpp``, ``TensorIteratorReduce.cpp``) do this:

- TensorIterator orders the dims with the reduced ones first (fastest), each group by input stride, and
  merges dims that are contiguous with each other. Dim 0 and dim 1 of that order form the 2-d loop; the other
  dims are an outer loop, whose partial results are added into the output one after the other.
- sum (``cascade_sum``): a contiguous reduced row of n >= W elements (W = ``Vectorized<T>::size()``) is read
  as n // W vectors of W lanes; the vectors go through ``row_sum`` (4 interleaved accumulators, each a
  ``multi_row_sum``: a cascade of 4 levels that adds blocks of 16 (or 2**(ceil(log2 n) // 4)) values, then
  blocks of those sums, ...); the tail elements and then the W lanes are added one by one. A strided or
  short row goes through ``row_sum`` on scalars. When the kept dim next to the reduced one is contiguous
  (a reduction over an outer dim) the columns are summed side by side, each by ``multi_row_sum`` in groups
  of 4 vectors, the rest by ``row_sum``.
- vector_norm(p=2) over one contiguous innermost dim: W lane accumulators of x*x, folded left, then the tail
  ``acc += x * x``, which the compiler turns into 4-wide products added in order and then, for the last
  n % 4, fused multiply-adds; then sqrt. Any other layout adds ``acc + x * x`` (no fma) element by element in
  iteration order.
- mean is that sum divided by the number of elements (``sum / n``, as ``mean_out`` on CPU).
- With more than one thread (``torch.get_num_threads()``, which hookgrad's ``get_num_threads`` mirrors) and
  at least 32768 elements, a reduction to one value is split into one range per thread, whose sums are then
  added; a reduction to several values is split over an output dim (rounded to 128 bytes), which changes the
  grouping of columns in the outer-dim case. Both are replicated: the bits depend on the thread count, as
  PyTorch's do.

W: ``sum_stub`` and ``norm_stub`` are registered with ``REGISTER_DISPATCH``, which leaves the AVX512 slot
empty, so x86 PyTorch runs their AVX2 (or default) build: 32-byte vectors, 8 floats or 4 doubles, also where
``torch.backends.cpu.get_cpu_capability()`` says AVX512. On other architectures PyTorch's vector width may
differ (``_VEC_BYTES``).

Two implementations of each order, giving the same bits (the tests run both against torch): NumPy (reshapes
into the chunk/lane layout, sequential adds over the small axes: a loop over <= 32 slices, or
``np.add.accumulate``, which adds strictly in order), and loops compiled by numba when it is installed
(``_jit.strict``: no fast-math), close to NumPy's own sum in speed, sharing rows or columns out on
hookgrad's pool.
"""
import threading

import numpy as np

from .. import _jit, _parallel

__all__ = ["applies", "torch_sum", "torch_norm2"]

GRAIN = 32768           # at::internal::GRAIN_SIZE
_VEC_BYTES = 32         # Vectorized<T> of the AVX2 / default build (see the module docstring)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_POOL_GRAIN = 1 << 16   # elements per chunk when the compiled kernels share rows or columns out on hookgrad's pool


def applies(x):
    """Whether the torch-order path handles this array (a NumPy float32/float64 ndarray)."""
    return type(x) is np.ndarray and x.dtype in _FLOATS


# ------------------------------------------------------------------------------ the adding orders
def _ceil_log2(x):
    return 1 if x <= 2 else int(x - 1).bit_length()


def _fold(a, axis=0):
    """((a[0] + a[1]) + a[2]) + ... along ``axis`` (a running accumulator: ``np.add.accumulate`` adds strictly
    in order); 0 when the axis is empty.
    NOTE: starts from a[0], not 0 + a[0]: only the sign of an all-zero result differs, which the callers
    normalise once (``+ 0``), as PyTorch's output starts at +0."""
    axis = axis % a.ndim
    n = a.shape[axis]
    last = (slice(None),) * axis + (-1,)
    if n == 0:
        return np.zeros(a.shape[:axis] + a.shape[axis + 1:], a.dtype)
    if n == 1:
        return a[last].copy()
    if n <= 32 and a.size >= 64 * n:        # few steps over many accumulators: one vector add per step
        s = a[(slice(None),) * axis + (0,)].copy()
        for i in range(1, n):
            s += a[(slice(None),) * axis + (i,)]
        return s
    if a.size < n * n:                      # long runs over few accumulators: each run contiguous
        return np.add.accumulate(np.ascontiguousarray(np.moveaxis(a, axis, -1)), axis=-1)[..., -1]
    return np.add.accumulate(a, axis=axis)[last]


def _mrs(a):
    """``multi_row_sum`` along axis 0 of ``a`` (the other axes are independent accumulators)."""
    m, rest = a.shape[0], a.shape[1:]
    step = 1 << max(4, _ceil_log2(m) // 4)
    nb = m // step
    acc = _fold(a[nb * step:])                                    # level 0's accumulator after the last block
    if nb == 0:
        return acc
    b = _fold(a[:nb * step].reshape((nb, step) + rest), 1)        # level 0: blocks of ``step`` values
    levels = []
    for _ in range(2):                                            # levels 1 and 2: blocks of blocks
        n = b.shape[0] // step
        levels.append(_fold(b[n * step:]))                        # what is left in this level's accumulator
        if n == 0:
            break
        b = _fold(b[:n * step].reshape((n, step) + rest), 1)
    else:
        levels.append(_fold(b))                                   # level 3 accumulates everything above
    for lv in levels:                                             # (a level that never filled adds 0)
        acc = acc + lv
    return acc


def _row_sum(a):
    """``row_sum`` along axis 0: 4 interleaved ``multi_row_sum`` accumulators, the tail into the first."""
    m = a.shape[0]
    q = m // 4
    p = _mrs(a[:4 * q].reshape((q, 4) + a.shape[1:]))
    p0 = p[0]
    for i in range(4 * q, m):
        p0 = p0 + a[i]
    return ((p0 + p[1]) + p[2]) + p[3]


def _vec_inner(a, w):
    """``vectorized_inner_sum`` along axis 0 (a contiguous row of >= w elements): vectors of w lanes through
    ``row_sum``, then the tail elements, then the lanes, one by one."""
    n = a.shape[0]
    v = n // w
    lanes = _row_sum(a[:v * w].reshape((v, w) + a.shape[1:]))
    return _fold(np.concatenate([a[v * w:], lanes]))


# ------------------------------------------------------------------------------ TensorIterator's layout
def _ti_dims(x, dims):
    """TensorIterator's dims for reducing ``x`` over ``dims``: [size, input stride, reduced, axes] in its
    order (fastest first), coalesced; size-1 dims dropped. ``axes``: the array's axes, slowest first."""
    nd = x.ndim
    red = set(dims)
    out_stride, acc = {}, 1
    for d in range(nd - 1, -1, -1):         # the output is contiguous over the kept dims
        if d not in red and x.shape[d] > 1:
            out_stride[d] = acc
            acc *= x.shape[d]
    order = [d for d in range(nd - 1, -1, -1) if x.shape[d] > 1]

    def cmp(d0, d1):                         # reorder_dimensions' should_swap: output, then input
        o0, o1 = out_stride.get(d0, 0), out_stride.get(d1, 0)
        if (o0 == 0) != (o1 == 0):
            return 1 if o1 == 0 else -1
        if o0 and o1:
            if o0 != o1:
                return -1 if o0 < o1 else 1
            if x.shape[d0] > x.shape[d1]:
                return 1
        s0, s1 = x.strides[d0], x.strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 < s1:
            return -1
        if s0 > s1:
            return 1
        return 1 if x.shape[d0] > x.shape[d1] else 0

    for i in range(1, len(order)):           # insertion sort that tolerates ambiguous comparisons
        j1 = i
        for j0 in range(i - 1, -1, -1):
            c = cmp(order[j0], order[j1])
            if c > 0:
                order[j0], order[j1] = order[j1], order[j0]
                j1 = j0
            elif c < 0:
                break
    ti = []
    for d in order:                          # coalesce_dimensions
        size, stride, r = x.shape[d], x.strides[d], d in red
        if ti and r == ti[-1][2] and ti[-1][0] * ti[-1][1] == stride:
            ti[-1][0] *= size
            ti[-1][3].insert(0, d)
        else:
            ti.append([size, stride, r, [d]])
    return ti


def _small_rows(x, dims):
    """(rows, row length) when the compiled kernels can take ``x`` as it is: a C-contiguous array of fewer than
    GRAIN elements (one thread in PyTorch) reduced over its last dims (more than one element each); else None."""
    nd = x.ndim
    if not (0 < x.size < GRAIN and x.flags.c_contiguous and dims == tuple(range(nd - len(dims), nd))
            and _jit.available()):
        return None
    r = 1
    for d in dims:
        r *= x.shape[d]
    return (x.size // r, r) if r > 1 else None


def _layout(x, dims):
    """(``_ti_dims``, ``_view``) of reducing ``x`` over ``dims``; at once for the common case, a C-contiguous
    array reduced over its last dims (all of them, or the last ones)."""
    nd = x.ndim
    if x.flags.c_contiguous and dims == tuple(range(nd - len(dims), nd)):
        r = 1
        for d in dims:
            r *= x.shape[d]
        k = x.size // r
        if r > 1:
            ti = [[r, x.itemsize, True, list(dims)]]
            if k == 1:
                return ti, x.reshape(r)
            return ti + [[k, r * x.itemsize, False, list(range(nd - len(dims)))]], x.reshape(k, r)
    ti = _ti_dims(x, dims)
    return ti, (_view(x, ti) if ti else None)


def _view(x, ti):
    """``x`` as an array whose axes are the TensorIterator dims, slowest first (kept dims, then reduced)."""
    axes = [d for t in reversed(ti) for d in t[3]]
    rest = [d for d in range(x.ndim) if d not in axes]     # size-1 dims
    return x.transpose(rest + axes).reshape([t[0] for t in reversed(ti)])


# ------------------------------------------------------------------------------ sum
def torch_sum(x, dims):
    """``x`` summed over ``dims`` (a tuple of axes; all for a full reduction) in PyTorch's CPU order; the
    result has the reduced dims removed. float32 / float64 NumPy arrays (``applies``)."""
    out_shape = tuple(s for d, s in enumerate(x.shape) if d not in dims)
    kr = _small_rows(x, dims)
    if kr:                                  # (the common case at once: rows of a small contiguous array)
        w = _VEC_BYTES // x.itemsize
        out = np.empty(kr[0], x.dtype)
        _k_rows(x.reshape(kr), w, kr[1] >= w, *_scratch(x.dtype, 4 * w, 4 * w, w), out)
        return out.reshape(out_shape)
    if x.size == 0 or any(s < 0 for s in x.strides):
        x = np.ascontiguousarray(x)
    if x.size == 0:
        return np.zeros(out_shape, x.dtype)
    ti, v = _layout(x, dims)
    if not ti:                                                  # a single element
        return (x.reshape(()) + x.dtype.type(0)).reshape(out_shape)
    w = _VEC_BYTES // x.itemsize
    m = sum(t[2] for t in ti)
    threads = _parallel.get_num_threads()
    if x.size >= GRAIN and threads > 1 and m == len(ti):
        r = _two_pass(v, ti, w, threads)
    elif x.size >= GRAIN and threads > 1 and m == 1 and len(ti) > 1 and _split_dim(ti, threads) == 1:
        r = _split_columns(v, ti, w, threads)
    else:
        r = _serial(v, ti, w)
    return (r + x.dtype.type(0)).reshape(out_shape)


def _row_result(rows, seg_stride, isz, w):
    """The sum of each row of ``rows`` (reduced axis last) as one call of the 2-d loop computes it:
    vectorized_inner_sum for a contiguous row of >= w elements, else row_sum."""
    n = rows.shape[-1]
    vec = seg_stride == isz and n >= w
    if _jit.available():                    # (rows on the pool: each row's order is its own)
        flat = np.ascontiguousarray(rows).reshape(-1, n)
        out = np.empty(flat.shape[0], rows.dtype)
        _parallel.parallel_for(flat.shape[0], lambda lo, hi: _k_rows(
            flat[lo:hi], w, vec, *_scratch(rows.dtype, 4 * w, 4 * w, w), out[lo:hi]), max(1, _POOL_GRAIN // n))
        return out.reshape(rows.shape[:-1])
    a = np.moveaxis(rows, -1, 0)
    return _vec_inner(a, w) if vec else _row_sum(a)


_scratches = threading.local()


def _scratch(dtype, *sizes):
    """Work arrays for the kernels, kept per thread (the kernels write before they read): (4, n) for the first
    size, (n,) for the others."""
    key = (dtype.char,) + sizes
    cache = _scratches.__dict__
    got = cache.get(key)
    if got is None:
        if len(cache) > 64:
            cache.clear()
        got = cache[key] = [np.zeros((4, sizes[0]), dtype)] + [np.zeros(max(1, n), dtype) for n in sizes[1:]]
    return got


def _serial(v, ti, w):
    """The reduction of the view ``v`` (axes: kept dims, then reduced, slowest first) by serial_for_each."""
    isz = v.itemsize
    m = sum(t[2] for t in ti)
    if m == 0:
        return v.copy()
    s_r0 = ti[0][1]
    if m >= 2:                  # rows of dim 0 added one after the other into the output
        rows = _row_result(v, s_r0, isz, w)
        kept = rows.shape[:rows.ndim - (m - 1)]
        return _fold(rows.reshape(kept + (-1,)), -1)
    s_k0 = ti[1][1] if len(ti) > 1 else 0
    k0 = ti[1][0] if len(ti) > 1 else 1
    if s_r0 == isz and ti[0][0] >= w:       # vectorized_inner_sum
        return _row_result(v, s_r0, isz, w)
    if s_k0 == isz and k0 >= w:             # vectorized_outer_sum: columns side by side
        group = (k0 // (4 * w)) * 4 * w
    elif s_r0 < s_k0:                       # scalar_inner_sum
        return _row_result(v, s_r0, isz, w)
    else:                                   # scalar_outer_sum: 4 columns at a time
        group = (k0 // 4) * 4
    if group == 0:                          # (a column at a time: row_sum, as for a row)
        return _row_result(v, s_r0, isz, w)
    a = np.moveaxis(v, -1, -2)              # (..., reduced, k0)
    if _jit.available():                    # (columns on the pool: each column's order is its own)
        x3 = np.ascontiguousarray(a.reshape((-1,) + a.shape[-2:]))
        out = np.empty((x3.shape[0], k0), v.dtype)

        def cols(lo, hi):
            acc, col, tmp, lanes = _scratch(v.dtype, max(group, 4), x3.shape[1], 4, max(group, 1))
            _k_columns(x3, lo, hi, group, col, acc, tmp, lanes, out)
        _parallel.parallel_for(k0, cols, max(4 * w, _POOL_GRAIN // (x3.shape[0] * x3.shape[1])))
        return out.reshape(a.shape[:-2] + (k0,))
    a = np.moveaxis(a, -2, 0)               # (reduced, ..., k0)
    if group == k0:
        return _mrs(a)
    return np.concatenate([_mrs(a[..., :group]), _row_sum(a[..., group:])], axis=-1)


def _split_dim(ti, threads):
    """find_split_dim: the outermost kept dim with at least ``threads`` elements, else the largest."""
    best = len(ti) - 1
    for d in range(len(ti) - 1, -1, -1):
        if ti[d][2]:
            break
        if ti[d][0] >= threads:
            return d
        if ti[d][0] > ti[best][0]:
            best = d
    return best


def _omp_ranges(n, grain, threads):
    """at::parallel_for's chunks of range(n) under OpenMP."""
    if n <= grain or threads == 1:
        return [(0, n)]
    nt = min(threads, -(-n // grain)) if grain > 0 else threads
    chunk = -(-n // nt)
    return [(t * chunk, min(n, (t + 1) * chunk)) for t in range(nt) if t * chunk < n]


def _split_columns(v, ti, w, threads):
    """parallel_dim_reduction over TensorIterator dim 1 (a kept dim next to the one reduced dim): each thread
    reduces its columns, rounded to 128 bytes when they are contiguous."""
    k0 = ti[1][0]
    mult = 128 // v.itemsize if ti[1][1] == v.itemsize else 1
    parts = []
    for b, e in _omp_ranges(k0, 1, threads):
        b -= b % mult
        if e != k0:
            e -= e % mult
        if b < e:
            sub = [ti[0], [e - b] + ti[1][1:]] + ti[2:]
            parts.append(_serial(v[..., b:e, :], sub, w))
    return np.concatenate(parts, axis=-1)


def _two_pass(v, ti, w, threads):
    """two_pass_reduction: each thread sums its range of the elements (in TensorIterator order) into its
    slot, then the slots are summed as a 1-d tensor."""
    isz = v.itemsize
    r0 = ti[0][0]
    flat = v.reshape(-1, r0)
    slots = np.zeros(threads, v.dtype)
    ranges = _omp_ranges(v.size, GRAIN, threads)
    _parallel.parallel_for(len(ranges), lambda lo, hi: [_slot(flat, ti, w, b, e, slots, t)
                                                        for t, (b, e) in enumerate(ranges[lo:hi], lo)], 1)
    return _serial(slots, [[threads, isz, True, [0]]], w)


def _slot(flat, ti, w, b, e, slots, t):
    """One thread's share of two_pass_reduction: elements b:e (in TensorIterator order) into slots[t]."""
    isz, r0 = flat.itemsize, flat.shape[1]
    if len(ti) == 1:                        # one dim: one call of the 2-d loop over the range
        slots[t] = _row_result(flat[0, b:e], ti[0][1], isz, w)
    else:
        segs, pos = [], b
        while pos < e:                      # serial_for_each's 2-d steps: partial rows, then whole rows
            i, j = divmod(pos, r0)
            if j or e - pos < r0:
                end = min(e, (i + 1) * r0)
                segs.append(_row_result(flat[i, j:end - i * r0], ti[0][1], isz, w)[None])
            else:
                end = pos + (e - pos) // r0 * r0
                segs.append(_row_result(flat[i:end // r0], ti[0][1], isz, w))
            pos = end
        slots[t] = _fold(np.concatenate(segs))


# ------------------------------------------------------------------------------ 2-norm
def torch_norm2(x, dims):
    """The 2-norm of ``x`` over ``dims`` (all axes for a full reduction) in PyTorch's CPU order; the result has
    the reduced dims removed. float32 / float64 NumPy arrays (``applies``)."""
    out_shape = tuple(s for d, s in enumerate(x.shape) if d not in dims)
    kr = _small_rows(x, dims)
    if kr:
        out = np.empty(kr[0], x.dtype)
        _k_norm_rows(x.reshape(kr), _VEC_BYTES // x.itemsize, True, _scratch(x.dtype, 1, 8)[1], out)
        return np.sqrt(out).reshape(out_shape)
    if x.size == 0 or any(s < 0 for s in x.strides):
        x = np.ascontiguousarray(x)
    if x.size == 0:
        return np.zeros(out_shape, x.dtype)
    ti, v = _layout(x, dims)
    if not ti:
        return np.sqrt(x * x).reshape(out_shape)
    m = sum(t[2] for t in ti)
    if m == 0:
        return np.sqrt(v * v).reshape(out_shape)
    w = _VEC_BYTES // x.itemsize
    if m == 1 and ti[0][1] == x.itemsize:
        r = _sumsq(v, w, True)
    else:                               # binary_kernel_reduce(NormTwoOps): acc + x * x in iteration order
        n = 1
        for t in ti[:m]:
            n *= t[0]
        flat = v.reshape(-1, n)
        threads = _parallel.get_num_threads()
        if flat.shape[0] == 1 and n >= GRAIN and threads > 1:      # one range per thread, then combined
            r = _fold(np.concatenate([_sumsq(flat[:, b:e], w, False) for b, e in _omp_ranges(n, GRAIN, threads)]))
        else:
            r = _sumsq(flat, w, False)
    return np.sqrt(r + x.dtype.type(0)).reshape(out_shape)


def _sumsq(rows, w, lastdim):
    """The sum of squares along the last axis of ``rows``: norm's vectorised path when ``lastdim``, else in
    order."""
    if _jit.available():
        n = rows.shape[-1]
        flat = np.ascontiguousarray(rows).reshape(-1, n)
        out = np.empty(flat.shape[0], rows.dtype)
        _parallel.parallel_for(flat.shape[0], lambda lo, hi: _k_norm_rows(
            flat[lo:hi], w, lastdim, _scratch(rows.dtype, 1, w)[1], out[lo:hi]), max(1, _POOL_GRAIN // n))
        return out.reshape(rows.shape[:-1])
    if lastdim:
        return _norm_lastdim(np.moveaxis(rows, -1, 0), w)
    return _fold(rows * rows, -1)


def _norm_lastdim(a, w):
    """The sum of squares along axis 0 (contiguous) as norm_kernel_tensor_iterator_impl's vectorised path: w
    lane accumulators of x * x, folded left, then the tail ``acc += x * x``, which the compiler turns into
    4-wide products added in order, then fused multiply-adds for the last n % 4."""
    n = a.shape[0]
    v = n // w
    body = a[:v * w]
    lanes = _fold((body * body).reshape((v, w) + a.shape[1:]))
    acc = _fold(lanes)
    tail = a[v * w:]
    k = (len(tail) // 4) * 4
    for i in range(k):
        acc = acc + tail[i] * tail[i]
    for i in range(k, len(tail)):
        acc = _fma_sq(tail[i], acc)
    return acc


def _fma_sq(a, c):
    """round(a * a + c), as a fused multiply-add gives it. float32: the product is exact in float64 (the one
    double rounding differs from a true fma in rare halfway cases). float64: error-free transforms (Dekker's
    product, Knuth's sum), then one rounding."""
    if a.dtype == np.float32:
        return (a.astype(np.float64) * a.astype(np.float64) + c.astype(np.float64)).astype(np.float32)
    p = a * a
    t = a * 134217729.0                 # Veltkamp split: a == hi + lo, 26 bits each
    hi = t - (t - a)
    lo = a - hi
    e = ((hi * hi - p) + 2 * hi * lo) + lo * lo         # p + e == a * a exactly
    s = p + c
    z = s - p
    err = (p - (s - z)) + (c - z)                       # s + err == p + c exactly
    with np.errstate(invalid="ignore"):
        r = s + (err + e)
    return np.where(np.isfinite(s), r, s)


# ------------------------------------------------------------------------------ compiled kernels (numba)
# The same orders as the NumPy code above, as loops (``_jit.strict``: no fast-math, so no reassociation and
# no fused multiply-add that the loop does not write); the tests compare both paths with torch.
@_jit.strict
def _k_ceil_log2(x):
    if x <= 2:
        return 1
    n = 0
    v = x - 1
    while v > 0:
        v >>= 1
        n += 1
    return n


@_jit.strict
def _k_mrs(a, lo, hi, acc, out):
    """multi_row_sum along axis 0 of columns lo:hi of a (m, .), into out (hi - lo,); acc: scratch (4, >= hi - lo)."""
    m = a.shape[0]
    k = hi - lo
    p = _k_ceil_log2(m) // 4
    if p < 4:
        p = 4
    step = 1 << p
    mask = step - 1
    acc = np.zeros((4, k), a.dtype)         # (a fresh array: the compiler knows it aliases nothing)
    i = 0
    while i + step <= m:
        for j in range(step):
            for c in range(k):
                acc[0, c] += a[i, lo + c]
            i += 1
        for lv in range(1, 4):
            for c in range(k):
                acc[lv, c] += acc[lv - 1, c]
                acc[lv - 1, c] = 0
            if (i & (mask << (lv * p))) != 0:
                break
    while i < m:
        for c in range(k):
            acc[0, c] += a[i, lo + c]
        i += 1
    for lv in range(1, 4):
        for c in range(k):
            acc[0, c] += acc[lv, c]
    for c in range(k):
        out[c] = acc[0, c]


@_jit.strict
def _k_row_sum(a, acc, tmp, out):
    """row_sum along axis 0 of a C-contiguous a (m, k), into out (k,); scratch acc (4, >= 4k), tmp (>= 4k,)."""
    m, k = a.shape
    q = m // 4
    _k_mrs(a[:4 * q].reshape(q, 4 * k), 0, 4 * k, acc, tmp)
    for i in range(4 * q, m):
        for c in range(k):
            tmp[c] += a[i, c]
    for j in range(1, 4):
        for c in range(k):
            tmp[c] += tmp[j * k + c]
    for c in range(k):
        out[c] = tmp[c]


@_jit.strict
def _k_short_row(row, w, vec, t, out, r):
    """out[r] = the sum of a row shorter than one block of row_sum's cascade (fewer than 64 vectors of w with
    ``vec``, fewer than 64 elements without), as _k_rows's general path adds it, inline: its 4-vector groups summed
    column by column from zero into t (4 x w lanes; the cascade's other levels would add zeros only), the
    leftover vectors into the first w lanes, the four lane sets folded, then the tail and the lanes added to a
    zero (``vec``) or the folded lane taken (row_sum on scalars: vectors of one). The general path's calls and
    reshapes cost ~0.3-0.5 us a row: 2-3 ms for a global average pool over ResNet's last planes."""
    n = row.shape[0]
    kk = w if vec else 1
    v = n // kk
    q = v // 4
    blk = 4 * kk
    for c in range(blk):
        t[c] = 0
    for i in range(q):
        for c in range(blk):
            t[c] += row[i * blk + c]
    for i in range(4 * q, v):
        for c in range(kk):
            t[c] += row[i * kk + c]
    for j in range(1, 4):
        for c in range(kk):
            t[c] += t[j * kk + c]
    out[r] = 0
    for i in range(v * kk, n):
        out[r] += row[i]
    for c in range(kk):
        out[r] += t[c]


@_jit.strict
def _k_rows(x, w, vec, acc, tmp, lanes, out):
    """The sum of each row of a C-contiguous x (rows, n): vectorized_inner_sum when ``vec``, else row_sum."""
    rows, n = x.shape
    short = n < 64 * w if vec else n < 64
    for r in range(rows):
        row = x[r]
        if short:
            _k_short_row(row, w, vec, tmp, out, r)
            continue
        out[r] = 0
        if vec:
            v = n // w
            _k_row_sum(row[:v * w].reshape(v, w), acc, tmp, lanes)
            for i in range(v * w, n):
                out[r] += row[i]
            for i in range(w):
                out[r] += lanes[i]
        else:
            _k_row_sum(row.reshape(n, 1), acc, tmp, lanes)
            out[r] += lanes[0]


@_jit.strict
def _k_columns(x, lo, hi, group, col, acc, tmp, lanes, out):
    """The sums down columns lo:hi of x (b, m, k): multi_row_sum for the columns before ``group``, row_sum for
    the others (vectorized_outer_sum / scalar_outer_sum), into out (b, k)."""
    nb, m, k = x.shape
    g = min(hi, group)
    for b in range(nb):
        if g > lo:
            _k_mrs(x[b], lo, g, acc, lanes)
            for c in range(lo, g):
                out[b, c] = lanes[c - lo]
        for c in range(max(lo, group), hi):
            for i in range(m):
                col[i] = x[b, i, c]
            _k_row_sum(col.reshape(m, 1), acc, tmp, lanes)
            out[b, c] = lanes[0]


@_jit.strict
def _k_norm_rows(x, w, lastdim, lanes, out):
    """The sum of squares of each row of a C-contiguous x (rows, n): norm's vectorised last-dim path (w lanes,
    folded, then the tail: 4-wide products, then fused multiply-adds) when ``lastdim``, else in order."""
    rows, n = x.shape
    is32 = x.itemsize == 4
    for r in range(rows):
        row = x[r]
        if not lastdim:
            out[r] = 0
            for i in range(n):
                out[r] += row[i] * row[i]
            continue
        v = n // w
        for j in range(w):
            lanes[j] = 0
        for i in range(v):
            for j in range(w):
                lanes[j] += row[i * w + j] * row[i * w + j]
        out[r] = lanes[0]
        for j in range(1, w):
            out[r] += lanes[j]
        t = n - v * w
        k4 = (t // 4) * 4
        for i in range(v * w, v * w + k4):
            out[r] += row[i] * row[i]
        for i in range(v * w + k4, n):
            a = np.float64(row[i])
            c = np.float64(out[r])
            if is32:
                out[r] = a * a + c
            else:                           # (the error-free transforms of _fma_sq)
                p = a * a
                s = a * 134217729.0
                hi = s - (s - a)
                lo = a - hi
                e = ((hi * hi - p) + 2 * hi * lo) + lo * lo
                s = p + c
                z = s - p
                err = (p - (s - z)) + (c - z)
                out[r] = s + (err + e) if np.isfinite(s) else s
