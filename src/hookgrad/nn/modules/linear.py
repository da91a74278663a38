"""Identity, Linear, Bilinear."""
import math

from ..parameter import Parameter
from .. import functional as F, init
from ... import _creation as C
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear", "NonDynamicallyQuantizableLinear"]


class Identity(Module):
    """Returns its input unchanged (constructor arguments are ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b; a 2-D input goes through addmm (grad_fn AddmmBackward0, as in PyTorch)."""
    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(C.empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(C.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        try:
            return F.linear(input, *self._weight_bias())
        except RuntimeError as e:
            raise F._layer_error(e, self, input) from None

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    pass


class LazyLinear(Linear):
    """Linear whose ``in_features`` is inferred from its first input (PyTorch's LazyModuleMixin): a forward
    pre-hook (with kwargs) materialises ``weight``/``bias`` in place (same Parameter objects), initialises
    them, removes itself and the load hook, and the module becomes a :class:`Linear`. Until then the
    parameters hold no elements (PyTorch's UninitializedParameter) and draw no random numbers."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, out_features, bias, device, dtype)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def has_uninitialized_params(self):
        return any(p is not None and p._data.size == 0 and self.in_features == 0
                   for p in (self.weight, self.bias))

    def _materialize(self, in_features):
        import numpy as np
        self.in_features = in_features
        w = self.weight
        w._data = np.empty((self.out_features, in_features), dtype=w._data.dtype)
        if self.bias is not None:
            self.bias._data = np.empty((self.out_features,), dtype=self.bias._data.dtype)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            from ...autograd.grad_mode import no_grad
            with no_grad():
                self._materialize(input.shape[-1])
                self.reset_parameters()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        key = prefix + "weight"
        if self.has_uninitialized_params() and key in state_dict and getattr(state_dict[key], "ndim", 0) == 2:
            self._materialize(state_dict[key].shape[1])

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class Bilinear(Module):
    """y = x1^T A x2 + b."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(C.empty((out_features, in1_features, in2_features), dtype=dtype))
        if bias:
            self.bias = Parameter(C.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
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
