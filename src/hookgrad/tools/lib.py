"""Which library a tool works on, hookgrad or PyTorch, worked out from the objects it is given.

Every tool takes a hookgrad model or a ``torch.nn.Module``. :func:`lib_of` finds the library from the
classes of the objects (a module's, tensor's or node's package), so hookgrad never imports torch: a
torch object can only exist once the user imported torch, and its package is then ``sys.modules``'
``"torch"``. The :class:`Lib` it returns gives the tools what differs between the two: the classes to
test against, the hook listings (hookgrad has ``Module.hooks()``; on torch they are read from the
hook dicts PyTorch keeps under the same names, ``_forward_hooks``... by :data:`HOOK_KINDS`), and the
grad-mode functions.
"""
import sys
import types

from ..utils.hooks import HookInfo
from ..nn.modules.module import HOOK_KINDS

__all__ = ["Lib", "lib_of", "library_of", "OPTIMIZER_KINDS", "GLOBAL_OPTIMIZER_KINDS", "hookgrad_lib", "is_tensor", "tensor_types", "TORCH_NAMES", "torch_attr"]

# The PyTorch attributes the tools read on torch objects, all in this one table. PyTorch has no public
# listing of hooks (what hookgrad offers as Module.hooks(), Tensor.hooks(), ddp.comm_hooks()), nor a
# public "is a backward running" test, so on torch they are read where PyTorch keeps them (the module
# and tensor hook dicts are named by HOOK_KINDS and _TENSOR_KINDS below). The tools write them only to
# empty a model's module hook dicts (HookRegistry.remove_all, as hookgrad's Module.remove_hooks).
TORCH_NAMES = {
    "graph_task_id": "_C._current_graph_task_id",    # -1 outside a backward pass (torch.utils.checkpoint uses it)
    "comm_hooks": "_comm_hooks",                      # DistributedDataParallel: [(hook, state)] registered
    # both libraries' (PyTorch documents them in its autograd notes; no public accessor):
    "version": "_version",                            # a tensor's version counter (in-place checks)
    "base": "_base",                                  # the tensor a view is of
    "input_metadata": "_input_metadata",              # a graph node's forward outputs (autograd.graph.Node)
    "queue_callback": "autograd.Variable._execution_engine.queue_callback",   # run at the end of this backward
}


def torch_attr(obj, key, default=None):
    """``obj.<TORCH_NAMES[key]>`` (a dotted path), or ``default`` where it is missing."""
    for part in TORCH_NAMES[key].split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return default
    return obj

_LIBS = {}
_TENSOR_KINDS = (("grad", "_backward_hooks"), ("post_accumulate_grad", "_post_accumulate_grad_hooks"))
# an optimizer's hook kinds (the registry's names, the attribute both libraries keep them in)
OPTIMIZER_KINDS = (("step_pre", "_optimizer_step_pre_hooks"), ("step_post", "_optimizer_step_post_hooks"),
                   ("state_dict_pre", "_optimizer_state_dict_pre_hooks"),
                   ("state_dict", "_optimizer_state_dict_post_hooks"),
                   ("load_state_dict_pre", "_optimizer_load_state_dict_pre_hooks"),
                   ("load_state_dict_post", "_optimizer_load_state_dict_post_hooks"))
# the global optimizer hooks (register_optimizer_step_pre_hook...): kind, register function, dict, in optim.optimizer
GLOBAL_OPTIMIZER_KINDS = (("step_pre", "register_optimizer_step_pre_hook", "_global_optimizer_pre_hooks"),
                          ("step_post", "register_optimizer_step_post_hook", "_global_optimizer_post_hooks"))


def _dict_listing(kind, d, flag_dicts=None):
    if not d:
        return []
    flag_dicts = flag_dicts or {}
    return [HookInfo(kind, hid, hook, tuple(f for f, fd in flag_dicts.items() if fd and hid in fd))
            for hid, hook in list(d.items())]


class Lib:
    """One library's names as the tools need them (``lib.Tensor``, ``lib.Module``, ``lib.nn``,
    ``lib.no_grad``...), and the hook listings of its objects."""

    def __init__(self, root):
        self.root = root
        self.is_torch = root.__name__ == "torch"
        self.name = root.__name__
        self.Tensor = root.Tensor
        self.nn = root.nn
        self.F = root.nn.functional
        self.Module = root.nn.Module
        self.autograd = root.autograd
        self.no_grad = root.no_grad
        self.enable_grad = root.enable_grad
        self.module_mod = sys.modules[root.nn.Module.__module__]   # where the global module hooks live
        import importlib
        self.graph = importlib.import_module(root.__name__ + ".autograd.graph")
        self.Node = self.graph.Node

    def __repr__(self):
        return f"<tools lib {self.name}>"

    # ---- classes that need a sub-package loaded (distributed, optim) ----
    def _cls(self, modname, clsname):
        mod = sys.modules.get(f"{self.name}.{modname}")
        if mod is None:
            return None               # nothing of it exists unless the user imported it
        return getattr(mod, clsname, None)

    def is_ddp(self, obj):
        cls = self._cls("nn.parallel.distributed", "DistributedDataParallel")
        return cls is not None and isinstance(obj, cls)

    def is_optimizer(self, obj):
        cls = self._cls("optim.optimizer", "Optimizer")
        return cls is not None and isinstance(obj, cls)

    def is_reducer(self, obj):
        """DDP's Reducer (its gradient-ready hooks are its bound methods)."""
        if not self.is_torch:
            cls = self._cls("distributed", "Reducer")
            return cls is not None and isinstance(obj, cls)
        return type(obj).__name__ == "Reducer" and type(obj).__module__.startswith("torch")

    # ---- hook listings (HookInfo(kind, id, hook, flags)) ----
    def module_hooks(self, mod):
        """The hooks on one module, PyTorch's running order per kind (``Module.hooks()`` on hookgrad)."""
        if not self.is_torch:
            return mod.hooks()
        d = mod.__dict__
        out = []
        for k in HOOK_KINDS:
            kind = "full_backward" if k.kind == "backward" and d.get("_is_full_backward_hook") else k.kind
            out += _dict_listing(kind, d.get(k.attr), {f: d.get(a) for f, a in k.flags.items()})
        return out

    def optimizer_module(self):
        """``<lib>.optim.optimizer`` when the user loaded it, else None (no optimizer hook can exist then)."""
        return sys.modules.get(self.name + ".optim.optimizer")

    def global_optimizer_hooks(self):
        """The global optimizer step hooks (``register_optimizer_step_pre_hook`` / ``_post_hook``)."""
        mod = self.optimizer_module()
        if mod is None:
            return []
        out = []
        for kind, _, attr in GLOBAL_OPTIMIZER_KINDS:
            out += _dict_listing(kind, getattr(mod, attr, None))
        return out

    def global_module_hooks(self):
        if not self.is_torch:
            return self.module_mod.global_module_hooks()
        g = vars(self.module_mod)
        out = []
        for k in HOOK_KINDS:
            if k.global_attr is not None:
                kind = "full_backward" if k.kind == "backward" and g.get("_global_is_full_backward_hook") else k.kind
                out += _dict_listing(kind, g.get(k.global_attr), {f: g.get(a) for f, a in k.global_flags.items()})
        return out

    def tensor_hooks(self, t):
        if not self.is_torch:
            return t.hooks()
        out = []
        for kind, attr in _TENSOR_KINDS:
            out += _dict_listing(kind, getattr(t, attr, None))
        return out

    def optimizer_hooks(self, opt):
        d = opt.__dict__
        out = []
        for kind, attr in OPTIMIZER_KINDS:
            out += _dict_listing(kind, d.get(attr))
        return out

    def listing(self, owner):
        """The hooks on ``owner`` (``"global"``, a module, a tensor, a node where the library lists
        them, an optimizer), or None when it has no listing."""
        if isinstance(owner, str) and owner == "global":
            return self.global_module_hooks() + self.global_optimizer_hooks()
        if isinstance(owner, self.Module):
            return self.module_hooks(owner)
        if isinstance(owner, self.Tensor):
            return self.tensor_hooks(owner)
        if self.is_optimizer(owner):
            return self.optimizer_hooks(owner)
        if not self.is_torch and isinstance(owner, self.Node):
            return owner.hooks()
        return None                  # torch's nodes keep their hook dicts in C++: no listing

    def remove_module_hooks(self, model):
        """Remove every hook registered on ``model`` and its submodules; returns how many."""
        if not self.is_torch:
            return model.remove_hooks(recurse=True)
        n = 0
        for m in model.modules():
            d = m.__dict__
            for k in HOOK_KINDS:
                n += len(d.get(k.attr) or ())
                for name in (k.attr, *k.flags.values()):
                    if d.get(name):
                        d[name].clear()
        return n

    def comm_hooks(self, ddp):
        """The comm hook in effect on a DDP model as ``[(hook, state)]`` (empty when none)."""
        if not self.is_torch:
            return ddp.comm_hooks()
        hooks = torch_attr(ddp, "comm_hooks") or []
        return [hooks[-1]] if hooks else []

    # ---- global module hooks ----
    def register_module_forward_pre_hook(self, hook):
        return self.module_mod.register_module_forward_pre_hook(hook)

    def register_module_forward_hook(self, hook, **kw):
        return self.module_mod.register_module_forward_hook(hook, **kw)

    def package_dir(self):
        """The library's package folder (frames inside it are not the user's)."""
        import os
        return os.path.dirname(os.path.abspath(self.root.__file__)) + os.sep


def _lib_for_root(name):
    lib = _LIBS.get(name)
    if lib is None:
        root = sys.modules.get(name)
        if root is None:
            return None
        lib = _LIBS[name] = Lib(root)
    return lib


def hookgrad_lib():
    return _lib_for_root("hookgrad")


def _root_name(obj):
    """``"torch"`` or ``"hookgrad"`` for an object of either library (its class or an ancestor's
    package), or None."""
    for c in reversed(type(obj).__mro__):      # the library's base class decides (a user's subclass may live anywhere)
        top = (getattr(c, "__module__", None) or "").split(".")[0]
        if top in ("torch", "hookgrad"):
            root = sys.modules.get(top)
            # under hookgrad.compat, "torch" is hookgrad itself
            return None if root is None else root.__name__
    torch = sys.modules.get("torch")
    if torch is not None and torch.__name__ == "torch":
        try:
            if isinstance(obj, torch.autograd.graph.Node):    # C++ nodes: classes of module "builtins"
                return "torch"
        except AttributeError:
            pass
    return None


def lib_of(*objs, default=None):
    """The :class:`Lib` of the first object (or element of a list/tuple/dict value) that belongs to
    hookgrad or torch (a :class:`Lib`, or the ``torch`` / ``hookgrad`` module itself, stands for its
    library); ``default`` (hookgrad when None) if none does."""
    todo = list(objs)
    while todo:
        obj = todo.pop(0)
        if obj is None or isinstance(obj, (str, int, float, bool)):
            continue
        if isinstance(obj, Lib):
            return obj
        if isinstance(obj, (list, tuple)):
            todo[:0] = list(obj)[:8]
            continue
        if isinstance(obj, dict):
            todo[:0] = list(obj.values())[:8]
            continue
        name = obj.__name__ if isinstance(obj, types.ModuleType) and obj.__name__ in ("torch", "hookgrad") \
            else _root_name(obj)          # the library itself may be given: OpTimer(lib=torch)
        if name is not None:
            return _lib_for_root(name)
    return default if default is not None else hookgrad_lib()


def tensor_types():
    """The Tensor classes of the libraries loaded now (hookgrad's, and torch's once it is imported)."""
    types_ = (hookgrad_lib().Tensor,)
    torch = sys.modules.get("torch")
    if torch is not None and torch.__name__ == "torch" and hasattr(torch, "Tensor"):
        types_ += (torch.Tensor,)
    return types_


def is_tensor(x):
    """True for a Tensor of hookgrad or of torch."""
    return isinstance(x, tensor_types())


def library_of(*objs):
    """The top-level package (``hookgrad`` or ``torch``) of the first object that belongs to one."""
    return lib_of(*objs).root
