"""nn.Module: attributes, registration of parameters, buffers and submodules, traversal, modes,
conversions. Its other jobs live beside it, as methods bound in the class body:

- ``_module_hooks.py``: the table of hook kinds, module hook registration, listing and dispatch
  (``Module.__call__``), the global module hooks (``register_module_*``);
- ``_backward_hook.py``: BackwardHook, the machinery of full backward (pre-)hooks;
- ``_state_dict.py``: state_dict / load_state_dict and their hooks.

Every name this module had before the split is importable from here (PyTorch code imports
``torch.nn.modules.module.register_module_forward_hook``, ``_IncompatibleKeys``, ...).
"""
import sys
import types
import warnings

from ..._tensor import Tensor, _zero_grad
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter, Buffer
from . import _module_hooks as _hooks, _state_dict as _sd
from ._module_hooks import (  # noqa: F401 - the public and the introspected names of PyTorch's module.py
    register_module_forward_pre_hook, register_module_forward_hook, register_module_full_backward_pre_hook,
    register_module_backward_hook, register_module_full_backward_hook, register_module_buffer_registration_hook,
    register_module_module_registration_hook, register_module_parameter_registration_hook, global_module_hooks,
    _WrappedHook, HOOK_KINDS)
from ._backward_hook import BackwardHook, BackwardHookFunctionBackward, hook  # noqa: F401
from ._state_dict import _IncompatibleKeys, _EXTRA_STATE_KEY_SUFFIX, _foreign_tensor_hint  # noqa: F401

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_backward_hook",
           "register_module_full_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook", "register_module_parameter_registration_hook"]


# --------------------------------------------------------------------------------------------
# helpers

def _typename(obj):
    """torch.typename: 'torch.FloatTensor' for tensors, 'module.QualName' for other objects."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in {"", "builtins"}:
        return qualname
    return f"{module}.{qualname}"


def _addindent(s_, numSpaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(numSpaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


# --------------------------------------------------------------------------------------------
# Module

def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules (PyTorch's torch.nn.Module)."""

    dump_patches = False
    _version = 1
    training = True
    call_super_init = False
    _compiled_call_impl = None

    forward = _forward_unimplemented

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        _hooks.init_hook_dicts(d)          # every hook kind's dicts (_module_hooks.HOOK_KINDS)
        d["_modules"] = {}
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # ---- registration ----------------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (a tensor that is state but not a parameter) to the module."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        elif not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        elif "." in name:
            raise KeyError('buffer name can\'t contain "."')
        elif name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        elif hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        elif tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        else:
            tensor = _hooks.run_registration_hooks(_hooks._global_buffer_registration_hooks, self, name, tensor)
            self._buffers[name] = tensor
            if persistent:
                self._non_persistent_buffers_set.discard(name)
            else:
                self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter to the module (None is allowed and skipped by parameters())."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        elif not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        elif "." in name:
            raise KeyError('parameter name can\'t contain "."')
        elif name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        elif hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")

        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        elif param.grad_fn:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        else:
            param = _hooks.run_registration_hooks(_hooks._global_parameter_registration_hooks, self, name, param)
            self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module, accessible as an attribute of the given name."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        elif not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        elif hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        elif "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        elif name == "":
            raise KeyError('module name can\'t be empty string ""')
        module = _hooks.run_registration_hooks(_hooks._global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    def register_module(self, name, module):
        """Alias for add_module."""
        self.add_module(name, module)

    def get_submodule(self, target):
        if target == "":
            return self
        atoms = target.split(".")
        mod = self
        for item in atoms:
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`module` is not an nn.Module, found " + str(type(module)))
        if len(atoms) == 1:
            parent = self
        else:
            parent = self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]):
            mod = getattr(parent, atoms[-1])
            if not isinstance(mod, Module):
                raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target):
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    # ---- conversions -------------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                param_applied = fn(param)
            param_grad = param._grad
            if param_applied is not param:
                param._data = param_applied._data      # identity kept (PyTorch: param.data = ...)
            if param_grad is not None:
                with no_grad():
                    grad_applied = fn(param_grad)
                if grad_applied is not param_grad:
                    param_grad._data = grad_applied._data
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        """Apply fn to every submodule (children first) and to self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        from ... import _dtype as D
        dtype = kwargs.get("dtype")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, D.dtype):
                dtype = a
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex "
                            f"dtypes, but got desired dtype={dtype}")
        dev = kwargs.get("device")
        for a in args:
            if isinstance(a, str) or type(a).__name__ == "device":
                dev = a
        if dev is not None:
            from ..._tensor import _check_device
            _check_device(dev)

        def convert(t):
            if dtype is not None and t.is_floating_point():
                return t.to(dtype) if dev is None else t.to(dev, dtype)
            return t if dev is None else t.to(dev)
        return self._apply(convert)

    def _to_float_dtype(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        from ... import _dtype as D
        return self._to_float_dtype(D.float32)

    def double(self):
        from ... import _dtype as D
        return self._to_float_dtype(D.float64)

    def half(self):
        from ... import _dtype as D
        return self._to_float_dtype(D.float16)

    def bfloat16(self):
        from ... import _dtype as D
        return self._to_float_dtype(D.bfloat16)

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def share_memory(self):
        return self

    def to_empty(self, *, device, recurse=True):
        """Parameters and buffers moved to ``device`` without copying their values (uninitialised), as PyTorch
        does to materialise a model built on the meta device."""
        from ... import _creation
        return self._apply(lambda t: _creation.empty_like(t, device=device), recurse=recurse)

    # ---- hooks (_module_hooks.py): registration, listing, calling -----------------------------
    register_forward_pre_hook = _hooks.register_forward_pre_hook
    register_forward_hook = _hooks.register_forward_hook
    register_full_backward_pre_hook = _hooks.register_full_backward_pre_hook
    register_backward_hook = _hooks.register_backward_hook
    register_full_backward_hook = _hooks.register_full_backward_hook
    _get_backward_hooks = _hooks._get_backward_hooks
    _get_backward_pre_hooks = _hooks._get_backward_pre_hooks
    _maybe_warn_non_full_backward_hook = _hooks._maybe_warn_non_full_backward_hook
    hooks = _hooks.hooks
    remove_hooks = _hooks.remove_hooks
    __call__ = _call_impl = _hooks._call_impl
    _call_with_hooks = _hooks._call_with_hooks

    # ---- state (_state_dict.py) --------------------------------------------------------------
    get_extra_state = _sd.get_extra_state
    set_extra_state = _sd.set_extra_state
    _register_state_dict_hook = _sd._register_state_dict_hook
    register_state_dict_post_hook = _sd.register_state_dict_post_hook
    register_state_dict_pre_hook = _sd.register_state_dict_pre_hook
    _save_to_state_dict = _sd._save_to_state_dict
    state_dict = _sd.state_dict
    _register_load_state_dict_pre_hook = _sd._register_load_state_dict_pre_hook
    register_load_state_dict_pre_hook = _sd.register_load_state_dict_pre_hook
    register_load_state_dict_post_hook = _sd.register_load_state_dict_post_hook
    _load_from_state_dict = _sd._load_from_state_dict
    _snapshot_state = _sd._snapshot_state
    _restore_state = staticmethod(_sd._restore_state)
    load_state_dict = _sd.load_state_dict

    # ---- attributes --------------------------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        d = self.__dict__
        _hooks.init_hook_dicts(d)          # an older pickle may lack some kinds' dicts
        if "_non_persistent_buffers_set" not in d:
            d["_non_persistent_buffers_set"] = set()

    def _weight_bias(self):
        """(self.weight, self.bias) for a layer's forward. A registered parameter is read from
        _parameters directly: ``self.weight`` only reaches __getattr__ after the normal lookup has
        failed and raised (~1 us, as in PyTorch), a noticeable share of a small layer's call. Anything
        else named weight/bias (a plain attribute, a property, a parametrization) resolves as usual."""
        params = self.__dict__["_parameters"]
        cls = type(self)
        plain = cls.__dict__.get("_plain_weight_bias")
        if plain is None:       # a class attribute named weight/bias would win over __getattr__
            plain = not (hasattr(cls, "weight") or hasattr(cls, "bias"))
            setattr(cls, "_plain_weight_bias", plain)
        if plain and "weight" in params and "bias" in params:
            return params["weight"], params["bias"]
        return self.weight, self.bias

    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d:
            _parameters = d["_parameters"]
            if name in _parameters:
                return _parameters[name]
        if "_buffers" in d:
            _buffers = d["_buffers"]
            if name in _buffers:
                return _buffers[name]
        if "_modules" in d:
            modules = d["_modules"]
            if name in modules:
                return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                value = _hooks.run_registration_hooks(_hooks._global_module_registration_hooks, self, name, value)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                value = _hooks.run_registration_hooks(_hooks._global_module_registration_hooks, self, name, value)
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    if getattr(self.register_buffer, "__func__", None) is Module.register_buffer:
                        self.register_buffer(name, value, persistent)
                    else:
                        import inspect
                        sign = inspect.signature(self.register_buffer)
                        if "persistent" in sign.parameters:
                            self.register_buffer(name, value, persistent)
                        else:
                            if not persistent:
                                raise RuntimeError("Registering a non-persistent buffer on a Module subclass "
                                                   "that implements register_buffer() without the persistent "
                                                   "argument is not allowed.")
                            self.register_buffer(name, value)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        module_attrs = dir(self.__class__)
        attrs = list(self.__dict__.keys())
        parameters = list(self._parameters.keys())
        modules = list(self._modules.keys())
        buffers = list(self._buffers.keys())
        keys = module_attrs + attrs + parameters + modules + buffers
        keys = [key for key in keys if not key[0].isdigit()]
        return sorted(keys)

    # ---- iteration -------------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            members = get_members_fn(module)
            for k, v in members:
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse=True):
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        gen = self._named_members(lambda module: module._parameters.items(), prefix=prefix, recurse=recurse,
                                  remove_duplicate=remove_duplicate)
        yield from gen

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        gen = self._named_members(lambda module: module._buffers.items(), prefix=prefix, recurse=recurse,
                                  remove_duplicate=remove_duplicate)
        yield from gen

    def children(self):
        for _name, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ---- modes ---------------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        if not isinstance(requires_grad, bool):     # checked before any parameter changes
            from ..._errors import type_name
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                            f"{type_name(requires_grad)}")
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        if getattr(self, "_is_replica", False):
            warnings.warn("Calling .zero_grad() from a module created with nn.DataParallel() has no effect. "
                          "The parameters are copied (in a differentiable manner) from the original module. "
                          "This means they are not leaf nodes in autograd and so don't accumulate gradients. "
                          "If you need gradients in your forward method, consider using autograd.grad instead.")
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    # ---- printing --------------------------------------------------------------------------
    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = repr(module)
            mod_str = _addindent(mod_str, 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str

    def _replicate_for_data_parallel(self):  # pragma: no cover - no data parallel in hookgrad
        raise RuntimeError("hookgrad has no DataParallel")


def _as_module_methods():
    """The functions bound above show as Module's own (``<bound method Module.state_dict ...>``, pickling
    by qualified name), as in PyTorch's single file."""
    for name, f in vars(Module).items():
        f = getattr(f, "__func__", f)
        if isinstance(f, types.FunctionType) and f.__module__ != __name__:
            f.__qualname__ = "Module." + name
            f.__module__ = __name__


_as_module_methods()


class _ForwardGlobals(types.ModuleType):
    """``nn.modules.module._global_*`` are the global hook registries of ``_module_hooks``, read and
    rebound there (tests rebind them as PyTorch's own tests do: ``module._global_forward_hooks = ...``).
    NOTE: they are not copied here: a copy would go stale when ``_module_hooks`` rebinds its flag."""

    def __getattr__(self, name):
        if name in _hooks.GLOBAL_NAMES:
            return getattr(_hooks, name)
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name in _hooks.GLOBAL_NAMES:
            setattr(_hooks, name, value)
        else:
            super().__setattr__(name, value)

    def __dir__(self):
        return sorted({*super().__dir__(), *_hooks.GLOBAL_NAMES})


sys.modules[__name__].__class__ = _ForwardGlobals
