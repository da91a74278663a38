"""torch.nn.grad: the gradients of a convolution with respect to its input or weight, given grad_output.

Computed as PyTorch does in effect (convolution_backward): by autograd through F.conv on a zero tensor of
the requested size (a convolution is linear in each argument, so the gradient does not depend on it).
"""
import collections.abc
from itertools import repeat


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    return parse


_single, _pair, _triple = _ntuple(1), _ntuple(2), _ntuple(3)  # PyTorch's module exports them

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _grad(conv, which, size, input, weight, grad_output, stride, padding, dilation, groups):
    from .. import autograd
    from .._creation import zeros
    from ..autograd.grad_mode import enable_grad
    with enable_grad():
        if which == "input":
            x = zeros(*size, dtype=weight.dtype).requires_grad_(True)
            w = weight.detach()
            var = x
        else:
            x = input.detach()
            w = zeros(*size, dtype=input.dtype).requires_grad_(True)
            var = w
        out = conv(x, w, None, stride, padding, dilation, groups)
        return autograd.grad(out, var, grad_output)[0]


def _conv(n):
    from . import functional as F
    return getattr(F, f"conv{n}d")


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _grad(_conv(1), "input", tuple(input_size), None, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _grad(_conv(1), "weight", tuple(weight_size), input, None, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _grad(_conv(2), "input", tuple(input_size), None, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _grad(_conv(2), "weight", tuple(weight_size), input, None, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _grad(_conv(3), "input", tuple(input_size), None, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _grad(_conv(3), "weight", tuple(weight_size), input, None, grad_output, stride, padding, dilation, groups)
