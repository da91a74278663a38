"""DataParallel and data_parallel as PyTorch's behave without an accelerator: the module runs as it is."""
import copy
import threading
from typing import Generic, TypeVar

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel", "replicate", "parallel_apply"]

T = TypeVar("T", bound=Module)


class DataParallel(Module, Generic[T]):
    """Wraps `module`; with no accelerator (hookgrad's case) PyTorch's DataParallel keeps no devices and its
    forward calls the module directly. state_dict keys get the "module." prefix."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    def replicate(self, module, device_ids):
        return replicate(module, device_ids)

    def scatter(self, inputs, kwargs, device_ids):
        from .scatter_gather import scatter_kwargs
        return scatter_kwargs(inputs, kwargs, device_ids, dim=getattr(self, "dim", 0))

    def parallel_apply(self, replicas, inputs, kwargs):
        return parallel_apply(replicas, inputs, kwargs)

    def gather(self, outputs, output_device):
        from .scatter_gather import gather
        return gather(outputs, output_device, dim=getattr(self, "dim", 0))


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """PyTorch's functional DataParallel: it needs an accelerator, and hookgrad has none."""
    raise RuntimeError("device type could not be determined (hookgrad: data_parallel needs an accelerator; hookgrad "
                       "runs on the CPU only, call the module directly or wrap it in nn.DataParallel)")


def replicate(network, devices, detach=False):
    """One deep copy of `network` per device (all on the CPU in hookgrad)."""
    return [network if i == 0 else copy.deepcopy(network) for i in range(len(devices))]


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """Apply each module to its inputs, one thread per module as PyTorch does; re-raise a module's error."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    kwargs_tup = kwargs_tup if kwargs_tup is not None else ({},) * len(modules)
    results = {}

    def worker(i, module, input, kwargs):
        try:
            if not isinstance(input, (list, tuple)):
                input = (input,)
            results[i] = module(*input, **kwargs)
        except Exception as e:  # noqa: BLE001  (re-raised by the caller below)
            results[i] = e
    if len(modules) > 1:
        threads = [threading.Thread(target=worker, args=(i, m, x, k))
                   for i, (m, x, k) in enumerate(zip(modules, inputs, kwargs_tup))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        worker(0, modules[0], inputs[0], kwargs_tup[0])
    outputs = []
    for i in range(len(inputs)):
        if isinstance(results[i], Exception):
            raise results[i]
        outputs.append(results[i])
    return outputs
