"""Tensor creation, random numbers (Generator, manual_seed) and in-place fills."""
import math
import numbers

import numpy as np

from . import _array, _jit, _parallel
from . import _dtype as D
from ._tensor import Tensor, Size, _check_device, _tname, _as_int, int_list, size_args  # noqa: F401  (parsers: _tensor)
from .autograd.grad_mode import _state


# ------------------------------------------------------------------------------- generators
# The compiled path of the engine: MT19937 as NumPy's legacy RandomState runs it (mt19937_gen, mt19937_next),
# on a copy of its state that is put back after the draw; pays for the state's round trip (~80 us) from
# _MT_FAST_MIN words on.
_MT_FAST_MIN = 1 << 16
_U = np.uint64


@_jit.kernel
def _mt_twist(key):
    """MT19937's regeneration of its 624-word state, in place (NumPy's mt19937_gen, its loops merged)."""
    upper, lower, matrix_a, one = _U(0x80000000), _U(0x7fffffff), _U(0x9908b0df), _U(1)
    for i in range(227):                 # N - M
        y = (_U(key[i]) & upper) | (_U(key[i + 1]) & lower)
        key[i] = _U(key[i + 397]) ^ (y >> one) ^ ((y & one) * matrix_a)
    for i in range(227, 623):
        y = (_U(key[i]) & upper) | (_U(key[i + 1]) & lower)
        key[i] = _U(key[i - 227]) ^ (y >> one) ^ ((y & one) * matrix_a)
    y = (_U(key[623]) & upper) | (_U(key[0]) & lower)
    key[623] = _U(key[396]) ^ (y >> one) ^ ((y & one) * matrix_a)


@_jit.kernel
def _mt_words(key, pos, out):
    """The engine's next ``out.size`` tempered outputs into ``out`` (uint32); ``pos[0]``: the state's position."""
    p = pos[0]
    i = 0
    n = out.size
    while i < n:
        if p >= 624:
            _mt_twist(key)
            p = 0
        m = min(624 - p, n - i)
        for j in range(m):
            y = _U(key[p + j])
            y ^= y >> _U(11)
            y ^= (y << _U(7)) & _U(0x9d2c5680)
            y ^= (y << _U(15)) & _U(0xefc60000)
            y ^= y >> _U(18)
            out[i + j] = y
        p += m
        i += m
    pos[0] = p


@_jit.kernel
def _u53_kernel(words, out):
    """uniform_real_distribution<double>: the low 53 bits of (words[2i] << 32 | words[2i+1]), times 2^-53."""
    scale = np.float64(2.0 ** -53)
    for i in range(out.size):
        hi = _U(words[2 * i]) & _U((1 << 21) - 1)
        out[i] = np.float64((hi << _U(32)) | _U(words[2 * i + 1])) * scale


@_jit.kernel
def _ubits_kernel(words, out, digits):
    """uniform_real_distribution<float / half>: the low ``digits`` bits of one word, times 2^-digits."""
    mask = (_U(1) << _U(digits)) - _U(1)
    scale = np.float64(1.0) / np.float64(_U(1) << _U(digits))
    for i in range(out.size):
        out[i] = np.float64(_U(words[i]) & mask) * scale


@_jit.kernel
def _box_muller16(u, out):
    """PyTorch's normal_fill_16 on each 16 uniforms (float64): r = sqrt(-2 log(1 - u[j])), theta = 2 pi u[j + 8];
    r cos(theta) at j, r sin(theta) at j + 8."""
    two_pi = 2.0 * np.pi
    for c in range(0, u.size - 15, 16):
        for j in range(8):
            r = np.sqrt(-2.0 * np.log(1.0 - u[c + j]))
            th = two_pi * u[c + j + 8]
            out[c + j] = r * np.cos(th)
            out[c + j + 8] = r * np.sin(th)


class Generator:
    """A random-number generator bit-compatible with PyTorch's CPU generator.

    PyTorch's CPU generator is an MT19937 (the same engine as NumPy's legacy RandomState), and its
    uniform, normal, randint and randperm transforms are reproduced here, so ``manual_seed(s)``
    followed by ``rand``/``randn``/``randint``/``randperm``/``uniform_``/``normal_`` (and hence the
    default initialisation of layers) gives PyTorch's numbers, and so do multinomial and exponential_.
    What remains on NumPy's PCG64 seeded from the same seed is listed in docs/differences.md.
    """

    def __init__(self, device="cpu"):
        self.device = device
        self.manual_seed(67280421310721)   # PyTorch's default CPU seed

    def manual_seed(self, seed):
        seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self._seed = seed
        self._mt = np.random.RandomState(seed & 0xFFFFFFFF)
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._normal_cache = None
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    # raw engine outputs, as PyTorch's generator->random() / random64()
    def _words(self, n):
        """The engine's next ``n`` 32-bit outputs (uint32): compiled for large ``n``, else NumPy's RandomState."""
        if n < _MT_FAST_MIN or not _jit.available():
            return self._mt.randint(0, 2 ** 32, size=n, dtype=np.uint32)
        st = self._mt.get_state(legacy=False)
        pos = np.array([st["state"]["pos"]], np.int64)
        out = np.empty(n, np.uint32)
        _mt_words(st["state"]["key"], pos, out)
        st["state"]["pos"] = int(pos[0])
        self._mt.set_state(st)
        return out

    def _u32(self, n):
        return self._words(n).astype(np.uint64)

    def _u64(self, n):
        r = self._u32(2 * n)
        return (r[0::2] << np.uint64(32)) | r[1::2]

    def _uniform01(self, n, npdt):
        """uniform_real_distribution: the low mantissa-digits bits of one draw, scaled (in float64)."""
        digits = 53 if npdt == np.float64 else 11 if npdt == np.float16 else 24
        if n >= _MT_FAST_MIN // 2 and _jit.available():
            words = self._words(2 * n if digits == 53 else n)
            out = np.empty(n)
            if digits == 53:
                _parallel.parallel_for(n, lambda lo, hi: _u53_kernel(words[2 * lo:2 * hi], out[lo:hi]), 1 << 17)
            else:
                _parallel.parallel_for(n, lambda lo, hi: _ubits_kernel(words[lo:hi], out[lo:hi], digits), 1 << 17)
            return out
        if digits == 53:
            return (self._u64(n) & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
        return (self._u32(n) & np.uint64((1 << digits) - 1)).astype(np.float64) * 2.0 ** -digits

    def _normal(self, n, npdt, mean=0.0, std=1.0):
        if n >= 16:
            # PyTorch's normal_fill: uniforms, then Box-Muller on 16-element chunks (j, j+8)
            def fill16(d):
                r = np.sqrt(-2.0 * np.log(1.0 - d[:, :8]))
                th = 2.0 * np.pi * d[:, 8:]
                return np.concatenate([r * np.cos(th), r * np.sin(th)], axis=1)
            u = self._uniform01(n, npdt).astype(npdt).astype(np.float64)
            m = n // 16 * 16
            out = np.empty(n)
            if _jit.available():
                _parallel.parallel_for(m // 16, lambda lo, hi: _box_muller16(u[16 * lo:16 * hi], out[16 * lo:16 * hi]),
                                       1 << 12)
            else:
                out[:m] = fill16(u[:m].reshape(-1, 16)).reshape(-1)
            if n % 16:
                out[n - 16:] = fill16(self._uniform01(16, npdt).astype(npdt).astype(np.float64).reshape(1, 16))
            return out * std + mean
        out = np.empty(n)
        for i in range(n):   # normal_distribution<double> with the generator's cached second sample
            if self._normal_cache is not None:
                out[i], self._normal_cache = self._normal_cache, None
                continue
            u1, u2 = self._uniform01(2, np.float64)
            r = np.sqrt(-2.0 * np.log(1.0 - u2))
            self._normal_cache = r * np.sin(2.0 * np.pi * u1)
            out[i] = r * np.cos(2.0 * np.pi * u1)
        return out * std + mean

    def _randint(self, low, high, n):
        rng = high - low
        draws = self._u32(n) if rng < 2 ** 32 else self._u64(n)
        return (draws % np.uint64(rng)).astype(np.int64) + low

    def _randperm(self, n):
        r = np.arange(n)
        if n > 1:
            zs = (self._u32(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64)
            for i, z in enumerate(zs.tolist()):
                j = z + i
                r[i], r[j] = r[j], r[i]
        return r

    def get_state(self):
        import pickle
        st = (self._mt.get_state(), self._rng.bit_generator.state, self._normal_cache, self._seed)
        return Tensor._make(np.frombuffer(pickle.dumps(st), dtype=np.uint8).copy())

    def set_state(self, state):
        import pickle
        mt, pcg, cache, seed = pickle.loads(state._data.tobytes())
        self._mt.set_state(mt)
        self._rng.bit_generator.state = pcg
        self._normal_cache = cache
        self._seed = seed
        return self

    def __repr__(self):
        return f"<torch._C.Generator object at {hex(id(self))}>"


default_generator = Generator()
default_generator.seed()   # like PyTorch 2.13, the default generator starts from a random seed


def manual_seed(seed):
    """Seed the default generator (and the cuda device's, as PyTorch); returns it, like torch.manual_seed."""
    if _cuda_gen:
        _cuda_gen[0].manual_seed(seed)
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def _no_more_kwargs(kw, fname):
    if kw:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kw))}'")


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def _gen(generator, device=None):
    if generator is not None:
        return generator
    if device is not None and str(device).startswith("cuda") or isinstance(device, int):
        return cuda_generator()
    return default_generator


_cuda_gen = []


def cuda_generator():
    """The generator of the cuda device's random numbers (``torch.cuda.default_generators[0]``): PyTorch's CPU
    algorithm, drawn on the host and copied to the device (not bit-equal to PyTorch's CUDA Philox)."""
    if not _cuda_gen:
        g = Generator("cuda")
        g.manual_seed(default_generator.initial_seed())
        _cuda_gen.append(g)
    return _cuda_gen[0]


def _rng(generator):
    return _gen(generator)._rng


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# ------------------------------------------------------------------------------ factories
def _size(size, fname="empty"):
    size = int_list(size, fname)
    for s in size:
        if s < 0:
            if fname == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return size


def _finish(data, dtype, requires_grad, device=None, xp=None):
    """The new tensor over ``data``, in array module ``xp`` (default: the default module; data drawn or
    computed on the host, as random numbers, is converted once here); a ``device`` given takes its module."""
    dm = _check_device(device)
    if dm is not None:
        xp = dm
    elif xp is None:
        xp = _array.default_module()
    if _array.array_module(data) is not xp:
        data = _array.asarray(data, xp)
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if data.dtype != dt.np:
            data = data.astype(dt.np)
    t = Tensor._make(data)
    if requires_grad:
        if data.dtype.kind not in "fcV":        # V: bfloat16
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    if _state.inference:
        t._inference = True
    return t


def _infer_dtype(data):
    """dtype of nested Python data, with PyTorch's rules (floats -> default dtype)."""
    if _array.is_array(data):
        return D.from_numpy_dtype(data.dtype)
    flat = []

    def walk(x):
        if isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        else:
            flat.append(x)
    walk(data)
    kinds = set()
    for x in flat:
        if isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, (np.bool_, np.integer, np.floating, np.complexfloating)):
            kinds.add(D.from_numpy_dtype(x.dtype))      # a NumPy scalar keeps its dtype, as in PyTorch
        elif isinstance(x, bool):
            kinds.add(D.bool_)
        elif isinstance(x, int):
            kinds.add(D.int64)
        elif isinstance(x, float):
            kinds.add(D.get_default_dtype())
        elif isinstance(x, complex):        # the default complex dtype (complex64 for float32)
            kinds.add(D._TO_COMPLEX.get(D.get_default_dtype(), D.complex64))
        elif isinstance(x, str):
            if x is data:
                raise TypeError("new(): invalid data type 'str'")
            raise ValueError("too many dimensions 'str'")
        else:
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")
    if not kinds:
        return D.get_default_dtype()
    res = None
    for k in kinds:
        res = k if res is None else D._promote_pair(res, k)
    return res


def _to_array(data):
    if isinstance(data, (list, tuple)):
        return np.array([_to_array(x) for x in data]) if data and isinstance(data[0], (list, tuple, Tensor)) \
            else np.array([x.item() if isinstance(x, Tensor) else x for x in data])
    if isinstance(data, Tensor):
        return _array.to_numpy(data._data)
    return _array.to_numpy(data) if _array.is_array(data) else np.asarray(data)    # host data, converted once


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Build a tensor by copying data (nested lists, numbers, arrays or tensors)."""
    if isinstance(data, Tensor):
        arr = data._data.copy()
        dt = D.to_dtype(dtype) if dtype is not None else data.dtype
        return _finish(arr, dt, requires_grad, device, data._xp)      # stays in the tensor's module
    else:
        dt = D.to_dtype(dtype) if dtype is not None else _infer_dtype(data)
        try:
            arr = _array.default_module().array(_to_array(data), dtype=dt.np) if dt not in D.FLOAT8 else \
                D.cast(_array.default_module().array(_to_array(data), dtype=np.float64), dt.np)
        except ValueError as e:
            if "inhomogeneous" in str(e) or "sequence" in str(e):
                raise ValueError(f"expected sequence of length {_first_len(data)} at dim 1 (got {_other_len(data)})") from None
            raise
    return _finish(arr, dt, requires_grad, device)


def _first_len(data):
    try:
        return len(data[0])
    except TypeError:
        return 0


def _other_len(data):
    try:
        lens = [len(x) for x in data]
        f = lens[0]
        return next(l for l in lens if l != f)
    except Exception:
        return "?"


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor):
        if dtype is None or D.to_dtype(dtype) is data.dtype:
            return data
        return data.to(dtype)
    if isinstance(data, np.ndarray):
        t = from_numpy(data)
        return t if dtype is None else t.to(dtype)
    if _array.is_array(data):       # another module's array: shared, in its own module
        D.from_numpy_dtype(data.dtype)
        t = Tensor._make(data)
        return t if dtype is None else t.to(dtype)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """torch.asarray: shares memory with ``obj`` (a tensor, an array, a storage, a buffer) unless ``copy=True``
    or a dtype conversion needs a copy (``copy=False`` then raises, as PyTorch). A storage is read as bytes
    (uint8), or as ``dtype`` reinterpreting them (how safetensors maps a file into tensors)."""
    from ._tensor import UntypedStorage, _bytes
    _check_device(device)
    if isinstance(obj, UntypedStorage):
        data = _bytes(obj._array)
        if getattr(obj, "dtype", None) is not None and dtype is None:
            dtype = obj.dtype
        if dtype is not None and D.to_dtype(dtype) is not D.uint8:
            data = data.view(D.to_dtype(dtype).np)
        t = Tensor._make(data.copy() if copy else data)
    elif isinstance(obj, (bytes, bytearray, memoryview)) and dtype is not None:
        t = frombuffer(bytearray(obj) if copy else obj, dtype=dtype)
    else:
        if isinstance(obj, Tensor):
            t = obj.detach() if requires_grad is False and not obj.requires_grad else obj
        else:
            t = as_tensor(obj, dtype=dtype)
        if dtype is not None and D.to_dtype(dtype) is not t.dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor from type {t.dtype} to {D.to_dtype(dtype)}.")
            t = t.to(dtype)
        elif copy:
            t = t.clone()
    if requires_grad:
        t = t.detach().requires_grad_(True) if t.grad_fn is None and not t.requires_grad else t
    return t


def from_numpy(ndarray):
    """A tensor sharing memory with the NumPy array."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype)
    # under another default module the array is converted (memory stays shared where the module can view it)
    xp = _array.default_module()
    return Tensor._make(ndarray if xp is np else xp.asarray(ndarray))


def _default(dtype):
    return D.to_dtype(dtype).np if dtype is not None else D.get_default_dtype().np


def zeros(*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    xp = _array.default_module()
    return _finish(xp.zeros(_size(size_args(args, size, "zeros"), "zeros"), _default(dtype)), None, requires_grad, device,
                   xp)


def ones(*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    xp = _array.default_module()
    return _finish(xp.ones(_size(size_args(args, size, "ones"), "ones"), _default(dtype)), None, requires_grad, device, xp)


def empty(*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    xp = _array.default_module()
    return _finish(xp.zeros(_size(size_args(args, size, "empty")), _default(dtype)), None, requires_grad, device, xp)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    return _full(size, fill_value, dtype, requires_grad, device, _array.default_module())


def _full(size, fill_value, dtype, requires_grad, device, xp):
    """full() in array module ``xp`` (full_like and new_full: the tensor's module)."""
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = D.bool_
        elif isinstance(fill_value, int):
            dtype = D.int64
        elif isinstance(fill_value, Tensor):
            dtype = fill_value.dtype
            fill_value = fill_value.item()
    if not isinstance(size, (tuple, list, Size)) and _as_int(size, True) is not None:
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {_tname(size)}")
    if not isinstance(fill_value, (numbers.Number, np.generic, Tensor)):
        raise TypeError(f"full(): argument 'fill_value' (position 2) must be Number, not {_tname(fill_value)}")
    return _finish(xp.full(_size((size,), "full"), fill_value, _default(dtype)), None, requires_grad, device, xp)


def _need_tensor(x, fname, argname="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not {_tname(x)}")


def _like(fn):
    def like(input, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False, memory_format=None):
        _need_tensor(input, fn.__name__ + "_like")
        return _in_module(fn(input._data.shape, dtype=dtype if dtype is not None else input.dtype, device=device,
                             requires_grad=requires_grad), input._xp, device)
    return like


def _in_module(t, xp, device=None):
    """A tensor just made (a leaf of no graph) moved to array module ``xp``: ``*_like`` follow their input
    (unless a device was given)."""
    if t._xp is not xp and device is None:
        t._data = xp.asarray(t._data)
    return t


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def _new_factory(fn, fname):
    """Tensor.new_zeros/new_ones/new_empty: fn with the tensor's dtype, errors named fname."""
    def new(self, *args, size=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
        xp = self._xp       # torch's new_* stay on self's device: here, in self's array module
        return _finish(getattr(xp, fn)(_size(size_args(args, size, fname), fname),
                                       _default(dtype if dtype is not None else self.dtype)),
                       None, requires_grad, device, xp)
    new.__name__ = fname
    return new


new_zeros = _new_factory("zeros", "new_zeros")
new_ones = _new_factory("ones", "new_ones")
new_empty = _new_factory("zeros", "new_empty")


def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not {_tname(size)}")
    return _full(int_list(size, "new_full", varargs=False), fill_value, dtype or self.dtype, requires_grad, None,
                 self._xp)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False,
              memory_format=None):
    _need_tensor(input, "full_like")
    return _full(input._data.shape, fill_value, dtype if dtype is not None else input.dtype, requires_grad, None,
                 input._xp)


def arange(start, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
           requires_grad=False):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = D.int64 if all(isinstance(v, int) for v in vals) else D.get_default_dtype()
    dt = D.to_dtype(dtype)
    n = int(math.ceil((end - start) / step))
    xp = _array.default_module()
    data = (start + xp.arange(n, dtype=np.float64) * step) if dt.is_floating_point else xp.arange(start, end, step)
    return _finish(data.astype(dt.np), None, requires_grad, device, xp)


def range_(start, end, step=1, *, dtype=None, requires_grad=False, device=None):
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    n = int(math.floor((end - start) / step)) + 1
    return _finish((start + np.arange(n) * step).astype(dt.np), None, requires_grad, device)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    if _as_int(steps, True) is None:
        raise TypeError(f"linspace() received an invalid combination of arguments - got ({_tname(start)}, {_tname(end)}, "
                        f"{_tname(steps)}), but expected one of:")
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    # PyTorch computes the second half from the end to keep it symmetric
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    idx = np.arange(steps, dtype=np.float64)
    half = steps // 2
    data = np.where(idx < half, start + step * idx, end - step * (steps - idx - 1))
    return _finish(data.astype(dt.np), None, requires_grad, device)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    t = linspace(start, end, steps, dtype=D.float64)
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _finish((base ** t._data).astype(dt.np), None, requires_grad, device)


def _int_arg(v, fname, argname, pos):
    r = _as_int(v, True)
    if r is None:
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be int, not {_tname(v)}")
    return r


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    n = _int_arg(n, "eye", "n", 1)
    m = n if m is None else _int_arg(m, "eye", "m", 2)
    for name, v in (("n", n), ("m", m)):
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    xp = _array.default_module()
    return _finish(xp.eye(n, m if m is not None else n, dtype=_default(dtype)), None, requires_grad, device, xp)


# ----------------------------------------------------------------------------------- random
def rand(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    dt = _default(dtype)
    shp = _size(size_args(args, size, "rand"), "rand")
    if dt.kind == "c":      # PyTorch: uniform real and imaginary parts (the real view, filled)
        rdt = np.dtype(dt.char.lower())
        u = _gen(generator, device)._uniform01(2 * _numel(shp), rdt).astype(rdt)
        return _finish(u.view(dt).reshape(shp), None, requires_grad, device)
    return _finish(_gen(generator, device)._uniform01(_numel(shp), dt).reshape(shp).astype(dt), None, requires_grad, device)


def randn(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    dt = _default(dtype)
    shp = _size(size_args(args, size, "randn"), "randn")
    if dt.kind == "c":      # PyTorch: the real view filled with normals of std 1/sqrt(2) (unit variance)
        rdt = np.dtype(dt.char.lower())
        z = _gen(generator, device)._normal(2 * _numel(shp), rdt, std=1.0 / np.sqrt(2.0)).astype(rdt)
        return _finish(z.view(dt).reshape(shp), None, requires_grad, device)
    return _finish(_gen(generator, device)._normal(_numel(shp), dt).reshape(shp).astype(dt), None, requires_grad, device)


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
            pin_memory=False, requires_grad=False):
    if high is None:
        low, high = 0, low
    elif size is None and isinstance(high, (tuple, list, Size)):    # randint(high, size)
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint() missing 1 required positional arguments: \"size\"")
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"randint() received an invalid combination of arguments - got ({_tname(low)}, {_tname(high)}, "
                        f"{_tname(size)}), but expected one of:")
    if size and _as_int(size[0], True) is None:
        raise TypeError(f"randint() received an invalid combination of arguments - got ({_tname(low)}, {_tname(high)}, "
                        f"{_tname(size)}), but expected one of:")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dt = D.to_dtype(dtype).np if dtype is not None else np.int64
    shp = _size((size,), "randint")
    return _finish(_gen(generator, device)._randint(low, high, _numel(shp)).reshape(shp).astype(dt), None, requires_grad, device)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    n = _int_arg(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = D.to_dtype(dtype).np if dtype is not None else np.int64
    return _finish(_gen(generator, device)._randperm(n).astype(dt), None, requires_grad, device)


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False,
              memory_format=None):
    return _in_module(rand(input._data.shape, dtype=dtype or input.dtype, generator=generator,
                           device=_like_device(input, device), requires_grad=requires_grad), input._xp, device)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False,
               memory_format=None):
    return _in_module(randn(input._data.shape, dtype=dtype or input.dtype, generator=generator,
                            device=_like_device(input, device), requires_grad=requires_grad), input._xp, device)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None, device=None, pin_memory=False,
                 requires_grad=False, memory_format=None):
    if high is None:
        low, high = 0, low
    return _in_module(randint(low, high, input._data.shape, generator=generator, dtype=dtype or input.dtype,
                              device=_like_device(input, device), requires_grad=requires_grad), input._xp, device)


def _like_device(input, device):
    """The device ``*_like`` draws for: the one given, else a device input's (its generator), else None."""
    if device is not None or type(input._data) is np.ndarray:
        return device
    d = input.device
    return None if d.type == "cpu" else d


def bernoulli(input, p=None, *, generator=None):
    """1 with probability p (or the input's values): PyTorch's CPU kernel, one 53-bit uniform each."""
    d = input._data
    if p is None:      # per-element probabilities: bernoulli_distribution<float>, a 24-bit uniform each
        u = _gen(generator)._uniform01(d.size, np.float32).reshape(d.shape)
        if type(d) is not np.ndarray:
            u = _array.asarray(u, d)            # drawn on the host: to the input's device
        return _sampled((u < d).astype(d.dtype), (input,), "BernoulliBackward0")
    u = _gen(generator)._uniform01(d.size, np.float64).reshape(d.shape)
    return _sampled((u < p).astype(d.dtype), (input,), None, "bernoulli")


def multinomial(input, num_samples, replacement=False, *, generator=None):
    d = input._data
    if not D.is_floating(d.dtype):
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype._legacy}")
    if d.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > d.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    p = d.astype(np.float64)
    if not np.isfinite(p).all() or (p < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (p.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement or num_samples == 1:
        # PyTorch: argmax (one sample) or topk of p / q with q ~ Exp(1), one exponential_ draw per entry
        q = (-np.log1p(-_gen(generator)._uniform01(d.size, np.float64))).astype(d.dtype).reshape(d.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = Tensor._make(d / q)
        if num_samples == 1:
            return keys.argmax(-1, keepdim=True)
        return keys.topk(num_samples).indices

    def one(row, raw):    # PyTorch's CPU kernel: a cumulative sum in the input dtype, one 53-bit uniform per draw
        cum = np.cumsum(_array.to_host(raw))          # (on the host: a device's probabilities are copied)
        cum = cum / cum[-1]
        cum[-1] = 1
        u = _gen(generator)._uniform01(num_samples, np.float64)
        return np.searchsorted(cum.astype(np.float64), u, side="left")
    xp = input._xp
    if p.ndim == 1:
        return Tensor._make(xp.asarray(one(p, d)).astype(np.int64))
    return Tensor._make(xp.stack([xp.asarray(one(r, raw)) for r, raw in zip(p, d)]).astype(np.int64))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False):
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        m = mean._data if isinstance(mean, Tensor) else mean
        s = std._data if isinstance(std, Tensor) else std
        shp = np.broadcast_shapes(np.shape(m), np.shape(s))
        ref = mean if isinstance(mean, Tensor) else std
        z = _gen(generator, _like_device(ref, None))._normal(_numel(shp), ref._data.dtype).reshape(shp)
        if type(ref._data) is not np.ndarray:
            z = _array.asarray(z, ref._data)        # drawn on the host: to the tensors' device
        kind = 3 if isinstance(mean, Tensor) and isinstance(std, Tensor) else 1 if isinstance(mean, Tensor) else 2
        return _sampled(ref._xp.asarray(m + s * z).astype(ref._data.dtype), (mean, std), f"NormalBackward{kind}")
    shp = _size((size,))
    dt = _default(dtype)
    return _finish(_gen(generator)._normal(_numel(shp), dt, mean, std).reshape(shp).astype(dt), None, requires_grad)


# ----------------------------------------------------------------- samples drawn from tensor parameters
# (the in-place fills fill_, zero_, normal_, uniform_, ..., copy_ are in-place ops: primitives/fill.py)
from .autograd.node import Node as _Node  # noqa: E402


class _Sampled(_Node, name="BernoulliBackward0"):
    """A sample drawn from tensor parameters (bernoulli(p), normal(mean, std)): it requires grad when they
    do, and its gradient to each is zeros, as PyTorch's; ``_v`` is the sample."""

    def forward(self, *params):
        return self._v

    def backward(self, g):
        z = Tensor._make(g._xp.zeros(g._data.shape, g._data.dtype))
        return z if len(self.next_functions) == 1 else (z,) * len(self.next_functions)


class _SampledNoGrad(_Sampled, name="NotImplemented"):
    def name(self):
        return "torch::autograd::NotImplemented"

    def backward(self, g):
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")


_SAMPLED = {n: type(n, (_Sampled,), {}, name=n) for n in ("NormalBackward1", "NormalBackward2", "NormalBackward3",
                                                              "PoissonBackward0")}
_SAMPLED["BernoulliBackward0"] = _Sampled


def _sampled(value, params, name, op=None):
    """``value`` (an array) as a Tensor recorded on the tensor ``params`` that require grad (else plain)."""
    ts = [t for t in params if isinstance(t, Tensor)]
    if _state.enabled and any(t.requires_grad for t in ts):
        if op is not None:
            return _SampledNoGrad.apply(*ts, _v=value, op=op)
        return _SAMPLED[name].apply(*ts, _v=value)
    return Tensor._make(value)


# ======================================================= more creation functions
import builtins  # noqa: E402

def _float_factory_dtype(dtype, fname):
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{fname} expects floating point dtypes, got: TensorOptions(dtype={_long_name(dt)}, "
                           "device=cpu, layout=Strided (default), requires_grad=false (default), pinned_memory=false, "
                           "memory_format=(nullopt))")
    return dt


def _long_name(dt):
    return {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}.get(dt.np.name, dt.np.name)


def _window(fname, length, periodic, dtype, requires_grad, device, formula):
    """A window of ``length`` samples (``periodic``: the first ``length`` of ``length + 1``), from
    ``formula(n, N)`` on float64 sample indices n of an N-point symmetric window."""
    _check_device(device)
    dt = _float_factory_dtype(dtype, fname)
    length = _int_arg(length, fname, "window_length", 1)
    if length < 0:
        raise RuntimeError(f"{fname} requires non-negative window_length, got window_length={length}")
    if length <= 1:
        return _finish(_array.default_module().ones(length, dt.np), None, requires_grad)
    N = length + 1 if periodic else length
    w = formula(np.arange(length, dtype=np.float64), N)
    return _finish(w.astype(dt.np), None, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    """The Hann window: 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad, device,
                   lambda n, N: 0.5 - 0.5 * np.cos(2 * np.pi * n / (N - 1)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """The Hamming window: alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, requires_grad, device,
                   lambda n, N: alpha - beta * np.cos(2 * np.pi * n / (N - 1)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """The Blackman window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, device,
                   lambda n, N: 0.42 - 0.5 * np.cos(2 * np.pi * n / (N - 1)) + 0.08 * np.cos(4 * np.pi * n / (N - 1)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """The Bartlett (triangular) window: 1 - |2n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, device,
                   lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """The Kaiser window: I0(beta sqrt(1 - ((n - (N-1)/2) / ((N-1)/2))^2)) / I0(beta)."""
    def f(n, N):
        a = (N - 1) / 2.0
        return np.i0(beta * np.sqrt(np.clip(1 - ((n - a) / a) ** 2, 0, None))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, device, f)


_RANGE_WARNING = ("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).")


def range_deprecated(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
          requires_grad=False):
    """Deprecated: values from start to end *inclusive* (default dtype float), with PyTorch's warning."""
    import warnings
    warnings.warn(_RANGE_WARNING, UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    r = range_(start, end, step, dtype=dtype, requires_grad=requires_grad, device=device)
    if out is not None:
        out.resize_(r.shape).copy_(r)
        return out
    return r


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """A 0-dim tensor holding the number s (default dtype float)."""
    if isinstance(s, Tensor):
        s = s.item()
    dt = _default(dtype)
    return _finish(_array.default_module().asarray(s).astype(dt), None, requires_grad, device)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """An (uninitialised: here zero) tensor with the given sizes and strides (elements)."""
    size = tuple(int_list((size,), "empty_strided", "size"))
    stride = tuple(int_list((stride,), "empty_strided", "stride"))
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    dt = _default(dtype)
    n = 0 if 0 in size else 1 + sum((a - 1) * s for a, s in zip(size, stride))
    store = np.zeros(max(n, 0), dt)
    isz = store.itemsize
    arr = np.lib.stride_tricks.as_strided(store, size, tuple(s * isz for s in stride))
    return _finish(arr, None, requires_grad, device)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, pin_memory=False,
                   requires_grad=False):
    """An (uninitialised: here zero) tensor of ``size`` whose memory is laid out in the dim order
    ``physical_layout`` (outermost first)."""
    size = tuple(int_list((size,), "empty_permuted", "size"))
    perm = tuple(int(p) for p in physical_layout)
    if sorted(perm) != list(builtins.range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(perm)}"
                           if len(perm) != len(size) else f"Dimension {perm} occurs twice in physical_layout")
    phys = np.zeros(tuple(size[p] for p in perm), _default(dtype))
    return _finish(phys.transpose(np.argsort(perm)), None, requires_grad, device)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the memory of a Python buffer (shared, as PyTorch: writes go to the buffer)."""
    dt = D.to_dtype(dtype)
    mv = memoryview(buffer)
    nbytes = mv.nbytes
    isz = dt.np.itemsize
    if nbytes <= 0:
        raise ValueError("both buffer length (0) and count (-1) must not be 0" if count == -1 else
                         f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if not 0 <= offset < nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({nbytes} bytes) minus 1")
    if count < 0 and (nbytes - offset) % isz:
        raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be a multiple "
                         f"of element size ({isz})")
    if count == 0:
        raise ValueError(f"both buffer length ({nbytes}) and count (0) must not be 0")
    if count > 0 and count * isz > nbytes - offset:
        raise ValueError(f"requested buffer length ({count} * {isz} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({nbytes} bytes)")
    if mv.readonly:
        import warnings
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to "
                      "a tensor. This type of warning will be suppressed for the rest of this program.",
                      UserWarning, stacklevel=2)
    arr = np.frombuffer(buffer, dtype=dt.np, count=count, offset=offset)
    return _finish(arr, None, requires_grad)


def _tri_indices(fname, row, col, offset, dtype, upper):
    dt = D.to_dtype(dtype) if dtype is not None else D.int64
    if dt.np not in (np.int64, np.int32):
        from ._errors import scalar_name
        raise NotImplementedError(f'"{fname}" not implemented for \'{scalar_name(dt.np)}\'')
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    mask = np.triu(np.ones((row, col), bool), offset) if upper else np.tril(np.ones((row, col), bool), offset)
    r, c = np.nonzero(mask)
    return Tensor._make(_array.default_module().asarray(np.stack([r, c]).astype(dt.np).reshape(2, -1)))


def tril_indices(row, col, offset=0, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """The (row, col) coordinates of the lower triangle of a row x col matrix (2 x N)."""
    _check_device(device)
    return _tri_indices("tril_indices", row, col, offset, dtype, False)


def triu_indices(row, col, offset=0, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """The (row, col) coordinates of the upper triangle of a row x col matrix (2 x N)."""
    _check_device(device)
    return _tri_indices("triu_indices", row, col, offset, dtype, True)


class _FillOut(_Node, name="FillBackward0"):
    """torch.fill(input, value): a new tensor of input's shape filled with value (gradient: zeros for input;
    a 0-dim tensor value gets the gradient's sum, FillBackward1)."""

    def forward(self, x, *value):
        v = value[0] if value else self._v
        xp = _array.array_module(x)
        return xp.full(x.shape, xp.asarray(v).astype(x.dtype, copy=False), x.dtype)

    def backward(self, g):
        z = Tensor._make(np.zeros_like(g._data))
        return (z, g.sum()) if len(self.next_functions) > 1 else z


class _FillOutT(_FillOut, name="FillBackward1"):
    pass


def fill(input, value):
    """A copy of input's shape and dtype filled with value (a number or a 0-dim tensor)."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value._data.ndim} "
                               "dimensions.")
        return _FillOutT.apply(input, value)
    return _FillOut.apply(input, _v=value)


from ._tensor import get_default_device, set_default_device  # noqa: E402,F401  (the default device lives there)


def result_type(tensor=None, other=None, *, scalar=None, scalar1=None, scalar2=None):
    """The dtype PyTorch's type promotion gives an arithmetic op on the two operands (tensors or numbers;
    PyTorch's overloads name them (tensor, other), (scalar, tensor) and (scalar1, scalar2))."""
    if scalar1 is not None or scalar2 is not None:
        tensor, other = scalar1, scalar2
    elif scalar is not None:
        tensor, other = scalar, tensor
    ts = [t for t in (tensor, other) if isinstance(t, Tensor)]
    ss = [s for s in (tensor, other) if not isinstance(s, Tensor)]
    return D.result_type_of(ts, ss)


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow from_ -> to in type promotion (no float -> integral,
    no non-bool -> bool)."""
    f, t = D.to_dtype(from_), D.to_dtype(to)
    if f.is_floating_point and not t.is_floating_point:
        return False
    if f.np != np.bool_ and t.np == np.bool_:
        return False
    return True


def is_nonzero(input):
    """The truth of a one-element tensor (PyTorch's errors for other sizes)."""
    n = input._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input._data.reshape(-1)[0])


def is_same_size(input, other):
    return input._data.shape == other._data.shape


def is_signed(input):
    return input._data.dtype.kind in "if"


def is_inference(input):
    """Is ``input`` an inference tensor (allocated in inference mode, or a view of one)? A view of a normal
    tensor made in inference mode is not one."""
    return input._inference


def is_distributed(input):
    """The legacy query: False for every local tensor, as in PyTorch."""
    return False




# ------------------------------------------------------------------------------ factories as ops
# Under op hooks (the profiler) a factory is one op, named as aten's, with the ops its aten kernel runs
# inside it (aten::randn = aten::empty + aten::normal_); hookgrad computes it in one step.
from .autograd.op_hooks import _op_hooks, composite_open as _composite_open, run_composite as _run_composite  # noqa: E402
import functools as _functools  # noqa: E402

_FACTORY_PARTS = {
    "randn": ("empty", "normal_"), "rand": ("empty", "uniform_"), "randint": ("empty", "random_"),
    "zeros": ("empty", "zero_"), "ones": ("empty", "fill_"), "full": ("empty", "fill_"), "empty": (),
    "arange": ("empty", "arange"), "eye": ("empty", "eye"), "linspace": ("empty", "linspace"),
    "logspace": ("empty", "logspace"), "randperm": ("empty", "randperm"),
    "zeros_like": ("empty_like", "zero_"), "ones_like": ("empty_like", "fill_"), "full_like": ("empty_like", "fill_"),
    "randn_like": ("empty_like", "normal_"), "rand_like": ("empty_like", "uniform_"), "empty_like": ("empty_strided",),
    "new_zeros": ("new_empty", "zero_"), "new_ones": ("new_empty", "fill_"), "new_full": ("new_empty", "fill_"),
    "new_empty": ("empty",), "tensor": (),
}
_ATEN_FACTORY = {"tensor": "lift_fresh"}     # torch.tensor's data becomes a tensor through aten::lift_fresh


def _as_op(name, parts, fn):
    @_functools.wraps(fn)
    def factory(*args, **kwargs):
        if _op_hooks and _composite_open():
            return _run_composite(name, fn, args, kwargs, parts)
        return fn(*args, **kwargs)
    return factory


for _name, _parts in _FACTORY_PARTS.items():
    globals()[_name] = _as_op(_ATEN_FACTORY.get(_name, _name), _parts, globals()[_name])
del _name, _parts
