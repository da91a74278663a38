"""Hook misuse caught at registration, on hookgrad and torch models.

- ``check_hooks(model, optimizer=None)`` looks at every hook already on the model's modules and
  parameters (and the optimizer's step hooks) and returns the problems found, each also warned as a
  :class:`HookMisuseWarning`.
- ``with strict_hooks(model):`` checks every ``register_*`` call as it happens (on the library of
  ``model``), with the same checks, so the warning points at the line that registered the hook.

The checks: the hook's arity against what its kind is called with; a post-accumulate-grad hook whose
parameter is named like a gradient (it receives the parameter: read ``param.grad``); a hook of a kind
that must return None whose code returns a value; a node hook or pre-hook (``grad_fn.register_hook`` /
``register_prehook``) that returns a tuple of the wrong length (PyTorch raises "hook ... has returned an
incorrect number of values" in the backward), and a tensor hook returning a tuple; the legacy
``register_backward_hook`` on a module of several ops (its grad_input then belongs to the module's last op
only). The kinds: module hooks (forward, backward, state_dict and load_state_dict hooks), the global module
hooks, tensor and node hooks, ``register_multi_grad_hook``, optimizer hooks (step, state_dict,
load_state_dict) and the global optimizer step hooks. Each warning names the hook (qualified name,
file:line), where it sits (module path, parameter name, node) and, in strict mode, the line that
registered it.

PyTorch's graph nodes are C++ types whose methods cannot be replaced: on torch, strict mode sees a node
hook registered through a :class:`~hookgrad.tools.registry.HookRegistry` (``reg.register(node, "node",
fn)``), not one registered with ``grad_fn.register_hook`` directly; :func:`check_node_hook` checks one
explicitly, on both libraries.
"""
import dis
import importlib
import inspect
import re
import sys
import threading
import warnings

from .lib import library_of, lib_of, torch_attr
from .paths import module_paths
from .registry import user_where as _user_where

__all__ = ["check_hooks", "check_node_hook", "strict_hooks", "HookMisuseWarning", "HookProblem", "KINDS"]


class HookMisuseWarning(UserWarning):
    """A hook registered in a way that will not do what it looks like it does."""


class HookProblem:
    """One finding: ``kind`` (e.g. ``"forward"``), ``where`` (module path or parameter name), ``hook``,
    ``problem`` (a sentence)."""
    __slots__ = ("kind", "where", "hook", "problem", "registered_at")

    def __init__(self, kind, where, hook, problem, registered_at=None):
        self.kind, self.where, self.hook, self.problem = kind, where, hook, problem
        self.registered_at = registered_at      # file:line of the register_* call (strict mode)

    def message(self):
        at = f" (registered at {self.registered_at})" if self.registered_at else ""
        return f"{self.kind} hook {hook_name(self.hook)} on {self.where}{at}: {self.problem}"

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
    # a module's state_dict hooks (PyTorch raises when a public state_dict post-hook returns a value)
    "state_dict_pre": (3, "(module, prefix, keep_vars)", True),
    "state_dict": (4, "(module, state_dict, prefix, local_metadata)", True),
    "load_state_dict_pre": (8, "(module, state_dict, prefix, local_metadata, strict, missing_keys, "
                               "unexpected_keys, error_msgs)", True),
    # autograd graph nodes: a hook may return a tuple replacing grad_inputs (hook) / grad_outputs (prehook)
    "node": (2, "(grad_inputs, grad_outputs)", False),
    "node_pre": (1, "(grad_outputs)", False),
    "multi_grad": (1, "(grads)", False),
    # an optimizer's state_dict hooks (the post and load-pre hooks may return a new state_dict)
    "optimizer_state_dict_pre": (1, "(optimizer)", True),
    "optimizer_state_dict": (2, "(optimizer, state_dict)", False),
    "optimizer_load_state_dict_pre": (2, "(optimizer, state_dict)", False),
    "optimizer_load_state_dict_post": (1, "(optimizer)", True),
    # the global module registration hooks (may return a replacement)
    "buffer_registration": (3, "(module, name, buffer)", False),
    "module_registration": (3, "(module, name, submodule)", False),
    "parameter_registration": (3, "(module, name, param)", False),
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
        return f"it takes {_describe(sig)} but {kind} hooks are called with {n} argument{'s' if n != 1 else ''} {names}"
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


def returned_tuple_sizes(hook):
    """The lengths of the tuples the hook's code visibly returns (``return g, None``, ``return (x,)``,
    a constant tuple); a tuple built at run time (``tuple(...)``) is not counted."""
    fn = inspect.unwrap(getattr(hook, "func", hook))
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__call__", None), "__code__", None)
    if code is None:
        return set()
    ins = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "NOP", "PRECALL", "KW_NAMES")]
    sizes = set()
    for k, i in enumerate(ins):
        if i.opname == "RETURN_CONST" and isinstance(i.argval, tuple):
            sizes.add(len(i.argval))
        if i.opname != "RETURN_VALUE" or k == 0:
            continue
        prev = ins[k - 1]
        if prev.opname == "BUILD_TUPLE":
            sizes.add(prev.arg)
        elif prev.opname == "LOAD_CONST" and isinstance(prev.argval, tuple):
            sizes.add(len(prev.argval))
    return sizes


def _node_counts(node):
    """(grad_inputs, grad_outputs) a node's hooks see: its next_functions, its forward's outputs."""
    meta = torch_attr(node, "input_metadata")
    return len(node.next_functions), (None if meta is None else len(meta))


def problems_of(hook, kind, where, module=None, node=None, registered_at=None):
    """The :class:`HookProblem` list for one hook of ``kind`` registered at ``where`` (``module``: the
    module of a legacy backward hook; ``node``: the graph node of a node hook or pre-hook)."""
    out = _problems(hook, kind, where, module, node)
    for p in out:
        p.registered_at = registered_at
    return out


def _problems(hook, kind, where, module, node):
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
        what = "the state_dict" if "state_dict" in kind else "the tensor"
        out.append(HookProblem(kind, where, hook, f"{kind} hooks must return None, but this one returns a value "
                               f"(ignored or an error; modify {what} in place instead)"))
    if kind in ("node", "node_pre") and node is not None:
        n_in, n_out = _node_counts(node)
        want, what = (n_in, "grad_inputs") if kind == "node" else (n_out, "grad_outputs")
        bad = sorted(k for k in returned_tuple_sizes(hook) if want is not None and k != want)
        if bad:
            out.append(HookProblem(kind, where, hook, f"it returns a tuple of {bad[0]} value{'s' if bad[0] != 1 else ''} "
                                   f"but {node.name()} has {want} {what}: the backward will raise (the tuple "
                                   f"replaces {what}, one entry each, None for no gradient)"))
    if kind == "tensor" and returned_tuple_sizes(hook):
        out.append(HookProblem(kind, where, hook, "it returns a tuple, but a tensor hook returns one tensor (the new "
                               "gradient) or None"))
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
    """(kind, hook, check the return value) for every hook on one module, from the library's own listing
    (tools.lib)."""
    out = []
    for h in lib_of(mod).module_hooks(mod):
        kind = _KIND.get(h.kind, h.kind)
        if "with_kwargs" in h.flags and kind in ("forward", "forward_pre"):
            kind += "_with_kwargs"
        hook = h.hook
        if kind in ("load_state_dict_post", "load_state_dict_pre"):
            hook = getattr(h.hook, "hook", h.hook)          # the user's function inside the module-binding wrapper
            if kind == "load_state_dict_pre" and not getattr(h.hook, "with_module", True):
                continue                                     # a private 7-argument hook (no module)
        # the listing mixes public state_dict post-hooks with private ones (which may return a state_dict)
        out.append((kind, hook, kind != "state_dict"))
    return out


_OPTIMIZER_KIND = {"state_dict_pre": "optimizer_state_dict_pre", "state_dict": "optimizer_state_dict",
                   "load_state_dict_pre": "optimizer_load_state_dict_pre",
                   "load_state_dict_post": "optimizer_load_state_dict_post"}


def check_hooks(model, optimizer=None, warn=True, tensors=()):
    """Check every hook already registered on ``model`` (a hookgrad or torch module): its modules'
    hooks, its parameters' tensor and post-accumulate-grad hooks, ``optimizer``'s hooks, and the hooks of
    ``tensors`` (with, on hookgrad, those on their ``grad_fn``: PyTorch keeps a node's hooks in C++).
    Returns the :class:`HookProblem` list (empty when all is well); with ``warn`` each is also warned."""
    found = []
    for path, mod in model.named_modules():
        for kind, h, check_return in _module_hooks(mod):
            ps = problems_of(h, kind, f"module {path or '<root>'!r}", mod)
            found += [p for p in ps if check_return or "must return None" not in p.problem]
    lib = lib_of(model)
    named = [(f"parameter {name!r}", p) for name, p in model.named_parameters()]
    named += [(f"tensor of shape {tuple(t.shape)}", t) for t in tensors]
    for where, t in named:
        for h in lib.tensor_hooks(t):
            found += problems_of(h.hook, "tensor" if h.kind == "grad" else h.kind, where)
        node = t.grad_fn
        for h in (lib.listing(node) or ()) if node is not None else ():
            found += problems_of(h.hook, h.kind, f"node {node.name()}", node=node)
    if optimizer is not None:
        for h in lib.optimizer_hooks(optimizer):
            found += problems_of(h.hook, _OPTIMIZER_KIND.get(h.kind, h.kind), f"optimizer {type(optimizer).__name__}")
    if warn:
        _warn(found, 3)
    return found


def check_node_hook(node, hook, kind="node"):
    """The problems of ``hook`` as a hook (``kind="node"``) or pre-hook (``"node_pre"``) of the graph
    node ``node`` (``tensor.grad_fn``), on either library, without registering it."""
    if kind not in ("node", "node_pre"):
        raise ValueError(f"check_node_hook: kind must be 'node' or 'node_pre', got {kind!r}")
    return problems_of(hook, kind, f"node {node.name()}", node=node)


# ---- strict mode: the register_* methods checked as they are called ---------------------------------
_MODULE_METHODS = (("register_forward_pre_hook", "forward_pre"), ("register_forward_hook", "forward"),
                   ("register_full_backward_pre_hook", "full_backward_pre"),
                   ("register_full_backward_hook", "full_backward"), ("register_backward_hook", "backward"),
                   ("register_state_dict_pre_hook", "state_dict_pre"), ("register_state_dict_post_hook", "state_dict"),
                   ("register_load_state_dict_pre_hook", "load_state_dict_pre"),
                   ("register_load_state_dict_post_hook", "load_state_dict_post"))
_TENSOR_METHODS = (("register_hook", "tensor"), ("register_post_accumulate_grad_hook", "post_accumulate_grad"))
_NODE_METHODS = (("register_hook", "node"), ("register_prehook", "node_pre"))
_OPTIM_METHODS = (("register_step_pre_hook", "step_pre"), ("register_step_post_hook", "step_post"),
                  ("register_state_dict_pre_hook", "optimizer_state_dict_pre"),
                  ("register_state_dict_post_hook", "optimizer_state_dict"),
                  ("register_load_state_dict_pre_hook", "optimizer_load_state_dict_pre"),
                  ("register_load_state_dict_post_hook", "optimizer_load_state_dict_post"))
# module-level register functions: (module of the library, function, kind, index of the hook argument)
_GLOBAL_FUNCTIONS = (
    ("nn.modules.module", "register_module_forward_pre_hook", "forward_pre", 0),
    ("nn.modules.module", "register_module_forward_hook", "forward", 0),
    ("nn.modules.module", "register_module_full_backward_pre_hook", "full_backward_pre", 0),
    ("nn.modules.module", "register_module_full_backward_hook", "full_backward", 0),
    ("nn.modules.module", "register_module_backward_hook", "backward", 0),
    ("nn.modules.module", "register_module_buffer_registration_hook", "buffer_registration", 0),
    ("nn.modules.module", "register_module_module_registration_hook", "module_registration", 0),
    ("nn.modules.module", "register_module_parameter_registration_hook", "parameter_registration", 0),
    ("optim.optimizer", "register_optimizer_step_pre_hook", "step_pre", 0),
    ("optim.optimizer", "register_optimizer_step_post_hook", "step_post", 0),
    ("autograd.graph", "register_multi_grad_hook", "multi_grad", 1),
)


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

    @staticmethod
    def _where_node(node):
        return f"node {node.name()}"

    def _report(self, found):
        self.found += found
        if found and self.error:
            raise TypeError("strict_hooks: " + "; ".join(p.message() for p in found))
        _warn(found, 4)

    def _install(self, owner, name, orig, check, outermost=True):
        """Replace ``owner.name`` by a wrapper that reports what ``check(*args, **kwargs)`` finds before calling
        ``orig``; with ``outermost``, only in the outermost registration (a registration method calling another
        one, e.g. a subclass's override calling Tensor's, is checked once). Undone by _remove."""
        report = self._report

        def wrapper(*args, **kwargs):
            if getattr(_inside, "on", False):
                return orig(*args, **kwargs)
            report(check(*args, **kwargs))          # (called here: the warning's stack level is the user's line)
            if not outermost:
                return orig(*args, **kwargs)
            _inside.on = True
            try:
                return orig(*args, **kwargs)
            finally:
                _inside.on = False
        wrapper.__wrapped__ = orig
        wrapper.__name__ = name
        wrapper.__doc__ = getattr(orig, "__doc__", None)
        self._saved.append((owner, name, orig))
        setattr(owner, name, wrapper)

    def _wrap(self, owner, meth, kind, where):
        def check(obj, hook, *args, **kwargs):
            k = kind
            if kwargs.get("with_kwargs") and kind in ("forward", "forward_pre"):
                k = kind + "_with_kwargs"
            return problems_of(hook, k, where(obj), obj if kind == "backward" else None,
                               obj if kind in ("node", "node_pre") else None, _user_where())
        self._install(owner, meth, owner.__dict__[meth], check)

    def _wrap_function(self, module, name, kind, at):
        """A module-level ``register_*`` function (the global hooks, ``register_multi_grad_hook``)."""
        where = "the global module hooks" if kind not in ("step_pre", "step_post", "multi_grad") else (
            "the global optimizer hooks" if kind != "multi_grad" else "register_multi_grad_hook")

        def check(*args, **kwargs):
            hook = args[at] if len(args) > at else kwargs.get("fn", kwargs.get("hook"))
            if hook is None:
                return []
            k = kind + "_with_kwargs" if kwargs.get("with_kwargs") and kind == "forward" else kind
            return problems_of(hook, k, where, registered_at=_user_where())
        self._install(module, name, module.__dict__[name], check)

    def _wrap_registry(self, registry_cls):
        """On torch, node hooks registered through a HookRegistry (PyTorch's nodes cannot be patched); its tensor
        hooks are checked by the Tensor methods' wrappers."""
        def check(reg, target, kind, hook, *args, **kwargs):
            if kind not in ("node", "node_pre", "pre", "post") or lib_of(target).root is not self.lib:
                return []
            k = {"pre": "node_pre", "post": "node"}.get(kind, kind)
            return problems_of(hook, k, self._where_node(target), node=target, registered_at=_user_where())
        self._install(registry_cls, "register", registry_cls.__dict__["register"], check, outermost=False)

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
            with lib.enable_grad():
                node = (lib.ones(1, requires_grad=True) * 1).grad_fn      # None under inference_mode
            for meth, kind in _NODE_METHODS if node is not None else ():
                owner = _owner(type(node), meth)
                if owner.__module__ != "builtins":   # PyTorch's C++ node types cannot be patched: see below
                    self._wrap(owner, meth, kind, self._where_node)
            if lib.__name__ == "torch":
                from .registry import HookRegistry
                self._wrap_registry(HookRegistry)
            for modname, fname, kind, at in _GLOBAL_FUNCTIONS:
                module = sys.modules.get(f"{lib.__name__}.{modname}") or importlib.import_module(f"{lib.__name__}.{modname}")
                if fname in module.__dict__:
                    self._wrap_function(module, fname, kind, at)
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
