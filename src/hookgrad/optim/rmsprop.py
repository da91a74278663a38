"""RMSprop (momentum, centered, weight decay, maximize), PyTorch's for-loop algorithm."""
import numpy as np

from .._tensor import Tensor
from .optimizer import (Optimizer, _use_grad_for_differentiable, _to_float, _zeros_like, _step_tensor, _bump,
                        _add_, _mul_, _lerp_, _addcmul_, _addcdiv_, _add_scalar)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        self._check_not_differentiable(differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if a closure is given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, alpha, eps, wd = _to_float(group["lr"]), group["alpha"], group["eps"], group["weight_decay"]
            momentum, centered = group["momentum"], group["centered"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        state["grad_avg"] = _zeros_like(p)
                g = p._grad._data
                if group["maximize"]:
                    g = -g
                square_avg = state["square_avg"]
                state["step"]._data += 1
                _bump(state["step"])
                if wd != 0:
                    g = _add_scalar(g, p._data, wd)
                _mul_(square_avg, alpha)
                _addcmul_(square_avg, g, g, 1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]
                    _lerp_(grad_avg, g, 1 - alpha)
                    avg = np.sqrt(square_avg._data + (-grad_avg._data) * grad_avg._data)
                else:
                    avg = np.sqrt(square_avg._data)
                avg += avg.dtype.type(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    _mul_(buf, momentum)
                    _addcdiv_(buf, g, avg)
                    _add_(p, buf._data, -lr)
                else:
                    _addcdiv_(p, g, avg, -lr)
        return loss
