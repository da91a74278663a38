"""ASGD (averaged SGD), PyTorch's for-loop algorithm."""
import numpy as np

from .._tensor import Tensor
from .. import _dtype as D
from .optimizer import (Optimizer, _use_grad_for_differentiable, _to_float, _zeros_like, _step_tensor, _bump,
                        _mul_, _add_, _add_scalar)

__all__ = ["ASGD"]


def _scalar(value, like):
    return Tensor._make(np.asarray(value, dtype=like._data.dtype))


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        self._check_not_differentiable(differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if a closure is given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0, wd = (_to_float(group["lr"]), group["lambd"], group["alpha"], group["t0"],
                                        group["weight_decay"])
            for p in group["params"]:
                if p._grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["eta"] = _scalar(lr, state["step"])
                    state["mu"] = _scalar(1.0, state["step"])
                    state["ax"] = _zeros_like(p)
                step_t, eta, mu, ax = state["step"], state["eta"], state["mu"], state["ax"]
                g = p._grad._data
                if group["maximize"]:
                    g = -g
                step_t._data += 1
                _bump(step_t)
                if wd != 0:
                    g = _add_scalar(g, p._data, wd)
                eta_value = eta.item()
                _mul_(p, 1 - lambd * eta_value)
                _add_(p, g, -eta_value)
                if mu.item() != 1:
                    ax._data += (p._data - ax._data) * ax._data.dtype.type(mu.item())
                else:
                    ax._data[...] = p._data
                _bump(ax)
                step = step_t.item()
                # torch.as_tensor(python float) rounds to the default dtype before the copy
                eta._data[...] = np.asarray(lr / ((1 + lambd * lr * step) ** alpha), dtype=D.get_default_dtype().np)
                _bump(eta)
                mu._data[...] = np.asarray(1 / max(1, step - t0), dtype=D.get_default_dtype().np)
                _bump(mu)
        return loss
