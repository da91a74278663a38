"""A test array module that behaves like CuPy where hookgrad can go wrong, on the CPU.

``ndarray`` wraps a NumPy array and is *not* an ndarray subclass, so NumPy does not take it silently:

- ``numpy.asarray(x)`` / ``x.__array__()`` raise TypeError; a host copy is explicit: ``x.get()`` or the
  module's ``asnumpy(x)`` (CuPy's names);
- ``x.flags`` has ``c_contiguous``, ``f_contiguous`` and ``owndata`` but no ``writeable``;
- ``bool(x)`` on more than one element raises (as NumPy); scalars come back as 0-d arrays (``x.sum()``,
  ``x[0]`` on a vector);
- a NumPy array and a cupylike array in one call raise TypeError (``x + numpy_array``,
  ``cupylike.add(x, numpy_array)``, ``numpy_array + x``); NumPy's functions on cupylike arrays alone are
  dispatched to this module (``__array_ufunc__`` / ``__array_function__``), as CuPy does.

The module (``xp``) exposes NumPy's namespace (``zeros``, ``exp``, ``matmul``, ``linalg``, ``fft``, ``random``,
the ufuncs with ``.at``/``.reduce``...), unwrapping arguments and wrapping results; ``ndarray``, ``asnumpy`` and
``get_array_module`` are there as in CuPy. ``HOOKGRAD_TEST_BACKEND=cupylike`` runs the suites with it as the
default array module; ``HOOKGRAD_FAKE_CUDA=cupylike`` makes it the array module of hookgrad's "cuda" device
instead (``hookgrad.cuda.is_available()`` is then True), so the device logic runs on a machine without a GPU.

``IMPLICIT`` counts the host reads CuPy would do behind the caller's back (``item``, ``tolist``, ``float(x)``,
``bool(x)``, printing); ``EXPLICIT`` the copies asked for (``get``/``asnumpy``).
"""
import operator
import types

import numpy as np

import hookgrad._array as _array

IMPLICIT = [0]
EXPLICIT = [0]


def _mixed(x):
    raise TypeError(f"Unsupported type {type(x)}")


def _un(x):
    """An argument as NumPy sees it: cupylike arrays unwrapped; a NumPy array refused (two modules in one call)."""
    t = type(x)
    if t is ndarray:
        return x._a
    if t is tuple or t is list:
        return t(_un(v) for v in x)
    if isinstance(x, np.ndarray):       # (subclasses too: the tests' XArray)
        _mixed(x)
    return x


def _un_index(x):
    """An index or value for [] (CuPy takes host arrays there and copies them)."""
    t = type(x)
    if t is ndarray:
        return x._a
    if t is tuple or t is list:
        return t(_un_index(v) for v in x)
    return x


class _Writable:
    def __init__(self, a, owner):
        i = dict(a.__array_interface__)
        i["data"] = (i["data"][0], False)
        self.__array_interface__, self.owner = i, owner


def _writable(r):
    """CuPy has no read-only arrays: NumPy's read-only views of writable memory (broadcast_to, expand) are
    made writable, as CuPy's are."""
    if r.flags.writeable:
        return r
    b = r.base
    while isinstance(b, np.ndarray) and not b.flags.writeable:
        b = b.base
    if not isinstance(b, np.ndarray):
        return r            # truly read-only memory (a bytes buffer): left as it is
    return np.asarray(_Writable(r, b))


def _wrap(r):
    t = type(r)
    if t is np.ndarray:
        return ndarray(r if r.flags.writeable else _writable(r))
    if isinstance(r, np.generic):           # CuPy gives 0-d arrays, never NumPy scalars
        return ndarray(np.asarray(r))
    if t is tuple or t is list:
        return t(_wrap(v) for v in r)
    if hasattr(r, "_fields") and isinstance(r, tuple):      # named tuples (linalg results)
        return t(*(_wrap(v) for v in r))
    return r


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, f):
        self.c_contiguous = f.c_contiguous
        self.f_contiguous = f.f_contiguous
        self.owndata = f.owndata

    def __getitem__(self, k):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "OWNDATA": "owndata"}[k])


class _Memory:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


def _binop(name):
    f = getattr(operator, name)

    def op(self, other):
        return _wrap(f(self._a, _un(other)))
    op.__name__ = f"__{name.strip('_')}__"
    return op


def _rbinop(name):
    f = getattr(operator, name)

    def op(self, other):
        return _wrap(f(_un(other), self._a))
    return op


def _ibinop(name):
    f = getattr(operator, name)

    def op(self, other):
        f(self._a, _un(other))
        return self
    return op


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _view_of(src, r):
    """Results made from ``src``: a view of its memory gets ``base`` = ``src``'s base array (CuPy keeps the
    one base object, so ``y.base is x`` for ``y = x[1:]``)."""
    if type(r) is ndarray:
        if r._a.base is not None and _root(r._a) is _root(src._a):
            r._b = src._b if src._b is not None else src
    elif type(r) is tuple or type(r) is list:
        for v in r:
            _view_of(src, v)
    return r


class ndarray:
    """An array of the cupylike module: a NumPy array inside, NumPy's methods outside, no implicit host copy."""
    __slots__ = ("_a", "_b", "__weakref__")
    __array_priority__ = 100

    def __init__(self, a):
        self._a = a
        self._b = None

    # ---- attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: _view_of(self, ndarray(self._a.T)))
    mT = property(lambda self: _view_of(self, ndarray(self._a.mT)))
    flags = property(lambda self: _Flags(self._a.flags))
    data = property(lambda self: _Memory(self._a.__array_interface__["data"][0]))
    device = property(lambda self: "fake-device:0")

    @property
    def base(self):
        return self._b

    @property
    def real(self):
        return _view_of(self, ndarray(self._a.real))

    @real.setter
    def real(self, v):
        self._a.real = _un(v)

    @property
    def imag(self):
        return _view_of(self, ndarray(self._a.imag))

    @imag.setter
    def imag(self, v):
        self._a.imag = _un(v)

    # ---- host copies: explicit, or implicit and counted
    def get(self, stream=None, order="C", out=None):
        EXPLICIT[0] += 1
        return self._a.copy(order=order)

    def item(self, *args):
        IMPLICIT[0] += 1
        return self._a.item(*args)

    def tolist(self):
        IMPLICIT[0] += 1
        return self._a.tolist()

    def __bool__(self):
        IMPLICIT[0] += 1
        return bool(self._a)

    def __float__(self):
        IMPLICIT[0] += 1
        return float(self._a)

    def __int__(self):
        IMPLICIT[0] += 1
        return int(self._a)

    def __complex__(self):
        IMPLICIT[0] += 1
        return complex(self._a)

    def __repr__(self):
        IMPLICIT[0] += 1
        return repr(self._a)

    def __str__(self):
        IMPLICIT[0] += 1
        return str(self._a)

    def __format__(self, spec):
        IMPLICIT[0] += 1
        return format(self._a.item() if self._a.ndim == 0 else self._a, spec)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
                        "NumPy array explicitly.")

    # ---- NumPy's functions on cupylike arrays alone run here; mixed with NumPy arrays they raise
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = _un(kwargs["out"])
        try:
            args = _un(inputs)
        except TypeError:
            return NotImplemented       # NumPy then raises TypeError, as with CuPy
        return _wrap(getattr(ufunc, method)(*args, **kwargs))

    def __array_function__(self, func, types_, args, kwargs):
        if any(issubclass(t, np.ndarray) for t in types_):
            return NotImplemented
        return _wrap(func(*_un(args), **{k: _un(v) for k, v in kwargs.items()}))

    # ---- Python protocol
    __hash__ = None

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (ndarray(np.asarray(r)) for r in self._a)

    def __getitem__(self, k):
        return _view_of(self, _wrap(self._a[_un_index(k)]))

    def __setitem__(self, k, v):
        self._a[_un_index(k)] = _un_index(v)

    def __copy__(self):
        return ndarray(self._a.copy())

    def __deepcopy__(self, memo):
        return ndarray(self._a.copy())

    def __reduce__(self):
        return (_rebuild, (self._a,))

    def __neg__(self):
        return ndarray(-self._a)

    def __pos__(self):
        return ndarray(+self._a)

    def __abs__(self):
        return _wrap(abs(self._a))

    def __invert__(self):
        return _wrap(~self._a)

    def __matmul__(self, other):
        return _wrap(self._a @ _un(other))

    def __rmatmul__(self, other):
        return _wrap(_un(other) @ self._a)

    def __dlpack__(self, *args, **kwargs):
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()

    # ---- every other method: NumPy's, on the array inside
    def __getattr__(self, name):
        if name in _NOT_CUPY or name.startswith("__"):
            raise AttributeError(f"'cupylike.ndarray' object has no attribute '{name}'")
        f = getattr(self._a, name)
        if not callable(f):
            return _wrap(f)

        def method(*args, **kwargs):
            return _view_of(self, _wrap(f(*_un(args), **{k: _un(v) for k, v in kwargs.items()})))
        method.__name__ = name
        return method


# NumPy's ndarray has these; CuPy's has not (host memory, flags, in-place resizing)
_NOT_CUPY = {"setflags", "ctypes", "resize", "itemset", "byteswap", "newbyteorder", "tofile", "getfield", "setfield"}

for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor", "lshift", "rshift",
           "lt", "le", "eq", "ne", "gt", "ge"):
    _dn = _n.strip("_")
    setattr(ndarray, f"__{_dn}__", _binop(_n))
    if _n not in ("lt", "le", "eq", "ne", "gt", "ge"):
        setattr(ndarray, f"__r{_dn}__", _rbinop(_n))
        setattr(ndarray, f"__i{_dn}__", _ibinop("i" + _n.rstrip("_")))
ndarray.__divmod__ = lambda self, o: _wrap(divmod(self._a, _un(o)))


def _rebuild(a):
    return ndarray(a)


class _Ufunc:
    """A NumPy ufunc on cupylike arrays (call, ``reduce``, ``accumulate``, ``outer``, ``at``, ``reduceat``)."""

    def __init__(self, uf):
        self._uf = uf
        self.__name__ = uf.__name__
        self.nin, self.nout, self.nargs, self.identity = uf.nin, uf.nout, uf.nargs, uf.identity

    def __call__(self, *args, **kwargs):
        return _wrap(self._uf(*_un(args), **{k: _un(v) for k, v in kwargs.items()}))

    def __getattr__(self, name):
        f = getattr(self._uf, name)
        if not callable(f):
            return f

        def method(*args, **kwargs):
            return _wrap(f(*_un(args), **{k: _un(v) for k, v in kwargs.items()}))
        return method

    def __repr__(self):
        return f"<ufunc '{self.__name__}' (cupylike)>"


def _function(f):
    def call(*args, **kwargs):
        r = _wrap(f(*_un(args), **{k: _un(v) for k, v in kwargs.items()}))
        return _view_of(args[0], r) if args and type(args[0]) is ndarray else r
    call.__name__ = getattr(f, "__name__", "function")
    call.__wrapped__ = f
    return call


def _from_host(f):
    """``asarray``/``array``: a host array (or list, scalar) is copied to the device."""
    def make(*args, **kwargs):
        return _wrap(f(*_un_index(args), **{k: _un(v) for k, v in kwargs.items()}))
    make.__name__ = f.__name__
    return make


_FROM_HOST = {"asarray", "array", "asanyarray", "ascontiguousarray"}
_PLAIN = (type, np.dtype, int, float, complex, str, bool, type(None))


class _Module(types.ModuleType):
    """NumPy's namespace (or one of its submodules) over cupylike arrays."""

    def __init__(self, name, np_module):
        super().__init__(name)
        self._np = np_module

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._np, name)
        if isinstance(value, np.ufunc):
            value = _Ufunc(value)
        elif isinstance(value, types.ModuleType):
            value = _Module(f"{self.__name__}.{name}", value)
        elif isinstance(value, _PLAIN) or not callable(value):
            pass
        elif name in _FROM_HOST and self._np is np:
            value = _from_host(value)
        elif isinstance(value, type):
            pass
        else:
            value = _function(value)
        setattr(self, name, value)
        return value


xp = _Module("cupylike", np)
xp.ndarray = ndarray
xp.float32, xp.float64, xp.dtype, xp.generic = np.float32, np.float64, np.dtype, np.generic   # types stay NumPy's


def asnumpy(a, stream=None, order="C", out=None):
    """A host (NumPy) copy of ``a``, as ``cupy.asnumpy``."""
    if type(a) is ndarray:
        return a.get(order=order)
    return np.asarray(a, order=order)


def get_array_module(*args):
    for a in args:
        if type(a) is ndarray:
            return xp
    return np


class _Random(_Module):
    """cupy.random: NumPy's legacy functions on a generator of this module's own (seeded by ``seed``)."""

    def __init__(self):
        super().__init__("cupylike.random", np.random)
        self._rs = np.random.RandomState(0)

    def seed(self, seed=None):
        self._rs = np.random.RandomState(seed)

    def __getattr__(self, name):
        f = getattr(self._rs, name, None)
        if f is None or name.startswith("_"):
            return super().__getattr__(name)
        return _function(f)


xp.asnumpy = asnumpy
xp.get_array_module = get_array_module
xp.random = _Random()
_array.register(ndarray, xp)


def use():
    """Make this module the default array module (new tensors hold cupylike arrays)."""
    return _array.set_default_module(xp)


def use_as_cuda():
    """Make this module the array module of hookgrad's "cuda" device (a GPU stand-in, for the device logic)."""
    _array.register_device("cuda", xp)
