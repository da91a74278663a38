"""dtypes as PyTorch names them, mapped onto NumPy, with PyTorch's promotion rules."""
import numpy as np


class dtype:
    """A tensor element type: ``hookgrad.float32`` prints as ``torch.float32``."""
    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "_rank", "_cat", "_legacy")

    def __init__(self, name, np_dtype, cat, rank, legacy):
        self.name = name
        self.np = np.dtype(np_dtype)
        self._cat = cat          # 0 bool, 1 integer, 2 floating, 3 complex
        self._rank = rank
        self.is_floating_point = cat == 2
        self.is_complex = cat == 3
        self.is_signed = name not in ("uint8", "bool")
        self.itemsize = self.np.itemsize
        self._legacy = legacy    # torch.FloatTensor style name used in hook error messages

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self):
        """The real dtype of a complex dtype (complex64 -> float32); any other dtype itself."""
        return _TO_REAL.get(self, self)

    def to_complex(self):
        """The complex dtype of a floating dtype (float32 -> complex64); a complex dtype itself."""
        if self._cat == 3:
            return self
        c = _TO_COMPLEX.get(self)
        if c is None:
            if self is float16:
                raise RuntimeError("hookgrad: complex32 (torch.chalf) is not supported: NumPy has no complex32")
            raise RuntimeError(f"Unknown Complex ScalarType for {_SCALAR_NAMES.get(self.name, self.name)}")
        return c


bool_ = dtype("bool", np.bool_, 0, 0, "BoolTensor")
uint8 = dtype("uint8", np.uint8, 1, 1, "ByteTensor")
int8 = dtype("int8", np.int8, 1, 2, "CharTensor")
int16 = dtype("int16", np.int16, 1, 3, "ShortTensor")
int32 = dtype("int32", np.int32, 1, 4, "IntTensor")
int64 = dtype("int64", np.int64, 1, 5, "LongTensor")
float16 = dtype("float16", np.float16, 2, 6, "HalfTensor")
float32 = dtype("float32", np.float32, 2, 7, "FloatTensor")
float64 = dtype("float64", np.float64, 2, 8, "DoubleTensor")

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
# complex dtypes (as far as torch.fft needs: see docs/differences.md); not in ALL, which lists the dtypes with
# legacy tensor types (torch.FloatTensor ...) and storages; complex32 (torch.chalf) is a non-goal
complex64 = dtype("complex64", np.complex64, 3, 9, "ComplexFloatTensor")
complex128 = dtype("complex128", np.complex128, 3, 10, "ComplexDoubleTensor")
COMPLEX = (complex64, complex128)
_TO_REAL = {complex64: float32, complex128: float64}
_TO_COMPLEX = {float32: complex64, float64: complex128}
_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long"}
# the complex dtypes as NumPy's and hookgrad's dtype objects: ``x.dtype in IS_COMPLEX`` holds for a complex
# array and for a complex Tensor alike (one set lookup: what a gradient formula checks in either space)
IS_COMPLEX = frozenset((complex64, complex128, complex64.np, complex128.np))
_NP_TO_DT = {d.np: d for d in ALL + COMPLEX}
_NAMES = {d.name: d for d in ALL + COMPLEX}


class _BFloat16(dtype):
    """torch.bfloat16. NumPy has no bfloat16: the ml_dtypes package (the ``distributed`` extra) supplies its array
    type, imported when an array of it is first needed (``.np``), so that ``import hookgrad`` does not load it."""
    __slots__ = ()

    def __init__(self):
        self.name, self._cat, self._rank, self._legacy = "bfloat16", 2, 6, "BFloat16Tensor"
        self.is_floating_point, self.is_complex, self.is_signed, self.itemsize = True, False, True, 2

    @property
    def np(self):
        return _bf16_np() if _BF16_NP is None else _BF16_NP


_BF16_NP = None


def _bf16_np():
    """ml_dtypes' bfloat16 as a NumPy dtype (imported once; an array of it then maps back to ``bfloat16``)."""
    global _BF16_NP
    try:
        import ml_dtypes
    except ImportError:
        raise ModuleNotFoundError("hookgrad: torch.bfloat16 needs the ml_dtypes package (NumPy has no bfloat16): "
                                  "pip install ml_dtypes (or hookgrad[distributed])", name="ml_dtypes") from None
    _BF16_NP = np.dtype(ml_dtypes.bfloat16)
    _NP_TO_DT[_BF16_NP] = bfloat16
    return _BF16_NP


# float16 and bfloat16 share a rank: promoting one with the other gives float32 (_promote_pair)
bfloat16 = _BFloat16()
_NAMES["bfloat16"] = bfloat16
_NAMES.update({"bool": bool_, "half": float16, "float": float32, "double": float64,
               "long": int64, "int": int32, "short": int16, "byte": uint8, "char": int8,
               "cfloat": complex64, "cdouble": complex128})


def _by_name(name):
    return _NAMES[name]


_default_float = float32


def get_default_dtype():
    return _default_float


def set_default_dtype(d):
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def from_numpy_dtype(npdt):
    try:
        return _NP_TO_DT[np.dtype(npdt)]
    except KeyError:
        if _BF16_NP is None and np.dtype(npdt).name == "bfloat16":     # an ml_dtypes array before any bf16 tensor
            return _NP_TO_DT[bfloat16.np]
        raise TypeError(f"can't convert np.ndarray of type numpy.{np.dtype(npdt)}. The only supported types are: "
                        "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, "
                        "and bool.") from None


def to_dtype(d):
    """Accept a hookgrad dtype, a NumPy dtype, a Python type or a name."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return complex128
    if isinstance(d, str):
        return _NAMES[d.replace("torch.", "")]
    return from_numpy_dtype(d)


# promotion ---------------------------------------------------------------

def _promote_pair(a, b):
    """torch.promote_types for two dtypes."""
    if a is b:
        return a
    if a._cat != b._cat:
        hi, lo = (a, b) if a._cat > b._cat else (b, a)
        if hi._cat == 3 and lo._cat == 2:       # complex with float: the wider of the two value types
            return _complex_of(hi, lo)
        return hi
    if a._cat == 1:
        # uint8 with a signed type: the smallest signed type holding both
        if a is uint8 or b is uint8:
            other = b if a is uint8 else a
            return int16 if other is int8 else other
    elif a._rank == b._rank:        # float16 with bfloat16
        return float32
    return a if a._rank > b._rank else b


def _complex_of(c, f):
    """The complex dtype holding complex ``c`` and floating ``f`` (complex64 with float64: complex128)."""
    return complex128 if c is complex128 or f is float64 else complex64


def _combine(higher, lower):
    """PyTorch's combine_categories, for a category that ``lower`` raises: complex over a floating ``higher``
    takes the float's width (float32 with a complex128 scalar: complex64)."""
    if lower._cat == 3 and higher is not None and higher._cat == 2:
        return _TO_COMPLEX.get(higher, complex64)      # float16: complex32 in PyTorch (not supported here)
    return lower


def promote_types(a, b):
    return _promote_pair(to_dtype(a), to_dtype(b))


def result_type_of(tensors, scalars=()):
    """PyTorch's result_type: dimensioned tensors, then zero-dim tensors, then Python scalars,
    each participating only when it raises the category."""
    dim_t = None
    zero_t = None
    for t in tensors:
        d = t.dtype
        if t.data.ndim:
            dim_t = d if dim_t is None else _promote_pair(dim_t, d)
        else:
            zero_t = d if zero_t is None else _promote_pair(zero_t, d)
    res = dim_t
    if zero_t is not None:
        if res is None or zero_t._cat > res._cat:
            res = zero_t if res is None else _combine(res, zero_t)
    for s in scalars:
        sd = scalar_dtype(s)
        if sd is complex128:        # a Python complex: the default complex dtype, as a wrapped number
            sd = _TO_COMPLEX[get_default_dtype()] if get_default_dtype() in _TO_COMPLEX else complex64
        if res is None:
            res = get_default_dtype() if sd is float64 else sd
        elif sd._cat > res._cat:
            res = get_default_dtype() if sd is float64 else int64 if sd is int64 else _combine(res, sd)
    return res


def scalar_dtype(s):
    if isinstance(s, bool):
        return bool_
    if isinstance(s, int):
        return int64
    if isinstance(s, float):
        return float64
    if isinstance(s, complex):
        return complex128
    if isinstance(s, np.generic):
        return from_numpy_dtype(s.dtype)
    raise TypeError(f"unsupported scalar type {type(s).__name__}")


class finfo:
    """torch.finfo: machine limits of a floating dtype (bits, eps, max, min, tiny, resolution)."""

    def __init__(self, type=None):
        d = to_dtype(type) if type is not None else get_default_dtype()
        d = d.to_real()             # a complex dtype: its value type's limits, as PyTorch
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        if d is bfloat16:
            npdt = d.np             # raises the clear error when ml_dtypes is missing
            import ml_dtypes
            f = ml_dtypes.finfo(npdt)
            res = 0.01          # 10 ** -precision (ml_dtypes rounds it to bfloat16: 0.0100098)
        else:
            f = np.finfo(d.np)
            res = f.resolution
        self.dtype = d.name
        self.bits = f.bits
        self.eps = float(f.eps)
        self.max = float(f.max)
        self.min = float(f.min)
        self.tiny = self.smallest_normal = float(f.tiny)
        self.resolution = float(res)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """torch.iinfo: limits of an integer dtype (bits, min, max)."""

    def __init__(self, type):
        d = to_dtype(type)
        if d.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        i = np.iinfo(d.np) if d is not bool_ else None
        self.dtype = d.name
        self.bits = d.itemsize * 8
        self.min = int(i.min) if i is not None else 0
        self.max = int(i.max) if i is not None else 1

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
