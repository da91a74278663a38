"""PyTorch's basic autograd functions of ``torch._C._functions`` (torch/csrc/autograd/functions/basic_ops):

- ``UndefinedGrad()(*tensors)``: copies whose node, ``UndefinedGradBackward``, sends an undefined gradient
  (None) to every input: what a Function downstream sees as a gradient it must materialize (or not);
- ``DelayedError(msg, num_inputs)(*tensors)``: the tensors as they are (sharing data), whose node, ``Error``,
  raises ``msg`` if a backward pass runs it: an input whose gradient must never be computed.

Both are nodes themselves (``issubclass(DelayedError, Node)``, as the C++ classes are), made by the call.
"""
from .node import Node, Tensor, _NO_EDGE


def _apply_skipping_none(cls, inputs, **params):
    """``cls.apply`` over ``inputs`` where some may be None (PyTorch's wrap_outputs: an undefined input is an empty
    edge of the node and an undefined output, counted among the node's outputs). One output: the tensor itself,
    several: a tuple."""
    present = [t for t in inputs if t is not None]
    if len(present) == len(inputs) or not present:
        if not present:
            return inputs[0] if len(inputs) == 1 else tuple(inputs)
        return cls.apply(*inputs, **params)
    outs = cls.apply(*present, **params)
    outs = outs if type(outs) is tuple else (outs,)
    node = next((o.grad_fn for o in outs if isinstance(o, Tensor) and o.grad_fn is not None), None)
    it = iter(outs)
    res = tuple(None if t is None else next(it) for t in inputs)
    if node is not None:
        it_e, it_m = iter(node.next_functions), iter(node._in_meta)
        node.next_functions = tuple(_NO_EDGE if t is None else next(it_e) for t in inputs)
        node._in_meta = [None if t is None else next(it_m) for t in inputs]
        node._out_meta = [None if o is None else (o._data.shape, o.dtype) for o in res]
        for i, o in enumerate(res):
            if o is not None:
                o._output_nr = i
    return res


class UndefinedGradBackward(Node, name="UndefinedGradBackward"):
    materialize_grads = False

    def forward(self, *xs):
        return tuple(x.copy() for x in xs) if len(xs) > 1 else xs[0].copy()

    def backward(self, *grads):
        return (None,) * len(self.next_functions)

    def name(self):
        return "torch::autograd::UndefinedGradBackward"


class Error(Node, name="Error"):
    """Passes its inputs through; raises ``msg`` if a backward pass runs it."""
    msg = ""
    materialize_grads = False

    def forward(self, *xs):
        return xs if len(xs) > 1 else xs[0]

    def backward(self, *grads):
        msg = self.msg
        raise RuntimeError(msg.decode() if isinstance(msg, bytes) else msg)

    def name(self):
        return "torch::autograd::Error"


class UndefinedGrad(Node, name="UndefinedGrad"):
    """``torch._C._functions.UndefinedGrad()(*tensors)``."""

    def __init__(self):
        pass

    def __call__(self, *inputs):
        return _apply_skipping_none(UndefinedGradBackward, inputs)


class DelayedError(Node, name="DelayedError"):
    """``torch._C._functions.DelayedError(msg, num_inputs)(*tensors)``."""

    def __init__(self, msg, num_inputs):
        self.msg = msg
        self.num_inputs = num_inputs

    def __call__(self, *inputs):
        if len(inputs) != self.num_inputs:
            raise TypeError(f"expected {self.num_inputs} arguments, got {len(inputs)} instead")
        return _apply_skipping_none(Error, inputs, msg=self.msg)
