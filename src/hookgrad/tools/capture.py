"""Capture: collect module activations (and their gradients) by module-path pattern.

>>> with capture(model, "layer*.conv1", grads=True) as cache:
...     model(x).sum().backward()
>>> cache["layer1.conv1"][0]          # output of the first call
>>> cache.grads["layer1.conv1"][0]    # d(loss)/d(that output)

>>> with capture(model, "*", grads=True, to="acts/", max_bytes=2**30) as cache:   # streamed to disk
...     model(x).sum().backward()
>>> load_capture("acts/")["layer1.conv1"][0]   # memory-mapped .npy, read lazily

Works on hookgrad and torch models alike (the library is found from ``model``). Built only on public
hooks: one forward hook per selected module (``register_forward_hook``) records the output; with
``grads=True`` the same hook registers a tensor hook (``Tensor.register_hook``) on each output tensor
that requires grad; a forward pre-hook on the root counts the calls of the model (the generation steps).
Every handle is removed when the context exits, also on error.
"""
import json
import os
import re

import numpy as np

from .lib import lib_of, torch_attr
from .paths import match

__all__ = ["ActivationCache", "StopForward", "capture", "load_capture", "CaptureBudgetError", "phases"]

POLICIES = ("detach", "clone", "numpy", "none")
RECOMPUTE = ("ignore", "keep")
INDEX = "capture_index.json"


class CaptureBudgetError(RuntimeError):
    """Raised by a disk capture (``to=...``) when writing the next shard would pass ``max_bytes``."""


class StopForward(Exception):
    """Raised from the forward hook of the last requested module when ``stop_after_last=True``; the
    :class:`capture` context that raised it swallows it (others let it through)."""

    def __init__(self, owner, path):
        super().__init__(f"capture: stopped the forward pass after {path!r}, the last requested module")
        self.owner = owner
        self.path = path


# ---- policies: applied to outputs, inputs and grads (nested tuples, lists and dicts are walked) -------
def _map(fn, x, Tensor):
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, (tuple, list)):
        vals = [_map(fn, v, Tensor) for v in x]
        if hasattr(x, "_fields"):           # namedtuple
            return type(x)(*vals)
        return type(x)(vals)
    if isinstance(x, dict):
        return type(x)((k, _map(fn, v, Tensor)) for k, v in x.items())
    return x


def _detach(t):
    return t.detach()


def _clone(t):
    return t.detach().clone()


def _numpy(t):
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    try:
        return np.array(t.numpy(), copy=True)
    except TypeError:                       # torch bfloat16 & co: no NumPy dtype
        return t.float().numpy().copy()


def _policy_fn(policy, Tensor):
    if policy == "none":
        return lambda x: x
    fn = {"detach": _detach, "clone": _clone, "numpy": _numpy}.get(policy)
    if fn is None:
        raise ValueError(f"capture: unknown policy {policy!r}; expected one of {', '.join(map(repr, POLICIES))}")

    def apply(x):
        if type(x) is Tensor:               # the common case, without the walk
            return fn(x)
        return _map(fn, x, Tensor)
    return apply


# ---- disk shards: one .npy per tensor, a small JSON spec per captured value ----------------------------
def _spec(x, Tensor, write):
    """The JSON spec of a captured value, its tensors written by ``write(tensor, suffix) -> file``."""
    def go(v, suffix):
        if isinstance(v, Tensor):
            return {"npy": write(v, suffix)}
        if isinstance(v, (tuple, list)):
            return {"seq": "tuple" if isinstance(v, tuple) else "list",
                    "items": [go(e, f"{suffix}.{k}") for k, e in enumerate(v)]}
        if isinstance(v, dict):
            return {"dict": [[str(k), go(e, f"{suffix}.{k}")] for k, e in v.items()]}
        if v is None or isinstance(v, (bool, int, float, str)):
            return {"value": v}
        return {"repr": repr(v)[:200]}
    return go(x, "")


def _load(spec, root):
    if "npy" in spec:
        return np.load(os.path.join(root, spec["npy"]), mmap_mode="r")
    if "seq" in spec:
        items = [_load(e, root) for e in spec["items"]]
        return tuple(items) if spec["seq"] == "tuple" else items
    if "dict" in spec:
        return {k: _load(e, root) for k, e in spec["dict"]}
    return spec.get("value", spec.get("repr"))


class LazyCalls:
    """A list-like view of one module's calls on disk: ``calls[i]`` memory-maps call ``i``'s shards
    (``np.load(mmap_mode="r")``); nothing is read until an element is touched."""

    def __init__(self, specs, root):
        self._specs, self._root = specs, root

    def __len__(self):
        return len(self._specs)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        spec = self._specs[i]
        return None if spec is None else _load(spec, self._root)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def clear(self):
        self._specs.clear()

    def __repr__(self):
        return f"LazyCalls({len(self)} calls in {self._root!r})"


class _Disk:
    """Writes shards under ``root`` and keeps the byte budget."""

    def __init__(self, root, max_bytes):
        self.root = os.fspath(root)
        self.max_bytes = max_bytes
        self.written = 0
        os.makedirs(self.root, exist_ok=True)
        if os.path.exists(os.path.join(self.root, INDEX)):
            raise FileExistsError(f"capture: {self.root!r} already holds a capture ({INDEX}); give an empty or new "
                                  "directory")

    def write(self, what, path, call, value, Tensor, add_to=None):
        folder = re.sub(r"[^A-Za-z0-9_.-]", "_", path) or "_root"
        os.makedirs(os.path.join(self.root, folder), exist_ok=True)

        def one(t, suffix):
            a = _numpy(t)
            name = f"{folder}/{what}.{call}{suffix}.npy"
            full = os.path.join(self.root, name)
            if add_to is not None and os.path.exists(full):      # a second backward through the graph adds up
                a = a + np.load(full)
                self.written -= os.path.getsize(full)
            need = a.nbytes + 128
            if self.max_bytes is not None and self.written + need > self.max_bytes:
                raise CaptureBudgetError(
                    f"capture: writing the {what} of {path or '<root>'!r} call {call} ({a.nbytes:,} bytes) would pass "
                    f"max_bytes={self.max_bytes:,} ({self.written:,} bytes written so far to {self.root!r}); capture "
                    "fewer modules (patterns), fewer calls, or raise max_bytes")
            np.save(full, a)
            self.written += os.path.getsize(full)
            return name
        return _spec(value, Tensor, one)


class ActivationCache:
    """What :class:`capture` collected. Every value is a list with one entry per call of the module, in
    call order (a module called twice has two entries).

    - ``cache[path]`` -> list of outputs; ``cache[path][i]`` = output of call ``i``
    - ``cache.calls(path)`` -> how many times the module ran
    - ``cache.grads[path][i]`` -> gradient w.r.t. output ``i`` (``grads=True``); ``None`` until a backward
      reaches it (a tuple/list output gets a list with one gradient per element)
    - ``cache.inputs[path][i]`` / ``cache.kwargs[path][i]`` -> positional args tuple / keyword args dict
      (``inputs=True``)
    - ``cache.order`` -> ``[(path, call_index)]`` in the order the modules finished in forward
    - ``cache.paths`` -> the selected paths; ``cache.missing()`` -> those that never ran
    - ``cache.steps[path][i]`` -> the generation step of call ``i`` (how many calls of the root model began
      before it); ``cache.by_step(path)`` -> ``{step: [outputs]}``
    - ``cache.phases[path][i]`` -> ``"forward"`` or ``"recompute"`` (a forward rerun inside backward by
      activation checkpointing; recorded only with ``recompute="keep"``)
    - ``cache.root`` -> the directory of a disk capture (``to=...``), else None; its values are memory-mapped
    """

    def __init__(self, paths, grads=False, inputs=False):
        self.paths = list(paths)
        self.outputs = {p: [] for p in self.paths}
        self.grads = {p: [] for p in self.paths} if grads else {}
        self.inputs = {p: [] for p in self.paths} if inputs else {}
        self.kwargs = {p: [] for p in self.paths} if inputs else {}
        self.steps = {p: [] for p in self.paths}
        self.phases = {p: [] for p in self.paths}
        self.order = []
        self.stopped_at = None      # path whose hook stopped the forward (stop_after_last)
        self.root = None

    def __getitem__(self, path):
        try:
            return self.outputs[path]
        except KeyError:
            raise KeyError(f"capture: {path!r} is not a captured module path; captured: {self.paths}") from None

    def calls(self, path):
        """Number of times the module at ``path`` ran while captured."""
        return len(self[path])

    def by_step(self, path):
        """``{generation step: [outputs of that step's calls]}`` for the module at ``path``."""
        out = {}
        for step, v in zip(self.steps[path], self[path]):
            out.setdefault(step, []).append(v)
        return out

    def missing(self):
        """Selected paths whose module never ran (the usual reason a capture "silently" got nothing)."""
        return [p for p in self.paths if not self.outputs[p]]

    def __contains__(self, path):
        return path in self.outputs

    def __iter__(self):
        return iter(self.paths)

    def __len__(self):
        return len(self.paths)

    def keys(self):
        return list(self.paths)

    def items(self):
        return [(p, self.outputs[p]) for p in self.paths]

    def clear(self):
        """Forget everything captured so far (hooks stay in place inside the context)."""
        for d in (self.outputs, self.grads, self.inputs, self.kwargs, self.steps, self.phases):
            for v in d.values():
                v.clear()
        self.order.clear()
        self.stopped_at = None

    def __repr__(self):
        calls = ", ".join(f"{p or '<root>'}: {len(v)}" for p, v in self.outputs.items())
        return f"ActivationCache({calls}{', grads' if self.grads else ''})"


class capture:
    """Context manager collecting module outputs (and gradients w.r.t. them) by module path.

    Args:
        model: the root module (hookgrad or torch); paths are relative to it (the root itself is ``""``).
        *patterns: fnmatch patterns over module paths (``"layer*.conv1"``, ``"*"``); none means ``"*"``.
            A pattern that matches no module raises ``ValueError`` naming it.
        grads: also record the gradient w.r.t. each captured output during backward (run the backward
            inside the context). Tensor hooks on the outputs, so the gradient is exactly what a full
            backward hook would get as ``grad_output``; repeated backwards through the same graph add up.
        policy: ``"detach"`` (default: a detached alias, no copy), ``"clone"`` (a detached copy, immune to
            later in-place changes), ``"numpy"`` (a NumPy copy) or ``"none"`` (the output itself, graph
            included).
        inputs: also record the positional args (``cache.inputs``) and kwargs (``cache.kwargs``).
        stop_after_last: once every selected module has run once, raise :class:`StopForward`, which this
            context swallows: the rest of the model does not run (forward-only feature extraction; put
            only the forward call in the ``with`` body, code after it in the body is skipped too).
        to: a directory: stream every captured tensor there as it is produced, one ``.npy`` shard per
            tensor (``<path>/output.<call>.npy``, ``grad.<call>.npy``...), instead of keeping it in memory;
            the cache's values are then memory-mapped reads of the shards, and :func:`load_capture` reloads
            the capture later. ``policy`` does not apply (a shard is a copy).
        max_bytes: with ``to``: the most bytes to write; the shard that would pass it raises
            :class:`CaptureBudgetError` (from the forward, or the backward for a gradient) and the context
            ends with what was written so far, still loadable.
        recompute: ``"ignore"`` (default): a forward rerun inside backward by activation checkpointing is
            not recorded (its outputs equal the forward's; gradients come once, from the forward's
            outputs); ``"keep"``: recorded too, with ``cache.phases[path][i] == "recompute"``.
    """

    def __init__(self, model, *patterns, grads=False, policy="detach", inputs=False, stop_after_last=False,
                 to=None, max_bytes=None, recompute="ignore"):
        self.model = model
        self.lib = lib = lib_of(model)
        self.Tensor = lib.Tensor
        self.patterns = patterns or ("*",)
        self.want_grads = bool(grads)
        self.policy = policy
        self._apply = _policy_fn(policy, self.Tensor)
        self.want_inputs = bool(inputs)
        self.stop_after_last = bool(stop_after_last)
        if recompute not in RECOMPUTE:
            raise ValueError(f"capture: recompute must be one of {RECOMPUTE}, got {recompute!r}")
        self.recompute = recompute
        if max_bytes is not None and to is None:
            raise ValueError("capture: max_bytes bounds a disk capture; give to='directory' too")
        self.to, self.max_bytes = to, max_bytes
        self._task_id = torch_attr(lib.root, "graph_task_id")
        self._handles = []
        self._tensor_handles = []
        self.cache = None

    # ---- hooks -----------------------------------------------------------------------------------
    def _make_hook(self, path):
        cache, apply = self.cache, self._apply
        raw = self._raw
        outs = raw["outputs"][path]
        out_append = outs.append
        order_append = cache.order.append
        steps_append, phases_append = cache.steps[path].append, cache.phases[path].append
        task_id, keep = self._task_id, self.recompute == "keep"
        disk, Tensor = self._disk, self.Tensor
        if not (self.want_grads or self.want_inputs or self.stop_after_last or disk):
            def hook(module, args, output):          # the cheap, common case
                if task_id() != -1:                  # a forward rerun inside backward (checkpointing)
                    if not keep:
                        return
                    phases_append("recompute")
                else:
                    phases_append("forward")
                order_append((path, len(outs)))
                steps_append(self._step if self._step > 0 else 0)
                out_append(apply(output))
            return hook, False

        grads = raw["grads"].get(path)
        ins, kws = raw["inputs"].get(path), raw["kwargs"].get(path)
        remaining = self._remaining

        def hook(module, args, kwargs, output):
            phase = "recompute" if task_id() != -1 else "forward"
            if phase == "recompute" and not keep:
                return
            idx = len(outs)
            order_append((path, idx))
            steps_append(self._step if self._step > 0 else 0)
            phases_append(phase)
            if disk is None:
                out_append(apply(output))
            else:
                out_append(disk.write("output", path, idx, output, Tensor))
            if ins is not None:
                if disk is None:
                    ins.append(apply(args))
                    kws.append(apply(dict(kwargs)))
                else:
                    ins.append(disk.write("input", path, idx, tuple(args), Tensor))
                    kws.append(disk.write("kwargs", path, idx, dict(kwargs), Tensor))
            if grads is not None:
                self._hook_grads(path, idx, grads, output)
            if remaining is not None and idx == 0:
                remaining.discard(path)
                if not remaining:
                    cache.stopped_at = path
                    raise StopForward(self, path)
        return hook, True

    def _hook_grads(self, path, idx, grads, output):
        apply, disk, Tensor = self._apply, self._disk, self.Tensor
        handles = self._tensor_handles
        if isinstance(output, Tensor):
            grads.append(None)
            if output.requires_grad:
                def on_grad(g):
                    if disk is not None:
                        grads[idx] = disk.write("grad", path, idx, g, Tensor, add_to=True)
                        return
                    old = grads[idx]
                    g = apply(g)
                    grads[idx] = g if old is None else old + g
                handles.append(output.register_hook(on_grad))
        elif isinstance(output, (tuple, list)):
            slot = [None] * len(output)
            grads.append(slot if disk is None else None)
            for k, t in enumerate(output):
                if isinstance(t, Tensor) and t.requires_grad:
                    def on_grad(g, k=k):
                        if disk is not None:
                            slot[k] = disk.write("grad", path, f"{idx}.{k}", g, Tensor, add_to=True)
                            grads[idx] = {"seq": "list", "items": [e or {"value": None} for e in slot]}
                            return
                        old = slot[k]
                        g = apply(g)
                        slot[k] = g if old is None else old + g
                    handles.append(t.register_hook(on_grad))
        else:
            grads.append(None)

    def _root_pre(self, module, args):
        if self._task_id() == -1:       # not a recompute inside backward
            self._step += 1

    # ---- context -----------------------------------------------------------------------------------
    def __enter__(self):
        if self.cache is not None and self._handles:
            raise RuntimeError("capture: this context is already active; create a new capture(...) to nest")
        selected = match(self.model, self.patterns, "capture")
        self.cache = ActivationCache([p for p, _ in selected], self.want_grads, self.want_inputs)
        self._remaining = set(self.cache.paths) if self.stop_after_last else None
        c = self.cache
        self._raw = {"outputs": c.outputs, "grads": c.grads, "inputs": c.inputs, "kwargs": c.kwargs}
        self._disk = None
        if self.to is not None:         # the hooks append specs; the cache shows them as lazy arrays
            self._disk = _Disk(self.to, self.max_bytes)
            self._raw = {k: {p: [] for p in d} for k, d in self._raw.items()}
            _lazy(c, dict(self._raw, bytes=0), self._disk.root)
        self._step = -1
        try:
            self._handles.append(self.model.register_forward_pre_hook(self._root_pre, prepend=True))
            for path, mod in selected:
                hook, with_kwargs = self._make_hook(path)
                self._handles.append(mod.register_forward_hook(hook, with_kwargs=with_kwargs))
        except BaseException:
            self._remove()
            raise
        return self.cache

    def _remove(self):
        for h in self._handles:
            h.remove()
        for h in self._tensor_handles:
            h.remove()
        self._handles = []
        self._tensor_handles = []

    def __exit__(self, exc_type, exc, tb):
        self._remove()
        if self._disk is not None:
            self._finish_disk()
        return isinstance(exc, StopForward) and exc.owner is self

    def _finish_disk(self):
        """Write the index and turn the cache's specs into lazy, memory-mapped views."""
        c, root = self.cache, self._disk.root
        index = dict(self._raw, paths=c.paths, order=c.order, steps=c.steps, phases=c.phases,
                     stopped_at=c.stopped_at, bytes=self._disk.written, library=self.lib.name)
        with open(os.path.join(root, INDEX), "w") as f:
            json.dump(index, f)
        _lazy(c, index, root)


def _lazy(cache, index, root):
    cache.root = root
    for name in ("outputs", "grads", "inputs", "kwargs"):
        setattr(cache, name, {p: LazyCalls(v, root) for p, v in index[name].items()})
    cache.bytes = index["bytes"]


def load_capture(directory):
    """Reload a disk capture (``capture(..., to=directory)``) as an :class:`ActivationCache` whose values
    are memory-mapped NumPy arrays, read only when touched."""
    root = os.fspath(directory)
    try:
        with open(os.path.join(root, INDEX)) as f:
            index = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"load_capture: {root!r} holds no capture (no {INDEX}); was the capture "
                                "context exited?") from None
    c = ActivationCache(index["paths"], bool(index["grads"]), bool(index["inputs"]))
    c.order = [tuple(o) for o in index["order"]]
    c.steps, c.phases, c.stopped_at = index["steps"], index["phases"], index["stopped_at"]
    _lazy(c, index, root)
    return c


class phases:
    """Context manager telling any hook which phase it runs in: ``"forward"``, ``"recompute"`` (a module's
    forward rerun inside backward by activation checkpointing) or ``"backward"``.

    >>> with phases(model) as ph:
    ...     model.block.register_forward_hook(lambda m, a, o: print(ph.now()))   # forward, then recompute
    ...     out.register_hook(lambda g: print(ph.now()))                          # backward

    A forward pre/post hook pair on every module of ``model`` keeps a per-thread depth of module calls; a
    backward pass in progress is told by its id (``_C._current_graph_task_id()``, as checkpointing does).
    """

    def __init__(self, model):
        self.model = model
        self.lib = lib_of(model)
        self._task_id = torch_attr(self.lib.root, "graph_task_id")
        self._tls = __import__("threading").local()
        self._handles = []

    def now(self):
        if self._task_id() == -1:
            return "forward"
        return "recompute" if getattr(self._tls, "depth", 0) else "backward"

    def _pre(self, module, args):
        self._tls.depth = getattr(self._tls, "depth", 0) + 1

    def _post(self, module, args, output):
        self._tls.depth = max(0, getattr(self._tls, "depth", 1) - 1)

    def __enter__(self):
        for _, mod in self.model.named_modules():
            self._handles.append(mod.register_forward_pre_hook(self._pre, prepend=True))
            self._handles.append(mod.register_forward_hook(self._post, always_call=True))
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []
