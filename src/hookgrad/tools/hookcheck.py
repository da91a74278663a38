"""Hook misuse caught at registration, on hookgrad and torch models.

- ``check_hooks(model, optimizer=None)`` looks at every hook already on the model's modules and
  parameters (and the optimizer's step hooks) and returns the problems found, each also warned as a
  :class:`HookMisuseWarning`.
- ``with strict_hooks(model):`` checks every ``register_*`` call as it happens (on the library of
  ``model``), with the same checks, so the warning points at the line that registered the hook.

The checks: the hook's arity against what its kind is called with; a post-accumulate-grad hook whose
parameter is named like a gradient (it receives the parameter: read ``param.grad``); a hook of a kind
that must return None whose code returns a value; the legacy ``register_backward_hook`` on a module of
several ops (its grad_input then belongs to the module's last op only). Each warning names the hook
(qualified name, file:line) and the module path (or parameter name).
"""
import dis
import inspect
import re
import threading
import warnings

from .lib import library_of, lib_of
from .paths import module_paths

__all__ = ["check_hooks", "strict_hooks", "HookMisuseWarning", "HookProblem", "KINDS"]


class HookMisuseWarning(UserWarning):
    """A hook registered in a way that will not do what it looks like it does."""


class HookProblem:
    """One finding: ``kind`` (e.g. ``"forward"``), ``where`` (module path or parameter name), ``hook``,
    ``problem`` (a sentence)."""
    __slots__ = ("kind", "where", "hook", "problem")

    def __init__(self, kind, where, hook, problem):
        self.kind, self.where, self.hook, self.problem = kind, where, hook, problem

    def message(self):
        return f"{self.kind} hook {hook_name(self.hook)} on {self.where}: {self.problem}"

    def __repr__(self):
        return f"HookProblem({self.message()!r})"


# kind -> (positional args it is called with, their names, must return None)
KINDS = {
    "forward_pre": (2, "(module, args)", False),
    "forward_pre_with_kwargs": (3, "(module, args, kwargs)", False),
    "forward": (3, "(module, args, output)", False),
    "forward_with_kwargs": (4, "(module, args, kwargs, output)", False),
    "full_backward_pre": (2, "(module, grad_output)", False),
    "full_backward": (3, "(module, grad_input, grad_output)", False),
    "backward": (3, "(module, grad_input, grad_output)", False),
    "load_state_dict_post": (2, "(module, incompatible_keys)", True),
    "tensor": (1, "(grad)", False),
    "post_accumulate_grad": (1, "(param)", True),
    "step_pre": (3, "(optimizer, args, kwargs)", False),
    "step_post": (3, "(optimizer, args, kwargs)", True),
}

_GRADLIKE = re.compile(r"^(g|dp|dw|grads?|gradient|grad_.*|.*_grads?|d_?param)$")


def hook_name(hook):
    fn = inspect.unwrap(getattr(hook, "func", hook))       # functools.partial -> its function
    name = getattr(fn, "__qualname__", None) or type(hook).__name__
    code = getattr(fn, "__code__", None)
    if code is not None:
        return f"{name} ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})"
    return name


def _arity_problem(hook, kind):
    n, names, _ = KINDS[kind]
    try:
        sig = inspect.signature(hook)
    except (TypeError, ValueError):     # a builtin: cannot tell
        return None
    try:
        sig.bind(*([None] * n))
    except TypeError:
        return f"it takes {_describe(sig)} but {kind} hooks are called with {n} arguments {names}"
    return None


def _describe(sig):
    ps = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    req = [p for p in ps if p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        return f"at least {len(req)} positional arguments"
    return f"{len(req)} positional argument{'s' if len(req) != 1 else ''}" + (
        f" (up to {len(ps)})" if len(ps) != len(req) else "") + f" {tuple(p.name for p in ps)}"


def _first_param(hook):
    try:
        ps = [p for p in inspect.signature(hook).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    return ps[0].name if ps else None


_VALUE_OPS = {"LOAD_FAST", "LOAD_DEREF", "LOAD_ATTR", "BINARY_OP", "BINARY_SUBSCR", "BUILD_TUPLE", "BUILD_LIST",
              "BUILD_MAP", "COMPARE_OP", "UNARY_NEGATIVE", "UNARY_NOT", "BUILD_SLICE", "FORMAT_VALUE",
              "BUILD_STRING", "IS_OP", "CONTAINS_OP"}


def returns_value(hook):
    """True when the hook's code visibly returns something other than None: a variable, an expression,
    a non-None constant, or the result of an in-place tensor method (``p.grad.mul_(2)`` returns the
    tensor). A call whose result cannot be known (``print(...)``, ``opt.step()``) is not counted."""
    fn = inspect.unwrap(getattr(hook, "func", hook))
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__call__", None), "__code__", None)
    if code is None:
        return False
    ins = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "NOP", "PRECALL", "KW_NAMES")]
    for k, i in enumerate(ins):
        if i.opname == "RETURN_CONST" and i.argval is not None:
            return True
        if i.opname != "RETURN_VALUE" or k == 0:
            continue
        prev = ins[k - 1]
        if prev.opname == "LOAD_CONST":
            if prev.argval is not None:
                return True
        elif prev.opname in _VALUE_OPS:
            return True
        elif prev.opname == "CALL":
            # the method called last: an in-place tensor method (name ending in one "_") returns the tensor
            calls = 0
            for j in range(k - 1, -1, -1):
                op = ins[j]
                if op.opname == "CALL":
                    calls += 1
                elif op.opname in ("LOAD_METHOD", "LOAD_ATTR") and calls == 1:
                    name = op.argval
                    if name.endswith("_") and not name.endswith("__") and name[0] != "_":
                        return True
                    break
                elif op.opname.startswith(("JUMP", "POP_JUMP", "RETURN")):
                    break
    return False


def problems_of(hook, kind, where, module=None):
    """The :class:`HookProblem` list for one hook of ``kind`` registered at ``where``."""
    out = []
    msg = _arity_problem(hook, kind)
    if msg:
        out.append(HookProblem(kind, where, hook, msg))
    if kind == "post_accumulate_grad":
        first = _first_param(hook)
        if first and _GRADLIKE.match(first):
            out.append(HookProblem(kind, where, hook, f"its parameter is named {first!r}, but a post-accumulate-grad "
                                   "hook receives the parameter itself, not its gradient: read param.grad "
                                   "(and modify it in place) instead"))
    if KINDS[kind][2] and returns_value(hook):
        out.append(HookProblem(kind, where, hook, f"{kind} hooks must return None, but this one returns a value "
                               "(ignored or an error; modify the tensor in place instead)"))
    if kind == "backward" and module is not None and next(iter(module.children()), None) is not None:
        kids = [n for n, _ in module.named_children()][:4]
        out.append(HookProblem(kind, where, hook, f"the legacy register_backward_hook on {type(module).__name__}, "
                               f"a module of several ops (children {kids}): its grad_input is the gradient of the "
                               "last op's inputs only, not of the module's; use register_full_backward_hook"))
    return out


def _warn(found, stacklevel):
    for p in found:
        warnings.warn(p.message(), HookMisuseWarning, stacklevel=stacklevel)


_KIND = {"backward_pre": "full_backward_pre"}      # the registry's kind names -> this checker's


_inside = threading.local()      # a strict wrapper is running on this thread


def _module_hooks(mod):
    """(kind, hook) for every hook on one module, from the library's own listing (tools.lib)."""
    out = []
    for h in lib_of(mod).module_hooks(mod):
        kind = _KIND.get(h.kind, h.kind)
        if "with_kwargs" in h.flags and kind in ("forward", "forward_pre"):
            kind += "_with_kwargs"
        out.append((kind, getattr(h.hook, "hook", h.hook) if kind == "load_state_dict_post" else h.hook))
    return out


def check_hooks(model, optimizer=None, warn=True):
    """Check every hook already registered on ``model`` (a hookgrad or torch module): its modules'
    hooks, its parameters' tensor and post-accumulate-grad hooks, and ``optimizer``'s step hooks.
    Returns the :class:`HookProblem` list (empty when all is well); with ``warn`` each is also warned."""
    found = []
    for path, mod in model.named_modules():
        for kind, h in _module_hooks(mod):
            found += problems_of(h, kind, f"module {path or '<root>'!r}", mod)
    lib = lib_of(model)
    for name, p in model.named_parameters():
        for h in lib.tensor_hooks(p):
            found += problems_of(h.hook, "tensor" if h.kind == "grad" else h.kind, f"parameter {name!r}")
    if optimizer is not None:
        for h in lib.optimizer_hooks(optimizer):
            if h.kind in ("step_pre", "step_post"):
                found += problems_of(h.hook, h.kind, f"optimizer {type(optimizer).__name__}")
    if warn:
        _warn(found, 3)
    return found


# ---- strict mode: the register_* methods checked as they are called ---------------------------------
_MODULE_METHODS = (("register_forward_pre_hook", "forward_pre"), ("register_forward_hook", "forward"),
                   ("register_full_backward_pre_hook", "full_backward_pre"),
                   ("register_full_backward_hook", "full_backward"), ("register_backward_hook", "backward"),
                   ("register_load_state_dict_post_hook", "load_state_dict_post"))
_TENSOR_METHODS = (("register_hook", "tensor"), ("register_post_accumulate_grad_hook", "post_accumulate_grad"))
_OPTIM_METHODS = (("register_step_pre_hook", "step_pre"), ("register_step_post_hook", "step_post"))


class strict_hooks:
    """Context manager: while active, every ``register_*`` hook call on the library of ``model``
    (Module, Tensor/Parameter and Optimizer methods) is checked before it registers, with the checks of
    :func:`check_hooks`; a problem is warned (``HookMisuseWarning``, pointing at the registering line)
    or, with ``error=True``, raised as ``TypeError`` (and the hook is not registered).

    ``model`` names modules and parameters by their path under it (others by their class); with no
    model, ``lib`` (default hookgrad) picks the library. The registration itself is unchanged: same
    handle, same order, same storage. Not thread-scoped: it patches the library's classes while active.
    """

    def __init__(self, model=None, *, error=False, lib=None):
        self.model = model
        self.lib = lib if lib is not None else library_of(model)
        self.error = error
        self.found = []
        self._saved = []

    def _where_module(self, mod):
        p = self._paths.get(id(mod)) if self._paths else None
        return f"module {p or '<root>'!r}" if p is not None else f"module {type(mod).__name__}"

    def _where_tensor(self, t):
        name = self._params.get(id(t))
        return f"parameter {name!r}" if name else f"tensor of shape {tuple(t.shape)}"

    def _report(self, found):
        self.found += found
        if found and self.error:
            raise TypeError("strict_hooks: " + "; ".join(p.message() for p in found))
        _warn(found, 4)

    def _wrap(self, owner, meth, kind, where):
        orig = owner.__dict__[meth]
        report = self._report

        def wrapper(obj, hook, *args, **kwargs):
            if getattr(_inside, "on", False):       # a registration method calling another one (a subclass's
                return orig(obj, hook, *args, **kwargs)     # override calling Tensor's): checked once, outermost
            k = kind
            if kwargs.get("with_kwargs") and kind in ("forward", "forward_pre"):
                k = kind + "_with_kwargs"
            report(problems_of(hook, k, where(obj), obj if kind == "backward" else None))
            _inside.on = True
            try:
                return orig(obj, hook, *args, **kwargs)
            finally:
                _inside.on = False
        wrapper.__wrapped__ = orig
        wrapper.__name__ = meth
        wrapper.__doc__ = getattr(orig, "__doc__", None)
        self._saved.append((owner, meth, orig))
        setattr(owner, meth, wrapper)

    def __enter__(self):
        if self._saved:
            raise RuntimeError("strict_hooks: this context is already active")
        lib = self.lib
        self._paths = module_paths(self.model) if self.model is not None else {}
        self._params = {id(p): n for n, p in self.model.named_parameters()} if self.model is not None else {}
        try:
            for meth, kind in _MODULE_METHODS:
                self._wrap(_owner(lib.nn.Module, meth), meth, kind, self._where_module)
            for meth, kind in _TENSOR_METHODS:
                self._wrap(_owner(lib.Tensor, meth), meth, kind, self._where_tensor)
            for meth, kind in _OPTIM_METHODS:
                self._wrap(_owner(lib.optim.Optimizer, meth), meth, kind,
                           lambda o: f"optimizer {type(o).__name__}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        while self._saved:
            owner, meth, orig = self._saved.pop()
            setattr(owner, meth, orig)


def _owner(cls, meth):
    """The class in ``cls``'s MRO that defines ``meth`` (patched there, restored there)."""
    for c in cls.__mro__:
        if meth in c.__dict__:
            return c
    raise AttributeError(f"strict_hooks: {cls.__name__} has no {meth}")
