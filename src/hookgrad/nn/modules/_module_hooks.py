"""Module hooks: the table of hook kinds, the global module hooks, registration, listing and dispatch.

Hook storage follows the one pattern of hookgrad (``utils/hooks.py``): every ``register_*`` stores the
hook in an id-keyed ``HookDict`` and returns a ``RemovableHandle``; flags that qualify a hook
(with_kwargs, always_call) live in further dicts keyed by the same id. Attribute names are PyTorch's
(``_forward_hooks``, ``_backward_hooks``, ...) because users introspect them.

:data:`HOOK_KINDS` lists every kind once. ``Module.__init__`` makes the dicts from it, ``Module.hooks()``
/ ``remove_hooks()`` and :func:`global_module_hooks` list from it, and ``Module.__setstate__`` fills
in what an old pickle lacks from it. Adding a hook kind is one line there (and its register/run code).

The functions taking ``self`` are methods of ``Module`` (bound in its class body in ``module.py``).
``Module.__call__`` (:func:`_call_impl`) is ``self.forward(*args, **kwargs)`` behind a handful of
truthiness checks when neither the module nor the global registries hold a forward/backward hook;
otherwise :func:`_call_with_hooks` runs PyTorch's steps in PyTorch's order.
"""
import warnings
import weakref
import functools
from collections import namedtuple

from ..._tensor import Tensor
from ...utils.hooks import add_hook, HookInfo, RemovableHandle, HookDict
from ._backward_hook import BackwardHook

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_backward_hook",
           "register_module_full_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook", "register_module_parameter_registration_hook"]

# --------------------------------------------------------------------------------------------
# the table of hook kinds

HookKind = namedtuple("HookKind", "kind attr flags global_attr global_flags")
HookKind.__doc__ = """One kind of module hook.

kind: its name in ``Module.hooks()`` (``"backward"`` is listed as ``"full_backward"`` while the module's
  ``_is_full_backward_hook`` is True); attr: the module's HookDict (PyTorch's attribute name);
  flags: ``{flag: attribute of its flag dict}`` on the module; global_attr / global_flags: the same for
  the global counterpart (register_module_*), names in this file, or None / {}."""

HOOK_KINDS = (
    HookKind("forward_pre", "_forward_pre_hooks", {"with_kwargs": "_forward_pre_hooks_with_kwargs"},
             "_global_forward_pre_hooks", {}),
    HookKind("forward", "_forward_hooks", {"with_kwargs": "_forward_hooks_with_kwargs",
                                           "always_call": "_forward_hooks_always_called"},
             "_global_forward_hooks", {"with_kwargs": "_global_forward_hooks_with_kwargs",
                                       "always_call": "_global_forward_hooks_always_called"}),
    HookKind("backward_pre", "_backward_pre_hooks", {}, "_global_backward_pre_hooks", {}),
    HookKind("backward", "_backward_hooks", {}, "_global_backward_hooks", {}),
    HookKind("state_dict_pre", "_state_dict_pre_hooks", {}, None, {}),
    HookKind("state_dict", "_state_dict_hooks", {}, None, {}),
    HookKind("load_state_dict_pre", "_load_state_dict_pre_hooks", {}, None, {}),
    HookKind("load_state_dict_post", "_load_state_dict_post_hooks", {}, None, {}),
)


def module_hook_dicts():
    """Every HookDict a Module instance holds: each kind's dict and its flag dicts."""
    return tuple(a for k in HOOK_KINDS for a in (k.attr, *k.flags.values()))


def init_hook_dicts(d):
    """Give a module's ``__dict__`` ``d`` its (empty) hook dicts; keep those it has (``__setstate__``
    of an older pickle)."""
    for k in HOOK_KINDS:
        for name in (k.attr, *k.flags.values()):
            if name not in d:
                d[name] = HookDict()
    if "_is_full_backward_hook" not in d:
        d["_is_full_backward_hook"] = None


# --------------------------------------------------------------------------------------------
# global module hooks (GM1-GM5) and registration hooks (R1-R3)
# NOTE: the hot paths read these as globals of this file; ``nn.modules.module._global_*`` reads and
# writes them here (module.py forwards the names), as tests rebind them the way PyTorch's own do.

_global_buffer_registration_hooks = HookDict()
_global_module_registration_hooks = HookDict()
_global_parameter_registration_hooks = HookDict()
_global_backward_pre_hooks = HookDict()
_global_backward_hooks = HookDict()
_global_is_full_backward_hook = None
_global_forward_pre_hooks = HookDict()
_global_forward_hooks = HookDict()
_global_forward_hooks_always_called = HookDict()
_global_forward_hooks_with_kwargs = HookDict()

# the names module.py forwards here
GLOBAL_NAMES = ("_global_buffer_registration_hooks", "_global_module_registration_hooks",
                "_global_parameter_registration_hooks", "_global_is_full_backward_hook",
                *(a for k in HOOK_KINDS if k.global_attr for a in (k.global_attr, *k.global_flags.values())))


def register_module_buffer_registration_hook(hook):
    """Register ``hook(module, name, buffer) -> None or new buffer`` run by every register_buffer."""
    return add_hook(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """Register ``hook(module, name, submodule) -> None or new submodule`` run by every add_module."""
    return add_hook(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """Register ``hook(module, name, param) -> None or new param`` run by every register_parameter."""
    return add_hook(_global_parameter_registration_hooks, hook)


def run_registration_hooks(hooks, module, name, value):
    """The global registration hooks ``hooks`` on ``value``; returns the value to register."""
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def register_module_forward_pre_hook(hook):
    """Global forward pre-hook ``hook(module, args)``, run before every module's own pre-hooks."""
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Global forward hook ``hook(module, args, output)``, run before every module's own forward hooks.

    As in PyTorch, the handle cleans ``always_call`` but not ``with_kwargs`` flags on removal.
    """
    handle = RemovableHandle(_global_forward_hooks, extra_dict=_global_forward_hooks_always_called)
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def _check_backward_kind(full, current, where):
    if current is (not full):
        raise RuntimeError(f"Cannot use both regular backward hooks and full backward hooks {where}. "
                           "Please use only one of them.")


def register_module_backward_hook(hook):
    """Legacy global backward hook (see Module.register_backward_hook)."""
    global _global_is_full_backward_hook
    _check_backward_kind(False, _global_is_full_backward_hook, "as a global Module hook")
    _global_is_full_backward_hook = False
    return add_hook(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook):
    """Global full backward pre-hook ``hook(module, grad_output)``."""
    return add_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """Global full backward hook ``hook(module, grad_input, grad_output)``."""
    global _global_is_full_backward_hook
    _check_backward_kind(True, _global_is_full_backward_hook, "as a global Module hook")
    _global_is_full_backward_hook = True
    return add_hook(_global_backward_hooks, hook)


def _listing(kind, hooks, flag_dicts):
    return [HookInfo(kind, hid, hook, tuple(f for f, fd in flag_dicts.items() if hid in fd))
            for hid, hook in hooks.items()]


def global_module_hooks():
    """The global module hooks (register_module_*), as HookInfo(kind, id, hook, flags)."""
    g = globals()
    out = []
    for k in HOOK_KINDS:
        if k.global_attr is not None:
            kind = "full_backward" if k.kind == "backward" and _global_is_full_backward_hook else k.kind
            out += _listing(kind, g[k.global_attr], {f: g[a] for f, a in k.global_flags.items()})
    return out


# --------------------------------------------------------------------------------------------
# Module methods: registration

def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
    """``hook(module, args) -> None or new args`` (with_kwargs: ``hook(module, args, kwargs) -> None
    or (new_args, new_kwargs)``), run before forward."""
    handle = add_hook(self._forward_pre_hooks, hook, extra_dict=self._forward_pre_hooks_with_kwargs,
                      prepend=prepend)
    if with_kwargs:
        self._forward_pre_hooks_with_kwargs[handle.id] = True
    return handle


def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
    """``hook(module, args, output) -> None or new output`` (with_kwargs: ``hook(module, args, kwargs,
    output)``), run after forward; always_call also runs it when forward raised."""
    handle = add_hook(self._forward_hooks, hook, prepend=prepend,
                      extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
    if with_kwargs:
        self._forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        self._forward_hooks_always_called[handle.id] = True
    return handle


def register_full_backward_pre_hook(self, hook, prepend=False):
    """``hook(module, grad_output) -> tuple or None``, run when grads w.r.t. the outputs are computed."""
    return add_hook(self._backward_pre_hooks, hook, prepend=prepend)


def register_backward_hook(self, hook):
    """Legacy backward hook (deprecated): a post-hook on the grad_fn of the first output tensor."""
    _check_backward_kind(False, self._is_full_backward_hook, "on a single Module")
    self._is_full_backward_hook = False
    return add_hook(self._backward_hooks, hook)


def register_full_backward_hook(self, hook, prepend=False):
    """``hook(module, grad_input, grad_output) -> tuple or None``, run when grads w.r.t. the inputs
    of the module are computed."""
    _check_backward_kind(True, self._is_full_backward_hook, "on a single Module")
    self._is_full_backward_hook = True
    return add_hook(self._backward_hooks, hook, prepend=prepend)


# ---- listing and removing hooks (public; PyTorch issues #2847 and #70455 ask for it) -----------

def hooks(self):
    """Every hook registered on this module (not its children), in running order per kind, as
    ``HookInfo(kind, id, hook, flags)``. Backward hooks are ``"full_backward"`` or ``"backward"``
    (legacy) as registered.

    >>> m = Linear(2, 2); h = m.register_forward_hook(print, always_call=True)
    >>> [(i.kind, i.flags) for i in m.hooks()]
    [('forward', ('always_call',))]
    """
    d = self.__dict__
    out = []
    for k in HOOK_KINDS:
        kind = "full_backward" if k.kind == "backward" and self._is_full_backward_hook else k.kind
        out += _listing(kind, d[k.attr], {f: d[a] for f, a in k.flags.items()})
    return out


def remove_hooks(self, kind=None, recurse=False):
    """Remove every hook of this module (of one ``kind`` if given; and of its submodules if
    ``recurse``), flag entries included. Returns how many were removed."""
    n = 0
    for m in (self.modules() if recurse else (self,)):
        d = m.__dict__
        for k in HOOK_KINDS:
            if kind is not None and kind not in (k.kind, "full_backward" if k.kind == "backward" else k.kind):
                continue
            n += len(d[k.attr])
            for name in (k.attr, *k.flags.values()):
                d[name].clear()
    return n


# --------------------------------------------------------------------------------------------
# Module methods: calling

def _call_impl(self, *args, **kwargs):
    # fast path: nothing registered anywhere
    if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks
            or _global_forward_hooks or _global_forward_pre_hooks or _global_backward_hooks
            or _global_backward_pre_hooks):
        return self.forward(*args, **kwargs)
    return self._call_with_hooks(args, kwargs)


# One hooked call's state, a list (a call costs no object creation): the steps below update it in place,
# so that the always_call hooks see the values as they were when an exception was raised.
_ARGS, _KWARGS, _RESULT, _CALLED = range(4)      # _CALLED: ids of the always_call hooks that ran


def _call_with_hooks(self, args, kwargs):
    """PyTorch's ``_call_impl`` with hooks: forward pre-hooks, the full backward hooks' input wrapping,
    forward, forward hooks, output wrapping, legacy backward hooks; always_call hooks on an error."""
    call = [args, kwargs, None, ()]
    try:
        full = legacy = pre = ()            # captured before the pre-hooks run, as in PyTorch
        if self._backward_pre_hooks or _global_backward_pre_hooks:
            pre = self._get_backward_pre_hooks()
        if self._backward_hooks or _global_backward_hooks:
            full, legacy = self._get_backward_hooks()
        if _global_forward_pre_hooks or self._forward_pre_hooks:
            _run_forward_pre_hooks(self, call)
        bw_hook = None
        if full or pre:
            bw_hook = BackwardHook(self, full, pre)
            call[_ARGS] = bw_hook.setup_input_hook(call[_ARGS])
        call[_RESULT] = self.forward(*call[_ARGS], **call[_KWARGS])
        if _global_forward_hooks or self._forward_hooks:
            _run_forward_hooks(self, call)
        if bw_hook is not None:
            _setup_output_hook(bw_hook, call)
        if legacy:
            _register_legacy_backward_hooks(self, call, legacy)
        return call[_RESULT]
    except Exception:
        _run_always_called_hooks(self, call)
        raise


def _get_backward_hooks(self):
    if not _global_backward_hooks:          # common case: only this module's own hooks
        hooks = list(self._backward_hooks.values())
        return (hooks, []) if self._is_full_backward_hook else ([], hooks)
    full_backward_hooks = []
    if _global_is_full_backward_hook is True:
        full_backward_hooks += _global_backward_hooks.values()
    if self._is_full_backward_hook is True:
        full_backward_hooks += self._backward_hooks.values()
    non_full_backward_hooks = []
    if _global_is_full_backward_hook is False:
        non_full_backward_hooks += _global_backward_hooks.values()
    if self._is_full_backward_hook is False:
        non_full_backward_hooks += self._backward_hooks.values()
    return full_backward_hooks, non_full_backward_hooks


def _get_backward_pre_hooks(self):
    if not _global_backward_pre_hooks:
        return list(self._backward_pre_hooks.values())
    return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]


def _run_forward_pre_hooks(self, call):
    """Global then module forward pre-hooks; each may replace the args (or args and kwargs)."""
    with_kwargs = self._forward_pre_hooks_with_kwargs
    for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
        if hook_id in with_kwargs:
            args_kwargs_result = hook(self, call[_ARGS], call[_KWARGS])
            if args_kwargs_result is not None:
                if isinstance(args_kwargs_result, tuple) and len(args_kwargs_result) == 2:
                    call[_ARGS], call[_KWARGS] = args_kwargs_result
                else:
                    raise RuntimeError("forward pre-hook must return None or a tuple "
                                       f"of (new_args, new_kwargs), but got {args_kwargs_result}.")
        else:
            args_result = hook(self, call[_ARGS])
            if args_result is not None:
                if not isinstance(args_result, tuple):
                    args_result = (args_result,)
                call[_ARGS] = args_result


def _run_forward_hooks(self, call):
    """Global then module forward hooks; each may replace the result. Records the always_call ones."""
    always = self._forward_hooks_always_called
    with_kw = self._forward_hooks_with_kwargs
    for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
        if hook_id in always or hook_id in _global_forward_hooks_always_called:
            if not call[_CALLED]:
                call[_CALLED] = set()
            call[_CALLED].add(hook_id)
        if hook_id in with_kw or hook_id in _global_forward_hooks_with_kwargs:
            hook_result = hook(self, call[_ARGS], call[_KWARGS], call[_RESULT])
        else:
            hook_result = hook(self, call[_ARGS], call[_RESULT])
        if hook_result is not None:
            call[_RESULT] = hook_result


def _setup_output_hook(bw_hook, call):
    result = call[_RESULT]
    if not isinstance(result, (Tensor, tuple)):
        warnings.warn("For backward hooks to be called,"
                      " module output should be a Tensor or a tuple of Tensors"
                      f" but received {type(result)}", stacklevel=3)
    call[_RESULT] = bw_hook.setup_output_hook(result)


def _register_legacy_backward_hooks(self, call, hooks):
    """Legacy backward hooks: post-hooks on the grad_fn of the first tensor of the result."""
    var = call[_RESULT]
    while not isinstance(var, Tensor):
        if isinstance(var, dict):
            var = next(v for v in var.values() if isinstance(v, Tensor))
        else:
            var = var[0]
    grad_fn = var.grad_fn
    if grad_fn is not None:
        for hook in hooks:
            grad_fn.register_hook(_WrappedHook(hook, self))
        self._maybe_warn_non_full_backward_hook(call[_ARGS], call[_RESULT], grad_fn)


def _run_always_called_hooks(self, call):
    """After an exception: the always_call forward hooks (global, then the module's) that have not run."""
    args, kwargs, called = call[_ARGS], call[_KWARGS], call[_CALLED]
    for who, hooks, always, with_kwargs in (
            ("global module", _global_forward_hooks, _global_forward_hooks_always_called, ()),
            ("module", self._forward_hooks, self._forward_hooks_always_called, self._forward_hooks_with_kwargs)):
        for hook_id, hook in tuple(hooks.items()):
            if hook_id in always and hook_id not in called:
                try:
                    if hook_id in with_kwargs:
                        hook_result = hook(self, args, kwargs, call[_RESULT])
                    else:
                        hook_result = hook(self, args, call[_RESULT])
                    if hook_result is not None:
                        call[_RESULT] = hook_result
                except Exception as e:
                    warnings.warn(f"{who} forward hook with ``always_call=True`` raised an exception "
                                  f"that was silenced as another error was raised in forward: {str(e)}")


def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn):
    if not isinstance(result, Tensor):
        if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
            warnings.warn("Using non-full backward hooks on a Module that does not return a "
                          "single Tensor or a tuple of Tensors is deprecated and will be removed "
                          "in future versions. This hook will be missing some of the grad_output. "
                          "Please use register_full_backward_hook to get the documented behavior.",
                          FutureWarning, stacklevel=2)
            return
    else:
        result = (result,)
    if not isinstance(inputs, Tensor):
        if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
            warnings.warn("Using non-full backward hooks on a Module that does not take as input a "
                          "single Tensor or a tuple of Tensors is deprecated and will be removed "
                          "in future versions. This hook will be missing some of the grad_input. "
                          "Please use register_full_backward_hook to get the documented behavior.",
                          FutureWarning, stacklevel=2)
            return
    else:
        inputs = (inputs,)
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warnings.warn("Using a non-full backward hook when outputs are nested in python data structure "
                      "is deprecated and will be removed in future versions. This hook will be missing "
                      "some grad_output.", FutureWarning, stacklevel=2)
    elif len(out_grad_fn) > 1:
        warnings.warn("Using a non-full backward hook when outputs are generated by different autograd Nodes "
                      "is deprecated and will be removed in future versions. This hook will be missing "
                      "some grad_output. Please use register_full_backward_hook to get the documented "
                      "behavior.", FutureWarning, stacklevel=2)
    else:
        inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
        next_functions = {n[0] for n in grad_fn.next_functions}
        if inputs_grad_fn != next_functions:
            warnings.warn("Using a non-full backward hook when the forward contains multiple autograd Nodes "
                          "is deprecated and will be removed in future versions. This hook will be missing "
                          "some grad_input. Please use register_full_backward_hook to get the documented "
                          "behavior.", FutureWarning, stacklevel=2)


# --------------------------------------------------------------------------------------------

class _WrappedHook:
    """A hook, optionally bound to a module through a weak reference (called as hook(module, ...))."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = False
        if module is not None:
            self.module = weakref.ref(module)
            self.with_module = True

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        result = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            result["module"] = self.module()
        return result

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])
