"""torch.jit as the eager no-ops PyTorch code relies on: hookgrad has no TorchScript compiler.

``script`` returns its argument, ``trace`` runs the function once on the example inputs (as PyTorch's
tracer does, so hooks and side effects happen) and returns it, the decorators mark functions as PyTorch's
do, ``is_scripting()``/``is_tracing()`` are False, ``fork`` runs eagerly and returns a completed Future.
``ScriptModule``/``ScriptFunction`` exist for isinstance checks; nothing is an instance of them.
Saving and loading TorchScript archives is a non-goal: ``save``/``load`` raise.
"""
import contextlib
import inspect
import os
import typing
import warnings

from ..futures import Future, _CFuture

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "annotate", "Final", "interface", "fork", "wait", "save", "load", "ScriptModule", "ScriptFunction",
           "Future", "Attribute", "Error", "freeze", "optimize_for_inference", "script_if_tracing",
           "optimized_execution", "fuser", "isinstance", "TracerWarning", "set_fusion_strategy",
           "enable_onednn_fusion", "onednn_fusion_enabled", "strict_fusion", "CompilationUnit"]

Final = typing.Final
_builtin_isinstance = isinstance
_SWITCH = "Please switch to `torch.compile` or `torch.export`."
_COMPILE = "Please use `torch.compile` instead."


def _deprecated(name, advice):
    """PyTorch 2.13 deprecates TorchScript's entry points with this DeprecationWarning."""
    warnings.warn(f"`torch.jit.{name}` is deprecated. {advice}", DeprecationWarning, stacklevel=3)


_NON_GOAL = "TorchScript is a non-goal of hookgrad (see docs/coverage.md): it runs eagerly only"


class FunctionModifiers:
    """How TorchScript treats a function (the mark PyTorch's decorators leave in ``_torchscript_modifier``)."""
    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from an exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = "if this method is not scripted, copy the python method onto the scripted model"
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


class ScriptModule:
    """torch.jit.ScriptModule, for isinstance checks: hookgrad never makes one (script() returns the module)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"torch.jit.ScriptModule cannot be constructed: {_NON_GOAL}")


class ScriptFunction:
    """torch.jit.ScriptFunction, for isinstance checks: hookgrad never makes one."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"torch.jit.ScriptFunction cannot be constructed: {_NON_GOAL}")


RecursiveScriptModule = TopLevelTracedModule = TracedModule = ScriptModule


class CompilationUnit:
    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"torch.jit.CompilationUnit cannot be constructed: {_NON_GOAL}")


class Error(Exception):
    """torch.jit.Error: the exception TorchScript raises from compiled code."""


class TracerWarning(Warning):
    @staticmethod
    def ignore_lib_warnings():
        warnings.filterwarnings("ignore", category=TracerWarning, module="hookgrad.(?!jit)")


class Attribute(typing.NamedTuple):
    value: typing.Any
    type: typing.Any


# ---- state queries
def is_scripting():
    """False: hookgrad code never runs under the TorchScript compiler."""
    return False


def is_tracing():
    """False: hookgrad's trace() runs the function eagerly."""
    return False


# ---- compiling: the identity
def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Return ``obj`` unchanged (an nn.Module, function or class): it runs eagerly, as in PyTorch under
    ``PYTORCH_JIT=0``."""
    _deprecated("script", _SWITCH)
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with torch.jit.optimized_execution()` "
                      "instead", FutureWarning, stacklevel=2)
    return obj


def _as_args(example_inputs):
    if example_inputs is None:
        return ()
    return tuple(example_inputs) if _builtin_isinstance(example_inputs, tuple) else (example_inputs,)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None, example_kwarg_inputs=None,
          _store_inputs=True):
    """Run ``func`` once on the example inputs, as PyTorch's tracer does (hooks fire, state updates), and
    return ``func`` itself: calling the result behaves as the traced function would."""
    _deprecated("trace", _SWITCH)
    if not callable(func):
        raise RuntimeError(f"Could not get name of python class object (hookgrad: trace() needs a function or "
                           f"nn.Module, got {type(func).__name__})")
    if example_inputs is None and example_kwarg_inputs is None:
        raise TypeError("'NoneType' object is not iterable (hookgrad: trace() needs example_inputs)")
    if example_kwarg_inputs is not None:
        if not _builtin_isinstance(example_kwarg_inputs, dict):
            raise TypeError(f"trace(): example_kwarg_inputs should be a dict, got "
                            f"{type(example_kwarg_inputs).__name__}")
        func(**example_kwarg_inputs)
    else:
        func(*_as_args(example_inputs))
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5, strict=True,
                 _force_outplace=False, _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """Run each named method of ``mod`` once on its example inputs and return ``mod``."""
    _deprecated("trace_method", _SWITCH)
    if not _builtin_isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    for name, args in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg:
            method(**args)
        else:
            method(*_as_args(args))
    return mod


def script_if_tracing(fn):
    return fn


_script_if_tracing = script_if_tracing     # the private name torchvision imports


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    _deprecated("freeze", _COMPILE)
    raise RuntimeError(f"Freezing expects a ScriptModule as input. Please use torch.jit.script or torch.jit.trace to "
                       f"script your 'nn.Module'. (hookgrad: {_NON_GOAL})")


def optimize_for_inference(mod, other_methods=None):
    raise RuntimeError(f"optimize_for_inference expects a ScriptModule as input. Please use torch.jit.script or "
                       f"torch.jit.trace to script your 'nn.Module'. (hookgrad: {_NON_GOAL})")


# ---- decorators: mark and return
def ignore(drop=False, **kwargs):
    """Leave ``fn`` as a Python call in scripted code (here: return it, marked)."""
    if callable(drop):
        drop._torchscript_modifier = FunctionModifiers.IGNORE
        return drop
    if not _builtin_isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        warnings.warn("ignore(drop_on_export=True) has been deprecated. TorchScript will now drop the function call on "
                      "compilation. Use torch.jit.unused now. {}", FutureWarning, stacklevel=2)
        drop = drop_on_export
    elif drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the function call on compilation. "
                      "Use torch.jit.unused now. {}", FutureWarning, stacklevel=2)

    def decorator(fn):
        fn._torchscript_modifier = FunctionModifiers.UNUSED if drop else FunctionModifiers.IGNORE
        return fn
    return decorator


def unused(fn):
    """Replace ``fn`` by a raise in scripted code (here: return it, marked)."""
    if _builtin_isinstance(fn, property):
        fn.fget._torchscript_modifier = FunctionModifiers.UNUSED
        if fn.fset:
            fn.fset._torchscript_modifier = FunctionModifiers.UNUSED
        return fn
    fn._torchscript_modifier = FunctionModifiers.UNUSED
    return fn


def export(fn):
    fn._torchscript_modifier = FunctionModifiers.EXPORT
    return fn


def _drop(fn):
    fn._torchscript_modifier = FunctionModifiers._DROP
    return fn


def _overload(func):
    return func


def _overload_method(func):
    return func


def script_method(fn):
    return fn


def interface(obj):
    warnings.warn("`torch.jit.interface` is deprecated. Please use `torch.compile` instead.", DeprecationWarning,
                  stacklevel=2)
    if not inspect.isclass(obj):
        raise RuntimeError("interface must be applied to a class")
    return obj


def annotate(the_type, the_value):
    """Return ``the_value`` (the type is for the TorchScript compiler)."""
    return the_value


def isinstance(obj, target_type):  # noqa: A001  (PyTorch's name)
    return _builtin_isinstance(obj, typing.get_origin(target_type) or target_type)


def _unwrap_optional(x):
    assert x is not None, "Unwrapping null optional"
    return x


# ---- asynchronous calls: eager
def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` now and return a completed Future holding its result."""
    _deprecated("fork", _COMPILE)
    fut = _CFuture()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future):
    _deprecated("wait", _COMPILE)
    return future.wait()


_fork, _wait = fork, wait


# ---- execution settings: accepted, no effect
@contextlib.contextmanager
def optimized_execution(should_optimize):
    yield


@contextlib.contextmanager
def fuser(name):
    yield


@contextlib.contextmanager
def strict_fusion():
    yield


def set_fusion_strategy(strategy):
    return [("STATIC", 2), ("DYNAMIC", 10)]


_onednn = [False]


def enable_onednn_fusion(enabled):
    _onednn[0] = bool(enabled)


def onednn_fusion_enabled():
    return _onednn[0]


# ---- TorchScript archives: a non-goal
def save(m, f, _extra_files=None):
    """TorchScript archives are a non-goal: use hookgrad.save(model.state_dict(), f)."""
    _deprecated("save", "Please switch to `torch.export`.")
    if not hasattr(m, "save"):
        raise AttributeError(f"'{type(m).__name__}' object has no attribute 'save' (hookgrad: torch.jit.save writes "
                             f"TorchScript archives; {_NON_GOAL}. Use torch.save(model.state_dict(), f))")
    return m.save(f, _extra_files=_extra_files)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """TorchScript archives are a non-goal: use hookgrad.load on a state_dict saved with hookgrad/torch.save."""
    _deprecated("load", "Please switch to `torch.export`.")
    if _builtin_isinstance(f, (str, os.PathLike)) and not os.path.exists(f):
        raise ValueError(f"The provided filename {f} does not exist")
    if _builtin_isinstance(f, (str, os.PathLike)) and os.path.isdir(f):
        raise ValueError(f"The provided filename {f} is a directory")
    raise RuntimeError(f"torch.jit.load reads TorchScript archives: {_NON_GOAL}. Save the weights with "
                       f"torch.save(model.state_dict(), f) and load them with torch.load(f) instead.")


from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.jit")
