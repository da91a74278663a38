"""Gradient modifiers as removable hooks: scale, clip by value or norm, freeze, gradient reversal.

Every modifier returns a :class:`ModifierHandle` (``remove()``, context manager). Its settings are
attributes of the handle, read each time the hook runs, so a schedule can change them in place
(``h.factor = 0.5``, ``h.lambda_ = 0.1``).

A *target* is a Tensor, an iterable of Tensors, or a Module:

* Tensor: a tensor hook (``register_hook``) changes the gradient as it arrives at that tensor (a leaf
  then accumulates the changed gradient into ``.grad``; for a non-leaf, everything upstream sees it).
* Module, ``where="parameters"`` (default): the same, on every parameter of the module (recursively)
  that requires grad. The gradient flowing on to the module's input is **not** changed.
* Module, ``where="input"``: a full backward hook on the module changes ``grad_input``, the gradient
  flowing out of the module to its inputs (and so to every earlier layer); the module's own parameter
  gradients are **not** changed.
"""
import math

from .lib import lib_of

__all__ = ["ModifierHandle", "scale_grad", "clip_grad_value", "clip_grad_norm", "freeze", "gradient_reversal"]


class ModifierHandle:
    """What every modifier returns: ``remove()`` takes all its hooks off (idempotent); usable as a
    context manager (hooks removed on exit). The modifier's settings are attributes (read at hook time)."""

    def __init__(self, kind, target_name, **settings):
        self.kind = kind
        self.target = target_name
        self.handles = []
        self.__dict__.update(settings)
        self._settings = tuple(settings)

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    @property
    def active(self):
        return bool(self.handles)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __repr__(self):
        s = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._settings)
        return f"<{self.kind} on {self.target}{', ' + s if s else ''}{'' if self.handles else ' (removed)'}>"


# ---------------------------------------------------------------------------- targets
def _describe(target):
    L = lib_of(target)
    if isinstance(target, L.Module):
        return type(target).__name__
    if isinstance(target, L.Tensor):
        return f"Tensor{tuple(target.shape)}"
    return "tensors"


def _tensors(target, fn):
    """The tensors a modifier hooks for ``target`` (a Module's parameters that require grad)."""
    L = lib_of(target)
    Tensor = L.Tensor
    if isinstance(target, L.Module):
        return [p for p in target.parameters() if p.requires_grad]
    if isinstance(target, Tensor):
        ts = [target]
    else:
        try:
            ts = list(target)
        except TypeError:
            raise TypeError(f"{fn}(): target must be a Tensor, an iterable of Tensors or a Module, "
                            f"got {type(target).__name__}") from None
    for i, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): target[{i}] must be a Tensor, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"{fn}(): cannot register a hook on a tensor that doesn't require gradient "
                               f"(target {_describe(t)}" + (f" at index {i})" if len(ts) > 1 else ")"))
    return ts


def _check_where(where, target, fn):
    if where not in ("parameters", "input"):
        raise ValueError(f"{fn}(): where must be 'parameters' or 'input', got {where!r}")
    if where == "input" and not isinstance(target, lib_of(target).Module):
        raise ValueError(f"{fn}(): where='input' needs a Module target, got {type(target).__name__}")


def _per_grad(handle, target, where, fn, transform):
    """Hook ``transform(grad) -> grad`` on every target tensor, or on the module's grad_input."""
    _check_where(where, target, fn)
    if where == "input":
        def modifier_backward_hook(module, grad_input, grad_output):
            return tuple(None if g is None else transform(g) for g in grad_input)
        modifier_backward_hook.__name__ = f"{fn}_backward_hook"
        handle.handles.append(target.register_full_backward_hook(modifier_backward_hook))
    else:
        def modifier_tensor_hook(grad):
            return transform(grad)
        modifier_tensor_hook.__name__ = f"{fn}_hook"
        handle.handles.extend(t.register_hook(modifier_tensor_hook) for t in _tensors(target, fn))
    return handle


# ---------------------------------------------------------------------------- modifiers
def scale_grad(target, factor, *, where="parameters"):
    """Multiply the gradient by ``factor`` (``handle.factor``) at ``target`` (see the module doc)."""
    h = ModifierHandle("scale_grad", _describe(target), factor=factor)
    return _per_grad(h, target, where, "scale_grad", lambda g: g * h.factor)


def clip_grad_value(target, clip_value, *, where="parameters"):
    """Clamp every gradient entry to ``[-clip_value, clip_value]`` as the gradient arrives (the
    hook recipe of ``torch.nn.utils.clip_grad_value_``'s docs, applied per backward)."""
    h = ModifierHandle("clip_grad_value", _describe(target), clip_value=clip_value)
    return _per_grad(h, target, where, "clip_grad_value", lambda g: g.clamp(-h.clip_value, h.clip_value))


def _total_norm(grads, norm_type):
    torch = lib_of(grads).root
    norms = [torch.linalg.vector_norm(g, norm_type) for g in grads]
    return norms[0] if len(norms) == 1 else torch.linalg.vector_norm(torch.stack(norms), norm_type)


def _clip_coef(h, grads):
    total = _total_norm(grads, h.norm_type)
    if h.error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(f"The total norm of order {float(h.norm_type)} for gradients from `parameters` is "
                           f"non-finite, so it cannot be clipped. To disable this error and scale the gradients "
                           f"by the non-finite norm anyway, set `error_if_nonfinite=False` "
                           f"(clip_grad_norm on {h.target})")
    return (h.max_norm / (total + 1e-6)).clamp(max=1.0)


class _GroupClip:
    """Clips the accumulated ``.grad`` of a group of leaves by their total norm once all of those that
    take part in a backward have accumulated: a multi-grad hook says which ones take part, the
    post-accumulate-grad hooks say when each is done."""

    def __init__(self, handle, params):
        self.h, self.params = handle, params
        self.expected, self.done = None, set()
        graph = lib_of(params).graph
        handle.handles.append(graph.register_multi_grad_hook(params, self._all_grads, mode="all"))
        for i, p in enumerate(params):
            handle.handles.append(p.register_post_accumulate_grad_hook(self._make(i)))

    def _all_grads(self, grads):
        self.expected = {i for i, g in enumerate(grads) if g is not None}
        self._maybe_clip()

    def _make(self, i):
        def clip_grad_norm_hook(param):
            self.done.add(i)
            self._maybe_clip()
        return clip_grad_norm_hook

    def _maybe_clip(self):
        if self.expected is None or not self.expected <= self.done:
            return
        ps = [self.params[i] for i in sorted(self.expected)]
        self.expected, self.done = None, set()
        grads = [p.grad for p in ps if p.grad is not None]
        if grads:
            coef = _clip_coef(self.h, grads)
            for g in grads:
                g.mul_(coef)


def clip_grad_norm(target, max_norm, norm_type=2.0, *, where="parameters", error_if_nonfinite=False):
    """Rescale gradients so that their total ``norm_type`` norm is at most ``max_norm``, with
    ``torch.nn.utils.clip_grad_norm_``'s formula (coef = max_norm / (total + 1e-6), clamped to 1).

    * Module (``where="parameters"``) or leaf tensors: after each backward, once every one of them that
      received a gradient has accumulated it, their ``.grad`` are rescaled together in place (= calling
      ``clip_grad_norm_(module.parameters(), max_norm)`` after every backward).
    * Non-leaf tensor: the gradient arriving there is rescaled (its own norm).
    * Module, ``where="input"``: ``grad_input`` is rescaled by the total norm of its tensors.
    """
    h = ModifierHandle("clip_grad_norm", _describe(target), max_norm=float(max_norm), norm_type=float(norm_type),
                       error_if_nonfinite=error_if_nonfinite)
    _check_where(where, target, "clip_grad_norm")
    if where == "input":
        def clip_grad_norm_backward_hook(module, grad_input, grad_output):
            gs = [g for g in grad_input if g is not None]
            if not gs:
                return None
            coef = _clip_coef(h, gs)
            return tuple(None if g is None else g * coef for g in grad_input)
        h.handles.append(target.register_full_backward_hook(clip_grad_norm_backward_hook))
        return h
    ts = _tensors(target, "clip_grad_norm")
    leaves = [t for t in ts if t.grad_fn is None]
    for t in ts:
        if t.grad_fn is not None:
            def clip_grad_norm_hook(grad):
                return grad * _clip_coef(h, [grad])
            h.handles.append(t.register_hook(clip_grad_norm_hook))
    if leaves:
        _GroupClip(h, leaves)
    return h


def freeze(target):
    """Freeze parameters through hooks, leaving ``requires_grad`` alone: the gradient arriving at each
    parameter is replaced by zeros, and a post-accumulate-grad hook restores ``.grad`` to ``None`` if it
    was ``None`` before the backward, so ``.grad`` ends exactly as it was (an optimizer skips a ``None``
    grad, as with ``requires_grad=False``). Gradients still flow through the module to its input.
    ``remove()`` unfreezes."""
    h = ModifierHandle("freeze", _describe(target))
    was_none = {}

    for p in _tensors(target, "freeze"):
        if p.grad_fn is not None:
            raise RuntimeError(f"freeze(): can only freeze leaf tensors (parameters), got a non-leaf "
                               f"{_describe(p)} with grad_fn {p.grad_fn.name()}")

        def freeze_hook(grad, p=p):
            was_none[id(p)] = p.grad is None
            return lib_of(grad).root.zeros_like(grad)

        def freeze_post_accumulate_hook(param):
            if was_none.pop(id(param), False):
                param.grad = None
        h.handles.append(p.register_hook(freeze_hook))
        h.handles.append(p.register_post_accumulate_grad_hook(freeze_post_accumulate_hook))
    return h


def gradient_reversal(module, lambda_=1.0):
    """Gradient reversal layer (Ganin & Lempitsky): the gradient flowing out of ``module`` to its input
    is multiplied by ``-lambda_`` (``handle.lambda_``); the forward and the module's own parameter
    gradients are unchanged. A full backward hook on the module."""
    if not isinstance(module, lib_of(module).Module):
        raise TypeError(f"gradient_reversal(): module must be a Module, got {type(module).__name__}")
    h = ModifierHandle("gradient_reversal", _describe(module), lambda_=lambda_)

    def gradient_reversal_hook(mod, grad_input, grad_output):
        return tuple(None if g is None else g * (-h.lambda_) for g in grad_input)
    h.handles.append(module.register_full_backward_hook(gradient_reversal_hook))
    return h
