"""PyTorch's basic autograd functions of ``torch._C._functions`` (torch/csrc/autograd/functions/basic_ops):

- ``UndefinedGrad()(*tensors)``: copies whose node, ``UndefinedGradBackward``, sends an undefined gradient
  (None) to every input: what a Function downstream sees as a gradient it must materialize (or not);
- ``DelayedError(msg, num_inputs)(*tensors)``: the tensors as they are (sharing data), whose node, ``Error``,
  raises ``msg`` if a backward pass runs it: an input whose gradient must never be computed.

Both are nodes themselves (``issubclass(DelayedError, Node)``, as the C++ classes are), made by the call.
"""
from .node import Node


class UndefinedGradBackward(Node, name="UndefinedGradBackward"):
    def forward(self, *xs):
        return tuple(x.copy() for x in xs) if len(xs) > 1 else xs[0].copy()

    def backward(self, *grads):
        return (None,) * len(self.next_functions)


class Error(Node, name="Error"):
    msg = ""

    def forward(self, *xs):
        return xs if len(xs) > 1 else xs[0]

    def backward(self, *grads):
        raise RuntimeError(self.msg)


class UndefinedGrad(Node, name="UndefinedGrad"):
    """``torch._C._functions.UndefinedGrad()(*tensors)``."""

    def __init__(self):
        pass

    def __call__(self, *inputs):
        return UndefinedGradBackward.apply(*inputs)


class DelayedError(Node, name="DelayedError"):
    """``torch._C._functions.DelayedError(msg, num_inputs)(*tensors)``."""

    def __init__(self, msg, num_inputs):
        self.msg = msg
        self.num_inputs = num_inputs

    def __call__(self, *inputs):
        if len(inputs) != self.num_inputs:
            raise TypeError(f"expected {self.num_inputs} arguments, got {len(inputs)} instead")
        return Error.apply(*inputs, msg=self.msg)
