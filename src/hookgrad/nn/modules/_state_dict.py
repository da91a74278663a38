"""Module state: state_dict / load_state_dict, their hooks, extra state.

The functions taking ``self`` are methods of ``Module`` (bound in its class body in ``module.py``).
"""
import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _array
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...utils.hooks import add_hook
from ..parameter import Parameter
from ._module_hooks import _WrappedHook

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def get_extra_state(self):
    raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. "
                       "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                       "to report this bug.")


def set_extra_state(self, state):
    raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. "
                       "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                       "to report this bug.")


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
    if getattr(self.__class__, "get_extra_state", get_extra_state) is not get_extra_state:
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
    if getattr(self.__class__, "set_extra_state", set_extra_state) is not set_extra_state:
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
        # an uninitialised (lazy) one and a meta one have no values (copying a meta one's zeros would take
        # its full size in memory)
        tensors = [(t, t._data.copy()) for t in itertools.chain(m._parameters.values(), m._buffers.values())
                   if t is not None and "_lazy_data" not in t.__dict__ and not t.is_meta]
        snap.append((m, dict(m._parameters), dict(m._buffers), tensors))
    return snap


def _restore_state(snap):
    for m, params, bufs, tensors in snap:
        m._parameters.clear()
        m._parameters.update(params)
        m._buffers.clear()
        m._buffers.update(bufs)
        for t, data in tensors:
            if t._data.shape == data.shape and t._data.dtype == data.dtype and _array.writeable(t._data):
                t._data[...] = data
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


def _foreign_tensor_hint(value):
    """What to say when a state_dict holds another library's tensors (a real ``torch.Tensor``: hookgrad never
    imports torch, so it is told by its type's module)."""
    mod = type(value).__module__ or ""
    if mod.split(".")[0] != "torch":
        return ""
    return (" (hookgrad: this is a PyTorch tensor, not a hookgrad one; convert the state_dict first, e.g. "
            "{k: hookgrad.tensor(v.detach().cpu().numpy()) for k, v in sd.items()}, or save it with torch.save "
            "and read the file with hookgrad.load)")
