"""Adamax (Adam over the infinity norm), PyTorch's for-loop algorithm."""
import numpy as np

from .._tensor import Tensor
from .optimizer import (Optimizer, _check_adam_args, _use_grad_for_differentiable, _to_float, _zeros_like, _step_tensor, _bump,
                        _mul_, _lerp_, _addcdiv_, _add_scalar)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        self._check_not_differentiable(differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if a closure is given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd, eps = _to_float(group["lr"]), group["weight_decay"], group["eps"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_inf"] = _zeros_like(p)
                g = p._grad._data
                if group["maximize"]:
                    g = -g
                step_t, exp_avg, exp_inf = state["step"], state["exp_avg"], state["exp_inf"]
                step_t._data += 1
                _bump(step_t)
                if wd != 0:
                    g = _add_scalar(g, p._data, wd)
                _lerp_(exp_avg, g, 1 - beta1)
                _mul_(exp_inf, beta2)
                norm = np.abs(g)
                norm += norm.dtype.type(eps)
                np.maximum(exp_inf._data, norm, out=exp_inf._data)
                _bump(exp_inf)
                clr = lr / (1 - beta1 ** step_t.item())
                _addcdiv_(p, exp_avg._data, exp_inf._data, -clr)
        return loss
