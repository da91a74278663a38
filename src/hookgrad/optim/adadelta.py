"""Adadelta, PyTorch's for-loop algorithm."""
import numpy as np

from .._tensor import Tensor
from .optimizer import (Optimizer, _use_grad_for_differentiable, _to_float, _zeros_like, _step_tensor, _bump,
                        _mul_, _add_, _addcmul_, _add_scalar)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        self._check_not_differentiable(differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if a closure is given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = _to_float(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    state["acc_delta"] = _zeros_like(p)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                state["step"]._data += 1
                _bump(state["step"])
                g = p._grad._data
                if group["maximize"]:
                    g = -g
                if wd != 0:
                    g = _add_scalar(g, p._data, wd)
                _mul_(square_avg, rho)
                _addcmul_(square_avg, g, g, 1 - rho)
                e = square_avg._data.dtype.type(eps)
                std = np.sqrt(square_avg._data + e)
                delta = np.sqrt(acc_delta._data + e)
                delta /= std
                delta *= g
                _mul_(acc_delta, rho)
                _addcmul_(acc_delta, delta, delta, 1 - rho)
                _add_(p, delta, -lr)
        return loss
