"""LayerNorm, GroupNorm (torch.nn.modules.normalization)."""
import numbers

from ..parameter import Parameter
from .. import functional as F, init
from ... import _creation as C
from .module import Module

__all__ = ["LayerNorm", "GroupNorm"]


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
