"""torch.distributed.algorithms.ddp_comm_hooks: the built-in DDP communication hooks, and DDPCommHookType /
register_ddp_comm_hook to register one by name."""
from enum import Enum, member
from functools import partial

from . import (debugging_hooks as debugging, default_hooks as default, powerSGD_hook as powerSGD,
               quantization_hooks as quantization)

__all__ = ["DDPCommHookType", "register_ddp_comm_hook"]


def _ddp_comm_hook_wrapper(comm_hook, model, state):
    model.register_comm_hook(state, comm_hook)


def _powerSGD_comm_hook_wrapper(comm_hook, model, state, matrix_approximation_rank, start_powerSGD_iter=1_000):
    """Register a PowerSGD hook whose state wraps ``state``, a process group, as the other wrappers take."""
    powerSGD_state = powerSGD.PowerSGDState(process_group=state, matrix_approximation_rank=matrix_approximation_rank,
                                            start_powerSGD_iter=start_powerSGD_iter)
    model.register_comm_hook(powerSGD_state, comm_hook)


class DDPCommHookType(Enum):
    """The built-in hooks by name: ``DDPCommHookType.ALLREDUCE.value(model=model, state=process_group)``
    registers allreduce_hook on the DDP ``model``."""
    ALLREDUCE = member(partial(_ddp_comm_hook_wrapper, comm_hook=default.allreduce_hook))
    FP16_COMPRESS = member(partial(_ddp_comm_hook_wrapper, comm_hook=default.fp16_compress_hook))
    BF16_COMPRESS = member(partial(_ddp_comm_hook_wrapper, comm_hook=default.bf16_compress_hook))
    QUANTIZE_PER_TENSOR = member(partial(_ddp_comm_hook_wrapper, comm_hook=quantization.quantization_pertensor_hook))
    QUANTIZE_PER_CHANNEL = member(partial(_ddp_comm_hook_wrapper,
                                          comm_hook=quantization.quantization_perchannel_hook))
    POWER_SGD = member(partial(_powerSGD_comm_hook_wrapper, comm_hook=powerSGD.powerSGD_hook,
                               matrix_approximation_rank=1))
    # rank 2: often more accurate than rank 1, slower and larger
    POWER_SGD_RANK2 = member(partial(_powerSGD_comm_hook_wrapper, comm_hook=powerSGD.powerSGD_hook,
                                     matrix_approximation_rank=2))
    BATCHED_POWER_SGD = member(partial(_powerSGD_comm_hook_wrapper, comm_hook=powerSGD.batched_powerSGD_hook,
                                       matrix_approximation_rank=1))
    BATCHED_POWER_SGD_RANK2 = member(partial(_powerSGD_comm_hook_wrapper, comm_hook=powerSGD.batched_powerSGD_hook,
                                             matrix_approximation_rank=2))
    NOOP = member(partial(_ddp_comm_hook_wrapper, comm_hook=debugging.noop_hook))


def register_ddp_comm_hook(comm_hook_type, model, state=None):
    """Register the built-in hook ``comm_hook_type`` (a DDPCommHookType) on the DDP ``model`` with ``state``.

    Example::
        >>> register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, model, state)
    """
    comm_hook_type.value(model=model, state=state)
