"""Adafactor (factored second moments for matrices), PyTorch's for-loop algorithm."""
import numpy as np

from .._array import array_module
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from .optimizer import (Optimizer, _to_float, _step_tensor, _bump, _mul_, _add_, _lerp_, _check_shapes,
                        _numpy_errors_as_torch)

__all__ = ["Adafactor"]


def _norm(a, axis=None, keepdims=False):
    return np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdims))


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if a closure is given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            _numpy_errors_as_torch("Adafactor", self._step_group, group)
        return loss

    def _step_group(self, group):
        lr, beta2_decay, d, wd = _to_float(group["lr"]), group["beta2_decay"], group["d"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        for p in group["params"]:
            if p._grad is None:
                continue
            g = p._grad._data
            _check_shapes(p, g)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                xp = array_module(g)
                if g.ndim > 1:
                    state["row_var"] = Tensor._make(xp.zeros(g.shape[:-1] + (1,), dtype=g.dtype))
                    state["col_var"] = Tensor._make(xp.zeros(g.shape[:-2] + (1,) + g.shape[-1:], dtype=g.dtype))
                else:
                    state["variance"] = Tensor._make(xp.zeros_like(g))
            if "variance" in state:     # (row_var and col_var are not shaped as the parameter)
                _check_shapes(p, g, {"variance": state["variance"]})
            if group["maximize"]:
                g = -g
            f = g.dtype.type
            e1 = float(np.finfo(p._data.dtype).eps) if eps1 is None else eps1
            step_t = state["step"]
            step_t._data += 1
            _bump(step_t)
            step = step_t.item()
            one_minus_beta2_t = step ** beta2_decay
            rho_t = min(lr, 1 / (step ** 0.5))
            alpha = max(eps2, float(_norm(p._data)) / (p._data.size ** 0.5)) * rho_t
            if wd != 0:
                _mul_(p, 1 - lr * wd)
            if g.ndim > 1:
                row_var, col_var = state["row_var"], state["col_var"]
                _lerp_(row_var, _norm(g, -1, True) ** 2 / f(g.shape[-1]), one_minus_beta2_t)
                _lerp_(col_var, _norm(g, -2, True) ** 2 / f(g.shape[-2]), one_minus_beta2_t)
                var_estimate = row_var._data @ col_var._data
                var_estimate /= np.maximum(row_var._data.mean(axis=-2, keepdims=True), f(e1))
            else:
                variance = state["variance"]
                _lerp_(variance, g * g, one_minus_beta2_t)
                var_estimate = variance._data.copy()
            update = 1 / np.sqrt(np.maximum(var_estimate, f(e1 * e1)))
            update *= g
            denom = max(1.0, float(_norm(update)) / ((update.size ** 0.5) * d))
            _add_(p, update, -alpha / denom)
