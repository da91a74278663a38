"""RemovableHandle and the one hook-storage pattern used everywhere in hookgrad.

Every ``register_*`` stores its hook in an id-keyed ``OrderedDict`` at ``handle.id`` and returns a
:class:`RemovableHandle`. Flags that qualify a hook (with_kwargs, always_call, ...) live in further
dicts keyed by the same id, passed as ``extra_dict`` so that ``remove()`` cleans them too.
"""
import weakref
from collections import OrderedDict, namedtuple

__all__ = ["HookInfo", "RemovableHandle", "add_hook", "unserializable_hook", "warn_if_has_hooks", "hook_name", "HookDict"]


# The dict type every hook lives in, keyed by handle id. It *is* OrderedDict (weak-referenceable,
# and what PyTorch code inspecting ``tensor._backward_hooks`` or ``module._forward_hooks`` expects).
HookDict = OrderedDict

HookInfo = namedtuple("HookInfo", "kind id hook flags")
HookInfo.__doc__ = """One registered hook: its kind (e.g. ``"forward"``), handle id, the callable and its flags
(``("with_kwargs", "always_call")``...). Returned by ``Module.hooks()`` and ``Tensor.hooks()``."""


class RemovableHandle:
    """A handle which provides the capability to remove a hook.

    >>> d = OrderedDict(); h = RemovableHandle(d); d[h.id] = print
    >>> h.remove(); h.remove()   # idempotent
    >>> len(d)
    0
    """

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = i = RemovableHandle.next_id
        RemovableHandle.next_id = i + 1
        self.extra_dict_ref = ()
        if extra_dict is None:
            return
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self):
        if self.extra_dict_ref is None:
            return (self.hooks_dict_ref(), self.id)
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        if state[0] is None:
            self.hooks_dict_ref = weakref.ref(OrderedDict())
        else:
            self.hooks_dict_ref = weakref.ref(state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        if len(state) < 3 or state[2] is None:
            self.extra_dict_ref = ()
        else:
            self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2] if d is not None)

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()


def add_hook(hooks_dict, hook, *, extra_dict=None, prepend=False):
    """The one way a hook is stored: at a new handle's id in ``hooks_dict`` (moved to the front with
    ``prepend``); ``extra_dict`` are the flag dicts that ``handle.remove()`` cleans too."""
    handle = RemovableHandle(hooks_dict, extra_dict=extra_dict)
    hooks_dict[handle.id] = hook
    if prepend:
        hooks_dict.move_to_end(handle.id, last=False)
    return handle


def unserializable_hook(f):
    """Mark a function as an unserializable hook: saving a tensor with it gives no warning."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    import warnings
    if tensor._backward_hooks:
        for k in tensor._backward_hooks:
            hook = tensor._backward_hooks[k]
            if not hasattr(hook, "__torch_unserializable__"):
                warnings.warn(f"backward hook {repr(hook)} on tensor will not be serialized.  "
                              "If this is expected, you can decorate the function with "
                              "@torch.utils.hooks.unserializable_hook to suppress this warning")


def hook_name(hook):
    """The name PyTorch uses for a hook in error messages."""
    name = getattr(hook, "__name__", None)
    return "<unknown>" if name is None else name
