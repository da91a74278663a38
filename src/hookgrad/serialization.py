"""hookgrad.save / hookgrad.load in PyTorch's own checkpoint format, and safetensors files.

A checkpoint is a zip archive (entries stored uncompressed) under one top-level folder:
``<name>/data.pkl`` is a protocol-2 pickle in which each storage is a persistent id
``('storage', torch.<Type>Storage, key, 'cpu', numel)`` whose bytes are in ``<name>/data/<key>``
(little-endian); tensors are ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())`` and parameters ``torch._utils._rebuild_parameter(tensor, requires_grad,
OrderedDict())``. The pickle names torch's globals but neither saving nor loading imports torch.

Loading never runs code from the file: the unpickler only resolves an allow-list of globals (the one
``torch.load(weights_only=True)`` uses, for what hookgrad can represent); anything else raises
``pickle.UnpicklingError`` naming the global. Saving to a path is atomic (temp file + ``os.replace``).
Tensors sharing memory are saved as views of one storage and load as NumPy views of one buffer.
"""
import _compat_pickle
import io
import os
import pickle
import struct
import tempfile
import zipfile
from collections import Counter, OrderedDict

import numpy as np

from . import _dtype as D
from ._tensor import Tensor, Size, device, _check_device

__all__ = ["save", "load", "save_safetensors", "load_safetensors", "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2
_STORAGE_TYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
                  "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16, "CharStorage": np.int8,
                  "ByteStorage": np.uint8, "BoolStorage": np.bool_, "UntypedStorage": np.uint8}
_NP_TO_STORAGE = {np.dtype(v): k for k, v in _STORAGE_TYPES.items() if k != "UntypedStorage"}
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)


# =========================================================================================== saving
class _Global:
    """A ``module.name`` written as a pickle GLOBAL without importing ``module`` (it names torch)."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pragma: no cover - only here so that pickle accepts it as a reduce function
        raise TypeError(f"{self.module}.{self.name} is a placeholder")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_TORCH_SIZE = _Global("torch", "Size")
_TORCH_DEVICE = _Global("torch", "device")
_STORAGE_GLOBALS = {k: _Global("torch", k) for k in _STORAGE_TYPES}


class _Storage:
    __slots__ = ("key", "array")

    def __init__(self, key, array):
        self.key, self.array = key, array


class _Pickler(pickle._Pickler):
    """The pure-Python pickler, taught to write hookgrad tensors, dtypes and sizes as torch's globals."""
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}      # id(root array) -> _Storage (the dict keeps the arrays alive)

    def persistent_id(self, obj):
        if type(obj) is _Storage:
            a = obj.array
            return ("storage", _STORAGE_GLOBALS[_NP_TO_STORAGE[a.dtype.newbyteorder("=")]], obj.key, "cpu", a.size)
        return None

    def _save_stub(self, g, obj):
        self.write(pickle.GLOBAL + g.module.encode("utf-8") + b"\n" + g.name.encode("utf-8") + b"\n")
        self.memoize(obj)

    dispatch[_Global] = lambda self, g: self._save_stub(g, g)
    dispatch[D.dtype] = lambda self, dt: self._save_stub(_Global("torch", dt.name), dt)

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter
            if isinstance(obj, Parameter):
                return _REBUILD_PARAMETER, (Tensor._make(obj._data), obj.requires_grad, OrderedDict())
            from .utils.hooks import warn_if_has_hooks
            warn_if_has_hooks(obj)
            storage, offset, stride = self._storage_of(obj._data)
            return _REBUILD_TENSOR, (storage, offset, tuple(obj._data.shape), stride, obj.requires_grad, OrderedDict())
        if type(obj) is Size:
            return _TORCH_SIZE, (tuple(obj),)
        if type(obj) is device:
            return _TORCH_DEVICE, (str(obj),)
        return NotImplemented

    def _storage_of(self, a):
        """(storage, offset, stride) in elements; views of one C-contiguous buffer share its storage."""
        if a.dtype.newbyteorder("=") not in _NP_TO_STORAGE:
            raise pickle.PicklingError(f"hookgrad.save: cannot save arrays of dtype {a.dtype}")
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        isz = a.itemsize
        off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0] if root is not a else 0
        if (root.dtype != a.dtype or not root.flags.c_contiguous or off % isz
                or any(s < 0 or s % isz for s in a.strides) or a.dtype.byteorder == ">"):
            root = a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
            off = 0
        st = self.storages.get(id(root))
        if st is None:
            st = self.storages[id(root)] = _Storage(str(len(self.storages)), root)
        return st, off // isz, tuple(s // isz for s in a.strides)


def _archive_name(f):
    if isinstance(f, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    return "archive"


def _record(zf, name, data):
    """One uncompressed entry whose data starts on a 64-byte boundary (padding in an 'FB' extra field,
    as PyTorch's writer does, so that torch.load(mmap=True) maps aligned storages)."""
    info = zipfile.ZipInfo(name, date_time=_FIXED_DATE)
    info.compress_type = zipfile.ZIP_STORED
    zip64 = len(data) > 2 ** 31
    start = zf.fp.tell() + 30 + len(name.encode("utf-8")) + 4 + (20 if zip64 else 0)
    pad = -start % 64
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    with zf.open(info, "w", force_zip64=zip64) as fh:
        fh.write(data)


def _write_archive(fileobj, obj, name, protocol):
    buf = io.BytesIO()
    pickler = _Pickler(buf, protocol)
    pickler.dump(obj)
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _record(zf, f"{name}/data.pkl", buf.getvalue())
        _record(zf, f"{name}/.format_version", b"1")
        _record(zf, f"{name}/.storage_alignment", b"64")
        _record(zf, f"{name}/byteorder", b"little")
        for st in pickler.storages.values():
            arr = st.array.reshape(-1)
            _record(zf, f"{name}/data/{st.key}", memoryview(arr.view(np.uint8)) if arr.size else b"")
        _record(zf, f"{name}/version", b"3\n")


def save(obj, f, pickle_module=None, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save ``obj`` (tensors, state_dicts, nested containers of them) in PyTorch's zip format.

    ``f`` is a path or a writable binary file object. Writing to a path is atomic: the archive is
    written to a temporary file in the same folder, fsync'ed, then renamed over ``f``, so a failure
    leaves any previous file untouched. ``pickle_module`` is ignored.
    """
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("hookgrad.save writes only the zip format (_use_new_zipfile_serialization=True)")
    if not isinstance(f, (str, os.PathLike)):
        data = io.BytesIO()
        _write_archive(data, obj, "archive", pickle_protocol)
        f.write(data.getvalue())
        return
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_archive(fh, obj, _archive_name(path), pickle_protocol)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ========================================================================================== loading
class _StorageType:
    __slots__ = ("name", "dtype")

    def __init__(self, name):
        self.name, self.dtype = name, np.dtype(_STORAGE_TYPES[name])


class _TypeMarker:
    """Stands in for torch.Tensor / torch.nn.Parameter as ``new_type`` in ``_rebuild_from_type_v2``."""
    __slots__ = ("parameter",)

    def __init__(self, parameter):
        self.parameter = parameter


def _set_state(t, state):
    if not state:
        return t
    if isinstance(state, tuple):
        state = {**(state[0] or {}), **(state[1] if len(state) > 1 and state[1] else {})}
    for k, v in state.items():
        if not isinstance(k, str) or k.startswith("__"):
            raise pickle.UnpicklingError(f"hookgrad.load: refusing to set attribute {k!r} on a loaded tensor")
        t.__dict__[k] = v
    return t


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    if not isinstance(storage, np.ndarray):
        raise pickle.UnpicklingError("hookgrad.load: _rebuild_tensor_v2 expects a storage as its first argument, "
                                     f"got {type(storage).__name__}")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride) or storage_offset < 0 or any(s < 0 for s in size + stride):
        raise RuntimeError(f"hookgrad.load: invalid tensor geometry size={list(size)} stride={list(stride)} "
                           f"offset={storage_offset}")
    if all(size):
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= storage.size:
            raise RuntimeError(f"hookgrad.load: a tensor of size {list(size)} with stride {list(stride)} and storage "
                               f"offset {storage_offset} is out of bounds for a storage of {storage.size} elements")
    isz = storage.itemsize
    a = np.lib.stride_tricks.as_strided(storage[storage_offset:] if all(size) else storage[:0], size,
                                        tuple(s * isz for s in stride))
    if any(s == 0 and n > 1 for n, s in zip(size, stride)):
        a.flags.writeable = False      # an expanded tensor: in-place writes refuse, as in torch
    t = Tensor._make(a)
    if requires_grad:
        if a.dtype.kind != "f":
            raise pickle.UnpicklingError("hookgrad.load: a non-floating-point tensor cannot require grad")
        t.requires_grad = True
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    from .nn.parameter import Parameter
    return _set_state(Parameter(data, requires_grad), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    t = func(*args)
    if getattr(new_type, "parameter", False) and not type(t).__name__ == "Parameter":
        t = _rebuild_parameter(t, t.requires_grad, None)
    return _set_state(t, state)


def _refused(name):
    def fn(*a, **k):
        raise pickle.UnpicklingError(f"hookgrad.load: {name} is not supported by hookgrad")
    return fn


def _allowed_globals():
    import _codecs
    rc = {"collections.OrderedDict": OrderedDict, "collections.Counter": Counter, "torch.Size": Size,
          "torch.device": device, "_codecs.encode": _codecs.encode, "builtins.bytearray": bytearray,
          "builtins.set": set, "builtins.frozenset": frozenset, "builtins.complex": complex,
          "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2, "torch._utils._rebuild_parameter": _rebuild_parameter,
          "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
          "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
          "torch.Tensor": _TypeMarker(False), "torch.nn.parameter.Parameter": _TypeMarker(True)}
    for d in D.ALL:
        rc["torch." + d.name] = d
    for name in _STORAGE_TYPES:
        rc["torch." + name] = _StorageType(name)
    rc["torch.storage.UntypedStorage"] = rc["torch.UntypedStorage"]
    for name in ("_rebuild_qtensor", "_rebuild_sparse_tensor", "_rebuild_nested_tensor", "_rebuild_device_tensor_from_numpy",
                 "_rebuild_wrapper_subclass", "_rebuild_meta_tensor_no_storage", "_rebuild_tensor"):
        rc["torch._utils." + name] = _refused(name)
    return rc


_ALLOWED = None


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, reader):
        super().__init__(data)
        self.reader = reader
        self.loaded = {}

    def find_class(self, module, name):
        global _ALLOWED
        if _ALLOWED is None:
            _ALLOWED = _allowed_globals()
        if (module, name) in _compat_pickle.NAME_MAPPING:     # protocol-2 pickles use Python 2 names
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if full in _ALLOWED:
            return _ALLOWED[full]
        if module == "torch" and name in ("bfloat16", "complex64", "complex128", "cfloat", "cdouble", "BFloat16Storage",
                                          "ComplexFloatStorage", "ComplexDoubleStorage"):
            raise pickle.UnpicklingError(f"hookgrad.load: {full} is not supported by hookgrad (no such dtype)")
        raise pickle.UnpicklingError(
            f"Weights only load failed: hookgrad.load never runs code from a checkpoint and refused the global "
            f"'{full}'. Unsupported global: GLOBAL {full} was not an allowed global by default.")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"hookgrad.load: unsupported persistent id {pid!r}")
        _, stype, key, location, numel = pid
        if str(location).split(":")[0] not in ("cpu", "cuda", "mps", "xpu", "meta") or not isinstance(numel, int):
            raise pickle.UnpicklingError(f"hookgrad.load: invalid storage record {pid!r}")
        key = str(key)
        if key not in self.loaded:
            raw = self.reader.record(f"data/{key}")
            need = numel * stype.dtype.itemsize
            if len(raw) < need:
                raise RuntimeError(f"hookgrad.load: storage data/{key} is truncated: expected {need} bytes, found "
                                   f"{len(raw)}")
            dt = stype.dtype.newbyteorder(">" if self.reader.byteorder == "big" else "<")
            arr = np.frombuffer(bytearray(raw[:need]), dtype=dt)
            self.loaded[key] = arr if dt.isnative else arr.astype(stype.dtype)
        return self.loaded[key]


class _Reader:
    def __init__(self, fileobj, what):
        self.what = what
        try:
            self.zf = zipfile.ZipFile(fileobj)
            names = self.zf.namelist()
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: failed finding central directory "
                               f"({what}: {e})") from None
        if not names:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: the archive {what} is empty")
        self.prefix = names[0].split("/")[0]
        self.names = set(names)
        self.byteorder = "little"
        if f"{self.prefix}/byteorder" in self.names:
            self.byteorder = self.record("byteorder").decode("ascii", "replace").strip()
            if self.byteorder not in ("little", "big"):
                raise RuntimeError(f"hookgrad.load: unknown byteorder {self.byteorder!r} in {what}")

    def record(self, name):
        full = f"{self.prefix}/{name}"
        if full not in self.names:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found ({self.what})")
        try:
            return self.zf.read(full)
        except Exception as e:  # bad CRC, truncated member, bad local header, decompression errors
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: the archive {self.what} is "
                               f"corrupted ({type(e).__name__}: {e})") from None


def _check_map_location(map_location):
    if isinstance(map_location, (str, device)):
        _check_device(map_location)
    elif isinstance(map_location, dict):
        for v in map_location.values():
            _check_device(v)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load an object saved by ``torch.save`` or :func:`save` (zip format), without importing torch.

    Only weights-only content can be loaded (tensors, parameters, dicts/OrderedDicts/lists/tuples/sets,
    numbers, strings, torch.Size, dtypes, devices): ``weights_only`` is accepted but loading is always
    restricted, and a file naming any other global raises ``pickle.UnpicklingError``. Everything loads on
    the CPU; ``map_location`` may name the CPU (a dict or callable is accepted and ignored). A
    ``.safetensors`` path is read with :func:`load_safetensors`.
    """
    _check_map_location(map_location)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if path.endswith(".safetensors"):
            return load_safetensors(path)
        with open(path, "rb") as fh:
            return _load_from(fh, repr(path))
    return _load_from(f, "<file object>")


def _load_from(fh, what):
    try:
        seekable = fh.seekable()
    except AttributeError:
        seekable = False
    if not seekable:
        fh = io.BytesIO(fh.read())
    start = fh.tell()
    magic = fh.read(4)
    fh.seek(start)
    if magic != b"PK\x03\x04":
        if magic[:1] == b"\x80":
            raise RuntimeError(f"hookgrad.load: {what} is in PyTorch's legacy (pre-1.6, non-zip) format, which hookgrad "
                               "does not read; re-save it with torch.save(obj, f) from PyTorch >= 1.6")
        raise RuntimeError(f"hookgrad.load: {what} is not a PyTorch checkpoint (expected a zip archive, the file "
                           f"starts with {magic!r})")
    reader = _Reader(fh, what)
    up = _Unpickler(io.BytesIO(reader.record("data.pkl")), reader)
    try:
        return up.load()
    except (pickle.UnpicklingError, RuntimeError):
        raise
    except Exception as e:  # malformed opcodes: EOFError, ValueError, KeyError, IndexError, TypeError...
        raise pickle.UnpicklingError(f"hookgrad.load: corrupt data.pkl in {what} ({type(e).__name__}: {e})") from None


# ======================================================================================= safetensors
def _safetensors_numpy():
    try:
        import safetensors.numpy as stn
    except ImportError:
        raise ImportError("hookgrad safetensors support needs the optional 'safetensors' package "
                          "(pip install safetensors)") from None
    return stn


def save_safetensors(tensors, filename, metadata=None):
    """Write a ``{name: Tensor}`` dict to a ``.safetensors`` file (through ``safetensors.numpy``)."""
    stn = _safetensors_numpy()
    arrays = {}
    for k, v in tensors.items():
        if not isinstance(v, Tensor):
            raise TypeError(f"save_safetensors: value for {k!r} is a {type(v).__name__}, expected a Tensor")
        arrays[k] = np.ascontiguousarray(v._data)
    stn.save_file(arrays, os.fspath(filename), metadata=metadata)


def load_safetensors(filename):
    """Read a ``.safetensors`` file into a ``{name: Tensor}`` dict."""
    stn = _safetensors_numpy()
    return {k: Tensor._make(np.array(v)) for k, v in stn.load_file(os.fspath(filename)).items()}
