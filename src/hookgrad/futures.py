"""torch.futures: Future (a thread-safe result slot with callbacks), collect_all, wait_all.

Two classes as in PyTorch: ``hookgrad.Future`` (torch._C.Future, what ``then`` and ``collect_all`` return)
and ``hookgrad.futures.Future``, its subclass that users construct (generic: ``Future[Tensor]``).
Callbacks run in registration order on the thread that completes the future, or inline when it is done.
"""
import sys
import threading
import traceback
from typing import Generic, TypeVar

from . import _progress

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")

_PENDING = object()


def _callback_error(e):
    """PyTorch's text for an exception raised inside a ``then`` callback (the child future's error)."""
    frames = traceback.extract_tb(e.__traceback__)[::-1]
    at = "".join(f"  {f.filename}({f.lineno}): {f.name}\n" for f in frames)
    return RuntimeError(f"Got the following error when running the callback: {type(e).__name__}: {e}\n\nAt:\n{at}")


class _CFuture:
    """torch.Future (torch._C.Future): the object ``then`` and ``collect_all`` return."""

    def __init__(self, devices=None):
        self._cond = threading.Condition()
        self._result = _PENDING
        self._error = None
        self._callbacks = []

    # ---- completion
    def _complete(self, result, error):
        with self._cond:
            if self._result is not _PENDING:
                raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future can "
                                   "only be marked completed once.")
            self._result, self._error = result, error
            callbacks, self._callbacks = self._callbacks, None
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def set_result(self, result):
        """Mark the future completed with ``result`` and run its callbacks."""
        self._complete(result, None)

    def set_exception(self, result):
        """Mark the future completed with the exception ``result``: wait() and value() raise it."""
        if not isinstance(result, Exception):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    # ---- reading
    def done(self):
        return self._result is not _PENDING

    def wait(self):
        """Block until the future is completed; return its value or raise its exception."""
        # NOTE: a future chained (then) on a collective completes only when someone advances MPI: drive the
        # outstanding work (a Work's wait has the deadline and peer checks) instead of sleeping on the condition
        while self._result is _PENDING and _progress.pending:
            _progress.pending[0].wait()     # every pending item has wait() (the _progress protocol)
            _progress.poll()                # and drops what has finished
        with self._cond:
            while self._result is _PENDING:
                self._cond.wait()
        return self.value()

    def value(self):
        """The value of a completed future (raises its exception); a future not yet completed is an error."""
        if self._result is _PENDING:
            raise RuntimeError("completed() INTERNAL ASSERT FAILED (hookgrad: value() was called on a Future that "
                               "has not completed yet; call wait(), or read value() inside a then() callback)")
        if self._error is not None:
            raise self._error
        return self._result

    # ---- callbacks
    def _on_done(self, fn):
        with self._cond:
            if self._result is _PENDING:
                self._callbacks.append(fn)
                return
        fn(self)

    def then(self, callback):
        """A new future holding ``callback(self)`` once this one completes (its error if callback raises)."""
        child = _CFuture()

        def run(fut):
            try:
                out = callback(fut)
            except Exception as e:  # noqa: BLE001  (PyTorch hands any callback error to the child future)
                child.set_exception(_callback_error(e))
            else:
                child.set_result(out)
        self._on_done(run)
        return child

    def add_done_callback(self, callback):
        """Run ``callback(self)`` once the future completes; its exceptions are reported, not raised."""
        def run(fut):
            try:
                callback(fut)
            except Exception as e:  # noqa: BLE001  (PyTorch logs the error and goes on)
                print(str(_callback_error(e)), file=sys.stderr)
        self._on_done(run)

    def __reduce__(self):
        raise RuntimeError("Can not pickle torch.futures.Future")


_CFuture.__name__ = _CFuture.__qualname__ = "Future"
_CFuture.__module__ = "hookgrad"


class Future(_CFuture, Generic[T]):
    """A result that arrives later: set_result/set_exception complete it; wait, value, then, add_done_callback."""

    def __init__(self, *, devices=None):
        if devices:
            from ._tensor import device as _device
            for d in devices:
                if _device(d).type != "cpu":
                    raise ValueError(f"Future: hookgrad has only the cpu device, got {d!r}")
        super().__init__()


Future.__module__ = "hookgrad.jit"  # PyTorch shows it as torch.jit.Future


def collect_all(futures):
    """A future completed when every one of ``futures`` is, whose value is the list of those futures
    (the error of the first that failed, if any did)."""
    futures = list(futures)
    for f in futures:
        if not isinstance(f, _CFuture):
            raise TypeError(f"_collect_all(): incompatible function arguments: expected a list of Future, got "
                            f"{type(f).__name__}")
    out = _CFuture()
    if not futures:
        out.set_result([])
        return out
    lock = threading.Lock()
    state = {"left": len(futures), "error": None}

    def one_done(fut):
        with lock:
            if fut._error is not None and state["error"] is None:
                state["error"] = fut._error
            state["left"] -= 1
            last = state["left"] == 0
        if last:
            if state["error"] is not None:
                out.set_exception(state["error"])
            else:
                out.set_result(futures)
    for f in futures:
        f._on_done(one_done)
    return out


def wait_all(futures):
    """Wait for all ``futures`` and return their values; raise the error of a future that failed."""
    return [fut.wait() for fut in collect_all(futures).wait()]
