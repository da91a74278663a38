"""torch.compiler: hookgrad has no compiler, so nothing is ever being compiled or exported.

``torch.compile`` returns the module or function unchanged (every hook keeps firing; see docs/differences.md); the
decorators here (``disable``, ``allow_in_graph``, ``assume_constant_result``, ``substitute_in_graph``) return the
function they are given, and the queries (``is_compiling``, ``is_exporting``) answer False, which is what PyTorch
answers in eager mode. ``set_stance`` is recorded and works as a call, a decorator or a ``with`` block.
"""
import contextlib
import functools

from .._misc import compile  # noqa: A004  (torch.compiler.compile is torch.compile)

__all__ = ["compile", "assume_constant_result", "reset", "allow_in_graph", "substitute_in_graph", "list_backends",
           "disable", "set_stance", "cudagraph_mark_step_begin", "is_compiling", "is_dynamo_compiling",
           "is_exporting", "set_enable_guard_collectives", "nested_compile_region", "keep_tensor_guards_unsafe",
           "skip_guard_on_inbuilt_nn_modules_unsafe", "skip_guard_on_all_nn_modules_unsafe",
           "skip_guard_on_globals_unsafe", "skip_all_guards_unsafe", "keep_portable_guards_unsafe", "wrap_numpy",
           "get_default_backend", "set_default_backend"]

_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
            "aot_eager_then_compile")
_state = {"stance": "default", "backend": "inductor"}


def is_compiling():
    """True while Dynamo traces (or torch.export exports) the calling code: never in hookgrad."""
    return False


def is_dynamo_compiling():
    return False


def is_exporting():
    return False


def disable(fn=None, recursive=True, *, reason=None):
    """Exclude ``fn`` from compilation: there is none, so ``fn`` itself (or, without ``fn``, a decorator)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    return fn


def _same(fn):
    return fn


allow_in_graph = assume_constant_result = wrap_numpy = _same


def substitute_in_graph(original_fn, *, can_constant_fold_through=False, skip_signature_check=False):
    """A decorator that registers a traceable stand-in for ``original_fn`` in Dynamo: returns the stand-in."""
    if not callable(original_fn):
        raise TypeError(f"substitute_in_graph expects a function but got {type(original_fn)!r}")
    return _same


def nested_compile_region(fn=None, *, options=None, max_reuse_entries=8, reuse_hash_fn=None):
    return _same if fn is None else fn


def reset():
    """Clear the compilation caches: there are none."""


def cudagraph_mark_step_begin():
    """Mark the start of an inference or training step for CUDA graphs: there are none."""


def list_backends(exclude_tags=("debug", "experimental")):
    """The compiler backends ``torch.compile`` accepts: none run in hookgrad."""
    return []


def get_default_backend():
    return _state["backend"]


def set_default_backend(backend):
    _state["backend"] = backend


def set_enable_guard_collectives(enabled):
    return False


def _guard_filter(*args, **kwargs):
    return []


keep_tensor_guards_unsafe = skip_guard_on_inbuilt_nn_modules_unsafe = skip_guard_on_all_nn_modules_unsafe = \
    skip_guard_on_globals_unsafe = skip_all_guards_unsafe = keep_portable_guards_unsafe = _guard_filter


class set_stance(contextlib.ContextDecorator):
    """Set the compiler's stance (recorded; nothing is compiled): a call, a decorator or a ``with`` block."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if stance not in _STANCES:
            raise RuntimeError(f"invalid torch.compile stance '{stance}'")
        self.prev = _state["stance"]
        self.stance = stance
        _state["stance"] = stance

    def __enter__(self):
        _state["stance"] = self.stance
        return self

    def __exit__(self, *exc):
        _state["stance"] = self.prev
        return False


from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.compiler")
