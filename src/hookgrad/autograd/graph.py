"""``torch.autograd.graph``: the public face of the backward graph.

The pieces live in files with one job each: ``node`` (Node, AccumulateGrad, hooks on nodes),
``saved`` (saved tensors and their hooks), ``op_hooks`` (OpHook) and ``multi_grad``
(register_multi_grad_hook). This module re-exports PyTorch's names (and hookgrad's op hooks).
"""
import abc

from . import node as _node
from .node import AccumulateGrad  # noqa: F401
from .saved import (SavedTensor, saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks,  # noqa: F401
                    allow_mutation_on_saved_tensors, increment_version)
from .op_hooks import OpHook, register_op_hook, op_name, _op_hooks  # noqa: F401  (_op_hooks: the registry)
from .multi_grad import register_multi_grad_hook  # noqa: F401
from typing import NamedTuple, Optional


class Node(abc.ABC):
    """``torch.autograd.graph.Node``: the abstract face of every backward node. As in PyTorch it is a virtual
    base: ``isinstance(t.grad_fn, Node)`` and ``issubclass(type(t.grad_fn), Node)`` hold for every node class
    (the primitives', AccumulateGrad, a custom Function's ``<Name>Backward``...), yet Node is in none of
    their MROs (they derive from ``autograd.node.Node``, the implementation)."""

    @abc.abstractmethod
    def name(self):
        """The node's name, e.g. ``MulBackward0``."""

    @property
    @abc.abstractmethod
    def next_functions(self):
        """``((node, input_nr), ...)``: where the gradients this node computes go."""

    @property
    @abc.abstractmethod
    def metadata(self):
        """A dict for the user's own data."""

    @property
    @abc.abstractmethod
    def _input_metadata(self):
        """Per input of the node's forward (output of the backward): its tensor metadata."""

    @abc.abstractmethod
    def _sequence_nr(self):
        """The order the engine runs the nodes in (latest created first)."""

    @abc.abstractmethod
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after the node runs."""

    @abc.abstractmethod
    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before the node runs."""

    @classmethod
    def __subclasshook__(cls, subclass):
        if cls is Node and isinstance(subclass, type) and issubclass(subclass, _node.Node):
            return True
        return NotImplemented


class _GradientEdgeFields(NamedTuple):
    node: Node
    output_nr: int
    # keeps the graph alive when ``node`` alone would not (PyTorch: a view's node for Python nodes);
    # hookgrad's nodes are Python objects that keep their graph alive, so it stays None here
    ownership_token: Optional[Node] = None


class GradientEdge(_GradientEdgeFields):
    """torch.autograd.graph.GradientEdge: where the gradient of a Tensor is computed in the graph,
    ``(node, output_nr)``. autograd.grad and backward take it in place of a Tensor, as outputs or inputs.
    One made by get_gradient_edge also knows the Tensor's shape and dtype (``_meta``), which the engine
    needs to seed or check a gradient given for it."""
    _meta = None


def _get_grad_fn_or_grad_acc(t):
    if t.grad_fn is None and t.requires_grad:
        return t._grad_accumulator()
    return t.grad_fn


def get_gradient_edge(tensor):
    """The gradient edge of ``tensor``: ``grad(loss, get_gradient_edge(x))`` is ``grad(loss, x)``, and stays
    so when ``x`` is later modified in place."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    edge = GradientEdge(_get_grad_fn_or_grad_acc(tensor), tensor._output_nr)
    edge._meta = (tuple(tensor.shape), tensor.dtype)
    return edge

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "OpHook", "register_op_hook", "op_name", "AccumulateGrad", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "register_multi_grad_hook", "allow_mutation_on_saved_tensors",
           "increment_version"]

