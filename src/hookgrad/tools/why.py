"""Why didn't my hook fire? Watch a forward and backward, then explain every hook that did not fire.

>>> with why.watch(model) as w:
...     loss = model(x).sum()
...     loss.backward()
>>> print(w)                      # one line per silent hook, with the reason
>>> w.report()                    # [Finding(record, reason), ...]

How it observes (a plain client of the public hook API; see docs/tools/why.md):

- Firing counts come from a :class:`~hookgrad.tools.registry.HookRegistry` (the default one unless
  ``registry=`` is given): the hooks registered through it are counted exactly. Hooks registered
  directly with ``register_*`` on the model's modules and parameters are listed too (count unknown):
  they are reported only when the observations prove they could not fire.
- For every module of the model, a global forward pre-hook and an ``always_call`` global forward hook
  record each call made through ``module(...)``: the grad mode, whether a positional input tensor
  required grad, whether the output did, and (a ``register_prehook`` on the output's ``grad_fn``)
  whether the backward reached the output.
- ``module.forward(x)`` bypasses every module hook, so no hook can see it. To catch it, ``watch``
  temporarily sets each module's ``forward`` instance attribute to a thin wrapper (and restores it on
  exit): a call of the wrapper that is not the forward of a ``module(...)`` call in progress is a
  direct call. ``watch(model, detect_direct=False)`` leaves ``forward`` alone.
- A PyTorch model is watched the same way, through PyTorch's global module hooks and node pre-hooks
  (hooks registered directly are read from PyTorch's hook dicts: ``tools.lib``).
- DistributedDataParallel (a DDP model, or one inside the model): each forward of the DDP module records
  whether it ran inside ``no_sync()`` (``ddp.require_backward_grad_sync``) and, through the prehook on its
  output's ``grad_fn``, whether the backward reached it and whether a comm hook was registered then
  (``ddp.comm_hooks()``); calls of ``ddp.module`` beyond the DDP's own forwards bypassed DDP.
- Hooks on views (``h[:, 0].register_hook(fn)``): a view's hook fires only for the gradient that flows through
  the view itself. When the loss used the base instead, the finding says so (``view_not_in_graph``) and
  names the fix, ``tools.view_hooks.register_view_hook``, which fires with the slice of the base's gradient;
  or why that cannot help (``view_base_not_reached``, ``view_cannot``). Whether the base's gradient was
  computed is observed for module outputs and for the tensors given as ``watch(model, tensors=...)``
  (their direct hooks are explained too), read from ``.grad`` for leaves.
- Canonical hook names (``watch(model, names=[...])``, or :func:`names` without a watch): each name that
  resolves to no module of the model (``tools.hooknames``) is a :class:`NameFinding` with the reason and the
  nearest names that do resolve.
"""
import threading
import weakref
from collections import namedtuple

from . import hooknames as _hooknames
from .lib import lib_of, is_tensor, torch_attr
from .threadstate import thread_list
from .paths import module_paths
from .registry import (HookRecord, HookRegistry, handle_ids, is_global, listing, norm_kind, default_registry,
                       ddp_reducer_of, comm_hook_of)
from .view_hooks import view_hook_reason

__all__ = ["watch", "Watch", "Finding", "NameFinding", "names", "REASONS"]

REASONS = {
    "removed": "the hook was removed before it could fire",
    "disabled": "the hook is disabled in its HookRegistry (registry.enable(...) turns it back on)",
    "never_executed": "module {module!r} never ran in the forward",
    "forward_called_directly": "module {module!r} ran only through module.forward(...), which bypasses "
                               "its hooks: call module(...) instead",
    "grad_mode_off": "grad mode was off during the forward of module {module!r} (no_grad / inference_mode): "
                     "no graph was recorded, so backward hooks cannot fire",
    "fired_early": "no input of module {module!r} required grad: the full backward hook fired early, when "
                   "the grads w.r.t. its outputs were computed, with grad_input all None ({n} of {calls} calls)",
    "no_grad_output": "no input or parameter of module {module!r} required grad: its output did not require "
                      "grad, so no backward hook could fire",
    "backward_not_reached": "the backward never reached {target}: backward was not called, or {target} did "
                            "not contribute to the tensor backward was called on",
    "comm_registered_late": "the communication hook was registered on DistributedDataParallel {module!r} after "
                            "the backward(s) watched had run, too late for them: it runs from the next backward on "
                            "(PyTorch requires register_comm_hook before the first backward)",
    "no_sync": "every forward of DistributedDataParallel {module!r} ran inside no_sync(): the backward only "
               "accumulated the gradients locally, with no communication, so no comm hook ran",
    "ddp_bypassed": "the forward bypassed DistributedDataParallel {module!r}: its wrapped module was called "
                    "directly ({inner}(...)), so the backward did no communication and no comm hook ran; call "
                    "the DDP model itself",
    "view_not_in_graph": "the hook is on a view {view} of a tensor {base} whose gradient was computed, but the loss "
                         "was not computed through this view: a view's hook fires only for the gradient that flows "
                         "through the view itself. tools.view_hooks.register_view_hook(view, fn) fires with the "
                         "slice of the base's gradient at the view's elements",
    "view_base_not_reached": "the hook is on a view {view} of a tensor {base}, and the backward reached neither: "
                             "register_view_hook would not fire either (the base did not contribute to the loss, or "
                             "backward was not called)",
    "view_cannot": "the hook is on a view {view} of a tensor {base} that the loss was not computed through, and "
                   "register_view_hook cannot hook it: {why}",
    "view_unknown": "the hook is on a view {view} of a tensor {base}: a view's hook fires only for the gradient that "
                    "flows through the view itself. If the loss was computed from the base (or another view of it), "
                    "tools.view_hooks.register_view_hook(view, fn) fires with the slice of the base's gradient "
                    "(pass the view as why.watch(..., tensors=[view]) to have the base observed)",
    "unresolved_name": "{detail}",
    "unknown": "the hook did not fire, and none of the known reasons applies",
}

_FORWARD = ("forward_pre", "forward")
_MODULE_BACKWARD = ("full_backward_pre", "full_backward", "backward")
_TENSOR = ("grad", "post_accumulate_grad", "multi_grad")
_NODE = ("node", "node_pre")
_WATCHED = _FORWARD + _MODULE_BACKWARD + _TENSOR + _NODE + ("comm",)


class Finding(namedtuple("Finding", "record reason")):
    """A hook that did not fire (or fired early): its :class:`HookRecord` and the reason code (a key of
    :data:`REASONS`); ``message`` says it in words."""

    def __str__(self):
        r = self.record
        bits = [r.name]
        if r.tag is not None:
            bits.append(f"tag={r.tag!r}")
        if r.where:
            bits.append(r.where)
        path = r.path if r.path is not None else type(r.owner).__name__
        return f"{r.kind} hook on {path or '<root>'!r} ({', '.join(bits)}): [{self.reason}] {self.message}"


def _make_finding(record, reason, **fmt):
    f = Finding(record, reason)
    f.message = REASONS[reason].format(**fmt) if fmt or "{" not in REASONS[reason] else REASONS[reason]
    return f


class NameFinding(namedtuple("NameFinding", "name reason detail candidates")):
    """A canonical hook name (``blocks.{i}.attn.hook_pattern``...) that resolves to no module of the model:
    ``reason`` is ``"unresolved_name"``, ``detail`` says why (``tools.hooknames.unresolved``), ``candidates``
    are the nearest names that do resolve (best first). ``record`` is None (no hook was registered)."""
    record = None

    @property
    def message(self):
        near = f"; nearest names that resolve: {', '.join(self.candidates)}" if self.candidates else ""
        return self.detail + near

    def __str__(self):
        return f"hook name {self.name!r}: [{self.reason}] {self.message}"


def names(model, hook_names, layout=None):
    """``[NameFinding, ...]`` for the canonical names in ``hook_names`` that do not resolve on ``model``
    (``tools.hooknames``; a model of no known layout gives one finding per name, with that reason)."""
    hook_names = [hook_names] if isinstance(hook_names, str) else list(hook_names)
    try:
        found = _hooknames.unresolved(model, hook_names, layout)
    except ValueError as e:              # no known layout
        return [NameFinding(n, "unresolved_name", str(e), ()) for n in hook_names]
    return [NameFinding(n, "unresolved_name", detail, tuple(_hooknames.nearest(model, n, layout=layout)))
            for n, detail in found]


def _shape(t):
    return tuple(t.shape)


class _DDPObs:
    """What the watch saw of one DistributedDataParallel: forwards with grad on inside / outside no_sync, and
    backwards that reached a synchronised forward's output with / without a comm hook registered."""
    __slots__ = ("synced", "nosync", "reached_hook", "reached_no_hook")

    def __init__(self):
        self.synced = self.nosync = self.reached_hook = self.reached_no_hook = 0


class _Obs:
    """What the watch saw of one module."""
    __slots__ = ("calls", "direct", "grad_on", "no_input_grad", "output_grad", "reached")

    def __init__(self):
        self.calls = self.direct = self.grad_on = self.no_input_grad = self.output_grad = self.reached = 0


def _tensors(x):
    if is_tensor(x):
        yield x
    elif isinstance(x, (tuple, list)):
        for v in x:
            yield from _tensors(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _tensors(v)


class Watch:
    """The observations of one ``with why.watch(model):`` block; see :func:`watch`."""

    def __init__(self, model, registry=None, detect_direct=True, names=None, layout=None, tensors=None):
        self.model = model
        self.lib = lib_of(model)
        self.registry = default_registry if registry is None else registry
        self.detect_direct = detect_direct
        self.names, self.layout = names, layout
        self.tensors = dict(tensors) if isinstance(tensors, dict) else {
            f"tensors[{i}]": t for i, t in enumerate(tensors or ())}
        self._tls = threading.local()
        self._handles = []
        self._node_handles = []
        self._patched = []
        self._findings = None

    # ---- observing ----
    def _stack(self):
        return thread_list(self._tls, "stack")

    def _pre(self, module, args):
        if id(module) in self._obs:
            # [module, grad mode at call, forward entered]
            self._stack().append([module, self.lib.root.is_grad_enabled(), False])

    def _post(self, module, args, output):
        if id(module) not in self._obs:
            return
        st = self._stack()
        if st and st[-1][0] is module:
            _, grad_on, _ = st.pop()
            self._observe(module, args, output, grad_on, direct=False)

    def _observe(self, module, args, output, grad_on, direct):
        o = self._obs[id(module)]
        if direct:
            o.direct += 1
        else:
            o.calls += 1
        if not grad_on:
            return
        o.grad_on += 1
        if not any(t.requires_grad for t in _tensors(tuple(args))):
            o.no_input_grad += 1
        nodes = {}
        for t in _tensors(output):
            if t.requires_grad and t.grad_fn is not None:
                nodes[id(t.grad_fn)] = t.grad_fn
        if nodes:
            o.output_grad += 1
            flags = {}
            for node in nodes.values():
                flag = flags[id(node)] = [0]

                def reached(grad_outputs, o=o, flag=flag):
                    o.reached += 1
                    flag[0] += 1
                self._node_handles.append(node.register_prehook(reached))
            for t in _tensors(output):              # whether the backward reached this output (a view's base)
                if id(t.grad_fn) in flags:
                    self._watch_tensor(t, flags[id(t.grad_fn)])
        if id(module) in self._ddp_obs:
            self._observe_ddp(module, nodes.values())

    def _observe_ddp(self, ddp, nodes):
        d = self._ddp_obs[id(ddp)]
        if not ddp.require_backward_grad_sync:
            d.nosync += 1
            return
        d.synced += 1

        def reached(grad_outputs):
            if comm_hook_of(ddp) is None:
                d.reached_no_hook += 1
            else:
                d.reached_hook += 1
        for node in nodes:
            self._node_handles.append(node.register_prehook(reached))

    def _watch_tensor(self, t, flag=None):
        """Observe whether the backward reaches ``t`` (a prehook on its ``grad_fn``; a leaf: its ``.grad``)."""
        if id(t) in self._seen and self._seen[id(t)][0]() is t:
            return
        if flag is None:
            flag = [0]
            if t.grad_fn is not None:
                def reached(grad_outputs, flag=flag):
                    flag[0] += 1
                self._node_handles.append(t.grad_fn.register_prehook(reached))
        try:
            g = t.grad if t.grad_fn is None else None        # (a non-leaf's .grad warns)
            self._seen[id(t)] = (weakref.ref(t), flag, None if g is None else (g, torch_attr(g, "version")))
        except TypeError:             # no weak reference: not observed
            pass

    def _reached(self, t):
        """True / False: whether the backward reached ``t`` during the watch; None when not observed."""
        seen = self._seen.get(id(t))
        if seen is not None and seen[0]() is t:
            if t.grad_fn is None and t.requires_grad:          # a leaf: its .grad was set or changed
                g, before = t.grad, seen[2]
                return g is not None and (before is None or g is not before[0] or torch_attr(g, "version") != before[1])
            return seen[1][0] > 0
        if t.grad_fn is None and t.requires_grad:               # a leaf never seen: its .grad is the evidence
            return t.grad is not None
        return None

    def _wrap_forward(self, module):
        inner = module.forward          # bound method, or an instance attribute set by the user

        def forward(*args, **kwargs):
            st = self._stack()
            if st and st[-1][0] is module and not st[-1][2]:
                st[-1][2] = True        # the forward of a module(...) call in progress: hooks ran
                return inner(*args, **kwargs)
            grad_on = self.lib.root.is_grad_enabled()
            out = inner(*args, **kwargs)
            self._observe(module, args, out, grad_on, direct=True)
            return out
        forward.__wrapped__ = inner
        return forward

    def __enter__(self):
        self._paths = module_paths(self.model)
        self._obs = {i: _Obs() for i in self._paths}
        self._ddp_obs = {id(m): _DDPObs() for m in self.model.modules() if self.lib.is_ddp(m)}
        self._param_owner = {}
        for name, mod in self.model.named_modules():
            for pname, p in mod.named_parameters(recurse=False, remove_duplicate=False):
                self._param_owner.setdefault(id(p), (mod, f"{name}.{pname}" if name else pname))
        self._entry = {id(r): (r.fired, r.removed) for r in self.registry.records()}
        self._seen = {}
        for t in self.tensors.values():
            if not is_tensor(t):
                raise TypeError(f"why.watch: tensors must be tensors, got {type(t).__name__}")
            self._watch_tensor(t)
            base = torch_attr(t, "base")
            if base is not None:
                self._watch_tensor(base)
        self._direct_entry = {h.id: h for h in self._direct_hooks() if h.kind != "comm"}
        self._handles = [self.lib.register_module_forward_pre_hook(self._pre),
                         self.lib.register_module_forward_hook(self._post, always_call=True)]
        if self.detect_direct:
            for mod in self.model.modules():
                had = mod.__dict__.get("forward", _MISSING)
                object.__setattr__(mod, "forward", self._wrap_forward(mod))
                self._patched.append((mod, had))
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []
        for mod, had in self._patched:
            if had is _MISSING:
                object.__delattr__(mod, "forward")
            else:
                object.__setattr__(mod, "forward", had)
        self._patched = []
        for h in self._node_handles:
            h.remove()
        self._node_handles = []
        self._findings = self._analyse()
        self._seen = {}
        return False

    # ---- analysing ----
    def _direct_hooks(self):
        """Hooks registered without the registry on the model's modules and parameters."""
        known = {i for r in self.registry.records() if r.handle is not None for i in handle_ids(r.handle)}
        out = []
        for owner in (*self.model.modules(), *self.model.parameters()):
            for info in listing(owner, self.lib):
                if info.id not in known and ddp_reducer_of(info.hook) is None:     # not DDP's own hooks
                    path = self._paths.get(id(owner)) if isinstance(owner, self.lib.Module) \
                        else self._param_owner.get(id(owner), (None, None))[1]
                    out.append(HookRecord(norm_kind(info.kind), owner, getattr(info.hook, "hook", info.hook),
                                          path=path, id=info.id))
            hook = comm_hook_of(owner) if id(owner) in self._ddp_obs else None
            if hook is not None and all(r.registered is not hook for r in self.registry.records()):
                out.append(HookRecord("comm", owner, hook, path=self._paths[id(owner)]))
        for name, t in self.tensors.items():
            for info in listing(t, self.lib) or ():
                if info.id not in known:
                    out.append(HookRecord(norm_kind(info.kind), t, getattr(info.hook, "hook", info.hook), path=name,
                                          id=info.id))
        return out

    def _module_of(self, rec):
        """(module, path, obs) the hook depends on, or None."""
        owner = rec.owner
        if isinstance(owner, self.lib.Module):
            if id(owner) in self._obs:
                return owner, self._paths[id(owner)], self._obs[id(owner)]
        elif is_tensor(owner) and id(owner) in self._param_owner:
            mod, _ = self._param_owner[id(owner)]
            return mod, self._paths[id(mod)], self._obs[id(mod)]
        return None

    def _in_scope(self, rec, registered_inside):
        if rec.kind not in _WATCHED:
            return False
        owner = rec.owner
        if owner is None:
            return False
        if isinstance(owner, self.lib.Module):
            return id(owner) in self._obs
        if is_tensor(owner) and (id(owner) in self._param_owner or any(t is owner for t in self.tensors.values())):
            return True
        return registered_inside      # other tensors, nodes, global hooks: only those registered inside

    def _analyse(self):
        findings = []
        for rec in self.registry.records():
            before = self._entry.get(id(rec))
            inside = before is None
            if not self._in_scope(rec, inside):
                continue
            fired_before, removed_before = before if before is not None else (0, False)
            if removed_before and rec.fired > 0:
                continue                 # removed before the watch, after it had fired: not news
            f = self._explain(rec, rec.fired - fired_before, rec.removed)
            if f is not None:
                findings.append(f)
        direct = self._direct_hooks()
        now = {h.id for h in direct}
        for h in direct:
            f = self._explain(h, None, False)
            if f is not None:
                findings.append(f)
        for hid, h in self._direct_entry.items():
            if hid not in now and h.kind in _WATCHED:
                findings.append(_make_finding(h, "removed"))
        if self.names is not None:
            findings.extend(names(self.model, self.names, self.layout))
        return findings

    def _explain(self, rec, fired, removed):
        """The finding for one hook (``fired``: firings during the watch, None when unknown)."""
        kind = rec.kind
        mod = self._module_of(rec)
        if fired:
            if kind == "full_backward" and mod is not None:
                _, path, o = mod
                if o.no_input_grad and o.output_grad:
                    return _make_finding(rec, "fired_early", module=path, n=o.no_input_grad, calls=o.grad_on)
            return None
        if removed:
            return _make_finding(rec, "removed")
        if not rec.enabled:
            return _make_finding(rec, "disabled")
        if kind == "comm":
            return self._explain_comm(rec, fired)
        if is_global(rec.owner):
            ran = any(o.calls for o in self._obs.values())
            if not ran:
                direct = any(o.direct for o in self._obs.values())
                return _make_finding(rec, "forward_called_directly" if direct else "never_executed",
                                     module=self._paths[id(self.model)])
            return _make_finding(rec, "unknown") if fired is not None else None
        if mod is None and kind == "grad" and is_tensor(rec.owner) and torch_attr(rec.owner, "base") is not None:
            return self._explain_view(rec, fired)
        if mod is None and fired is None and kind in _TENSOR and is_tensor(rec.owner):
            # a direct hook on a tensor given in tensors=: reported only when the backward provably missed it
            if self._reached(rec.owner) is False:
                return _make_finding(rec, "backward_not_reached", target=f"{rec.path or 'the tensor'}")
            return None
        if mod is None:                   # a tensor or node outside the model's modules
            if kind in _TENSOR + _NODE:
                return _make_finding(rec, "backward_not_reached", target=f"{rec.path or 'the tensor'}")
            return _make_finding(rec, "unknown") if fired is not None else None
        _, path, o = mod
        if o.calls + o.direct == 0:
            return _make_finding(rec, "never_executed", module=path)
        if kind in _FORWARD + _MODULE_BACKWARD and o.calls == 0:
            return _make_finding(rec, "forward_called_directly", module=path)
        if kind in _FORWARD:
            return _make_finding(rec, "unknown") if fired is not None else None
        if o.grad_on == 0:
            return _make_finding(rec, "grad_mode_off", module=path)
        if kind == "full_backward" and fired is None and o.no_input_grad and o.output_grad and o.reached:
            return _make_finding(rec, "fired_early", module=path, n=o.no_input_grad, calls=o.grad_on)
        if o.output_grad == 0:
            return _make_finding(rec, "no_grad_output", module=path)
        if o.reached == 0:
            target = f"module {path!r}" if kind in _MODULE_BACKWARD else f"parameter {rec.path!r}"
            return _make_finding(rec, "backward_not_reached", target=target)
        return _make_finding(rec, "unknown") if fired is not None else None

    def _explain_view(self, rec, fired):
        """A gradient hook on a view that did not fire (``fired`` 0), or one registered directly (None)."""
        view = rec.owner
        base = torch_attr(view, "base")
        fmt = dict(view=f"(shape {_shape(view)})", base=f"(shape {_shape(base)})")
        own = self._reached(view)
        if fired is None and own is not False:
            return None                   # a direct hook: reported only when its view was proven not reached
        cannot = view_hook_reason(view)
        if cannot is not None:
            return _make_finding(rec, "view_cannot", why=cannot, **fmt)
        reached = self._reached(base)
        if reached is None:
            return _make_finding(rec, "view_unknown", **fmt)
        return _make_finding(rec, "view_not_in_graph" if reached else "view_base_not_reached", **fmt)

    def _explain_comm(self, rec, fired):
        """A DDP comm hook that did not fire (``fired`` 0), or one registered directly (None: reported only
        when no backward could have run it)."""
        ddp = rec.owner
        d = self._ddp_obs[id(ddp)]
        path = self._paths[id(ddp)] or "<root>"
        if d.reached_hook:
            return _make_finding(rec, "unknown") if fired is not None else None
        if d.reached_no_hook:
            return _make_finding(rec, "comm_registered_late", module=path)
        if d.synced:
            return _make_finding(rec, "backward_not_reached", target=f"the output of DistributedDataParallel {path!r}")
        if d.nosync:
            return _make_finding(rec, "no_sync", module=path)
        o, inner = self._obs[id(ddp)], self._obs.get(id(ddp.module))
        if inner is not None and inner.calls + inner.direct > o.calls + o.direct:
            return _make_finding(rec, "ddp_bypassed", module=path,
                                 inner=f"{self._paths[id(ddp)]}.module" if self._paths[id(ddp)] else "model.module")
        if o.calls + o.direct:
            return _make_finding(rec, "grad_mode_off", module=path)
        return _make_finding(rec, "never_executed", module=path)

    # ---- results ----
    def report(self):
        """``[Finding(record, reason), ...]`` for the hooks that did not fire (or fired early)."""
        if self._findings is None:
            raise RuntimeError("why.watch: report() is available after the with block has exited")
        return list(self._findings)

    def explain(self):
        """The report as text, one line per hook."""
        findings = self.report()
        if not findings:
            return "every watched hook fired"
        head = f"{len(findings)} hook{'s' if len(findings) != 1 else ''} did not fire as expected:"
        return "\n".join([head] + [f"  {f}" for f in findings])

    __str__ = explain


_MISSING = object()


def watch(model, *, registry=None, detect_direct=True, names=None, layout=None, tensors=None):
    """Watch ``model`` during a forward and backward: ``with why.watch(model) as w: ...``, then
    ``w.report()`` (findings) or ``print(w)``. ``registry``: the :class:`HookRegistry` whose hooks are
    counted (default: ``tools.registry.default_registry``). ``detect_direct``: detect
    ``module.forward(x)`` calls by wrapping each module's ``forward`` for the duration of the block.
    ``names``: canonical hook names (``tools.hooknames``) to check; those that resolve to nothing are
    reported as :class:`NameFinding` (``layout``: the layout to read them in, default detected).
    ``tensors``: tensors (a list, or ``{name: tensor}``) whose hooks registered directly are explained too,
    and whose base's gradient is observed when they are views."""
    if not isinstance(model, lib_of(model).Module):
        raise TypeError(f"why.watch: model must be a Module, got {type(model).__name__}")
    if registry is not None and not isinstance(registry, HookRegistry):
        raise TypeError(f"why.watch: registry must be a HookRegistry, got {type(registry).__name__}")
    if isinstance(names, str):
        names = [names]
    return Watch(model, registry, detect_direct, names, layout, tensors)
