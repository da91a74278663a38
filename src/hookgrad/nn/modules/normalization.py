"""LayerNorm, GroupNorm (torch.nn.modules.normalization)."""
import numbers

import numpy as np

from ..parameter import Parameter
from .. import functional as F, init
from ... import _creation as C
from .module import Module
from ...autograd.function import Function

__all__ = ["LocalResponseNorm", "CrossMapLRN2d", "LayerNorm", "GroupNorm", "RMSNorm"]


def _affine_parameters(module, shape, affine, bias, dtype):
    """weight (and bias) of a normalization layer, or None registrations when not affine."""
    module.register_parameter("weight", Parameter(C.empty(shape, dtype=dtype)) if affine else None)
    module.register_parameter("bias", Parameter(C.empty(shape, dtype=dtype)) if affine and bias else None)


def _reset_affine(module):
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class LayerNorm(Module):
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        try:
            return F.layer_norm(input, self.normalized_shape, *self._weight_bias(), self.eps)
        except RuntimeError as e:
            raise F._layer_error(e, self, input) from None

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, (num_channels,), affine, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        try:
            return F.group_norm(input, self.num_groups, *self._weight_bias(), self.eps)
        except RuntimeError as e:
            raise F._layer_error(e, self, input) from None

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


def _lrn_windows(channels, size):
    """PyTorch's CrossMapLRN2d channel windows as 0/1 matrices (C, C): the forward's running sum (which, as
    PyTorch's, drops a channel only once c > pre_pad) and the backward's symmetric window."""
    pre = int((size - 1) / 2 + 1)
    fwd = np.zeros((channels, channels))
    fwd[0, :min(pre, channels)] = 1
    for c in range(1, channels):
        fwd[c] = fwd[c - 1]
        if c < channels - pre + 1:
            fwd[c, c + pre - 1] += 1
        if c > pre:
            fwd[c, c - pre] -= 1
    inv = int(size - (size - 1) / 2)
    bwd = np.zeros((channels, channels))
    for c in range(channels):
        lo, hi = c - inv, c + size - 1 - inv
        bwd[c, max(lo, 0):max(min(hi + 1, channels), 0)] = 1
    return fwd, bwd


class CrossMapLRN2d(Function):       # noqa: F811 -- renamed below; the Module takes the name
    """PyTorch's legacy CrossMapLRN2d autograd Function (forward and its hand-written backward)."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        n, c = input.shape[:2]
        fwd, bwd = _lrn_windows(c, size)
        xp = input._xp
        sq = (input * input).reshape(n, c, -1)
        scale = (C.tensor(xp.asarray(fwd.astype(input._data.dtype))) @ sq).reshape(input.shape) * (alpha / size) + k
        out = scale.pow(-beta) * input
        ctx.size, ctx.alpha, ctx.beta, ctx.scale, ctx.bwd = size, alpha, beta, scale, bwd
        ctx.save_for_backward(input, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        n, c = input.shape[:2]
        ratio = (grad_output * output / ctx.scale).reshape(n, c, -1)
        win = C.tensor(input._xp.asarray(ctx.bwd.astype(input._data.dtype)))
        accum = (win @ ratio).reshape(input.shape)
        gi = ctx.scale.pow(-ctx.beta) * grad_output - (2 * ctx.alpha * ctx.beta / ctx.size) * input * accum
        return gi, None, None, None, None


_CrossMapLRN2dFn = CrossMapLRN2d       # its grad_fn is PyTorch's CrossMapLRN2dBackward


class CrossMapLRN2d(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return _CrossMapLRN2dFn.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class RMSNorm(Module):
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(C.empty(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)
