"""torch.distributed.checkpoint.state_dict: a model's and an optimizer's state dicts. hookgrad has no sharded
modules, so these are the plain state dicts (``options`` such as ``full_state_dict`` change nothing)."""
from dataclasses import dataclass

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict", "get_state_dict",
           "set_model_state_dict", "set_optimizer_state_dict", "set_state_dict"]


@dataclass
class StateDictOptions:
    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


def get_model_state_dict(model, *, submodules=None, options=None):
    sd = model.state_dict()
    if options is not None and options.ignore_frozen_params:
        frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
        sd = {k: v for k, v in sd.items() if k not in frozen}
    return sd


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options=None):
    if isinstance(optimizers, (list, tuple)):
        if len(optimizers) != 1:
            raise NotImplementedError("hookgrad: get_optimizer_state_dict of several optimizers")
        optimizers = optimizers[0]
    return optimizers.state_dict()


def get_state_dict(model, optimizers, *, submodules=None, options=None):
    return get_model_state_dict(model, options=options), get_optimizer_state_dict(model, optimizers, options=options)


def set_model_state_dict(model, model_state_dict, *, options=None):
    return model.load_state_dict(model_state_dict, strict=True if options is None else options.strict)


def set_optimizer_state_dict(model, optimizers, optim_state_dict, *, options=None):
    if isinstance(optimizers, (list, tuple)):
        optimizers = optimizers[0]
    optimizers.load_state_dict(optim_state_dict)


def set_state_dict(model, optimizers, *, model_state_dict, optim_state_dict, options=None):
    result = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return result
