"""Gradient hooks on views that are not in the loss graph (nnsight #664), on hookgrad and torch tensors.

``view.register_hook(fn)`` fires only when the loss was computed through ``view`` itself: a slice taken
to watch part of an activation (``h[:, 0]``) while the loss uses ``h`` never fires, silently.
``register_view_hook(view, fn)`` hooks the view's base instead and calls ``fn`` with the slice of the
base's gradient at the view's elements (``as_strided`` with the view's sizes, strides and offset), so it
fires whenever the base's gradient is computed, whichever path the loss took.

>>> h = model.encoder(x)              # (N, T, C), in the loss graph
>>> handle = register_view_hook(h[:, 0], lambda g: print(g.norm()))    # the CLS token's gradient
>>> model.head(h).sum().backward()    # fires with d(loss)/dh[:, 0]

A tensor that is not a view is hooked directly. What cannot work raises ``RuntimeError`` with the reason
(the base does not require grad). A view taken under ``no_grad`` still names the base's elements, so it
can be hooked. NOTE: for a view that is in the loss graph, ``fn`` gets the base's gradient at those
elements, the sum over every path (the view's own ``register_hook`` gets only the path through it).
"""
from .lib import lib_of, torch_attr

__all__ = ["register_view_hook", "view_hook_reason"]


def view_hook_reason(view):
    """None when :func:`register_view_hook` can hook ``view``, else the reason it cannot (a sentence)."""
    lib = lib_of(view)
    if not isinstance(view, lib.Tensor):
        return f"expected a Tensor, got {type(view).__name__}"
    base = torch_attr(view, "base")
    if base is None:
        return None if view.requires_grad else "the tensor does not require grad"
    if not base.requires_grad:
        return "its base does not require grad: no gradient is computed for it"
    return None


def register_view_hook(view, hook):
    """Call ``hook(grad)`` with the slice of the view's base gradient at the view's elements, each time
    the base's gradient is computed. Returns the tensor hook's handle (on the base). A tensor that is
    not a view gets an ordinary ``register_hook``. ``hook``'s return value is ignored (the base's
    gradient is not changed)."""
    reason = view_hook_reason(view)
    if reason is not None:
        raise RuntimeError(f"register_view_hook: cannot hook this tensor of shape {tuple(view.shape)}: {reason}")
    base = torch_attr(view, "base")
    if base is None:
        return view.register_hook(lambda g: (hook(g), None)[1])
    size, stride = tuple(view.shape), tuple(view.stride())
    offset = view.storage_offset() - base.storage_offset()
    lib = lib_of(view)
    bstride = tuple(base.stride())

    def view_hook(g):
        if tuple(g.stride()) != bstride:        # lay the gradient out as the base is, then take the view
            full = lib.empty_strided(tuple(base.shape), bstride, dtype=g.dtype, device=g.device)
            full.copy_(g)
            g = full
        hook(g.as_strided(size, stride, offset))
    return base.register_hook(view_hook)
