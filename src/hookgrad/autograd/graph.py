"""``torch.autograd.graph``: the public face of the backward graph.

The pieces live in files with one job each: ``node`` (Node, AccumulateGrad, hooks on nodes),
``saved`` (saved tensors and their hooks), ``op_hooks`` (OpHook) and ``multi_grad``
(register_multi_grad_hook). This module re-exports PyTorch's names (and hookgrad's op hooks).
"""
from .node import Node, AccumulateGrad  # noqa: F401
from .saved import (SavedTensor, saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks,  # noqa: F401
                    allow_mutation_on_saved_tensors, increment_version)
from .op_hooks import OpHook, register_op_hook, op_name, _op_hooks  # noqa: F401  (_op_hooks: the registry)
from .multi_grad import register_multi_grad_hook  # noqa: F401

__all__ = ["Node", "OpHook", "register_op_hook", "op_name", "AccumulateGrad", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "register_multi_grad_hook", "allow_mutation_on_saved_tensors",
           "increment_version"]

