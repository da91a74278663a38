"""``torch.autograd.graph``: the public face of the backward graph.

The pieces live in files with one job each: ``node`` (Node, AccumulateGrad, hooks on nodes),
``saved`` (saved tensors and their hooks), ``op_hooks`` (OpHook) and ``multi_grad``
(register_multi_grad_hook). This module re-exports PyTorch's names (and hookgrad's op hooks).
"""
from . import node as _node, saved as _saved
from .node import (Node, AccumulateGrad, GraphRoot, check_tensor_result, check_tuple_result,  # noqa: F401
                   run_tensor_hooks, expand_np, sum_to_shape, grad_accumulator_lock, record1, record2)
from .saved import (SavedTensor, saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks,  # noqa: F401
                    allow_mutation_on_saved_tensors, increment_version, _hooks_tls, _version_error)
from .op_hooks import OpHook, register_op_hook, op_name, _op_hooks, _op_tls  # noqa: F401
from .multi_grad import register_multi_grad_hook  # noqa: F401

__all__ = ["Node", "OpHook", "register_op_hook", "op_name", "AccumulateGrad", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "register_multi_grad_hook", "allow_mutation_on_saved_tensors",
           "increment_version"]


def __getattr__(name):
    """Internal names of the old single-file module, read from where they live now."""
    for m in (_node, _saved):
        if name in m.__dict__:
            return m.__dict__[name]
    raise AttributeError(f"module 'hookgrad.autograd.graph' has no attribute '{name}'")
