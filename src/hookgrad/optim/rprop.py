"""Rprop (resilient backpropagation), PyTorch's for-loop algorithm."""
import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _use_grad_for_differentiable, _to_float, _zeros_like, _step_tensor, _bump

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        self._check_not_differentiable(differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if a closure is given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            smin, smax = group["step_sizes"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["prev"] = _zeros_like(p)
                    state["step_size"] = _zeros_like(p, _to_float(group["lr"]))
                prev, step_size = state["prev"], state["step_size"]
                state["step"]._data += 1
                _bump(state["step"])
                g = p._grad._data
                if group["maximize"]:
                    g = -g
                f = g.dtype.type
                sign = np.sign(g * prev._data)
                sign[sign > 0] = f(etaplus)
                sign[sign < 0] = f(etaminus)
                sign[sign == 0] = 1
                s = step_size._data
                s *= sign
                _bump(step_size)
                np.clip(s, f(smin), f(smax), out=s)
                _bump(step_size)
                g = g.copy()
                g[sign == f(etaminus)] = 0
                p._data -= np.sign(g) * s
                _bump(p)
                prev._data[...] = g
                _bump(prev)
        return loss
