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
        self.is_signed = not name.startswith("uint") and name != "bool"
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


# torch's "limited support" unsigned dtypes: tensors of them are made, copied, viewed, compared and converted;
# promotion with any other dtype but a floating one is refused (c10's promoteTypes), as are the kernels PyTorch
# lacks for them (see docs/differences.md). Not in ALL (no legacy tensor types, no storages).
uint16 = dtype("uint16", np.uint16, 1, 11, "UInt16Tensor")
uint32 = dtype("uint32", np.uint32, 1, 12, "UInt32Tensor")
uint64 = dtype("uint64", np.uint64, 1, 13, "UInt64Tensor")
BAREBONES_UNSIGNED = (uint16, uint32, uint64)
for _d in BAREBONES_UNSIGNED:
    _NP_TO_DT[_d.np] = _NAMES[_d.name] = _d


class _MlDtype(dtype):
    """A dtype NumPy lacks (torch.bfloat16, the float8 types): the ml_dtypes package (the ``distributed`` extra)
    supplies its array type, imported when an array of it is first needed (``.np``), so that ``import hookgrad``
    does not load it."""
    __slots__ = ("_ml",)

    def __init__(self, name, rank, legacy, signed=True):
        self.name, self._cat, self._rank, self._legacy, self._ml = name, 2, rank, legacy, None
        self.is_floating_point, self.is_complex, self.is_signed = True, False, signed
        self.itemsize = 2 if name == "bfloat16" else 1

    @property
    def np(self):
        return _ml_np(self) if self._ml is None else self._ml


def _ml_np(d):
    """ml_dtypes' type for ``d`` as a NumPy dtype (imported once; an array of it then maps back to ``d``)."""
    try:
        import ml_dtypes
    except ImportError:
        raise ModuleNotFoundError(f"hookgrad: torch.{d.name} needs the ml_dtypes package (NumPy has no {d.name}): "
                                  "pip install ml_dtypes (or hookgrad[distributed])", name="ml_dtypes") from None
    d._ml = np.dtype(getattr(ml_dtypes, d.name))
    _NP_TO_DT[d._ml] = d
    return d._ml


# float16 and bfloat16 share a rank: promoting one with the other gives float32 (_promote_pair)
bfloat16 = _MlDtype("bfloat16", 6, "BFloat16Tensor")
float8_e4m3fn = _MlDtype("float8_e4m3fn", 14, "Float8_e4m3fnTensor")
float8_e5m2 = _MlDtype("float8_e5m2", 14, "Float8_e5m2Tensor")
float8_e4m3fnuz = _MlDtype("float8_e4m3fnuz", 14, "Float8_e4m3fnuzTensor")
float8_e5m2fnuz = _MlDtype("float8_e5m2fnuz", 14, "Float8_e5m2fnuzTensor")
float8_e8m0fnu = _MlDtype("float8_e8m0fnu", 14, "Float8_e8m0fnuTensor", signed=False)
FLOAT8 = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
_ML = {d.name: d for d in (bfloat16,) + FLOAT8}
_NAMES.update(_ML)


class _NoKernels(dtype):  # noqa: E302
    """A dtype PyTorch names but has no CPU kernels for (bit-packed and sub-byte types: torch.bits8, torch.int4,
    torch.float4_e2m1fn_x2, ...): the dtype object exists (printing, comparing, promote_types' errors); making a
    tensor of it raises PyTorch's NotImplementedError for its copy kernel."""
    __slots__ = ()

    def __init__(self, name, cat, signed, itemsize, legacy):
        self.name, self._cat, self._rank, self._legacy = name, cat, 15, legacy + "Tensor"
        self.is_floating_point, self.is_complex, self.is_signed, self.itemsize = cat == 2, False, signed, itemsize

    @property
    def np(self):
        raise NotImplementedError(f'"copy_" not implemented for \'{self._legacy[:-6]}\' (hookgrad has no tensors '
                                  f"of torch.{self.name}: PyTorch has no CPU kernels for it either)")


BITS = tuple(_NoKernels(n, 1, False, size, n.capitalize()) for n, size in
             (("bits1x8", 1), ("bits2x4", 1), ("bits4x2", 1), ("bits8", 1), ("bits16", 2)))
SUB_BYTE = tuple(_NoKernels(f"{u}int{k}", 1, not u, 1, f"{u.upper()}Int{k}" if u else f"Int{k}")
                 for u in ("", "u") for k in range(1, 8))
float4_e2m1fn_x2 = _NoKernels("float4_e2m1fn_x2", 2, True, 1, "Float4_e2m1fn_x2")
# torch.complex32 (chalf): NumPy has no complex half, so hookgrad has no tensors of it (docs/differences.md);
# the dtype exists for comparisons such as kornia's `z.dtype == torch.complex32`
class _ComplexHalf(_NoKernels):
    __slots__ = ()

    @property
    def np(self):
        raise TypeError("hookgrad has no tensors of torch.complex32 (complex half): NumPy has no such type; use "
                        "torch.complex64")


complex32 = _ComplexHalf("complex32", 3, True, 4, "ComplexHalf")
complex32.is_complex = True
NO_KERNELS = BITS + SUB_BYTE + (float4_e2m1fn_x2, complex32)
_NAMES.update({d.name: d for d in NO_KERNELS})
_NAMES.update({"bool": bool_, "half": float16, "float": float32, "double": float64,
               "long": int64, "int": int32, "short": int16, "byte": uint8, "char": int8,
               "cfloat": complex64, "cdouble": complex128, "chalf": complex32})
# the float8 and unsigned dtypes that promote with nothing (the names c10's promotion errors print)
_NO_PROMOTION = frozenset(FLOAT8 + BAREBONES_UNSIGNED + NO_KERNELS)
_UNSIGNED = frozenset(BAREBONES_UNSIGNED + SUB_BYTE[7:])


def cast(x, npdt):
    """``x.astype(npdt)`` with PyTorch's conversion into the float8 types where ml_dtypes' differs: float8_e4m3fn
    saturates (finite overflow and infinities give +-448), float8_e5m2's NaN is 0x7F, float8_e8m0fnu keeps the
    exponent of ``|x|`` (0 gives 2**-127)."""
    name = getattr(npdt, "name", None) if isinstance(npdt, np.dtype) else None
    if name is None or not name.startswith("float8") or x.dtype == npdt:
        return x.astype(npdt)
    if x.dtype.kind != "f":
        x = x.astype(np.float32)
    if name == "float8_e4m3fn":
        return np.where(np.isnan(x), x, np.clip(x, -448.0, 448.0)).astype(npdt)
    if name == "float8_e5m2":
        out = x.astype(npdt)
        nan = np.isnan(x)
        if nan.any():
            bits = out.view(np.uint8)
            bits[nan] = np.where(np.signbit(x[nan]), 0xFF, 0x7F)
        return out
    if name == "float8_e8m0fnu":
        a = np.abs(x)
        out = a.astype(npdt)
        zero = a == 0
        if zero.any():
            out.view(np.uint8)[zero] = 0
        return out
    return x.astype(npdt)


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
        ml = _ML.get(np.dtype(npdt).name)
        if ml is not None and ml._ml is None:      # an ml_dtypes array before any tensor of its dtype
            return _NP_TO_DT[ml.np]
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
    if a in _NO_PROMOTION or b in _NO_PROMOTION:
        return _no_promotion(a, b)
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


def _no_promotion(a, b):
    """c10's promoteTypes for the dtypes that promote with nothing but themselves (a floating dtype wins over the
    unsigned ones)."""
    sa, sb = scalar_name(a), scalar_name(b)
    if a in BITS or b in BITS:
        raise RuntimeError(f"Promotion from {sa} and {sb} is unsupported.")
    if a in FLOAT8 or b in FLOAT8:
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote {sa} and {sb}")
    if a in _UNSIGNED or b in _UNSIGNED:
        if a.is_floating_point:
            return a
        if b.is_floating_point:
            return b
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{sa} and {sb}")
    # NOTE: PyTorch fails an internal assert for int1..int7 and float4_e2m1fn_x2 with another dtype
    raise RuntimeError(f"Promotion from {sa} and {sb} is unsupported.")


def scalar_name(d):
    """PyTorch's ScalarType name (``Float``, ``UInt16``, ``Float8_e4m3fn``)."""
    return d._legacy[:-len("Tensor")]


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
        if d in NO_KERNELS:
            raise TypeError("bad argument type for built-in operation")
        if isinstance(d, _MlDtype):
            npdt = d.np             # raises the clear error when ml_dtypes is missing
            import ml_dtypes
            f = ml_dtypes.finfo(npdt)
            # 10 ** -precision (ml_dtypes rounds it to bfloat16: 0.0100098); float8 has no decimal digit
            res = 0.01 if d is bfloat16 else 1.0
        else:
            f = np.finfo(d.np)
            res = 10.0 ** -f.precision      # PyTorch's 10 ** -digits10, a double (NumPy's is in the dtype)
        self.dtype = d.name
        self.bits = f.bits
        self.eps = 0.125 if d is float8_e5m2fnuz else float(f.eps)   # NOTE: PyTorch's value (ml_dtypes: 0.25)
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
        if d.is_floating_point or d in NO_KERNELS:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        i = np.iinfo(d.np) if d is not bool_ else None
        self.dtype = d.name
        self.bits = d.itemsize * 8
        self.min = int(i.min) if i is not None else 0
        self.max = int(i.max) if i is not None else 1

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


# reduced precision ----------------------------------------------------------

def is_floating(npdt):
    """Is a NumPy dtype floating: NumPy's own (kind "f") or one of ml_dtypes' (bfloat16, the float8 types, kind "V",
    which NumPy's ``issubdtype(.., np.floating)`` does not count)."""
    return npdt.kind == "f" or (npdt.kind == "V" and npdt.name in _ML)


def has_float_kernels(npdt):
    """Does PyTorch's CPU have the floating-point kernels (activations, norms, softmax, pooling ...) for this NumPy
    dtype: float16, float32, float64 and bfloat16, not the float8 types."""
    return npdt.kind == "f" or (npdt.kind == "V" and npdt.name == "bfloat16")


_F16 = np.dtype(np.float16)


def is_reduced(npdt):
    """float16, bfloat16 or a float8 type: the dtypes PyTorch's CPU kernels compute in float32 ("opmath")."""
    return npdt.kind == "V" or npdt == _F16


def _low(a):
    """The reduced-precision NumPy dtype (float16, bfloat16, float8) of an array or Tensor, else None."""
    dt = getattr(getattr(a, "_data", a), "dtype", None)
    return dt if isinstance(dt, np.dtype) and is_reduced(dt) else None


def opmath(forward, backward=False):
    """PyTorch's "opmath" rule for a bfloat16 or float16 input, in one place: its CPU kernels load the values into
    float32, compute there and round the result once. ``forward(self, *arrays)`` is wrapped so that such an array
    argument is widened to float32 and every float32 output is rounded back to its dtype; with ``backward`` the
    gradient arguments (arrays or Tensors) are widened, and the engine rounds the input gradients once (it casts
    each to its input's dtype). Otherwise it costs a dtype test per argument (``.char``: "e" is float16; ml_dtypes'
    types are kind "V")."""
    import functools

    if backward:
        @functools.wraps(forward)
        def wrapped(self, *args):
            for a in args:
                dt = getattr(getattr(a, "_data", a), "dtype", None)
                if dt is not None and (dt.__class__ is not dtype) and (dt.char == "e" or dt.kind == "V"):
                    return forward(self, *(_widen(a) if _low(a) is not None else a for a in args))
            return forward(self, *args)
        wrapped._opmath = True
        return wrapped

    @functools.wraps(forward)
    def wrapped(self, *args):
        for a in args:
            low = getattr(a, "dtype", None)
            if low is not None and (low.char == "e" or low.kind == "V"):
                return _opmath_forward(forward, self, args, low)
        return forward(self, *args)
    wrapped._opmath = True
    return wrapped


def _opmath_forward(forward, self, args, low):
    dt = self.__dict__.get("dt")
    if dt is not None:                      # binary ops' result dtype: bf16 given by the rounding below,
        if dt != low:                       # another (bf16 with f16: float32) computed as it is
            return forward(self, *args)
        self.dt = None
    self._low = low                         # for a forward that rounds an intermediate as PyTorch does
    out = forward(self, *(a.astype(np.float32) if getattr(a, "dtype", None) == low else a for a in args))
    if type(out) is tuple:
        return tuple(o.astype(low) if getattr(o, "dtype", None) == np.float32 else o for o in out)
    return out.astype(low) if getattr(out, "dtype", None) == np.float32 else out


def _widen(a):
    return a.float() if hasattr(a, "_data") else a.astype(np.float32)
