"""nn.Module with PyTorch's complete module hook system, and the global module hooks.

Hook storage follows the one pattern of hookgrad (``utils/hooks.py``): every ``register_*`` stores the
hook in an id-keyed ``HookDict`` (an OrderedDict) and returns a ``RemovableHandle``; flags that qualify
a hook (with_kwargs, always_call) live in further dicts keyed by the same id and are passed to the
handle as ``extra_dict``. Attribute names are PyTorch's (``_forward_hooks``, ``_backward_hooks``, ...)
because users introspect them.

``Module.__call__`` has a fast path: when neither the module nor the global registries hold a
forward/backward hook it is ``self.forward(*args, **kwargs)`` behind a handful of truthiness checks.
Full backward (pre-)hooks are captured at call time in a :class:`BackwardHook` that wraps the module's
tensor inputs and outputs in identity nodes (``BackwardHookFunctionBackward``), as PyTorch does.
"""
import functools
import itertools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import numpy as np

from ..._tensor import Tensor
from ...autograd import graph as _graph
from ..._dtype import _NP_TO_DT
from ...autograd.graph import Node, check_tuple_result
from ...autograd.grad_mode import _state, no_grad
from ...utils.hooks import add_hook, HookInfo, RemovableHandle, HookDict
from ...primitives._inplace import _View
from ..parameter import Parameter, Buffer

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_backward_hook",
           "register_module_full_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook", "register_module_parameter_registration_hook"]

# --------------------------------------------------------------------------------------------
# global module hooks (GM1-GM5) and registration hooks (R1-R3)

_global_buffer_registration_hooks = HookDict()
_global_module_registration_hooks = HookDict()
_global_parameter_registration_hooks = HookDict()
_global_backward_pre_hooks = HookDict()
_global_backward_hooks = HookDict()
_global_is_full_backward_hook = None
_global_forward_pre_hooks = HookDict()
_global_forward_hooks = HookDict()
_global_forward_hooks_always_called = HookDict()
_global_forward_hooks_with_kwargs = HookDict()

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def register_module_buffer_registration_hook(hook):
    """Register ``hook(module, name, buffer) -> None or new buffer`` run by every register_buffer."""
    handle = add_hook(_global_buffer_registration_hooks, hook)
    return handle


def register_module_module_registration_hook(hook):
    """Register ``hook(module, name, submodule) -> None or new submodule`` run by every add_module."""
    handle = add_hook(_global_module_registration_hooks, hook)
    return handle


def register_module_parameter_registration_hook(hook):
    """Register ``hook(module, name, param) -> None or new param`` run by every register_parameter."""
    handle = add_hook(_global_parameter_registration_hooks, hook)
    return handle


def register_module_forward_pre_hook(hook):
    """Global forward pre-hook ``hook(module, args)``, run before every module's own pre-hooks."""
    handle = add_hook(_global_forward_pre_hooks, hook)
    return handle


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Global forward hook ``hook(module, args, output)``, run before every module's own forward hooks.

    As in PyTorch, the handle cleans ``always_call`` but not ``with_kwargs`` flags on removal.
    """
    handle = RemovableHandle(_global_forward_hooks, extra_dict=_global_forward_hooks_always_called)
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def global_module_hooks():
    """The global module hooks (register_module_*), as HookInfo(kind, id, hook, flags)."""
    out = []
    for kind, d, flags in (("forward_pre", _global_forward_pre_hooks, {}),
                           ("forward", _global_forward_hooks, {"with_kwargs": _global_forward_hooks_with_kwargs,
                                                               "always_call": _global_forward_hooks_always_called}),
                           ("backward_pre", _global_backward_pre_hooks, {}),
                           ("full_backward" if _global_is_full_backward_hook else "backward", _global_backward_hooks, {})):
        for hid, hook in d.items():
            out.append(HookInfo(kind, hid, hook, tuple(f for f, fd in flags.items() if hid in fd)))
    return out


def register_module_backward_hook(hook):
    """Legacy global backward hook (see Module.register_backward_hook)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = False
    handle = add_hook(_global_backward_hooks, hook)
    return handle


def register_module_full_backward_pre_hook(hook):
    """Global full backward pre-hook ``hook(module, grad_output)``."""
    handle = add_hook(_global_backward_pre_hooks, hook)
    return handle


def register_module_full_backward_hook(hook):
    """Global full backward hook ``hook(module, grad_input, grad_output)``."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    handle = add_hook(_global_backward_hooks, hook)
    return handle


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


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _WrappedHook:
    """A hook, optionally bound to a module through a weak reference (called as hook(module, ...))."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = False
        if module is not None:
            self.module = weakref.ref(module)
            self.with_module = True

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        result = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            result["module"] = self.module()
        return result

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


# --------------------------------------------------------------------------------------------
# full backward hooks: identity node + BackwardHook (PyTorch: nn.modules._functions / utils.hooks)

_INPLACE_VIEW_ERROR = (
    "Output 0 of BackwardHookFunction is a view and is being modified inplace. This view was created "
    "inside a custom Function (or because an input was returned as-is) and the autograd logic to handle "
    "view+inplace would override the custom backward associated with the custom Function, leading to incorrect "
    "gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.")


def hook(*args):  # noqa: D401 - PyTorch's internal wrapper is called 'hook'; N2 checks report that name
    """Stand-in whose __name__ is what PyTorch reports for errors in a module full hook's result."""


class BackwardHookFunctionBackward(Node, name="BackwardHookFunctionBackward"):
    """Identity on the module's tensor inputs (or outputs); its outputs alias (are views of) its inputs.

    Built directly by :meth:`BackwardHook._apply_on_tensors` (the identity needs no forward). The module
    hook runs where PyTorch runs it, as the node's first post-hook (after any user pre-hook and before
    any user post-hook of this node), but without a per-call closure or handle. In-place ops on its
    outputs are forbidden through ``_forbid_inplace`` (checked by ``primitives._inplace.check_inplace``).
    """
    _bw_hook = None
    _is_output = False
    _all_diff = True          # False when some wrapped tensor does not require grad (no edge)
    _nondiff_slots = True     # a custom Function: non-differentiable outputs keep their grad slot
    _forbid_inplace = _INPLACE_VIEW_ERROR

    def forward(self, *arrays):
        return arrays

    def backward(self, *grads):
        return grads

    def _materialize(self, grads):
        # a custom Function materialises missing grads as zeros before its (identity) backward
        for g in grads:
            if g is None:
                return tuple(g if g is not None else Tensor._make(np.zeros(m[0], m[1].np))
                             for g, m in zip(grads, self._out_meta))
        return tuple(grads)

    def _run_backward(self, grads):
        bh = self._bw_hook
        if self._is_output:
            # the output hook sees the incoming grads as they are (None stays None)
            out = bh._output_hook(tuple(grads)) if bh is not None else None
            res = tuple(grads) if out is None else check_tuple_result(hook, self._materialize(grads), out)
        else:
            res = self._materialize(grads)
            out = bh._input_hook(res) if bh is not None else None
            if out is not None:
                res = check_tuple_result(hook, res, out)
        if self._all_diff:
            return res
        return tuple(None if e[0] is None else g for e, g in zip(self.next_functions, res))


_new = object.__new__
_INDEX0 = (0,)
_gf_set = Tensor.__dict__["grad_fn"].__set__


def _identity_view(t):
    return t


def _as_custom_view(out, t, creation):
    """Mark an output of the identity node as a view of its input ``t``, as PyTorch marks a custom Function's
    input returned as-is (CreationMeta IN_CUSTOM_FUNCTION, or MULTI_OUTPUT_NODE when the node has several
    outputs): an in-place change of the output, or a use of it after its base changed in place, raises."""
    base = t._base
    if base is None:
        out._base = t
        out._view_fn = _identity_view
    else:
        out._base = base
        out._view_fn = t._view_fn or _identity_view
    if type(out) is not _View:
        out.__class__ = _View
    out._creation = creation
    out._vc = vc = t._vc
    out._attr_ver = vc[0]


class BackwardHook:
    """Runs a module's full backward (pre-)hooks for one call of the module (PyTorch's BackwardHook)."""
    __slots__ = ("module", "user_hooks", "user_pre_hooks", "grad_outputs", "n_outputs", "output_tensors_index",
                 "n_inputs", "input_tensors_index")

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        if indices is _INDEX0 and size == 1:       # one tensor argument/output (most layers)
            return (values[0],)
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    def _apply_on_tensors(self, args, is_output):
        """Wrap the tensors of ``args`` in one identity node (when grad mode is on and one of them
        requires grad); return the new args and the tensor positions (None when nothing was wrapped)."""
        if len(args) == 1:                         # fast path: one tensor (most layers)
            t = args[0]
            if isinstance(t, Tensor):
                if not (t.requires_grad and _state.enabled):
                    return args, None
                node = _new(BackwardHookFunctionBackward)
                node._bw_hook = self
                node._is_output = is_output
                if _graph._anomaly_enabled:
                    out = node._record((t,), (t._data,))[0]
                else:   # Node._record for one tensor through an identity, inlined (hot path)
                    d = t._data
                    gf = t.grad_fn
                    node.next_functions = (((t._grad_accumulator(), 0) if gf is None else (gf, t._output_nr)),)
                    node._in_meta = ((d.shape, d.dtype),)
                    node._seq = next(_graph._seq)
                    node._out_meta = [(d.shape, _NP_TO_DT[d.dtype])]
                    out = _new(_View)                  # Tensor._make(d, True, node, 0, t._vc), inlined
                    out._data = d
                    out._requires_grad = True
                    _gf_set(out, node)
                    out._output_nr = 0
                _as_custom_view(out, t, "custom")
                return ((out,) if type(args) is tuple else type(args)(*(out,))), _INDEX0
        tensors_idx = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                if arg.requires_grad:
                    requires_grad = True
        if not (requires_grad and _state.enabled):
            return args, None
        # BackwardHookFunction.apply(*tensors): the identity needs no forward, only the graph record
        node = _new(BackwardHookFunctionBackward)
        node._bw_hook = self
        node._is_output = is_output
        tensors = [args[i] for i in tensors_idx]
        nd = tuple(j for j, t in enumerate(tensors) if not t.requires_grad)
        if nd:                                     # marked non-differentiable
            node.nondiff_outputs = nd
            node._all_diff = False
        outs = node._record(tensors, tuple(t._data for t in tensors))
        arg_list = list(args)
        creation = "custom" if len(tensors) == 1 else "multi"
        for i, t, out in zip(tensors_idx, tensors, outs):
            # the outputs are views of the inputs (a non-differentiable one: PyTorch's no-grad view of itself)
            _as_custom_view(out, t, creation if out._requires_grad else "custom")
            arg_list[i] = out
        if type(args) is tuple:
            return tuple(arg_list), tensors_idx
        return type(args)(*arg_list), tensors_idx

    def setup_input_hook(self, args):
        res, input_idx = self._apply_on_tensors(args, False)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        is_tuple = True
        if not isinstance(args, tuple):
            args = (args,)
            is_tuple = False
        res, output_idx = self._apply_on_tensors(args, True)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        if not is_tuple:
            res = res[0]
        return res

    # ---- run from the identity nodes during backward ----
    def _input_hook(self, grad_input):
        """Full hooks with grads w.r.t. the module inputs; None when nothing was replaced."""
        if self.grad_outputs is None:
            # the gradient reached the module's inputs without passing through its outputs
            return None
        idx = self.input_tensors_index
        res = self._pack_with_none(idx, grad_input, self.n_inputs)
        replaced = False
        for user_hook in self.user_hooks:
            out = user_hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
            replaced = True
        self.grad_outputs = None
        if not replaced:
            return None
        return tuple(res[i] for i in idx)

    def _output_hook(self, grad_output):
        """Pre-hooks (and full hooks when no input was wrapped) with grads w.r.t. the module outputs;
        None when the grads are unchanged."""
        idx = self.output_tensors_index
        self.grad_outputs = self._pack_with_none(idx, grad_output, self.n_outputs)
        replaced = False
        if self.user_pre_hooks:
            expected_len = len(self.grad_outputs)
            for user_pre_hook in self.user_pre_hooks:
                hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
                if hook_grad_outputs is None:
                    continue
                actual_len = len(hook_grad_outputs)
                if actual_len != expected_len:
                    raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                       f"got {actual_len}, but expected {expected_len}")
                self.grad_outputs = hook_grad_outputs
                replaced = True
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            warnings.warn("Full backward hook is firing when gradients are computed with "
                          "respect to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.", stacklevel=5)
            grad_inputs = self._pack_with_none([], [], self.n_inputs)
            for user_hook in self.user_hooks:
                res = user_hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all gradients.")
            self.grad_outputs = None
        if not replaced:
            return None
        return tuple(local_grad_outputs[i] for i in idx)


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
        d["_backward_pre_hooks"] = HookDict()
        d["_backward_hooks"] = HookDict()
        d["_is_full_backward_hook"] = None
        d["_forward_hooks"] = HookDict()
        d["_forward_hooks_with_kwargs"] = HookDict()
        d["_forward_hooks_always_called"] = HookDict()
        d["_forward_pre_hooks"] = HookDict()
        d["_forward_pre_hooks_with_kwargs"] = HookDict()
        d["_state_dict_hooks"] = HookDict()
        d["_state_dict_pre_hooks"] = HookDict()
        d["_load_state_dict_pre_hooks"] = HookDict()
        d["_load_state_dict_post_hooks"] = HookDict()
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
            for hook in _global_buffer_registration_hooks.values():
                output = hook(self, name, tensor)
                if output is not None:
                    tensor = output
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
            for hook in _global_parameter_registration_hooks.values():
                output = hook(self, name, param)
                if output is not None:
                    param = output
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
        for hook in _global_module_registration_hooks.values():
            output = hook(self, name, module)
            if output is not None:
                module = output
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

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. "
                           "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. "
                           "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

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
                return t.to(dtype)
            return t
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

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self):
        return self

    def cuda(self, device=None):
        from ..._tensor import _check_device
        _check_device("cuda")
        return self

    def share_memory(self):
        return self

    # ---- hooks -------------------------------------------------------------------------------
    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output) -> tuple or None``, run when grads w.r.t. the outputs are computed."""
        return add_hook(self._backward_pre_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook):
        """Legacy backward hook (deprecated): a post-hook on the grad_fn of the first output tensor."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        return add_hook(self._backward_hooks, hook)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output) -> tuple or None``, run when grads w.r.t. the inputs
        of the module are computed."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        return add_hook(self._backward_hooks, hook, prepend=prepend)

    def _get_backward_hooks(self):
        if not _global_backward_hooks:          # common case: only this module's own hooks
            hooks = list(self._backward_hooks.values())
            return (hooks, []) if self._is_full_backward_hook else ([], hooks)
        full_backward_hooks = []
        if _global_is_full_backward_hook is True:
            full_backward_hooks += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full_backward_hooks += self._backward_hooks.values()
        non_full_backward_hooks = []
        if _global_is_full_backward_hook is False:
            non_full_backward_hooks += _global_backward_hooks.values()
        if self._is_full_backward_hook is False:
            non_full_backward_hooks += self._backward_hooks.values()
        return full_backward_hooks, non_full_backward_hooks

    def _get_backward_pre_hooks(self):
        if not _global_backward_pre_hooks:
            return list(self._backward_pre_hooks.values())
        backward_pre_hooks = []
        backward_pre_hooks += _global_backward_pre_hooks.values()
        backward_pre_hooks += self._backward_pre_hooks.values()
        return backward_pre_hooks

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn):
        if not isinstance(result, Tensor):
            if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
                warnings.warn("Using non-full backward hooks on a Module that does not return a "
                              "single Tensor or a tuple of Tensors is deprecated and will be removed "
                              "in future versions. This hook will be missing some of the grad_output. "
                              "Please use register_full_backward_hook to get the documented behavior.",
                              FutureWarning, stacklevel=2)
                return
        else:
            result = (result,)
        if not isinstance(inputs, Tensor):
            if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
                warnings.warn("Using non-full backward hooks on a Module that does not take as input a "
                              "single Tensor or a tuple of Tensors is deprecated and will be removed "
                              "in future versions. This hook will be missing some of the grad_input. "
                              "Please use register_full_backward_hook to get the documented behavior.",
                              FutureWarning, stacklevel=2)
                return
        else:
            inputs = (inputs,)
        out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
        if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
            warnings.warn("Using a non-full backward hook when outputs are nested in python data structure "
                          "is deprecated and will be removed in future versions. This hook will be missing "
                          "some grad_output.", FutureWarning, stacklevel=2)
        elif len(out_grad_fn) > 1:
            warnings.warn("Using a non-full backward hook when outputs are generated by different autograd Nodes "
                          "is deprecated and will be removed in future versions. This hook will be missing "
                          "some grad_output. Please use register_full_backward_hook to get the documented "
                          "behavior.", FutureWarning, stacklevel=2)
        else:
            inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
            next_functions = {n[0] for n in grad_fn.next_functions}
            if inputs_grad_fn != next_functions:
                warnings.warn("Using a non-full backward hook when the forward contains multiple autograd Nodes "
                              "is deprecated and will be removed in future versions. This hook will be missing "
                              "some grad_input. Please use register_full_backward_hook to get the documented "
                              "behavior.", FutureWarning, stacklevel=2)

    # ---- listing and removing hooks (public; PyTorch issues #2847 and #70455 ask for it) -------
    _HOOK_KINDS = (  # kind, dict, {flag: flag dict}
        ("forward_pre", "_forward_pre_hooks", {"with_kwargs": "_forward_pre_hooks_with_kwargs"}),
        ("forward", "_forward_hooks", {"with_kwargs": "_forward_hooks_with_kwargs",
                                       "always_call": "_forward_hooks_always_called"}),
        ("backward_pre", "_backward_pre_hooks", {}),
        ("backward", "_backward_hooks", {}),
        ("state_dict_pre", "_state_dict_pre_hooks", {}),
        ("state_dict", "_state_dict_hooks", {}),
        ("load_state_dict_pre", "_load_state_dict_pre_hooks", {}),
        ("load_state_dict_post", "_load_state_dict_post_hooks", {}),
    )

    def hooks(self):
        """Every hook registered on this module (not its children), in running order per kind, as
        ``HookInfo(kind, id, hook, flags)``. Backward hooks are ``"full_backward"`` or ``"backward"``
        (legacy) as registered.

        >>> m = Linear(2, 2); h = m.register_forward_hook(print, always_call=True)
        >>> [(i.kind, i.flags) for i in m.hooks()]
        [('forward', ('always_call',))]
        """
        out = []
        for kind, name, flags in self._HOOK_KINDS:
            if kind == "backward" and self._is_full_backward_hook:
                kind = "full_backward"
            fdicts = {f: self.__dict__[fd] for f, fd in flags.items()}
            for hid, hook in self.__dict__[name].items():
                out.append(HookInfo(kind, hid, hook, tuple(f for f, fd in fdicts.items() if hid in fd)))
        return out

    def remove_hooks(self, kind=None, recurse=False):
        """Remove every hook of this module (of one ``kind`` if given; and of its submodules if
        ``recurse``), flag entries included. Returns how many were removed."""
        n = 0
        for m in (self.modules() if recurse else (self,)):
            for k, name, flags in m._HOOK_KINDS:
                if kind is not None and kind not in (k, "full_backward" if k == "backward" else k):
                    continue
                d = m.__dict__[name]
                n += len(d)
                d.clear()
                for fd in flags.values():
                    m.__dict__[fd].clear()
        return n

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args) -> None or new args`` (with_kwargs: ``hook(module, args, kwargs) -> None
        or (new_args, new_kwargs)``), run before forward."""
        handle = add_hook(self._forward_pre_hooks, hook, extra_dict=self._forward_pre_hooks_with_kwargs,
                          prepend=prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output) -> None or new output`` (with_kwargs: ``hook(module, args, kwargs,
        output)``), run after forward; always_call also runs it when forward raised."""
        handle = add_hook(self._forward_hooks, hook, prepend=prepend,
                          extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    # ---- calling -----------------------------------------------------------------------------
    def _call_impl(self, *args, **kwargs):
        # fast path: nothing registered anywhere
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_forward_hooks or _global_forward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    __call__ = _call_impl

    def _call_with_hooks(self, args, kwargs):
        result = None
        called_always_called_hooks = ()     # becomes a set once an always_call hook has run
        try:
            full_backward_hooks = non_full_backward_hooks = backward_pre_hooks = ()
            if self._backward_pre_hooks or _global_backward_pre_hooks:
                backward_pre_hooks = self._get_backward_pre_hooks()
            if self._backward_hooks or _global_backward_hooks:
                full_backward_hooks, non_full_backward_hooks = self._get_backward_hooks()
            if _global_forward_pre_hooks or self._forward_pre_hooks:
                with_kwargs = self._forward_pre_hooks_with_kwargs
                for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
                    if hook_id in with_kwargs:
                        args_kwargs_result = hook(self, args, kwargs)
                        if args_kwargs_result is not None:
                            if isinstance(args_kwargs_result, tuple) and len(args_kwargs_result) == 2:
                                args, kwargs = args_kwargs_result
                            else:
                                raise RuntimeError("forward pre-hook must return None or a tuple "
                                                   f"of (new_args, new_kwargs), but got {args_kwargs_result}.")
                    else:
                        args_result = hook(self, args)
                        if args_result is not None:
                            if not isinstance(args_result, tuple):
                                args_result = (args_result,)
                            args = args_result

            bw_hook = None
            if full_backward_hooks or backward_pre_hooks:
                bw_hook = BackwardHook(self, full_backward_hooks, backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)

            result = self.forward(*args, **kwargs)

            if _global_forward_hooks or self._forward_hooks:
                always = self._forward_hooks_always_called
                with_kw = self._forward_hooks_with_kwargs
                for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                    if hook_id in always or hook_id in _global_forward_hooks_always_called:
                        if not called_always_called_hooks:
                            called_always_called_hooks = set()
                        called_always_called_hooks.add(hook_id)
                    if hook_id in with_kw or hook_id in _global_forward_hooks_with_kwargs:
                        hook_result = hook(self, args, kwargs, result)
                    else:
                        hook_result = hook(self, args, result)
                    if hook_result is not None:
                        result = hook_result

            if bw_hook:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called,"
                                  " module output should be a Tensor or a tuple of Tensors"
                                  f" but received {type(result)}", stacklevel=2)
                result = bw_hook.setup_output_hook(result)

            if non_full_backward_hooks:
                var = result
                while not isinstance(var, Tensor):
                    if isinstance(var, dict):
                        var = next(v for v in var.values() if isinstance(v, Tensor))
                    else:
                        var = var[0]
                grad_fn = var.grad_fn
                if grad_fn is not None:
                    for hook in non_full_backward_hooks:
                        grad_fn.register_hook(_WrappedHook(hook, self))
                    self._maybe_warn_non_full_backward_hook(args, result, grad_fn)
            return result
        except Exception:
            # run always_call forward hooks that have not run yet, then re-raise
            for hook_id, hook in tuple(_global_forward_hooks.items()):
                if hook_id in _global_forward_hooks_always_called and hook_id not in called_always_called_hooks:
                    try:
                        hook_result = hook(self, args, result)
                        if hook_result is not None:
                            result = hook_result
                    except Exception as e:
                        warnings.warn("global module forward hook with ``always_call=True`` raised an exception "
                                      f"that was silenced as another error was raised in forward: {str(e)}")
                        continue
            for hook_id, hook in tuple(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called_always_called_hooks:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            hook_result = hook(self, args, kwargs, result)
                        else:
                            hook_result = hook(self, args, result)
                        if hook_result is not None:
                            result = hook_result
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an exception "
                                      f"that was silenced as another error was raised in forward: {str(e)}")
                        continue
            raise

    # ---- attributes --------------------------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        d = self.__dict__
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
                     "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_state_dict_hooks",
                     "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
                     "_backward_pre_hooks", "_backward_hooks"):
            if name not in d:
                d[name] = HookDict()
        if "_non_persistent_buffers_set" not in d:
            d["_non_persistent_buffers_set"] = set()
        if "_is_full_backward_hook" not in d:
            d["_is_full_backward_hook"] = None

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
                for hook in _global_module_registration_hooks.values():
                    output = hook(self, name, value)
                    if output is not None:
                        value = output
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                for hook in _global_module_registration_hooks.values():
                    output = hook(self, name, value)
                    if output is not None:
                        value = output
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

    # ---- state dict --------------------------------------------------------------------------
    def _register_state_dict_hook(self, hook):
        """Private state_dict post-hook ``hook(module, state_dict, prefix, local_metadata)``; its return
        value replaces the state dict (for the root module only, as in PyTorch)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        return add_hook(self._state_dict_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata) -> None`` after state_dict()."""
        hook._from_public_api = True
        return add_hook(self._state_dict_hooks, hook)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before state_dict()."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(self.__class__, "get_extra_state", Module.get_extra_state) is not Module.get_extra_state:
            destination[extra_state_key] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if len(args) > 0:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in tuple(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in tuple(self._state_dict_hooks.values()):
            hook_result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if hook_result is not None:
                    destination = hook_result
            else:
                if hook_result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)``
        (preceded by the module when with_module) before this module loads its state."""
        return add_hook(self._load_state_dict_pre_hooks, _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_pre_hook(self, hook):
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys) -> None`` after load_state_dict (may edit the key lists)."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        for hook in tuple(self._load_state_dict_pre_hooks.values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)

        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_name_params = itertools.chain(self._parameters.items(), persistent_buffers.items())
        local_state = {k: v for k, v in local_name_params if v is not None}
        assign_to_params_buffers = local_metadata.get("assign_to_params_buffers", False)

        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                input_param = state_dict[key]
                if not isinstance(input_param, Tensor):
                    error_msgs.append(f'While copying the parameter named "{key}", '
                                      "expected torch.Tensor or Tensor-like object from checkpoint but "
                                      f"received {type(input_param)}" + _foreign_tensor_hint(input_param))
                    continue
                if "_lazy_data" in param.__dict__:   # an uninitialised (lazy) one: PyTorch copies nothing in
                    continue
                if len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
                    input_param = input_param[0]
                if input_param.shape != param.shape:
                    error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} "
                                      f"from checkpoint, the shape in current model is {param.shape}.")
                    continue
                try:
                    with no_grad():
                        if assign_to_params_buffers:
                            if isinstance(param, Parameter):
                                if not isinstance(input_param, Parameter):
                                    input_param = Parameter(input_param, requires_grad=param.requires_grad)
                                else:
                                    input_param.requires_grad_(param.requires_grad)
                            setattr(self, name, input_param)
                        else:
                            param.copy_(input_param)
                except Exception as ex:
                    error_msgs.append(f'While copying the parameter named "{key}", '
                                      f"whose dimensions in the model are {param.size()} and "
                                      f"whose dimensions in the checkpoint are {input_param.size()}, "
                                      f"an exception occurred : {ex.args}.")
            elif strict:
                missing_keys.append(key)

        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(self.__class__, "set_extra_state", Module.set_extra_state) is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and (extra_state_key in state_dict):
            unexpected_keys.append(extra_state_key)

        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def _snapshot_state(self):
        """What load_state_dict needs to undo a failed load (values, and entries for assign=True)."""
        snap = []
        for m in self.modules():
            tensors = [(t, t._data.copy()) for t in itertools.chain(m._parameters.values(), m._buffers.values())
                       if t is not None and "_lazy_data" not in t.__dict__]   # an uninitialised one has no values
            snap.append((m, dict(m._parameters), dict(m._buffers), tensors))
        return snap

    @staticmethod
    def _restore_state(snap):
        for m, params, bufs, tensors in snap:
            m._parameters.clear()
            m._parameters.update(params)
            m._buffers.clear()
            m._buffers.update(bufs)
            for t, data in tensors:
                if t._data.shape == data.shape and t._data.dtype == data.dtype and t._data.flags.writeable:
                    np.copyto(t._data, data)
                else:
                    t._data = data

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from state_dict. All problems are reported at once; when any
        error is raised the module is left as it was (PyTorch leaves the keys it could copy copied)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")

        missing_keys = []
        unexpected_keys = []
        error_msgs = []

        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        snap = self._snapshot_state()

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in tuple(module._load_state_dict_post_hooks.values()):
                out = hook(module, incompatible_keys)
                if out is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be modified, "
                        "it should be done inplace.")

        try:
            load(self, state_dict)
            del load
            if strict:
                if len(unexpected_keys) > 0:
                    error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in unexpected_keys)))
                if len(missing_keys) > 0:
                    error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in missing_keys)))
            if len(error_msgs) > 0:
                raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                    self.__class__.__name__, "\n\t".join(error_msgs)))
        except BaseException:
            self._restore_state(snap)
            raise
        return _IncompatibleKeys(missing_keys, unexpected_keys)

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
            if p._grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p._grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g._data[...] = 0
                    g._vc[0] += 1

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


def _foreign_tensor_hint(value):
    """What to say when a state_dict holds another library's tensors (a real ``torch.Tensor``: hookgrad never
    imports torch, so it is told by its type's module)."""
    mod = type(value).__module__ or ""
    if mod.split(".")[0] != "torch":
        return ""
    return (" (hookgrad: this is a PyTorch tensor, not a hookgrad one; convert the state_dict first, e.g. "
            "{k: hookgrad.tensor(v.detach().cpu().numpy()) for k, v in sd.items()}, or save it with torch.save "
            "and read the file with hookgrad.load)")
