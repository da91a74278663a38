"""PyTorch's weights-only unpickler (torch/_weights_only_unpickler.py), opcode for opcode, for hookgrad.load.

What a checkpoint may do: globals only from the allow-list (plus :func:`add_safe_globals`), calls
(REDUCE/NEWOBJ) only of allow-listed objects, BUILD only on Tensor, Parameter, OrderedDict and instances of
allow-listed classes, SETITEM(S) only on dicts, APPEND(S) only on lists. Every mutable object a file can reach
is one it created, so no file can change library or process state. serialization.py reads the archive and
hands this unpickler data.pkl and the storages.
"""
import _codecs
import _compat_pickle
import pickle
import re
import struct
import warnings
from collections import Counter, OrderedDict

import numpy as np

from . import _dtype as D
from ._tensor import Tensor, Size, device


_STORAGE_TYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
                  "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16, "CharStorage": np.int8,
                  "ByteStorage": np.uint8, "BoolStorage": np.bool_, "ComplexFloatStorage": np.complex64,
                  "ComplexDoubleStorage": np.complex128, "UntypedStorage": np.uint8}
_ML_STORAGES = {"BFloat16Storage": "bfloat16"}   # dtypes NumPy lacks (ml_dtypes, imported when a file names one)
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


def _as_load_error(e, what, part="data.pkl"):
    """``e`` raised while reading data.pkl, re-raised as an exception of PyTorch's type (PyTorch lets these
    escape unchanged) that is also a ``pickle.UnpicklingError`` naming the file."""
    kind = next((k for k in type(e).__mro__ if k in _DUAL_BASES), None)
    if kind is None:
        return pickle.UnpicklingError(f"hookgrad.load: corrupt {part} in {what} ({type(e).__name__}: {e})")
    cls = _DUAL.get(kind)
    if cls is None:
        cls = _DUAL[kind] = type(kind.__name__, (kind, pickle.UnpicklingError), {"__module__": __name__})
    return cls(f"hookgrad.load: corrupt {part} in {what} ({type(e).__name__}: {e})")


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
    __slots__ = ("name", "_dtype")

    def __init__(self, name):
        self.name, self._dtype = name, None

    @property
    def dtype(self):
        """The NumPy dtype of the storage's elements (bfloat16's needs ml_dtypes: a clear error without it)."""
        if self._dtype is None:
            ml = _ML_STORAGES.get(self.name)
            self._dtype = getattr(D, ml).np if ml else np.dtype(_STORAGE_TYPES[self.name])
        return self._dtype

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
        if not D.is_floating(a.dtype):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
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
    for d in D.ALL + D.COMPLEX + tuple(getattr(D, n) for n in _ML_STORAGES.values()):
        rc["torch." + d.name] = d
    for name in (*_STORAGE_TYPES, *_ML_STORAGES):
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
    if state[0] and not D.is_floating(p._data.dtype):
        raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
    p._requires_grad = state[0]      # the hooks (state[2]) are never restored, as in torch


def _decode_ascii(s):
    return s.decode("ascii") if isinstance(s, bytes) else s


