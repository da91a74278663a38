"""Grad-mode switches: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local)."""
import functools
import inspect
import threading


class _State(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False
        self.multithreading = True


_state = _State()


def is_grad_enabled():
    return _state.enabled


def is_inference_mode_enabled():
    return _state.inference


class _DecoratorContextManager:
    """Usable as ``with ctx():`` and as ``@ctx()`` (and, like torch, as bare ``@ctx``)."""

    def __new__(cls, *args, **kwargs):
        # like torch's _NoParamDecoratorContextManager: any argument given is the function decorated
        if cls in (no_grad, enable_grad) and len(args) == 1 and args[0] is not None and not kwargs:
            return cls()(args[0])
        return super().__new__(cls)

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen(*a, **k):
                g = func(*a, **k)
                with self.clone():
                    resp = g.send(None)
                while True:
                    try:
                        with self.clone():
                            req = yield resp
                        with self.clone():
                            resp = g.send(req)
                    except StopIteration as e:
                        return e.value
            return gen

        @functools.wraps(func)
        def wrapper(*a, **k):
            with self.clone():
                return func(*a, **k)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = False

    def __exit__(self, *exc):
        _state.enabled = self.prev


class enable_grad(_DecoratorContextManager):
    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = True

    def __exit__(self, *exc):
        _state.enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode at construction (like torch) and restores it on exit."""

    def __init__(self, mode):
        if not isinstance(mode, bool):    # checked before the mode changes, as torch._C._set_grad_enabled does
            t = type(mode)
            name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                            f"{'Tensor' if t.__name__ == 'Tensor' else name}")
        self.prev = _state.enabled
        self.mode = mode
        _state.enabled = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return object.__new__(cls)
        return cls()(mode)     # like torch: a non-bool argument is the function being decorated

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self.prev = (_state.enabled, _state.inference)
        if self.mode:
            _state.enabled = False
            _state.inference = True
        else:
            _state.inference = False

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)


def is_multithreading_enabled():
    return _state.multithreading


class set_multithreading_enabled(_DecoratorContextManager):
    """Sets (thread-local) multithreaded backward at construction, restores it on exit. hookgrad's
    backward always runs on the calling thread; the flag is what _current_graph_task_execution_order
    and user code read."""

    def __init__(self, mode):
        self.prev = _state.multithreading
        _state.multithreading = bool(mode)
        self.mode = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.multithreading = self.prev

    def clone(self):
        return self.__class__(self.mode)


def _unsafe_set_version_counter(tensors, versions):
    """torch._C._autograd._unsafe_set_version_counter."""
    tensors, versions = tuple(tensors), tuple(versions)
    if len(tensors) != len(versions):
        raise RuntimeError(f"tensors_len={len(tensors)}, versions_len={len(versions)}")
    for t, v in zip(tensors, versions):
        if v < 0:
            raise RuntimeError(f"Cannot set a version_counter to a value below 0: {v}")
        t._vc[0] = v


class _unsafe_preserve_version_counter(_DecoratorContextManager):
    """Hide the in-place changes made inside the block from the version counters of ``tensors``."""

    def __init__(self, tensors):
        from .._tensor import Tensor
        self.tensors = (tensors,) if isinstance(tensors, Tensor) else tensors
        if not isinstance(self.tensors, tuple):
            raise AssertionError("Expected tensors to be a tuple")
        self.prev_versions = tuple(t._version for t in self.tensors)

    def __enter__(self):
        pass

    def __exit__(self, *args):
        _unsafe_set_version_counter(self.tensors, self.prev_versions)
