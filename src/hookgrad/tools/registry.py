"""Hook registry: list every hook on a model, tag hooks, count firings, disable/enable/remove by tag or owner.

>>> reg = HookRegistry(model)
>>> h = reg.register(model.fc1, "forward", my_hook, tag="probe")
>>> reg.hooks(tag="probe")[0].fired        # times my_hook ran
>>> reg.disable(tag="probe"); reg.remove(owner=model.fc1); print(reg.table())

Built only on the public hook API: ``Module.register_*``, the global ``register_module_*`` hooks,
``Tensor.register_hook`` / ``register_post_accumulate_grad_hook``, ``Node.register_hook`` /
``register_prehook``, ``autograd.graph.register_multi_grad_hook``, ``DistributedDataParallel.register_comm_hook``,
and the listings ``Module.hooks()``, ``Tensor.hooks()``, ``global_module_hooks()``, ``ddp.comm_hooks()``.

PyTorch models: ``HookRegistry(torch_model)`` registers through PyTorch's own ``register_*`` methods and
lists the hooks registered directly from PyTorch's hook dicts (``tools.lib``: ``_forward_hooks``...,
``tensor._backward_hooks``, the optimizer's ``_optimizer_step_pre_hooks``..., ``ddp._comm_hooks``), since
PyTorch has no public listing; a node's hooks only when registered through the registry (PyTorch keeps them
in C++). ``"global"`` is the global module hooks of the registry's model's library.

Optimizers: kinds ``step_pre``, ``step_post``, ``state_dict_pre``, ``state_dict``, ``load_state_dict_pre`` and
``load_state_dict_post`` on an ``Optimizer`` target, ``step_pre`` / ``step_post`` on ``"global"`` (the
``register_optimizer_step_*_hook`` hooks), in both libraries.

DistributedDataParallel: the comm hook (kind ``"comm"``) and DDP's own gradient-ready hooks on its parameters
(kind ``"post_accumulate_grad"``, ``by="DistributedDataParallel"``; hooks whose ``__self__`` is
``ddp.reducer``) are listed under the DDP module, with the parameters' paths.
"""
import contextlib
import functools
import importlib
import os
import sys
import weakref

from ..utils.hooks import hook_name
from .lib import GLOBAL_OPTIMIZER_KINDS, lib_of
from .paths import module_paths

__all__ = ["HookRecord", "HookRegistry", "default_registry", "register", "handle_ids", "is_global", "listing",
           "norm_kind", "ddp_reducer_of", "comm_hook_of", "user_where"]

# kind -> (method name, accepted options) per target type; options are passed through unchanged
_MODULE_KINDS = {
    "forward_pre": "register_forward_pre_hook",
    "forward": "register_forward_hook",
    "full_backward_pre": "register_full_backward_pre_hook",
    "full_backward": "register_full_backward_hook",
    "backward": "register_backward_hook",
    "state_dict_pre": "register_state_dict_pre_hook",
    "state_dict": "register_state_dict_post_hook",
    "load_state_dict_pre": "register_load_state_dict_pre_hook",
    "load_state_dict_post": "register_load_state_dict_post_hook",
}
_GLOBAL_KINDS = {
    "forward_pre": "register_module_forward_pre_hook",
    "forward": "register_module_forward_hook",
    "full_backward_pre": "register_module_full_backward_pre_hook",
    "full_backward": "register_module_full_backward_hook",
    "backward": "register_module_backward_hook",
    "buffer_registration": "register_module_buffer_registration_hook",
    "module_registration": "register_module_module_registration_hook",
    "parameter_registration": "register_module_parameter_registration_hook",
}
_TENSOR_KINDS = {"grad": "register_hook", "post_accumulate_grad": "register_post_accumulate_grad_hook"}
_OPTIMIZER_KINDS = {"step_pre": "register_step_pre_hook", "step_post": "register_step_post_hook",
                    "state_dict_pre": "register_state_dict_pre_hook", "state_dict": "register_state_dict_post_hook",
                    "load_state_dict_pre": "register_load_state_dict_pre_hook",
                    "load_state_dict_post": "register_load_state_dict_post_hook"}
_NODE_KINDS = {"node": "register_hook", "node_pre": "register_prehook"}
_ALIASES = {"backward_pre": "full_backward_pre", "state_dict_post": "state_dict", "hook": "grad",
            "pre": "node_pre", "post": "node", "multi": "multi_grad"}

_HOOKGRAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_where():
    """``file:line`` of the innermost frame outside the hookgrad package (the user's registration)."""
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_HOOKGRAD_DIR + os.sep):
            try:
                rel = os.path.relpath(fn)
                fn = rel if not rel.startswith("..") else fn
            except ValueError:       # another drive (Windows)
                pass
            return f"{fn}:{f.f_lineno}"
        f = f.f_back
    return None


user_where = _user_where      # public for the other tools (strict_hooks names the registering line)


def _ref(obj):
    """A weak reference to ``obj`` when it allows one, else a strong one (as a callable)."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


def _handle_alive(handle):
    subs = getattr(handle, "handles", None)            # register_multi_grad_hook's handle
    if subs is not None:
        return any(_handle_alive(h) for h in subs)
    d = handle.hooks_dict_ref()
    return d is not None and handle.id in d


def is_global(x):
    """True for the owner ``"global"`` (the global module hooks)."""
    return isinstance(x, str) and x == "global"


def handle_ids(handle):
    """The ids of the hooks behind a handle (several for register_multi_grad_hook's handle)."""
    subs = getattr(handle, "handles", None)
    if subs is not None:
        return [i for h in subs for i in handle_ids(h)]
    return [handle.id]


def listing(owner, lib=None):
    """The listing of the hooks on ``owner`` (``HookInfo`` list), or None when there is none: a module's,
    a tensor's, an optimizer's, or ``"global"``'s (the global module hooks of ``lib``, hookgrad's by
    default). On torch they are read from PyTorch's hook dicts (``tools.lib``)."""
    if owner is None:
        return None
    lib = lib or lib_of(owner)
    if not is_global(owner) and not isinstance(owner, (lib.Module, lib.Tensor)) and not lib.is_optimizer(owner):
        return None
    return lib.listing(owner)


def ddp_reducer_of(hook):
    """The DDP Reducer a hook belongs to (DDP's gradient-ready hooks read as ``reducer.autograd_hook``:
    their ``__self__`` is ``ddp.reducer``), or None for any other hook."""
    r = getattr(hook, "__self__", None)
    return r if r is not None and lib_of(r).is_reducer(r) else None


def comm_hook_of(ddp):
    """The comm hook in effect on a DistributedDataParallel model (``ddp.comm_hooks()``), or None."""
    hooks = lib_of(ddp).comm_hooks(ddp) if ddp is not None else ()
    return hooks[0][0] if hooks else None


def _comm_error(what, rec):
    return RuntimeError(
        f"{what}(): the communication hook {rec.name} of DistributedDataParallel {rec.path or '<root>'!r} cannot "
        f"be {'disabled' if what == 'disable' else 'removed'}: DistributedDataParallel.register_comm_hook returns no "
        "handle and PyTorch has no way to unregister a comm hook (it stays for the life of the DDP model); pass "
        "kind= to select the other hooks")


def norm_kind(kind):
    """A listing's hook kind as the registry names it (``backward_pre`` -> ``full_backward_pre``)."""
    return "full_backward_pre" if kind == "backward_pre" else kind


class HookRecord:
    """One hook: ``kind``, ``path`` (module path, parameter name, node name or ``"<global>"``), ``hook``
    (the user's callable), ``tag``, ``fired`` (times it ran; None when unknown: a hook registered without
    the registry), ``where`` (``file:line`` of the registration), ``owner`` (the module, tensor, node,
    tensors or ``"global"``; None once garbage-collected), ``enabled``, ``removed`` and ``active``.
    ``by``: ``"DistributedDataParallel"`` for the hooks DDP registers itself (None for the user's).
    A ``"comm"`` record's owner is the DistributedDataParallel module; ``registered`` is the callable
    registered (the counting wrapper for a registry hook); it has no handle (PyTorch gives none)."""

    __slots__ = ("kind", "path", "hook", "tag", "fired", "skipped", "where", "enabled", "handle", "id", "by",
                 "registered", "lib", "_owner", "_on", "__weakref__")

    def __init__(self, kind, owner, hook, *, path=None, tag=None, fired=None, where=None, handle=None, id=None,
                 by=None, on=None, registered=None, lib=None):
        self.kind = kind
        self.lib = lib or lib_of(owner)          # hookgrad or torch
        self._owner = _ref(owner) if not isinstance(owner, (str, tuple)) else (lambda: owner)
        self._on = None if on is None else _ref(on)     # the tensor the hook sits on, when not the owner
        self.by = by
        self.registered = hook if registered is None and kind == "comm" else registered
        self.hook = hook
        self.path = path
        self.tag = tag
        self.fired = fired
        self.skipped = 0 if fired is not None else None   # calls while disabled
        self.where = where
        self.enabled = True
        self.handle = handle
        self.id = handle.id if id is None and handle is not None and hasattr(handle, "id") else id

    @property
    def owner(self):
        return self._owner()

    @property
    def name(self):
        """The hook's name (as PyTorch names hooks in error messages)."""
        return hook_name(self.hook)

    @property
    def removed(self):
        """True once the hook is no longer registered (whoever removed it)."""
        if self.kind == "comm":
            return comm_hook_of(self.owner) is not self.registered
        if self.handle is not None:
            return not _handle_alive(self.handle)
        infos = listing(self.owner if self._on is None else self._on(), self.lib)
        return infos is None or all(i.id != self.id for i in infos)

    @property
    def active(self):
        """Registered and enabled: it will run when its event happens."""
        return self.enabled and not self.removed

    @property
    def state(self):
        return "removed" if self.removed else ("active" if self.enabled else "disabled")

    def remove(self):
        if self.handle is not None:
            self.handle.remove()

    def __repr__(self):
        fired = "?" if self.fired is None else self.fired
        return (f"HookRecord(kind={self.kind!r}, path={self.path!r}, hook={self.name}, tag={self.tag!r}, "
                f"fired={fired}, where={self.where!r}, state={self.state!r})")


class HookRegistry:
    """Registers hooks through the public API, counting their firings, and lists, tags, disables,
    enables and removes them.

    ``HookRegistry(model)`` knows the model: records carry module paths (``"layer1.0.conv1"``) and
    parameter names, ``hooks()`` also lists hooks registered directly on the model's modules and
    parameters, and ``remove_all()`` also removes those on the modules.
    """

    _MAX_REMOVED = 1000     # removed records kept (for hooks(removed=True) and tools.why)

    def __init__(self, model=None, *, lib=None):
        self.model = model
        # hookgrad or torch, from the model (or ``lib``: the torch module itself, without a model); "global"
        # means that library's global module hooks
        self.lib = lib_of(model, lib)
        self._records = []
        self._scopes = []
        self._paths = None
        self._param_paths = None

    # ---- paths ----
    def _module_path(self, module):
        if self.model is None:
            return None
        if self._paths is None or id(module) not in self._paths:
            self._paths = module_paths(self.model)
        return self._paths.get(id(module))

    def _tensor_path(self, t):
        if self.model is None:
            return None
        if self._param_paths is None or id(t) not in self._param_paths:
            pp = {}
            for name, p in self.model.named_parameters(remove_duplicate=False):
                pp.setdefault(id(p), name)
            self._param_paths = pp
        return self._param_paths.get(id(t))

    def path_of(self, owner):
        """The path a record of ``owner`` shows: module path, parameter name, node name, ``"<global>"``."""
        if is_global(owner):
            return "<global>"
        lib = lib_of(owner, self.lib)
        if isinstance(owner, lib.Module):
            return self._module_path(owner)
        if isinstance(owner, lib.Tensor):
            return self._tensor_path(owner)
        if isinstance(owner, lib.Node):
            return owner.name()
        if isinstance(owner, tuple):
            return ",".join(str(self.path_of(t)) for t in owner)
        return None

    def _resolve(self, owner):
        """A string owner other than "global" is a module or parameter path of the model."""
        if isinstance(owner, str) and not is_global(owner):
            if self.model is None:
                raise ValueError(f"owner={owner!r}: a path needs a registry that knows the model "
                                 "(HookRegistry(model))")
            try:
                return self.model.get_submodule(owner)
            except AttributeError:
                try:
                    return self.model.get_parameter(owner)
                except AttributeError:
                    raise AttributeError(f"owner={owner!r} is neither a module nor a parameter of the model") \
                        from None
        return owner

    # ---- registering ----
    def register(self, target, kind, hook, *, tag=None, **options):
        """Register ``hook`` of ``kind`` on ``target`` through the public API and return its
        ``RemovableHandle``. ``target``: a Module (kinds forward_pre, forward, full_backward_pre,
        full_backward, backward, state_dict_pre, state_dict, load_state_dict_pre, load_state_dict_post),
        ``"global"`` (forward_pre, forward, full_backward_pre, full_backward, backward,
        buffer/module/parameter_registration, and the optimizers' step_pre, step_post), a Tensor (grad,
        post_accumulate_grad), a grad_fn Node (node, node_pre), a list of tensors (multi_grad) or an
        Optimizer (step_pre, step_post, state_dict_pre, state_dict, load_state_dict_pre, load_state_dict_post). ``options`` (prepend, with_kwargs, always_call,
        mode) go to the underlying ``register_*`` unchanged.

        A DistributedDataParallel target also takes the kind ``"comm"``: ``register(ddp, "comm", hook,
        state=state)`` calls ``ddp.register_comm_hook(state, wrapped_hook)`` and returns None, as PyTorch does
        (a comm hook cannot be removed, disabled or registered inside :meth:`scope`).

        The hook is wrapped (``functools.wraps``: its name shows in PyTorch's error messages, and its
        signature and annotations, which DDP checks, are the hook's) to count its firings; it returns what
        the hook returns, or None while the hook is disabled.
        """
        target = self._resolve(target)
        kind = _ALIASES.get(kind, kind)
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        lib = self.lib if is_global(target) else lib_of(target, self.lib)
        if is_global(target):
            kinds = dict(_GLOBAL_KINDS, **{k: f for k, f, _ in GLOBAL_OPTIMIZER_KINDS})

            def reg(name):
                if name.startswith("register_optimizer_"):
                    return getattr(importlib.import_module(lib.name + ".optim.optimizer"), name)
                return getattr(lib.module_mod, name)
        elif lib.is_ddp(target):
            kinds = dict(_MODULE_KINDS, comm="register_comm_hook")
            state = options.pop("state", None) if kind == "comm" else None
            reg = (lambda name: lambda h, **o: target.register_comm_hook(state, h, **o)) if kind == "comm" else \
                (lambda name: getattr(target, name))
        elif isinstance(target, lib.Module):
            kinds, reg = _MODULE_KINDS, lambda name: getattr(target, name)
        elif isinstance(target, lib.Tensor):
            kinds, reg = _TENSOR_KINDS, lambda name: getattr(target, name)
        elif isinstance(target, lib.Node):
            kinds, reg = _NODE_KINDS, lambda name: getattr(target, name)
        elif lib.is_optimizer(target):
            kinds, reg = _OPTIMIZER_KINDS, lambda name: getattr(target, name)
        elif isinstance(target, (list, tuple)) and target and all(isinstance(t, lib.Tensor) for t in target):
            target = tuple(target)
            kinds, reg = {"multi_grad": None}, \
                lambda name: functools.partial(lib.graph.register_multi_grad_hook, target)
        else:
            raise TypeError("register(): target must be a Module, a Tensor, a grad_fn Node, a list of Tensors, "
                            f"an Optimizer or 'global', got {type(target).__name__}")
        if kind not in kinds:
            raise ValueError(f"register(): unknown hook kind {kind!r} for a {type(target).__name__} target "
                             f"(hook {hook_name(hook)}); expected one of {sorted(kinds)}")
        if kind == "comm" and self._scopes:
            raise RuntimeError(f"register(): the communication hook {hook_name(hook)} cannot be registered inside "
                               "registry.scope(): a comm hook cannot be removed on exit (PyTorch has no way to "
                               "unregister it)")
        rec = HookRecord(kind, target, hook, path=self.path_of(target), tag=tag, fired=0, where=_user_where(), lib=lib)
        rec_ref = weakref.ref(rec)

        @functools.wraps(hook, updated=())
        def counted(*args, **kwargs):
            r = rec_ref()
            if r is not None:
                if not r.enabled:
                    r.skipped += 1
                    return None
                r.fired += 1
            return hook(*args, **kwargs)

        if getattr(hook, "__torch_unserializable__", False):
            counted.__torch_unserializable__ = True
        handle = reg(kinds[kind])(counted, **options)
        if kind == "comm":
            rec.registered = counted
        else:
            rec.handle = handle
            rec.id = getattr(handle, "id", None)
        self._records.append(rec)
        for bucket in self._scopes:
            bucket.append(rec)
        self._prune()
        return handle

    def _prune(self):
        removed = [r for r in self._records if r.removed]
        if len(removed) > self._MAX_REMOVED:
            drop = set(map(id, removed[:len(removed) - self._MAX_REMOVED]))
            self._records = [r for r in self._records if id(r) not in drop]

    # ---- listing ----
    def records(self):
        """Every record this registry made, removed ones included (newest removed ones only)."""
        return list(self._records)

    @staticmethod
    def _owner_set(owner, recurse):
        """ids an owner stands for: a module with ``recurse`` also stands for its submodules and
        their parameters."""
        if recurse and isinstance(owner, lib_of(owner).Module):
            return {id(o) for o in (*owner.modules(), *owner.parameters())}
        return None

    def _owner_matches(self, rec_owner, owner, ids=None):
        if owner is None:
            return True
        if ids is not None:
            return id(rec_owner) in ids
        if is_global(owner) or is_global(rec_owner):
            return is_global(owner) and is_global(rec_owner)
        if isinstance(rec_owner, tuple):
            return any(t is owner for t in rec_owner)
        return rec_owner is owner

    def _direct_owners(self, owner):
        if owner is not None:
            return [owner] if listing(owner, self.lib) is not None else []
        owners = ["global"]
        if self.model is not None:
            owners += list(self.model.modules())
            owners += list(self.model.parameters())
        seen = {id(o) for o in owners}
        for r in self._records:           # modules and tensors the registry has hooked
            o = r.owner
            if listing(o, r.lib) is not None and not is_global(o) and id(o) not in seen:
                seen.add(id(o))
                owners.append(o)
        return owners

    def hooks(self, owner=None, tag=None, *, kind=None, recurse=False, removed=False, direct=True):
        """The hooks as :class:`HookRecord`, filtered by ``owner`` (a module, tensor, node, ``"global"``
        or a path of the model), ``tag`` and ``kind``. Registry hooks come first, in registration order,
        then (``direct=True``, no ``tag``) the hooks registered directly with ``register_*`` on the owners
        (the model's modules and parameters, the global module hooks): their ``fired`` is None (unknown).
        ``recurse=True`` with a module owner includes its submodules and their parameters.
        ``removed=True`` also lists registry hooks that were removed.

        A DistributedDataParallel owner also lists its comm hook (kind ``"comm"``, from ``ddp.comm_hooks()``) and
        the gradient-ready hooks DDP put on its parameters (``by="DistributedDataParallel"``, path
        ``"module.fc1.weight"``); they are listed under the DDP module, not under the parameters."""
        owner = self._resolve(owner)
        kind = _ALIASES.get(kind, kind)
        ids = self._owner_set(owner, recurse)
        out = [r for r in self._records
               if self._owner_matches(r.owner, owner, ids) and (tag is None or r.tag == tag)
               and (kind is None or r.kind == kind) and (removed or not r.removed)]
        if direct and tag is None:
            known = {i for r in self._records if r.handle is not None for i in handle_ids(r.handle)}
            owners = self._direct_owners(owner) if ids is None else \
                [o for o in (*owner.modules(), *owner.parameters())]
            ddps = [o for o in owners if lib_of(o, self.lib).is_ddp(o)]
            listed = {id(d.reducer) for d in ddps}
            for o in owners:
                for info in listing(o, self.lib):
                    k = norm_kind(info.kind)
                    if info.id in known or (kind is not None and k != kind):
                        continue
                    reducer = ddp_reducer_of(info.hook)
                    if reducer is not None and id(reducer) in listed:
                        continue                # listed under its DDP module below
                    out.append(HookRecord(k, o, getattr(info.hook, "hook", info.hook), path=self.path_of(o),
                                          id=info.id, by=None if reducer is None else "DistributedDataParallel",
                                          lib=self.lib if is_global(o) else None))
            for d in ddps:
                out.extend(self._ddp_hooks(d, kind))
        return out

    def _ddp_hooks(self, ddp, kind):
        """A DistributedDataParallel's comm hook (registered directly) and DDP's own gradient-ready hooks."""
        out = []
        prefix = self._module_path(ddp)
        if kind in (None, "comm"):
            hook = comm_hook_of(ddp)
            if hook is not None and all(r.registered is not hook for r in self._records if r.kind == "comm"):
                out.append(HookRecord("comm", ddp, hook, path=prefix))
        if kind in (None, "post_accumulate_grad"):
            for name, p in ddp.named_parameters():
                for info in lib_of(p).tensor_hooks(p):
                    if info.kind == "post_accumulate_grad" and ddp_reducer_of(info.hook) is ddp.reducer:
                        path = f"{prefix}.{name}" if prefix else name
                        out.append(HookRecord("post_accumulate_grad", ddp, info.hook, path=path, id=info.id,
                                              by="DistributedDataParallel", on=p))
        return out

    # ---- disabling, enabling, removing ----
    def _select(self, what, tag, owner, kind, recurse):
        if tag is None and owner is None:
            raise ValueError(f"{what}() needs tag= or owner= (remove_all() removes every hook)")
        owner = self._resolve(owner)
        kind = _ALIASES.get(kind, kind)
        ids = self._owner_set(owner, recurse)
        return [r for r in self._records
                if (tag is None or r.tag == tag) and self._owner_matches(r.owner, owner, ids)
                and (kind is None or r.kind == kind) and not r.removed]

    def disable(self, tag=None, owner=None, *, kind=None, recurse=False):
        """Disable the registry hooks matching ``tag`` and/or ``owner`` (a module, tensor, node,
        ``"global"`` or a path of the model; ``recurse=True``: a module's submodules and parameters too)
        and ``kind``: they stay registered (and in order) but do nothing and return None.
        Returns how many were disabled."""
        recs = self._select("disable", tag, owner, kind, recurse)
        for r in recs:
            if r.kind == "comm":
                raise _comm_error("disable", r)
        for r in recs:
            r.enabled = False
        return len(recs)

    def enable(self, tag=None, owner=None, *, kind=None, recurse=False):
        """Enable the matching registry hooks again (arguments as :meth:`disable`). Returns how many."""
        recs = self._select("enable", tag, owner, kind, recurse)
        for r in recs:
            r.enabled = True
        return len(recs)

    def remove(self, tag=None, owner=None, *, kind=None, recurse=False):
        """Remove the matching registry hooks (arguments as :meth:`disable`). Returns how many."""
        recs = self._select("remove", tag, owner, kind, recurse)
        for r in recs:
            if r.kind == "comm":
                raise _comm_error("remove", r)
        for r in recs:
            r.remove()
        return len(recs)

    def remove_all(self):
        """Remove every hook this registry registered, and (when it knows the model) every hook
        registered directly on the model's modules (``Module.remove_hooks(recurse=True)``). Returns how
        many were removed. Tensor hooks registered directly on parameters stay (there is no public way
        to remove a hook without its handle), and so does a DDP comm hook (PyTorch cannot remove one)."""
        n = 0
        for r in self._records:
            if not r.removed and r.kind != "comm":
                r.remove()
                n += 1
        if self.model is not None:
            n += self.lib.remove_module_hooks(self.model)
        return n

    @contextlib.contextmanager
    def scope(self):
        """``with reg.scope(): ...`` removes on exit every hook registered through ``reg`` inside."""
        bucket = []
        self._scopes.append(bucket)
        try:
            yield self
        finally:
            self._scopes.remove(bucket)
            for r in bucket:
                r.remove()

    # ---- printing ----
    def table(self, owner=None, tag=None, *, removed=False):
        """The hooks as a text table: kind, path, hook, tag, fired ("?" when unknown), state, where."""
        rows = [("kind", "path", "hook", "tag", "fired", "state", "where")]
        for r in self.hooks(owner, tag, removed=removed):
            path = r.path if r.path is not None else type(r.owner).__name__
            where = r.where or (f"<{r.by}>" if r.by else "")
            rows.append((r.kind, path or "<root>", r.name, "" if r.tag is None else str(r.tag),
                         "?" if r.fired is None else str(r.fired), r.state, where))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def __repr__(self):
        return f"HookRegistry({len([r for r in self._records if not r.removed])} hooks)"


default_registry = HookRegistry()
"""The registry used by :func:`register` and, by default, by ``tools.why``."""


def register(target, kind, hook, *, tag=None, **options):
    """``default_registry.register(...)``: see :meth:`HookRegistry.register`."""
    return default_registry.register(target, kind, hook, tag=tag, **options)
