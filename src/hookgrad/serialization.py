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
import errno
import io
import json
import os
import pickle
import stat
import struct
import tempfile
import types
import warnings
import zipfile
from collections import OrderedDict

import numpy as np

from . import _array, _dtype as D
from ._tensor import Tensor, Size, device, _check_device
from ._weights_only_unpickler import (  # noqa: F401  (safe-globals API and UNSAFE_MESSAGE re-exported)
    UNSAFE_MESSAGE, _DUAL_BASES, _STORAGE_TYPES, _StorageType, _WeightsUnpickler, _allowed, _as_load_error,
    _decode_ascii, _global_name, _wo_message, add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals,
    _ML_STORAGES)

__all__ = ["save", "load", "save_safetensors", "load_safetensors", "DEFAULT_PROTOCOL", "add_safe_globals",
           "get_safe_globals", "clear_safe_globals", "safe_globals"]

DEFAULT_PROTOCOL = 2
_NP_TO_STORAGE = {np.dtype(v): k for k, v in _STORAGE_TYPES.items() if k != "UntypedStorage"}
MAGIC_NUMBER = 0x1950a86a20f9469cfc6c       # the first pickle of PyTorch's legacy (pre-1.6, non-zip) format
PROTOCOL_VERSION = 1001


def _storage_name(dt):
    """The ``torch.<Type>Storage`` name for arrays of NumPy dtype ``dt`` (None: none)."""
    dt = dt.newbyteorder("=")
    name = _NP_TO_STORAGE.get(dt)
    if name is None:
        hd = D._NP_TO_DT.get(dt)
        name = next((k for k, v in _ML_STORAGES.items() if hd is not None and hd.name == v), None)
    return name
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
_STORAGE_GLOBALS = {k: _Global("torch", k) for k in (*_STORAGE_TYPES, *_ML_STORAGES)}


class _Storage:
    __slots__ = ("key", "array", "location")

    def __init__(self, key, array, location="cpu"):
        self.key, self.array, self.location = key, array, location


class _Pickler(pickle._Pickler):
    """The pure-Python pickler, taught to write hookgrad tensors, dtypes and sizes as torch's globals."""
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}      # id(root array) -> _Storage (the dict keeps the arrays alive)

    def persistent_id(self, obj):
        if type(obj) is _Storage:
            a = obj.array
            return ("storage", _STORAGE_GLOBALS[_storage_name(a.dtype)], obj.key, obj.location, a.size)
        return None

    def save_global(self, obj, name=None):
        qualname = getattr(obj, "__qualname__", None) if name is None else name
        if isinstance(qualname, str) and "<locals>" in qualname.split("."):     # C pickle's error (torch.save's)
            raise AttributeError(f"Can't pickle local object {qualname!r} (hookgrad.save: a function or class defined "
                                 "inside a function cannot be found by name when loading; save a state_dict() or "
                                 "move it to module level)")
        return super().save_global(obj, name)

    dispatch[types.FunctionType] = save_global

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
        if _storage_name(a.dtype) is None:
            raise pickle.PicklingError(f"hookgrad.save: cannot save arrays of dtype {a.dtype}")
        location = "cpu"
        if not isinstance(a, np.ndarray):       # another module's array (a device's): its bytes, copied to the host
            if _array.device_type(a) != "cpu":
                location = f"{_array.device_type(a)}:0"
            a = _array.to_host(a)
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
            st = self.storages[id(root)] = _Storage(str(len(self.storages)), root, location)
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


def _pickled(obj, protocol):
    """data.pkl's bytes and the storages it names (pickling errors raise here, before anything is written)."""
    buf = io.BytesIO()
    pickler = _Pickler(buf, protocol)
    pickler.dump(obj)
    return buf.getvalue(), pickler.storages


def _write_archive(fileobj, pickled, name):
    pkl, storages = pickled
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _record(zf, f"{name}/data.pkl", pkl)
        _record(zf, f"{name}/.format_version", b"1")
        _record(zf, f"{name}/.storage_alignment", b"64")
        _record(zf, f"{name}/byteorder", b"little")
        for st in storages.values():
            arr = st.array.reshape(-1)
            _record(zf, f"{name}/data/{st.key}", memoryview(arr.view(np.uint8)) if arr.size else b"")
        _record(zf, f"{name}/version", b"3\n")


_OS_DUAL = {}


def _os_error(base, code, msg, path):
    """PyTorch's RuntimeError (its type for every failure of its file writer) as an instance of a class that is
    also ``base``, the OSError subclass that says more (PermissionError, FileNotFoundError, ...), with ``errno``,
    ``strerror`` and ``filename`` set."""
    cls = _OS_DUAL.get(base)
    if cls is None:
        cls = _OS_DUAL[base] = type("RuntimeError", (RuntimeError, base), {"__module__": __name__,
                                                                           "__str__": base.__str__})
    if code is None:
        return cls(msg)
    err = cls(code, msg) if path is None else cls(code, msg, path)
    err.errno, err.strerror = code, msg     # (RuntimeError's constructor comes first: OSError's fields set here)
    if path is not None:
        err.filename = path
    return err


def _save_error(code, path):
    """PyTorch's RuntimeError for a file its writer cannot open (also an OSError with the errno and path)."""
    msg = f"open file failed with strerror: {os.strerror(code)}"
    if code == errno.EACCES:
        return _os_error(PermissionError, code, msg, path)
    return RuntimeError(f"{msg} ({path!r})")


def _write_error(e, path, opening, kept):
    """PyTorch's RuntimeError for an OSError ``e`` met while opening or writing ``path`` (a file object: None);
    also an instance of ``e``'s type, with its errno and filename."""
    why = e.strerror or str(e)
    if opening:
        msg = f"open file failed with strerror: {why}"
    else:
        msg = (f"PytorchStreamWriter failed writing file: file write failed (hookgrad.save: {why}"
               + (f" while writing {path!r}; {'the file was left as it was' if kept else 'the file is incomplete'})"
                  if path is not None else " in the file object's write())"))
    return _os_error(type(e), e.errno, msg, path)


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
        _write_archive(data, _pickled(obj, pickle_protocol), "archive")
        try:
            f.write(data.getvalue())
        except OSError as e:
            raise _write_error(e, None, False, False) from None
        return
    path = os.fspath(f)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise RuntimeError(f"Parent directory {os.path.dirname(path) or os.path.abspath(path)} does not exist.")
    real = os.path.realpath(path)       # a symbolic link stays one: its target is written, as PyTorch's open() does
    if os.path.isdir(real):
        raise _save_error(errno.EISDIR, path)
    if os.path.exists(real) and not os.access(real, os.W_OK):
        raise _save_error(errno.EACCES, path)     # PyTorch opens the file itself, so a read-only one refuses
    pickled = _pickled(obj, pickle_protocol)
    name = _archive_name(path)
    opening, kept = True, True
    try:
        if os.path.exists(real) and not stat.S_ISREG(os.stat(real).st_mode):
            # a device or a pipe (/dev/null, /dev/stdout): written in place, never replaced by a file
            kept = False
            with open(real, "wb") as fh:
                opening = False
                _write_archive(fh, pickled, name)
            return
        try:
            fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(real) + ".", suffix=".tmp",
                                       dir=os.path.dirname(real))
        except PermissionError:
            if not os.path.exists(real):
                raise _save_error(errno.EACCES, path) from None
            # a writable file in a folder we cannot create files in: PyTorch writes it in place, so do we
            data = io.BytesIO()
            _write_archive(data, pickled, name)
            kept = False
            with open(real, "wb") as fh:
                opening = False
                fh.write(data.getbuffer())
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                opening = False
                _write_archive(fh, pickled, name)
                fh.flush()
                os.fsync(fh.fileno())
            opening = True
            try:
                mode = os.stat(real).st_mode & 0o7777
            except FileNotFoundError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(tmp, mode)
            os.replace(tmp, real)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as e:
        if isinstance(e, RuntimeError):
            raise
        raise _write_error(e, path, opening, kept) from None


class _Storages:
    """persistent_load of ``('storage', torch.<Type>Storage, key, location, numel)``: each record is read once,
    after its size in the archive is checked against the declared one (before any byte is read), and shared
    by every tensor of the file that names it. As in PyTorch, the first record naming a key fixes its type."""

    def __init__(self, reader):
        self.reader = reader
        self.loaded = {}    # key -> array
        self.on_device = set()      # ids of the arrays saved from a cuda device

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
            arr = self.loaded[key] = _from_bytes(bytearray(self.reader.record(f"data/{key}")), stype.dtype,
                                                 self.reader.byteorder)
            if location.startswith("cuda"):
                self.on_device.add(id(arr))
        return arr


def _from_bytes(buf, dt, byteorder):
    """The elements of dtype ``dt`` stored in ``buf`` in the given byte order, as a native array over ``buf``."""
    if dt.kind == "V":          # an ml_dtypes type (bfloat16): swapped as unsigned integers of its size
        if byteorder == "big" and dt.itemsize > 1:
            return np.frombuffer(buf, dtype=f">u{dt.itemsize}").astype(f"=u{dt.itemsize}").view(dt)
        return np.frombuffer(buf, dtype=dt)
    swapped = dt.newbyteorder(">" if byteorder == "big" else "<")
    arr = np.frombuffer(buf, dtype=swapped)
    return arr if swapped.isnative else arr.astype(dt)


def _miniz_seek(fh, start, what):
    """Raise what PyTorch's zip reader (miniz) raises for an archive without an end-of-central-directory record
    between 4 KiB and ~68 KiB long: its backwards search seeks before the start of the file (a signed/unsigned
    slip), and the file object's seek() refuses (OSError for a file, ValueError for BytesIO). Returns otherwise."""
    end = fh.seek(0, 2)
    size = end - start
    if size < 22:
        return
    cur = max(size - 4096, 0)
    while True:
        fh.seek(start + cur)
        buf = fh.read(min(4096, size - cur))
        i = buf.rfind(b"PK\x05\x06")
        while i >= 0:
            if size - (cur + i) >= 22:
                return              # miniz finds a record here (and fails later, as zipfile did)
            i = buf.rfind(b"PK\x05\x06", 0, i)
        if cur == 0 or size - cur >= 0xFFFF + 22:
            return
        cur -= 4093
        if start + cur < 0:
            break
    hint = (f"hookgrad.load: {what} starts like a zip archive but has no end-of-central-directory record: it is "
            "truncated or not a checkpoint")
    try:
        fh.seek(start + cur)
    except OSError as e:
        raise type(e)(e.errno, f"{e.strerror} ({hint})") if e.errno is not None else type(e)(f"{e} ({hint})") from None
    except ValueError as e:
        raise type(e)(f"{e} ({hint})") from None


class _Reader:
    def __init__(self, fileobj, what):
        self.what = what
        start = fileobj.tell()
        try:
            self.zf = zipfile.ZipFile(fileobj)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
            _miniz_seek(fileobj, start, what)
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
                raise ValueError(f"Unknown endianness type: {self.byteorder} (hookgrad.load: the byteorder record of "
                                 f"{what} must be 'little' or 'big')")

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
            return _load_from(fh, repr(path), pickle_module, pickle_load_args, map_location)
    return _load_from(f, "<file object>", pickle_module, pickle_load_args, map_location)


def _load_from(fh, what, pickle_module, pickle_load_args, map_location=None):
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
        if not magic:       # PyTorch's EOFError, from reading the legacy format's first pickle
            raise EOFError(f"hookgrad.load: {what} is empty (0 bytes), not a PyTorch checkpoint")
        return _legacy_load(fh, what, magic, pickle_module, pickle_load_args)
    reader = _Reader(fh, what)
    storages = _Storages(reader)
    obj = _unpickle(io.BytesIO(reader.record("data.pkl")), storages, what, pickle_module, pickle_load_args)
    return _place(obj, storages.on_device, map_location)


def _place(obj, on_device, map_location):
    """Tensors saved from the cuda device go back to it (``map_location`` None), or all go where a device
    ``map_location`` names (a dict or callable is not applied)."""
    from ._tensor import _cpu_module
    cpu = _cpu_module()         # the CPU's array module (NumPy, or a test backend's)
    if isinstance(map_location, (str, device)):
        xp = _check_device(map_location)
        pick = lambda t: xp                                         # noqa: E731
    elif map_location is None and (on_device or cpu is not np):
        from ._array import device_module
        xp = device_module("cuda") if on_device else cpu
        if xp is None:
            raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the CPU.")

        def pick(t):
            r = t._data
            while r is not None and id(r) not in on_device:
                r = getattr(r, "base", None)
            return xp if r is not None else cpu
    else:
        return obj
    seen = set()

    def walk(o):
        if id(o) in seen:
            return
        seen.add(id(o))
        if isinstance(o, Tensor):
            m = pick(o)
            if m is not None and m is not _array.array_module(o._data):
                o._data = _array.asarray(o._data, m)
            if o._grad is not None:
                walk(o._grad)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, (list, tuple, set)):
            for v in o:
                walk(v)
        elif hasattr(o, "_parameters") and hasattr(o, "_buffers"):
            for v in list(o.__dict__.get("_parameters", {}).values()) + list(o.__dict__.get("_buffers", {}).values()):
                walk(v)
            for v in o.__dict__.get("_modules", {}).values():
                walk(v)
    walk(obj)
    return obj


def _unpickle(fh, storages, what, pickle_module, pickle_load_args, hint="", part="data.pkl"):
    """One pickle from ``fh`` (weights-only, or full with ``pickle_module``), failing as torch.load does: a
    weights-only UnpicklingError wrapped in its "Weights only load failed" text (``hint`` appended), malformed
    opcodes as the error PyTorch lets escape (also an UnpicklingError naming the file)."""
    try:
        if pickle_module is None:
            return _WeightsUnpickler(fh, storages, **pickle_load_args).load()
        up = _full_unpickler(pickle_module)(fh, **pickle_load_args)
        up.storages = storages
        return up.load()
    except pickle.UnpicklingError as e:
        if pickle_module is None and type(e) is pickle.UnpicklingError and not str(e).startswith("hookgrad"):
            raise pickle.UnpicklingError(_wo_message(str(e)) + hint) from None
        raise
    except (RuntimeError, MemoryError, RecursionError):
        raise
    except Exception as e:  # malformed opcodes and arguments: EOFError, ValueError, KeyError, IndexError, TypeError...
        if pickle_module is not None and not isinstance(e, _DUAL_BASES):
            raise                  # a full load: what the file's own code raised (ImportError, ...), as in torch
        raise _as_load_error(e, what, part) from None


class _LegacyStorages:
    """persistent_load of the legacy format's ``('storage', torch.<Type>Storage, root_key, location, numel,
    view_metadata)``: each root storage is allocated when first named and filled from the records that follow the
    pickle (its tensors are views of it, so they see the data)."""

    def __init__(self):
        self.roots, self.views = {}, {}

    def load(self, pid):
        if type(pid) is not tuple:
            raise AssertionError(f"saved_id must be a tuple, got {type(pid).__name__}")
        if _decode_ascii(pid[0]) != "storage" or len(pid) != 6:
            raise RuntimeError(f"Unknown saved id type: {pid[0]} (hookgrad.load reads storages only)")
        _, stype, key, location, numel, view = pid
        if type(stype) is not _StorageType:
            raise AttributeError(f"'{type(stype).__name__}' object has no attribute 'dtype' (the storage type of a "
                                 f"storage record is {stype!r})")
        if type(numel) is not int or not 0 <= numel * stype.dtype.itemsize < 2 ** 40:
            raise TypeError(f"hookgrad.load: a legacy storage declares {numel!r} elements")
        key = str(_decode_ascii(key))
        arr = self.roots.get(key)
        if arr is None:
            arr = self.roots[key] = np.zeros(numel, stype.dtype)
        if view is None:
            return arr
        view_key, offset, view_size = view
        v = self.views.get(str(view_key))
        if v is None:
            if type(offset) is not int or type(view_size) is not int or not 0 <= offset <= offset + view_size \
                    <= arr.size:
                raise RuntimeError(f"hookgrad.load: a legacy storage view [{offset!r}, +{view_size!r}) is out of "
                                   f"bounds of its storage of {arr.size} elements")
            v = self.views[str(view_key)] = arr[offset:offset + view_size]
        return v


def _legacy_load(fh, what, magic, pickle_module, pickle_load_args):
    """PyTorch's legacy (pre-1.6, non-zip) format, as torch.load reads it: pickles of the magic number, the protocol
    version and the system info, the object (storages as persistent ids), the list of storage keys, then each
    storage's elements (an int64 count, then the little-endian bytes)."""
    start = fh.tell()
    fh.seek(start + 257)
    if fh.read(5) == b"ustar":
        raise RuntimeError(f"hookgrad.load: {what} is in PyTorch's legacy .tar format (PyTorch < 0.4), which hookgrad "
                           "does not read; re-save it with torch.save(obj, f) from PyTorch >= 1.6")
    fh.seek(start)
    hint = (f"\n\nhookgrad.load: {what} is not a zip archive (PyTorch's format since 1.6): it starts with {magic!r}; "
            "is it a checkpoint?")
    args = (what, pickle_module, pickle_load_args, hint, "legacy-format pickle")
    if _unpickle(fh, None, *args) != MAGIC_NUMBER:
        raise RuntimeError(f"Invalid magic number; corrupt file? (hookgrad.load: {what} is neither a zip archive, "
                           f"PyTorch's format since 1.6, nor in its legacy format: it starts with {magic!r})")
    version = _unpickle(fh, None, *args)
    if version != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {version}")
    _unpickle(fh, None, *args)      # system info (byte order, type sizes)
    storages = _LegacyStorages()
    result = _unpickle(fh, storages, *args)
    keys = _unpickle(fh, None, *args)
    if not isinstance(keys, list):
        raise RuntimeError(f"hookgrad.load: corrupt legacy checkpoint {what}: the storage keys are {keys!r}")
    for key in keys:
        arr = storages.roots.get(str(_decode_ascii(key)))
        if arr is None:
            raise AssertionError(f"storage key {key!r} not found in deserialized_objects")
        head = fh.read(8)
        n = struct.unpack("<q", head)[0] if len(head) == 8 else -1
        data = fh.read(arr.nbytes) if n == arr.size else b""
        if n != arr.size or len(data) != arr.nbytes:
            raise RuntimeError(f"storage has wrong byte size: expected {arr.nbytes} got {max(n, 0) * arr.itemsize} "
                               f"(hookgrad.load: storage {key} of {what} is truncated or corrupt)")
        arr[...] = _from_bytes(bytearray(data), arr.dtype, "little")
    return result


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
        arrays[k] = np.ascontiguousarray(_array.to_host(v._data))
    stn.save_file(arrays, os.fspath(filename), metadata=metadata)


# the safetensors dtypes NumPy holds natively (little-endian in the file)
_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
              "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}


def load_safetensors(filename):
    """Read a ``.safetensors`` file into a ``{name: Tensor}`` dict."""
    filename = os.fspath(filename)
    # NOTE: each tensor is read straight into its own array (one copy of the weights in memory, at any time);
    # safetensors.numpy's load_file peaks at about three (the mapped file, its bytes, the arrays) and leaves
    # the freed ones to the allocator. Other dtypes (bfloat16, float8) go through the package.
    with open(filename, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        header = json.loads(f.read(n)) if 0 < n < 100_000_000 else None
        if not isinstance(header, dict) or any(
                k != "__metadata__" and _ST_DTYPES.get(v.get("dtype")) is None for k, v in header.items()):
            stn = _safetensors_numpy()
            return {k: Tensor._make(np.array(v)) for k, v in stn.load_file(filename).items()}
        out = {}
        for k, v in header.items():
            if k == "__metadata__":
                continue
            dt = np.dtype(_ST_DTYPES[v["dtype"]])
            start, end = v["data_offsets"]
            f.seek(8 + n + start)
            a = np.fromfile(f, dt, (end - start) // dt.itemsize)
            if a.nbytes != end - start:
                raise ValueError(f"load_safetensors: {filename!r} is truncated (tensor {k!r})")
            out[k] = Tensor._make(a.astype(dt.newbyteorder("="), copy=False).reshape(v["shape"]))
    return out
