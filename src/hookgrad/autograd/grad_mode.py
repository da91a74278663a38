"""Grad-mode switches: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local)."""
import functools
import inspect
import sys
import warnings

# the thread's modes live below autograd, with the Tensor (numpy() reads grad mode): one state, shared
from .._tensor import _grad_state as _state  # noqa: E402


def is_grad_enabled():
    return _state.enabled


def is_inference_mode_enabled():
    return _state.inference


def _wrap_generator(ctx_factory, func):
    """The generator ``func`` with the mode entered around each step it runs (first ``next``, ``send``,
    ``throw`` and ``close``) and the caller's mode in force between steps, as torch.utils._contextlib does."""
    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value
    return generator_context


class _DecoratorContextManager:
    """Usable as ``with ctx():`` and as ``@ctx()`` (and, like torch, as bare ``@ctx``). Each call of the
    decorated function runs under a fresh copy (``clone()``); generators get the mode around each step."""

    def __new__(cls, *args, **kwargs):
        # like torch's _NoParamDecoratorContextManager: any argument given is the function decorated
        if cls in (no_grad, enable_grad) and len(args) == 1 and args[0] is not None and not kwargs:
            return cls()(args[0])
        return super().__new__(cls)

    def __call__(self, orig_func):
        if inspect.isclass(orig_func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You should only "
                "decorate functions or methods. To preserve the current behavior of class decoration, you can "
                "directly decorate the `__init__` method and nothing else.", FutureWarning, stacklevel=2)
            func = lambda *args, **kwargs: orig_func(*args, **kwargs)  # noqa: E731
        else:
            func = orig_func
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(self.clone, func)

        @functools.wraps(func)
        def decorate_context(*a, **k):
            with self.clone():
                return func(*a, **k)
        return decorate_context

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

    def __call__(self, orig_func):
        _state.enabled = self.prev        # used as a decorator: the global mode is left as it was
        return super().__call__(orig_func)

    def __enter__(self):
        _state.enabled = self.mode

    def __exit__(self, *exc):
        _state.enabled = self.prev

    def __repr__(self):
        return f"torch.autograd.grad_mode.set_grad_enabled(mode={self.mode})"

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


def _is_view_replay_enabled():
    return _state.view_replay


def _set_view_replay_enabled(mode):
    _state.view_replay = bool(mode)


class _force_original_view_tracking(_DecoratorContextManager):
    """Sets view replay (torch.autograd.is_view_replay_enabled) at construction, restores it on exit."""

    def __init__(self, mode):
        self.prev = _state.view_replay
        _state.view_replay = bool(mode)
        self.mode = mode

    def __call__(self, orig_func):
        _state.view_replay = self.prev
        return super().__call__(orig_func)

    def __enter__(self):
        _state.view_replay = bool(self.mode)

    def __exit__(self, *exc):
        _state.view_replay = self.prev

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
