"""torch.distributed's key-value stores: ``Store`` (the base a user subclasses), ``HashStore`` (in this process,
shared by its threads) and ``PrefixStore`` (a namespace inside another store).

hookgrad's ranks find each other through the MPI launcher, so no store takes part in init_process_group; these
exist for code that uses a store itself (coordination between threads, a registry of keys, tests). Values are
bytes (a str is stored as its UTF-8 bytes); ``get`` of a key not yet set waits, up to the store's timeout, for
another thread to set it, then raises DistStoreError("Wait timeout"), as PyTorch's.
"""
import collections
import threading
import time
from datetime import timedelta

from ._mpi import DistStoreError

__all__ = ["Store", "HashStore", "PrefixStore", "QueueEmptyError"]

_DEFAULT_TIMEOUT = timedelta(seconds=300)
_INT64 = 1 << 63


class QueueEmptyError(DistStoreError):
    """torch.distributed.QueueEmptyError: ``queue_pop(key, block=False)`` on an empty queue."""


QueueEmptyError.__module__ = "torch.distributed"


def _incompatible(name, signature, args):
    """pybind11's TypeError for arguments of the wrong type, as PyTorch's stores raise it."""
    return TypeError(f"{name}(): incompatible function arguments. The following argument types are supported:\n"
                     f"    1. (self: torch._C._distributed_c10d.Store, {signature})\n\n"
                     f"Invoked with: {', '.join(map(repr, args))}")


def _key(name, signature, key, *rest):
    if not isinstance(key, str):
        raise _incompatible(name, signature, (key,) + rest)
    return key


def _value(name, signature, value, *rest):
    """The bytes of a value: str (UTF-8) or bytes-like."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise _incompatible(name, signature, rest + (value,))


def _keys(name, signature, keys):
    if isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
        raise _incompatible(name, signature, (keys,))
    keys = list(keys)
    if not all(isinstance(k, str) for k in keys):
        raise _incompatible(name, signature, (keys,))
    return keys


def _timeout(name, signature, timeout, *rest):
    if not isinstance(timeout, timedelta):
        raise _incompatible(name, signature, rest + (timeout,))
    return timeout


def _stoll(data):
    """C++ std::stoll of a value: leading blanks, a sign, then digits (what follows is ignored)."""
    text = data.decode(errors="replace").lstrip(" \t\n\v\f\r")
    i = 1 if text[:1] in "+-" else 0
    j = i
    while j < len(text) and text[j] in "0123456789":
        j += 1
    if j == i:
        raise ValueError("stoll")
    n = int(text[:j])
    if not -_INT64 <= n < _INT64:
        raise IndexError("stoll")
    return n


class Store:
    """torch.distributed.Store: the interface of a key-value store. Subclass it and override ``set``, ``get``,
    ``add``, ``check``, ``wait``, ``delete_key``, ``num_keys`` (and ``compare_set``); ``append``,
    ``multi_get`` and ``multi_set`` are built from them here, as in PyTorch."""

    def __init__(self):
        self._timeout_value = _DEFAULT_TIMEOUT

    # ---- what a store provides
    def set(self, key, value):
        raise RuntimeError("Not implemented.")

    def get(self, key):
        raise RuntimeError("Not implemented.")

    def compare_set(self, key, expected_value, desired_value):
        raise RuntimeError("Not implemented.")

    def add(self, key, value):
        raise RuntimeError('Tried to call pure virtual function "::c10d::Store::add"')

    def check(self, keys):
        raise RuntimeError('Tried to call pure virtual function "::c10d::Store::check"')

    def wait(self, keys, timeout=None):
        raise RuntimeError('Tried to call pure virtual function "::c10d::Store::wait"')

    def delete_key(self, key):
        raise RuntimeError('Tried to call pure virtual function "::c10d::Store::deleteKey"')

    def num_keys(self):
        raise RuntimeError('Tried to call pure virtual function "::c10d::Store::getNumKeys"')

    def clone(self):
        raise RuntimeError('Tried to call pure virtual function "::c10d::Store::clone"')

    def list_keys(self):
        raise NotImplementedError("listKeys support is not implemented.")

    def queue_push(self, key, value):
        raise NotImplementedError("queue support is not implemented.")

    def queue_pop(self, key, block=True):
        raise NotImplementedError("queue support is not implemented.")

    def queue_len(self, key):
        raise NotImplementedError("queue support is not implemented.")

    def has_extended_api(self):
        return False

    # ---- built from the above
    def append(self, key, value):
        """Append ``value`` to the key's value (set it when missing), by compare-and-set."""
        value = _value("append", "arg0: str, arg1: str) -> None", value, key)
        expected = b""
        while True:
            current = self.compare_set(key, expected, expected + value)
            if current == expected + value:
                return None
            expected = current

    def multi_get(self, keys):
        keys = _keys("multi_get", "arg0: collections.abc.Sequence[str]) -> list[bytes]", keys)
        return [self.get(k) for k in keys]

    def multi_set(self, keys, values):
        sig = "arg0: collections.abc.Sequence[str], arg1: collections.abc.Sequence[str]) -> None"
        keys = _keys("multi_set", sig, keys)
        values = list(values)
        if len(values) < len(keys):
            raise ValueError(f"multi_set: {len(keys)} keys but {len(values)} values")
        for k, v in zip(keys, values):
            self.set(k, v)

    def barrier(self, key, world_size, timeout=None):
        """Wait until ``world_size`` callers have reached the barrier named ``key`` (a counter in the store)."""
        if timeout is not None:
            _timeout("barrier", "key: str, world_size: typing.SupportsInt | typing.SupportsIndex, timeout: "
                     "datetime.timedelta | None = None) -> None", timeout, key, world_size)
        if self.add(f"{key}/num_members", 1) == int(world_size):
            self.set(f"{key}/last_member", "1")
        if timeout is None:
            self.wait([f"{key}/last_member"])
        else:
            self.wait([f"{key}/last_member"], timeout)

    @property
    def timeout(self):
        return self._timeout_value

    def set_timeout(self, timeout):
        self._timeout_value = _timeout("set_timeout", "arg0: datetime.timedelta) -> None", timeout)


class HashStore(Store):
    """torch.distributed.HashStore: a store in this process's memory, shared by its threads."""

    def __init__(self):
        super().__init__()
        self._map = {}
        self._queues = collections.defaultdict(collections.deque)
        self._cv = threading.Condition()

    def _wait_for(self, pred, timeout):
        """Wait (the lock held) until ``pred()``, up to ``timeout`` (a timedelta; zero: no limit)."""
        seconds = timeout.total_seconds()
        if seconds <= 0:
            self._cv.wait_for(pred)
        elif not self._cv.wait_for(pred, seconds):
            raise DistStoreError("Wait timeout")

    def set(self, key, value):
        sig = "arg0: str, arg1: str) -> None"
        data = _value("set", sig, value, _key("set", sig, key, value))
        with self._cv:
            self._map[key] = data
            self._cv.notify_all()

    def get(self, key):
        _key("get", "arg0: str) -> bytes", key)
        with self._cv:
            self._wait_for(lambda: key in self._map, self._timeout_value)
            return self._map[key]

    def add(self, key, value):
        sig = "arg0: str, arg1: typing.SupportsInt | typing.SupportsIndex) -> int"
        _key("add", sig, key, value)
        if isinstance(value, float) or not hasattr(value, "__index__") or not -_INT64 <= int(value) < _INT64:
            raise _incompatible("add", sig, (key, value))
        with self._cv:
            old = self._map.get(key, b"")
            total = int(value) + (_stoll(old) if old else 0)
            total = (total + _INT64) % (2 * _INT64) - _INT64         # int64 arithmetic wraps, as in C++
            self._map[key] = str(total).encode()
            self._cv.notify_all()
            return total

    def compare_set(self, key, expected_value, desired_value):
        sig = "arg0: str, arg1: str, arg2: str) -> bytes"
        _key("compare_set", sig, key, expected_value, desired_value)
        expected = _value("compare_set", sig, expected_value, key)
        desired = _value("compare_set", sig, desired_value, key, expected_value)
        with self._cv:
            current = self._map.get(key)
            if (current is None and not expected) or current == expected:
                self._map[key] = desired
                self._cv.notify_all()
                return desired
            return expected if current is None else current

    def append(self, key, value):
        sig = "arg0: str, arg1: str) -> None"
        data = _value("append", sig, value, _key("append", sig, key, value))
        with self._cv:
            self._map[key] = self._map.get(key, b"") + data
            self._cv.notify_all()

    def multi_get(self, keys):
        keys = _keys("multi_get", "arg0: collections.abc.Sequence[str]) -> list[bytes]", keys)
        seconds = self._timeout_value.total_seconds()
        deadline = time.monotonic() + seconds
        out = []
        with self._cv:
            for k in keys:
                if k not in self._map:
                    left = timedelta(seconds=max(deadline - time.monotonic(), 1e-6)) if seconds > 0 else \
                        self._timeout_value
                    self._wait_for(lambda k=k: k in self._map, left)
                out.append(self._map[k])
        return out

    def multi_set(self, keys, values):
        sig = "arg0: collections.abc.Sequence[str], arg1: collections.abc.Sequence[str]) -> None"
        keys = _keys("multi_set", sig, keys)
        values = list(values)
        if len(values) < len(keys):
            raise ValueError(f"multi_set: {len(keys)} keys but {len(values)} values")
        data = [_value("multi_set", sig, v, keys) for v in values[:len(keys)]]
        with self._cv:
            self._map.update(zip(keys, data))
            self._cv.notify_all()

    def _present(self, key):
        return key in self._map or bool(self._queues.get(key))

    def check(self, keys):
        keys = _keys("check", "arg0: collections.abc.Sequence[str]) -> bool", keys)
        with self._cv:
            return all(self._present(k) for k in keys)

    def wait(self, keys, timeout=None):
        sig = ("arg0: collections.abc.Sequence[str]) -> None\n    2. (self: torch._C._distributed_c10d.Store, "
               "arg0: collections.abc.Sequence[str], arg1: datetime.timedelta) -> None")
        keys = _keys("wait", sig, keys)
        limit = self._timeout_value if timeout is None else _timeout("wait", sig, timeout, keys)
        with self._cv:
            self._wait_for(lambda: all(self._present(k) for k in keys), limit)

    def delete_key(self, key):
        _key("delete_key", "arg0: str) -> bool", key)
        with self._cv:
            return self._map.pop(key, None) is not None

    def num_keys(self):
        with self._cv:
            return len(self._map)

    def list_keys(self):
        with self._cv:
            return list(self._map)

    def queue_push(self, key, value):
        sig = "arg0: str, arg1: str) -> None"
        data = _value("queue_push", sig, value, _key("queue_push", sig, key, value))
        with self._cv:
            self._queues[key].append(data)
            self._cv.notify_all()

    def queue_pop(self, key, block=True):
        _key("queue_pop", "key: str, block: bool = True) -> bytes", key, block)
        with self._cv:
            if not self._queues.get(key):
                if not block:
                    raise QueueEmptyError("queue is empty")
                self._wait_for(lambda: bool(self._queues.get(key)), self._timeout_value)
            return self._queues[key].popleft()

    def queue_len(self, key):
        _key("queue_len", "arg0: str) -> int", key)
        with self._cv:
            return len(self._queues.get(key, ()))

    def clone(self):
        return self                             # PyTorch's clone of a HashStore shares its data: the same store

    def has_extended_api(self):
        return True

    def __repr__(self):
        return f"<hookgrad.distributed.HashStore object at {id(self):#x}>"


class PrefixStore(Store):
    """torch.distributed.PrefixStore(prefix, store): the keys of ``store`` under ``prefix + "/"``."""

    def __init__(self, prefix, store):
        if not isinstance(prefix, str) or not (store is None or isinstance(store, Store)):
            raise TypeError("__init__(): incompatible constructor arguments. The following argument types are "
                            "supported:\n    1. torch._C._distributed_c10d.PrefixStore(prefix: str, store: "
                            f"torch._C._distributed_c10d.Store)\n\nInvoked with: {prefix!r}, {store!r}")
        if store is None:
            raise ValueError("store argument cannot be None")
        self._prefix = prefix
        self._store = store

    def _k(self, key):
        return f"{self._prefix}/{key}"

    @property
    def underlying_store(self):
        return self._store

    @property
    def _underlying_non_prefix_store(self):
        store = self._store
        while isinstance(store, PrefixStore):
            store = store._store
        return store

    def set(self, key, value):
        sig = "arg0: str, arg1: str) -> None"
        self._store.set(self._k(_key("set", sig, key, value)), _value("set", sig, value, key))

    def get(self, key):
        return self._store.get(self._k(_key("get", "arg0: str) -> bytes", key)))

    def add(self, key, value):
        return self._store.add(self._k(_key("add", "arg0: str, arg1: typing.SupportsInt | typing.SupportsIndex) "
                                             "-> int", key, value)), value)

    def compare_set(self, key, expected_value, desired_value):
        sig = "arg0: str, arg1: str, arg2: str) -> bytes"
        return self._store.compare_set(self._k(_key("compare_set", sig, key, expected_value, desired_value)),
                                       expected_value, desired_value)

    def append(self, key, value):
        self._store.append(self._k(_key("append", "arg0: str, arg1: str) -> None", key, value)), value)

    def multi_get(self, keys):
        keys = _keys("multi_get", "arg0: collections.abc.Sequence[str]) -> list[bytes]", keys)
        return self._store.multi_get([self._k(k) for k in keys])

    def multi_set(self, keys, values):
        keys = _keys("multi_set", "arg0: collections.abc.Sequence[str], arg1: collections.abc.Sequence[str]) -> "
                     "None", keys)
        self._store.multi_set([self._k(k) for k in keys], values)

    def check(self, keys):
        keys = _keys("check", "arg0: collections.abc.Sequence[str]) -> bool", keys)
        return self._store.check([self._k(k) for k in keys])

    def wait(self, keys, timeout=None):
        keys = [self._k(k) for k in _keys("wait", "arg0: collections.abc.Sequence[str]) -> None", keys)]
        if timeout is None:
            self._store.wait(keys)
        else:
            self._store.wait(keys, timeout)

    def delete_key(self, key):
        return self._store.delete_key(self._k(_key("delete_key", "arg0: str) -> bool", key)))

    def num_keys(self):
        return self._store.num_keys()

    def list_keys(self):
        start = self._prefix + "/"
        return [k[len(start):] for k in self._store.list_keys() if k.startswith(start)]

    def queue_push(self, key, value):
        self._store.queue_push(self._k(_key("queue_push", "arg0: str, arg1: str) -> None", key, value)), value)

    def queue_pop(self, key, block=True):
        return self._store.queue_pop(self._k(_key("queue_pop", "key: str, block: bool = True) -> bytes", key)),
                                     block)

    def queue_len(self, key):
        return self._store.queue_len(self._k(_key("queue_len", "arg0: str) -> int", key)))

    def clone(self):
        return PrefixStore(self._prefix, self._store.clone())

    def has_extended_api(self):
        return self._store.has_extended_api()

    @property
    def timeout(self):
        return self._store.timeout

    def set_timeout(self, timeout):
        self._store.set_timeout(timeout)

    def __repr__(self):
        return f"<hookgrad.distributed.PrefixStore {self._prefix!r} of {self._store!r}>"
