"""hookgrad.save / hookgrad.load in PyTorch's own checkpoint format, and safetensors files.

A checkpoint is a zip archive (entries stored uncompressed) under one top-level folder:
``<name>/data.pkl`` is a protocol-2 pickle in which each storage is a persistent id
``('storage', torch.<Type>Storage, key, 'cpu', numel)`` whose bytes are in ``<name>/data/<key>``
(little-endian); tensors are ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())`` and parameters ``torch._utils._rebuild_parameter(tensor, requires_grad,
OrderedDict())``. The pickle names torch's globals but neither saving nor loading imports torch.

By default loading never runs code from the file and no file can change the state of the process: the
unpickler is PyTorch's weights-only one (an allow-list of globals, the one ``torch.load(weights_only=True)``
uses for what hookgrad can represent, and its rules for what each opcode may touch); anything else raises
``pickle.UnpicklingError`` naming the culprit. ``load(f, weights_only=False)`` is the explicit opt-in to full
pickle for trusted files (a whole module saved by ``save(model)``). Saving to a path is atomic (temp file +
``os.replace``) and refuses a read-only file, as PyTorch does.
Tensors sharing memory are saved as views of one storage and load as NumPy views of one buffer.
"""
import _codecs
import _compat_pickle
import errno
import io
import os
import pickle
import re
import struct
import tempfile
import warnings
import zipfile
from collections import Counter, OrderedDict

import numpy as np

from . import _dtype as D
from ._tensor import Tensor, Size, device, _check_device

__all__ = ["save", "load", "save_safetensors", "load_safetensors", "DEFAULT_PROTOCOL", "add_safe_globals",
           "get_safe_globals", "clear_safe_globals", "safe_globals"]

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


_SaveError = type("RuntimeError", (RuntimeError, PermissionError), {"__module__": __name__})


def _save_error(code, path):
    """PyTorch's RuntimeError for a file its writer cannot open (also an OSError with the errno and path)."""
    cls = _SaveError if code == errno.EACCES else RuntimeError
    msg = f"open file failed with strerror: {os.strerror(code)}"
    return cls(code, msg, path) if cls is _SaveError else RuntimeError(f"{msg} ({path!r})")


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
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {os.path.dirname(path) or folder} does not exist.")
    if os.path.isdir(path):
        raise _save_error(errno.EISDIR, path)
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise _save_error(errno.EACCES, path)     # PyTorch opens the file itself, so a read-only one refuses
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    except PermissionError:
        if not os.path.exists(path):
            raise _save_error(errno.EACCES, path) from None
        # a writable file in a folder we cannot create files in: PyTorch writes it in place, so do we
        data = io.BytesIO()
        _write_archive(data, obj, _archive_name(path), pickle_protocol)
        with open(path, "wb") as fh:
            fh.write(data.getbuffer())
        return
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
# What a checkpoint may do is PyTorch's weights-only unpickler (torch/_weights_only_unpickler.py), opcode for
# opcode: globals only from the allow-list, calls (REDUCE/NEWOBJ) only of allow-listed objects, BUILD only on
# Tensor, Parameter, OrderedDict and instances of allow-listed classes, SETITEM(S) only on dicts, APPEND(S) only
# on lists. Every mutable object a file can reach is one it created, so no file can change library or process
# state (``float32``'s attributes, ``Size``, ``Counter``, the storage types). Failures raise PyTorch's exception
# type; those PyTorch lets escape as a bare TypeError, EOFError, ... are also ``pickle.UnpicklingError``.
UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a trusted source.")
_DOCS_MESSAGE = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
                 "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")
_HINT = ("hookgrad: to exchange a model, save `model.state_dict()` and load it with `model.load_state_dict("
         "hookgrad.load(f))`; to load a whole pickled object from a file you trust, pass `weights_only=False`.")
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_DUAL = {}
_DUAL_BASES = (EOFError, IndexError, KeyError, TypeError, ValueError, AttributeError, AssertionError,
               struct.error, OverflowError)


def _as_load_error(e, what):
    """``e`` raised while reading data.pkl, re-raised as an exception of PyTorch's type (PyTorch lets these
    escape unchanged) that is also a ``pickle.UnpicklingError`` naming the file."""
    kind = next((k for k in type(e).__mro__ if k in _DUAL_BASES), None)
    if kind is None:
        return pickle.UnpicklingError(f"hookgrad.load: corrupt data.pkl in {what} ({type(e).__name__}: {e})")
    cls = _DUAL.get(kind)
    if cls is None:
        cls = _DUAL[kind] = type(kind.__name__, (kind, pickle.UnpicklingError), {"__module__": __name__})
    return cls(f"hookgrad.load: corrupt data.pkl in {what} ({type(e).__name__}: {e})")


def _wo_message(message):
    """torch.load's wrapping of a weights-only unpickling error (torch/serialization.py, _get_wo_message)."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
                "the recommended steps in the following error message.\n\tWeightsUnpickler error: "
                + message + _DOCS_MESSAGE)
    if re.search(r"(\S+) must be (\S+) to load", message):
        return f"Weights only load failed. {message}\n {UNSAFE_MESSAGE}\n"
    out = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if not re.search(r"whose module (\S+) is blocked", message):
        out += ("Please file an issue with the following so that we can make `weights_only=True` compatible with "
                "your use case: WeightsUnpickler error: ")
    return out + "\n\n" + message + _DOCS_MESSAGE


class _StorageType:
    __slots__ = ("name", "dtype")

    def __init__(self, name):
        self.name, self.dtype = name, np.dtype(_STORAGE_TYPES[name])

    def __repr__(self):
        return f"StorageType(dtype={self.dtype})"


class _TypeMarker:
    """Stands in for torch.Tensor / torch.nn.Parameter as ``new_type`` in ``_rebuild_from_type_v2``."""
    __slots__ = ("parameter",)

    def __init__(self, parameter):
        self.parameter = parameter

    def __repr__(self):
        return "<class 'torch.nn.parameter.Parameter'>" if self.parameter else "<class 'torch.Tensor'>"


def _set_state(t, state):
    """torch._utils._set_obj_state: a loaded tensor's Python attributes (``(dict_state, slots_state)`` or a dict).
    Only new instance attributes: a name the tensor's class defines (``grad``, ``_backward_hooks``, ``_data``, ...)
    would let a file reach into autograd state, so it is refused."""
    if not state:
        return t
    if isinstance(state, tuple):
        if len(state) != 2:
            raise RuntimeError(f"Invalid serialized state: {state}")
        parts = state
    else:
        parts = (state,)
    for part in parts:
        if not part:
            continue
        if not isinstance(part, dict):
            raise TypeError(f"tensor state must be a dict, got {type(part).__name__}")
        for k, v in part.items():
            if not isinstance(k, str) or k.startswith("__") or hasattr(type(t), k):
                raise pickle.UnpicklingError(f"hookgrad.load: refusing to set attribute {k!r} on a loaded tensor")
            t.__dict__[k] = v
    return t


def _int_list(name, v):
    if not isinstance(v, (tuple, list)) or any(type(s) is not int for s in v):
        raise TypeError(f"_rebuild_tensor_v2: {name} must be a tuple of ints, got {v!r}")
    return tuple(v)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    if not isinstance(storage, np.ndarray):
        raise AttributeError(f"'{type(storage).__name__}' object has no attribute 'dtype' "
                             "(_rebuild_tensor_v2 expects a storage as its first argument)")
    size, stride = _int_list("size", size), _int_list("stride", stride)
    if type(storage_offset) is not int:
        raise TypeError(f"_rebuild_tensor_v2: storage_offset must be an int, got {storage_offset!r}")
    if len(size) != len(stride):
        raise RuntimeError(f"unequal size length ({len(size)}) and stride length ({len(stride)})")
    if storage_offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {storage_offset}")
    numel, overflow = 1, False
    for n in size:                     # c10's safe_multiplies: an overflow before a zero still counts
        numel *= n
        overflow |= not -2 ** 63 <= numel < 2 ** 63
    if any(n < 0 for n in size) or overflow:
        raise RuntimeError(f"numel: integer multiplication overflow (hookgrad.load: size={list(size)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    if numel:
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if (last + 1) * storage.itemsize >= 2 ** 63:
            raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
        if last >= storage.size:
            raise RuntimeError(f"Trying to resize storage that is not resizable (hookgrad.load: a tensor of size "
                               f"{list(size)} with stride {list(stride)} and storage offset {storage_offset} is out "
                               f"of bounds for a storage of {storage.size} elements)")
    isz = storage.itemsize
    a = np.lib.stride_tricks.as_strided(storage[storage_offset:] if numel else storage[:0], size,
                                        tuple(s * isz for s in stride))
    if any(s == 0 and n > 1 for n, s in zip(size, stride)):
        a.flags.writeable = False      # an expanded tensor: in-place writes refuse, as in torch
    t = Tensor._make(a)
    if type(requires_grad) is not bool:
        raise RuntimeError("requires_grad must be a bool")
    if requires_grad:
        if a.dtype.kind != "f":
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad = True
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    from .nn.parameter import Parameter
    if not isinstance(data, Tensor):
        raise AttributeError(f"'{type(data).__name__}' object has no attribute 'detach' "
                             "(_rebuild_parameter expects a tensor)")
    if type(requires_grad) is not bool:
        raise TypeError("_make_subclass(): argument 'require_grad' (position 3) must be bool, not "
                        f"{type(requires_grad).__name__}")
    if requires_grad and data.dtype.is_floating_point is False:
        raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
    return _set_state(Parameter(data, requires_grad), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    if func not in (_rebuild_tensor_v2, _rebuild_parameter) or not isinstance(new_type, _TypeMarker):
        raise AttributeError(f"object has no attribute 'as_subclass' (hookgrad.load: _rebuild_from_type_v2 rebuilds "
                             f"tensors only, got {func!r} and {new_type!r})")
    if not isinstance(args, tuple):
        raise TypeError(f"_rebuild_from_type_v2: args must be a tuple, got {type(args).__name__}")
    t = func(*args)
    if new_type.parameter and not type(t).__name__ == "Parameter":
        t = _rebuild_parameter(t, t.requires_grad, None)
    return _set_state(t, state)


def _refused(name):
    def fn(*a, **k):
        raise pickle.UnpicklingError(f"hookgrad.load: {name} is not supported by hookgrad")
    return fn


def _encode(obj, encoding="utf-8", errors="strict"):
    """_codecs.encode, which protocol-2 pickles use for bytes; only text codecs (no codec lookup by a name
    taken from the file, which would import modules)."""
    if not isinstance(encoding, str) or encoding.lower().replace("-", "").replace("_", "") not in (
            "latin1", "utf8", "ascii", "iso88591"):
        raise pickle.UnpicklingError(f"hookgrad.load: _codecs.encode with encoding {encoding!r} is not supported")
    return _codecs.encode(obj, encoding, errors)


def _allowed_globals():
    rc = {"collections.OrderedDict": OrderedDict, "collections.Counter": Counter, "torch.Size": Size,
          "torch.device": device, "_codecs.encode": _encode, "builtins.bytearray": bytearray,
          "builtins.set": set, "builtins.complex": complex,
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
                 "_rebuild_wrapper_subclass", "_rebuild_meta_tensor_no_storage", "_rebuild_tensor", "_rebuild_tensor_v3",
                 "_rebuild_device_tensor_from_cpu_tensor"):
        rc["torch._utils." + name] = _refused(name)
    return rc


_ALLOWED = None
_ALLOWED_IDS = None
_SAFE_GLOBALS = set()


def add_safe_globals(safe_globals):
    """Mark globals (or ``(global, "module.name")`` pairs) as safe for ``weights_only`` load, as in PyTorch."""
    global _SAFE_GLOBALS
    _SAFE_GLOBALS = _SAFE_GLOBALS.union(set(safe_globals))


def get_safe_globals():
    return list(_SAFE_GLOBALS)


def clear_safe_globals():
    global _SAFE_GLOBALS
    _SAFE_GLOBALS = set()


class safe_globals:
    """Context manager adding globals that are safe for ``weights_only`` load within its body."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        global _SAFE_GLOBALS
        _SAFE_GLOBALS = _SAFE_GLOBALS - set(self.safe_globals)


def _user_allowed_globals():
    rc = {}
    for f in _SAFE_GLOBALS:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                                 f"length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: {type(f[1])}")
            f, name = f
            rc[name] = f
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


def _global_name(module, name):
    """(module, name) of a pickle GLOBAL with protocol 2's Python 2 names mapped, as torch does."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    return module, name


def _allowed():
    global _ALLOWED, _ALLOWED_IDS
    if _ALLOWED is None:
        _ALLOWED = _allowed_globals()
        _ALLOWED_IDS = {id(v) for v in _ALLOWED.values()}
    return _ALLOWED


def _unsupported_global(module, name):
    full = f"{module}.{name}"
    if module == "torch" and name in ("bfloat16", "complex64", "complex128", "cfloat", "cdouble", "BFloat16Storage",
                                      "ComplexFloatStorage", "ComplexDoubleStorage"):
        return pickle.UnpicklingError(f"hookgrad.load: {full} is not supported by hookgrad (no such dtype)")
    if full.startswith("builtins"):        # torch names builtins without their module
        full = full[len("builtins"):]
        full = full[1:] if full[:1] == "." else "builtins" + full
    return pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`torch.serialization.add_safe_globals([{full}])` or the `torch.serialization.safe_globals([{full}])` "
        f"context manager to allowlist this global if you trust this class/function.\n\t{_HINT}")


class _WeightsUnpickler:
    """torch/_weights_only_unpickler.py's Unpickler over hookgrad's allow-list (the default of ``load``)."""

    def __init__(self, file, storages, *, encoding="bytes"):
        self.encoding = encoding
        self.readline, self.read = file.readline, file.read
        self.storages = storages
        self.memo = {}
        self.proto = -1

    def load(self):
        from .nn.parameter import Parameter
        allowed, allowed_ids = _allowed(), _ALLOWED_IDS
        user = _user_allowed_globals()
        user_ids = {id(v) for v in user.values()}
        self.metastack = []
        self.stack = []
        self.append = self.stack.append
        read = self.read
        while True:
            key = read(1)
            if not key:
                raise EOFError("Ran out of input")
            op = key[0]
            if op == pickle.GLOBAL[0]:
                module = self.readline()[:-1].decode("utf-8")
                name = self.readline()[:-1].decode("utf-8")
                module, name = _global_name(module, name)
                full = f"{module}.{name}"
                if module in _BLOCKED_MODULES:
                    raise pickle.UnpicklingError(f"Trying to load unsupported GLOBAL {full} whose module {module} is "
                                                 "blocked.")
                if full in allowed:
                    self.append(allowed[full])
                elif full in user:
                    self.append(user[full])
                else:
                    raise _unsupported_global(module, name)
            elif op == pickle.NEWOBJ[0]:
                args = self.stack.pop()
                cls = self.stack.pop()
                if type(cls) is _TypeMarker:
                    if cls.parameter:
                        if len(args) > 2:
                            raise TypeError(f"Parameter.__new__() takes at most 2 arguments ({len(args)} given)")
                        data = args[0] if args else Tensor._make(np.zeros((0,), np.float32))
                        self.append(_rebuild_parameter(data, args[1] if len(args) > 1 else True, None))
                    elif not args:
                        self.append(Tensor._make(np.zeros((0,), np.float32)))
                    else:
                        raise TypeError("hookgrad.load: torch.Tensor.__new__ with arguments is not supported")
                elif id(cls) in allowed_ids or id(cls) in user_ids:
                    if not isinstance(cls, type):
                        raise TypeError(f"{type(cls).__name__}.__new__(X): X is not a type object "
                                        f"({type(cls).__name__})")
                    self.append(cls.__new__(cls, *args))
                else:
                    raise pickle.UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted "
                                                 f"via `add_safe_globals` but got {cls}")
            elif op == pickle.REDUCE[0]:
                args = self.stack.pop()
                func = self.stack[-1]
                if id(func) not in allowed_ids and id(func) not in user_ids:
                    msg = f"Trying to call reduce for unrecognized function {func}"
                    if hasattr(func, "__self__"):
                        msg += f" which belongs to {func.__self__}"
                    raise pickle.UnpicklingError(msg)
                if not isinstance(args, tuple):
                    raise TypeError(f"{func!r} argument after * must be an iterable, not {type(args).__name__}")
                self.stack[-1] = func(*args)
            elif op == pickle.BUILD[0]:
                state = self.stack.pop()
                inst = self.stack[-1]
                t = type(inst)
                if t is Tensor:
                    _tensor_set(inst, state)
                elif t is Parameter:
                    _parameter_setstate(inst, state)
                elif t is OrderedDict:
                    inst.__dict__.update(state)
                elif id(t) in allowed_ids or id(t) in user_ids:
                    if hasattr(inst, "__setstate__"):
                        inst.__setstate__(state)
                    else:                              # pickle's load_build
                        slotstate = None
                        if isinstance(state, tuple) and len(state) == 2:
                            state, slotstate = state
                        if state:
                            inst.__dict__.update(state)
                        if slotstate:
                            for k, v in slotstate.items():
                                setattr(inst, k, v)
                else:
                    raise pickle.UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                                                 f"via `add_safe_globals`, but got {t}")
            elif op == pickle.APPEND[0]:
                item = self.stack.pop()
                if type(self.stack[-1]) is not list:
                    raise pickle.UnpicklingError(f"Can only append to lists, but got {type(self.stack[-1])}")
                self.stack[-1].append(item)
            elif op == pickle.APPENDS[0]:
                items = self.pop_mark()
                if type(self.stack[-1]) is not list:
                    raise pickle.UnpicklingError(f"Can only extend lists, but got {type(self.stack[-1])}")
                self.stack[-1].extend(items)
            elif op == pickle.SETITEM[0]:
                v, k = self.stack.pop(), self.stack.pop()
                self._check_set_item_target("SETITEM")
                self.stack[-1][k] = v
            elif op == pickle.SETITEMS[0]:
                items = self.pop_mark()
                self._check_set_item_target("SETITEMS")
                if len(items) % 2:
                    raise IndexError("SETITEMS: odd number of items")
                for i in range(0, len(items), 2):
                    self.stack[-1][items[i]] = items[i + 1]
            elif op == pickle.MARK[0]:
                self.metastack.append(self.stack)
                self.stack = []
                self.append = self.stack.append
            elif op == pickle.TUPLE[0]:
                items = self.pop_mark()         # (before self.append: pop_mark rebinds it)
                self.append(tuple(items))
            elif op == pickle.TUPLE1[0]:
                self.stack[-1] = (self.stack[-1],)
            elif op == pickle.TUPLE2[0]:
                if len(self.stack) < 2:
                    raise IndexError("TUPLE2: stack underflow")
                self.stack[-2:] = [(self.stack[-2], self.stack[-1])]
            elif op == pickle.TUPLE3[0]:
                if len(self.stack) < 3:
                    raise IndexError("TUPLE3: stack underflow")
                self.stack[-3:] = [(self.stack[-3], self.stack[-2], self.stack[-1])]
            elif op == pickle.NONE[0]:
                self.append(None)
            elif op == pickle.NEWFALSE[0]:
                self.append(False)
            elif op == pickle.NEWTRUE[0]:
                self.append(True)
            elif op == pickle.EMPTY_TUPLE[0]:
                self.append(())
            elif op == pickle.EMPTY_LIST[0]:
                self.append([])
            elif op == pickle.EMPTY_DICT[0]:
                self.append({})
            elif op == pickle.EMPTY_SET[0]:
                self.append(set())
            elif op == pickle.BININT[0]:
                self.append(struct.unpack("<i", read(4))[0])
            elif op == pickle.BININT1[0]:
                self.append(struct.unpack("<B", read(1))[0])
            elif op == pickle.BININT2[0]:
                self.append(struct.unpack("<H", read(2))[0])
            elif op == pickle.BINFLOAT[0]:
                self.append(struct.unpack(">d", read(8))[0])
            elif op == pickle.BINUNICODE[0]:
                n = struct.unpack("<I", read(4))[0]
                data = read(n)
                if len(data) != n:
                    raise EOFError("BINUNICODE: data ends early")
                self.append(str(data, "utf-8", "surrogatepass"))
            elif op == pickle.SHORT_BINSTRING[0]:
                n = struct.unpack("<B", read(1))[0]
                data = read(n)
                self.append(data if self.encoding == "bytes" else data.decode(self.encoding, "strict"))
            elif op == pickle.BINPERSID[0]:
                pid = self.stack.pop()
                if type(pid) is not tuple and type(pid) is not int:
                    raise pickle.UnpicklingError(f"persistent_load id must be tuple or int, but got {type(pid)}")
                if type(pid) is tuple and len(pid) > 0 and _decode_ascii(pid[0]) != "storage":
                    raise pickle.UnpicklingError(f"Only persistent_load of storage is allowed, but got {type(pid[0])}")
                self.append(self.storages.load(pid))
            elif op in (pickle.BINGET[0], pickle.LONG_BINGET[0]):
                i = struct.unpack("<B" if op == pickle.BINGET[0] else "<I", read(1 if op == pickle.BINGET[0] else 4))[0]
                self.append(self.memo[i])
            elif op in (pickle.BINPUT[0], pickle.LONG_BINPUT[0]):
                i = struct.unpack("<B" if op == pickle.BINPUT[0] else "<I", read(1 if op == pickle.BINPUT[0] else 4))[0]
                self.memo[i] = self.stack[-1]
            elif op == pickle.LONG1[0]:
                n = struct.unpack("<B", read(1))[0]
                data = read(n)
                if len(data) != n:
                    raise EOFError("LONG1: data ends early")
                self.append(pickle.decode_long(data))
            elif op == pickle.PROTO[0]:
                self.proto = struct.unpack("<B", read(1))[0]
                if self.proto != 2:
                    warnings.warn(f"Detected pickle protocol {self.proto} in the checkpoint, which was not the default "
                                  "pickle protocol used by `torch.load` (2). The weights_only Unpickler might not "
                                  "support all instructions implemented by this protocol, please file an issue for "
                                  "adding support if you encounter this.", stacklevel=4)
            elif op == pickle.STOP[0]:
                return self.stack.pop()
            else:
                raise pickle.UnpicklingError(f"Unsupported operand {op}")

    def pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        self.append = self.stack.append
        return items

    def _check_set_item_target(self, opcode):
        if type(self.stack[-1]) not in (dict, OrderedDict, Counter):
            raise pickle.UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, "
                                         f"collections.Counter, but got {type(self.stack[-1])}")


def _tensor_set(t, state):
    """BUILD on a Tensor: torch's legacy ``Tensor.set_(storage, offset, size, stride)``, on a tensor this file made."""
    if not isinstance(state, tuple) or len(state) not in (1, 4) or not isinstance(state[0], (np.ndarray, Tensor)):
        raise TypeError(f"set_() received an invalid combination of arguments - got {state!r:.80}, but expected "
                        "one of: (torch.Storage source), (torch.Storage source, int storage_offset, tuple of ints "
                        "size, tuple of ints stride)")
    src = state[0]._data.reshape(-1) if isinstance(state[0], Tensor) else state[0]
    if len(state) == 1:
        state = (src, 0, (src.size,), (1,))
    new = _rebuild_tensor_v2(src, *state[1:], False, None)
    t._data = new._data


def _parameter_setstate(p, state):
    """BUILD on a Parameter: torch's Tensor.__setstate__ (4: legacy set_, 5: legacy Variable, 3: requires_grad)."""
    if not isinstance(state, tuple) or len(state) not in (3, 4, 5):
        raise ValueError(f"Parameter state must be a tuple of 3, 4 or 5 items, got {state!r:.80}")
    if len(state) == 4:
        _tensor_set(p, state)
        return
    if len(state) == 5:
        if not isinstance(state[0], Tensor):
            raise TypeError(f"Parameter state: data must be a tensor, got {type(state[0]).__name__}")
        p._data = state[0]._data
        state = (state[3], state[4], state[2])
    if type(state[0]) is not bool:
        raise TypeError(f"requires_grad must be a bool, got {type(state[0]).__name__}")
    if state[0] and p._data.dtype.kind != "f":
        raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
    p.requires_grad = state[0]      # the hooks (state[2]) are never restored, as in torch


def _decode_ascii(s):
    return s.decode("ascii") if isinstance(s, bytes) else s


class _Storages:
    """persistent_load of ``('storage', torch.<Type>Storage, key, location, numel)``: each record is read once,
    after its size in the archive is checked against the declared one (before any byte is read), and shared
    by every tensor of the file that names it. As in PyTorch, the first record naming a key fixes its type."""

    def __init__(self, reader):
        self.reader = reader
        self.loaded = {}    # key -> array

    def load(self, pid):
        if type(pid) is not tuple:
            raise AssertionError(f"saved_id must be a tuple, got {type(pid).__name__}")
        if len(pid) != 5:
            raise ValueError(f"not enough values to unpack (expected 4, got {len(pid) - 1})" if len(pid) < 5 else
                             f"too many values to unpack (expected 4, got {len(pid) - 1})")
        _, stype, key, location, numel = pid
        if type(stype) is not _StorageType:
            raise AttributeError(f"'{type(stype).__name__}' object has no attribute 'dtype' (the storage type of a "
                                 f"storage record is {stype!r})")
        location = _decode_ascii(location)
        if not isinstance(location, str) or location.split(":")[0] not in ("cpu", "cuda", "mps", "xpu", "meta"):
            raise RuntimeError("don't know how to restore data location of torch.storage.UntypedStorage (tagged with "
                               f"{location})")
        if type(numel) not in (int, bool) or not 0 <= numel * stype.dtype.itemsize < 2 ** 63:
            raise TypeError(f"get_storage_from_record(): incompatible function arguments (hookgrad.load: storage "
                            f"data/{key} declares {numel!r} elements)")
        key = str(_decode_ascii(key))
        arr = self.loaded.get(key)
        if arr is None:
            need = int(numel) * stype.dtype.itemsize
            size = self.reader.record_size(f"data/{key}")
            if size != need:
                raise RuntimeError(f"record size ({size} bytes) does not match expected size ({need} bytes = {need} "
                                   f"elements * 1 bytes/element) for dtype Byte (hookgrad.load: storage data/{key} is "
                                   f"{'truncated' if size < need else 'larger than declared'}: {int(numel)} x "
                                   f"{stype.dtype} declared in {self.reader.what})")
            dt = stype.dtype.newbyteorder(">" if self.reader.byteorder == "big" else "<")
            arr = np.frombuffer(bytearray(self.reader.record(f"data/{key}")), dtype=dt)
            arr = self.loaded[key] = arr if dt.isnative else arr.astype(stype.dtype)
        return arr


class _Reader:
    def __init__(self, fileobj, what):
        self.what = what
        try:
            self.zf = zipfile.ZipFile(fileobj)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: failed finding central directory "
                               f"({what}: {e})") from None
        if not infos:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: the archive {what} is empty")
        self.prefix = infos[0].filename.split("/")[0]
        for info in infos:
            if not info.filename.startswith(self.prefix + "/"):
                raise RuntimeError(f"file in archive is not in a subdirectory {self.prefix}/: {info.filename} "
                                   f"({what})")
        self.infos = {info.filename: info for info in infos}      # a repeated name: the last one, as in PyTorch
        self.byteorder = "little"
        if f"{self.prefix}/byteorder" in self.infos:
            self.byteorder = self.record("byteorder").decode("ascii", "replace").strip()
            if self.byteorder not in ("little", "big"):
                raise RuntimeError(f"hookgrad.load: unknown byteorder {self.byteorder!r} in {what}")

    def _info(self, name):
        info = self.infos.get(f"{self.prefix}/{name}")
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found. The checkpoint "
                               f"{self.what} is corrupted or incomplete.")
        return info

    def record_size(self, name):
        return self._info(name).file_size

    def record(self, name):
        info = self._info(name)
        try:
            return self.zf.read(info)
        except Exception as e:  # bad CRC, truncated member, bad local header, decompression errors
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: the archive {self.what} is "
                               f"corrupted ({type(e).__name__}: {e})") from None


def _full_unpickler(pickle_module):
    class _FullUnpickler(pickle_module.Unpickler):
        """``weights_only=False``: an ordinary unpickler (it runs what the file names, as torch.load does), with
        torch's globals resolved to hookgrad's; other torch classes cannot be loaded (hookgrad never imports torch)."""

        def find_class(self, module, name):
            m, n = _global_name(module, name)
            full = f"{m}.{n}"
            rc = _allowed()
            if full in rc:
                return rc[full]
            if m == "torch" or m.startswith("torch."):
                raise pickle.UnpicklingError(
                    f"hookgrad.load: {full} is a PyTorch class, which hookgrad cannot load (it never imports torch); "
                    "save the model's state_dict() with torch.save and load it with load_state_dict")
            return super().find_class(module, name)

        def persistent_load(self, pid):
            return self.storages.load(pid)
    return _FullUnpickler


def _check_map_location(map_location):
    if isinstance(map_location, (str, device)):
        _check_device(map_location)
    elif isinstance(map_location, dict):
        for v in map_location.values():
            _check_device(v)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load an object saved by ``torch.save`` or :func:`save` (zip format), without importing torch.

    By default (``weights_only=True``, as in PyTorch >= 2.6) only weights-only content loads (tensors,
    parameters, dicts/OrderedDicts/lists/tuples/sets, numbers, strings, torch.Size, dtypes, devices, and
    globals passed to :func:`add_safe_globals`), with PyTorch's weights-only unpickler rules; anything else
    raises ``pickle.UnpicklingError``. ``weights_only=False`` (or a ``pickle_module`` without
    ``weights_only``) unpickles the file with full pickle, which runs code named by the file: use it only for
    files you trust, e.g. a whole module saved by ``hookgrad.save(model)``. Everything loads on the CPU;
    ``map_location`` may name the CPU (a dict or callable is accepted and ignored). A ``.safetensors`` path is
    read with :func:`load_safetensors`.
    """
    _check_map_location(map_location)
    weights_only_not_set = weights_only is None
    if weights_only_not_set:
        weights_only = pickle_module is None
    true_values = ("1", "y", "yes", "true")
    force_wo = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    force_no_wo = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    if force_wo and force_no_wo:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    elif force_wo:
        weights_only = True
    elif force_no_wo and weights_only_not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `torch.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=2)
        weights_only = False
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    elif pickle_module is None:
        pickle_module = pickle
    pickle_load_args.setdefault("encoding", "utf-8")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if path.endswith(".safetensors"):
            return load_safetensors(path)
        with open(path, "rb") as fh:
            return _load_from(fh, repr(path), pickle_module, pickle_load_args)
    return _load_from(f, "<file object>", pickle_module, pickle_load_args)


def _load_from(fh, what, pickle_module, pickle_load_args):
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
    data = io.BytesIO(reader.record("data.pkl"))
    storages = _Storages(reader)
    try:
        if pickle_module is None:
            return _WeightsUnpickler(data, storages, **pickle_load_args).load()
        up = _full_unpickler(pickle_module)(data, **pickle_load_args)
        up.storages = storages
        return up.load()
    except pickle.UnpicklingError as e:
        if pickle_module is None and type(e) is pickle.UnpicklingError and not str(e).startswith("hookgrad"):
            raise pickle.UnpicklingError(_wo_message(str(e))) from None
        raise
    except (RuntimeError, MemoryError, RecursionError):
        raise
    except Exception as e:  # malformed opcodes and arguments: EOFError, ValueError, KeyError, IndexError, TypeError...
        if pickle_module is not None and not isinstance(e, _DUAL_BASES):
            raise                  # a full load: what the file's own code raised (ImportError, ...), as in torch
        raise _as_load_error(e, what) from None


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
