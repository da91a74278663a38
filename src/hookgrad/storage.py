"""torch.storage: UntypedStorage and TypedStorage (defined in _tensor.py), and the legacy typed storage
classes (``torch.FloatStorage`` ...): constructors from a size or a list, ``isinstance`` by dtype."""
import numpy as np

from . import _dtype as D
from ._tensor import UntypedStorage, TypedStorage, _TYPED_STORAGE_WARNING, Tensor as _Tensor

__all__ = ["TypedStorage", "UntypedStorage"]


def _warn_typed_storage_removal():
    from ._warnings import warn_once
    warn_once(_TYPED_STORAGE_WARNING, UserWarning)


class _StorageBaseMeta(type):
    def __instancecheck__(cls, instance):
        return isinstance(instance, UntypedStorage)


class StorageBase(metaclass=_StorageBaseMeta):
    """torch._C.StorageBase: every storage is an instance."""

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("Cannot directly construct StorageBase; subclass it and then construct that")


class _LegacyStorageMeta(type):
    dtype = None

    def __instancecheck__(cls, instance):
        return isinstance(instance, TypedStorage) and instance.dtype is cls.dtype


class _LegacyStorage(metaclass=_LegacyStorageMeta):
    """``torch.FloatStorage(size)`` / ``(sequence)`` / ``()``: a TypedStorage of the class's dtype."""

    def __new__(cls, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        _warn_typed_storage_removal()
        dt = cls.dtype
        if wrap_storage is not None:
            return TypedStorage._of(wrap_storage._array, dt)
        usage = (f"<class 'torch.{cls.__name__}'>.__new__ received an invalid combination of arguments. Expected "
                 "one of:\n * no arguments\n * (int size)\n * (Sequence data)\n * (*, UntypedStorage wrap_storage)\n")
        if len(args) > 1:
            raise RuntimeError(usage + "Too many positional arguments")
        if not args:
            arr = np.empty((0,), dt.np)
        elif isinstance(args[0], int):
            arr = np.zeros((args[0],), dt.np)
        elif isinstance(args[0], (list, tuple)):
            from ._creation import tensor
            arr = tensor(list(args[0]), dtype=dt)._data.reshape(-1)
        elif isinstance(args[0], str):
            raise TypeError(f"new(): invalid data type '{type(args[0]).__name__}'")
        else:
            t = type(args[0])
            kind = "torch.Tensor" if isinstance(args[0], _Tensor) else t.__qualname__ if t.__module__ == "builtins" \
                else f"{t.__module__}.{t.__qualname__}"
            raise TypeError(usage + f"Argument type not recognized: <class '{kind}'>")
        return TypedStorage._of(arr, dt)


def _legacy(name, dt):
    return _LegacyStorageMeta(name, (_LegacyStorage,), {"dtype": dt, "__module__": "hookgrad"})


FloatStorage = _legacy("FloatStorage", D.float32)
DoubleStorage = _legacy("DoubleStorage", D.float64)
HalfStorage = _legacy("HalfStorage", D.float16)
LongStorage = _legacy("LongStorage", D.int64)
IntStorage = _legacy("IntStorage", D.int32)
ShortStorage = _legacy("ShortStorage", D.int16)
CharStorage = _legacy("CharStorage", D.int8)
ByteStorage = _legacy("ByteStorage", D.uint8)
BoolStorage = _legacy("BoolStorage", D.bool_)
_LEGACY = {c.dtype: c for c in (FloatStorage, DoubleStorage, HalfStorage, LongStorage, IntStorage, ShortStorage,
                                CharStorage, ByteStorage, BoolStorage)}
