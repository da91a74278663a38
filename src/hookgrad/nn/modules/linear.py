"""Identity, Linear, Bilinear."""
import math

from ..parameter import Parameter, UninitializedParameter
from .. import functional as F, init
from ... import _creation as C
from .module import Module
from .lazy import LazyModuleMixin

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear", "NonDynamicallyQuantizableLinear"]


class Identity(Module):
    """Returns its input unchanged (constructor arguments are ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


def _weight_bias(module, shape, out_features, bias, dtype):
    """A layer's uninitialised ``weight`` of ``shape`` and ``bias`` of ``out_features`` (or bias registered
    as None), as Linear, Bilinear and the convolutions make them before ``reset_parameters()``."""
    module.weight = Parameter(C.empty(shape, dtype=dtype))
    if bias:
        module.bias = Parameter(C.empty(out_features, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def _reset_kaiming(module, bias_without_fan_in=True):
    """PyTorch's default init of Linear and the convolutions: weight ``kaiming_uniform_(a=sqrt(5))``, bias
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)). With fan_in 0 the bias gets U(0, 0) (Linear), or is left as it
    is with ``bias_without_fan_in=False`` (convolutions)."""
    init.kaiming_uniform_(module.weight, a=math.sqrt(5))
    if module.bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(module.weight)
        if fan_in != 0 or bias_without_fan_in:
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(module.bias, -bound, bound)


class Linear(Module):
    """y = x W^T + b; a 2-D input goes through addmm (grad_fn AddmmBackward0, as in PyTorch)."""
    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _weight_bias(self, (out_features, in_features), out_features, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_kaiming(self)

    def forward(self, input):
        try:
            return F.linear(input, *self._weight_bias())
        except RuntimeError as e:
            raise F._layer_error(e, self, input) from None

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    pass


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose ``in_features`` is inferred from its first input; it becomes a :class:`Linear` then."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)     # bias False: no tensor made that is replaced at once (PyTorch's)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            from ...autograd.grad_mode import no_grad
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class Bilinear(Module):
    """y = x1^T A x2 + b."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        _weight_bias(self, (out_features, in1_features, in2_features), out_features, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        if input1.shape[-1] != self.in1_features or input2.shape[-1] != self.in2_features:
            raise F._layer_error(RuntimeError(f"Input1 and input2 must have the same batch size and feature sizes "
                                              f"{self.in1_features} and {self.in2_features}"), self, input1, input2)
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
