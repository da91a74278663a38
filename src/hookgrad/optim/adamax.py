"""Adamax (Adam over the infinity norm), PyTorch's for-loop algorithm."""
import numpy as np

from .optimizer import (_GroupLoop, _decay, _check_adam_args, _to_float, _zero_buffers, _bump,
                        _mul_, _lerp_, _addcdiv_)

__all__ = ["Adamax"]


class Adamax(_GroupLoop):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        beta1, beta2 = group["betas"]
        lr, wd, eps = _to_float(group["lr"]), group["weight_decay"], group["eps"]
        for p, g, state in self._each_grad(group, _zero_buffers("exp_avg", "exp_inf")):
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            g = _decay(p, g, lr, wd)
            _lerp_(exp_avg, g, 1 - beta1)
            _mul_(exp_inf, beta2)
            norm = np.abs(g)
            norm += norm.dtype.type(eps)
            np.maximum(exp_inf._data, norm, out=exp_inf._data)
            _bump(exp_inf)
            clr = lr / (1 - beta1 ** state["step"].item())
            _addcdiv_(p, exp_avg._data, exp_inf._data, -clr)
