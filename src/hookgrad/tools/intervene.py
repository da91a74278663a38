"""Intervene: replace or edit module outputs at named paths, and intercept module calls.

>>> with intervene(model, {"layer1.relu": torch.zeros(8, 16)}):   # a value replaces the output
...     model(x)
>>> with intervene(model, {"layer*.relu": lambda out: out * 0.5}): # a function edits it
...     model(x)
>>> def around(call, module, args, kwargs):                       # change args, skip or replace
...     return call(args[0] * 2, **kwargs)
>>> with intercept(model, "fc", around):
...     model(x)

``intervene`` uses one public forward hook per module (``register_forward_hook``: a non-None return
replaces the output, so gradients flow as through the returned value). ``intercept`` must be able to
*skip* the call, which no PyTorch hook can do (a forward pre-hook can change the arguments but cannot
prevent ``forward``), so inside the context it sets an instance attribute ``module.forward`` (public
Python; ``Module.__call__`` looks ``forward`` up on the instance) and restores the previous state on exit.
"""
import functools
import inspect
import warnings

from .lib import lib_of
from .paths import match

__all__ = ["intercept", "intervene"]


def _arity(fn, where):
    """1 for ``fn(output)``, 3 for ``fn(module, args, output)``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1                      # builtins without a signature: fn(output)

    def binds(n):
        try:
            sig.bind(*([None] * n))
            return True
        except TypeError:
            return False
    if binds(1):
        return 1
    if binds(3):
        return 3
    raise TypeError(f"intervene: the function for {where!r} must take (output) or (module, args, output); "
                    f"{getattr(fn, '__qualname__', fn)!r} takes {sig}")


def _make_edit_hook(path, value, Tensor):
    if callable(value) and not isinstance(value, Tensor):
        fn = value
        if _arity(fn, path) == 3:
            def hook(module, args, output):
                return fn(module, args, output)
        else:
            def hook(module, args, output):
                return fn(output)
        return hook
    if value is None:
        raise TypeError(f"intervene: the value for {path!r} is None; give a Tensor (or any object) to replace the "
                        "output with, or a function fn(output) / fn(module, args, output)")

    def hook(module, args, output):
        if isinstance(value, Tensor) and isinstance(output, Tensor) and value.shape != output.shape:
            raise RuntimeError(f"intervene: the replacement for {path!r} ({type(module).__name__}) has shape "
                               f"{tuple(value.shape)} but the module's output has shape {tuple(output.shape)}; "
                               "use a function to change the shape on purpose")
        return value
    return hook


class intervene:
    """Context manager replacing or editing module outputs.

    ``edits`` maps a module path (or fnmatch pattern) to either

    - a value (a Tensor, or any object): it replaces the output of every call, and gradients flow as
      through that value (into it if it requires grad; the module's own computation gets none). A Tensor
      must have the output's shape (``RuntimeError`` otherwise);
    - a function ``fn(output)`` or ``fn(module, args, output)``: its return value replaces the output;
      returning ``None`` keeps the output (edited in place, if the function did so).

    Edits run as forward hooks registered on entry, i.e. after the module's hooks registered earlier;
    nested ``intervene`` contexts on the same module compose: the inner one sees the outer one's result.
    """

    def __init__(self, model, edits):
        if not isinstance(edits, dict):
            raise TypeError(f"intervene: edits must be a dict {{path: value_or_fn}}, got {type(edits).__name__}")
        self.model = model
        self._Tensor = lib_of(model).Tensor
        self.edits = dict(edits)
        self._handles = []

    def __enter__(self):
        try:
            for key, value in self.edits.items():
                for path, mod in match(self.model, key, "intervene"):
                    self._handles.append(mod.register_forward_hook(_make_edit_hook(path, value, self._Tensor)))
        except BaseException:
            self._remove()
            raise
        return self

    def _remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def __exit__(self, *exc):
        self._remove()
        return False


# ---- intercept ---------------------------------------------------------------------------------------
_DISPATCH = {}       # id(module) -> _Dispatch, while at least one intercept is active on it


class _Dispatch:
    """The single ``forward`` instance attribute installed on an intercepted module; it runs the active
    interceptors (last entered = outermost) around the module's original forward."""

    def __init__(self, module):
        self.module = module
        self.had_attr = "forward" in module.__dict__
        self.saved = module.__dict__.get("forward")
        self.arounds = []            # [(token, around)] in entry order

        original = self.saved if self.had_attr else type(module).forward.__get__(module, type(module))
        self.original = original

        @functools.wraps(original)
        def forward(*args, **kwargs):
            return self._run(tuple(self.arounds), len(self.arounds) - 1, args, kwargs)
        self.wrapper = forward

    def _run(self, arounds, i, args, kwargs):
        if i < 0:
            return self.original(*args, **kwargs)
        around = arounds[i][1]

        def call(*a, **k):
            return self._run(arounds, i - 1, a, k)
        return around(call, self.module, args, kwargs)

    def install(self):
        self.module.forward = self.wrapper

    def uninstall(self, path):
        current = self.module.__dict__.get("forward")
        if current is not self.wrapper:
            warnings.warn(f"intercept: {path!r}.forward was reassigned inside the context; leaving it as it is "
                          "(the original forward is not restored)", RuntimeWarning, stacklevel=3)
            return
        if self.had_attr:
            self.module.forward = self.saved
        else:
            del self.module.forward


class intercept:
    """Context manager running ``around(call, module, args, kwargs)`` in place of the module's ``forward``
    at ``path`` (a module path or fnmatch pattern). ``around`` may

    - change the arguments: ``return call(*new_args, **new_kwargs)``;
    - replace the output: ``return f(call(*args, **kwargs))``;
    - skip the module: return anything without calling ``call``.

    The module's hooks still run around it (pre-hooks before ``around``, forward hooks after, seeing
    the args as given to the module and ``around``'s return value as the output). Nested intercepts of
    one module compose: the last entered is the outermost (its ``call`` runs the earlier ones). Exits
    in any order are fine; on the last exit the module's ``forward`` attribute is restored exactly.
    """

    def __init__(self, model, path, around):
        if not callable(around):
            raise TypeError(f"intercept: around must be callable as around(call, module, args, kwargs), "
                            f"got {type(around).__name__}")
        self.model = model
        self.path = path
        self.around = around
        self._entries = []

    def __enter__(self):
        token = object()
        try:
            for path, mod in match(self.model, self.path, "intercept"):
                d = _DISPATCH.get(id(mod))
                if d is None:
                    d = _DISPATCH[id(mod)] = _Dispatch(mod)
                    d.install()
                d.arounds.append((token, self.around))
                self._entries.append((path, mod, token))
        except BaseException:
            self._remove()
            raise
        return self

    def _remove(self):
        for path, mod, token in self._entries:
            d = _DISPATCH.get(id(mod))
            if d is None:
                continue
            d.arounds[:] = [e for e in d.arounds if e[0] is not token]
            if not d.arounds:
                del _DISPATCH[id(mod)]
                d.uninstall(path)
        self._entries = []

    def __exit__(self, *exc):
        self._remove()
        return False
