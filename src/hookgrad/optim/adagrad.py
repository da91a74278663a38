"""Adagrad (lr decay, weight decay, initial accumulator, maximize), PyTorch's for-loop algorithm."""
import numpy as np

from .._tensor import Tensor
from .optimizer import (_GroupLoop, _decay, _to_float, _zeros_like, _step_tensor, _bump, _check_shapes,
                        _addcmul_, _addcdiv_)

__all__ = ["Adagrad"]


class Adagrad(_GroupLoop):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p):
        state = self.state[p]
        state["step"] = _step_tensor()
        state["sum"] = _zeros_like(p, self.defaults["initial_accumulator_value"])
        return state

    def share_memory(self):
        pass

    def _step_group(self, group):
        lr, wd, lr_decay, eps = _to_float(group["lr"]), group["weight_decay"], group["lr_decay"], group["eps"]
        for p in group["params"]:
            if p._grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                state = self._init_state(p)
            step_t, state_sum = state["step"], state["sum"]
            step_t._data += 1
            _bump(step_t)
            step = step_t.item()
            g = p._grad._data
            _check_shapes(p, g, state, self._grad_first(group))
            if group["maximize"]:
                g = -g
            g = _decay(p, g, lr, wd)
            clr = lr / (1 + (step - 1) * lr_decay)
            _addcmul_(state_sum, g, g, 1)
            std = np.sqrt(state_sum._data)
            std += std.dtype.type(eps)
            _addcdiv_(p, g, std, -clr)
