"""Capture: collect module activations (and their gradients) by module-path pattern.

>>> with capture(model, "layer*.conv1", grads=True) as cache:
...     model(x).sum().backward()
>>> cache["layer1.conv1"][0]          # output of the first call
>>> cache.grads["layer1.conv1"][0]    # d(loss)/d(that output)

Built only on public hooks: one forward hook per selected module (``register_forward_hook``) records
the output; with ``grads=True`` the same hook registers a tensor hook (``Tensor.register_hook``) on each
output tensor that requires grad. Every handle is removed when the context exits, also on error.
"""
import numpy as np

from .. import Tensor
from .paths import match

__all__ = ["ActivationCache", "StopForward", "capture"]

POLICIES = ("detach", "clone", "numpy", "none")


class StopForward(Exception):
    """Raised from the forward hook of the last requested module when ``stop_after_last=True``; the
    :class:`capture` context that raised it swallows it (others let it through)."""

    def __init__(self, owner, path):
        super().__init__(f"capture: stopped the forward pass after {path!r}, the last requested module")
        self.owner = owner
        self.path = path


# ---- policies: applied to outputs, inputs and grads (nested tuples, lists and dicts are walked) -------
def _map(fn, x):
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, (tuple, list)):
        vals = [_map(fn, v) for v in x]
        if hasattr(x, "_fields"):           # namedtuple
            return type(x)(*vals)
        return type(x)(vals)
    if isinstance(x, dict):
        return type(x)((k, _map(fn, v)) for k, v in x.items())
    return x


def _detach(t):
    return t.detach()


def _clone(t):
    return t.detach().clone()


def _numpy(t):
    return np.array(t.detach().numpy(), copy=True)


def _policy_fn(policy):
    if policy == "none":
        return lambda x: x
    fn = {"detach": _detach, "clone": _clone, "numpy": _numpy}.get(policy)
    if fn is None:
        raise ValueError(f"capture: unknown policy {policy!r}; expected one of {', '.join(map(repr, POLICIES))}")

    def apply(x):
        if type(x) is Tensor:               # the common case, without the walk
            return fn(x)
        return _map(fn, x)
    return apply


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
    """

    def __init__(self, paths, grads=False, inputs=False):
        self.paths = list(paths)
        self.outputs = {p: [] for p in self.paths}
        self.grads = {p: [] for p in self.paths} if grads else {}
        self.inputs = {p: [] for p in self.paths} if inputs else {}
        self.kwargs = {p: [] for p in self.paths} if inputs else {}
        self.order = []
        self.stopped_at = None      # path whose hook stopped the forward (stop_after_last)

    def __getitem__(self, path):
        try:
            return self.outputs[path]
        except KeyError:
            raise KeyError(f"capture: {path!r} is not a captured module path; captured: {self.paths}") from None

    def calls(self, path):
        """Number of times the module at ``path`` ran while captured."""
        return len(self[path])

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
        for d in (self.outputs, self.grads, self.inputs, self.kwargs):
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
        model: the root module; paths are relative to it (the root itself is ``""``).
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
    """

    def __init__(self, model, *patterns, grads=False, policy="detach", inputs=False, stop_after_last=False):
        self.model = model
        self.patterns = patterns or ("*",)
        self.want_grads = bool(grads)
        self.policy = policy
        self._apply = _policy_fn(policy)
        self.want_inputs = bool(inputs)
        self.stop_after_last = bool(stop_after_last)
        self._handles = []
        self._tensor_handles = []
        self.cache = None

    # ---- hooks -----------------------------------------------------------------------------------
    def _make_hook(self, path):
        cache, apply = self.cache, self._apply
        outs = cache.outputs[path]
        out_append = outs.append
        order_append = cache.order.append
        if not (self.want_grads or self.want_inputs or self.stop_after_last):
            def hook(module, args, output):          # the cheap, common case
                order_append((path, len(outs)))
                out_append(apply(output))
            return hook, False

        grads = cache.grads.get(path)
        ins, kws = cache.inputs.get(path), cache.kwargs.get(path)
        remaining = self._remaining

        def hook(module, args, kwargs, output):
            idx = len(outs)
            order_append((path, idx))
            out_append(apply(output))
            if ins is not None:
                ins.append(apply(args))
                kws.append(apply(dict(kwargs)))
            if grads is not None:
                self._hook_grads(path, idx, grads, output)
            if remaining is not None and idx == 0:
                remaining.discard(path)
                if not remaining:
                    cache.stopped_at = path
                    raise StopForward(self, path)
        return hook, True

    def _hook_grads(self, path, idx, grads, output):
        apply = self._apply
        handles = self._tensor_handles
        if isinstance(output, Tensor):
            grads.append(None)
            if output.requires_grad:
                def on_grad(g):
                    old = grads[idx]
                    g = apply(g)
                    grads[idx] = g if old is None else old + g
                handles.append(output.register_hook(on_grad))
        elif isinstance(output, (tuple, list)):
            slot = [None] * len(output)
            grads.append(slot)
            for k, t in enumerate(output):
                if isinstance(t, Tensor) and t.requires_grad:
                    def on_grad(g, k=k):
                        old = slot[k]
                        g = apply(g)
                        slot[k] = g if old is None else old + g
                    handles.append(t.register_hook(on_grad))
        else:
            grads.append(None)

    # ---- context -----------------------------------------------------------------------------------
    def __enter__(self):
        if self.cache is not None and self._handles:
            raise RuntimeError("capture: this context is already active; create a new capture(...) to nest")
        selected = match(self.model, self.patterns, "capture")
        self.cache = ActivationCache([p for p, _ in selected], self.want_grads, self.want_inputs)
        self._remaining = set(self.cache.paths) if self.stop_after_last else None
        try:
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
        return isinstance(exc, StopForward) and exc.owner is self
