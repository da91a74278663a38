"""Adadelta, PyTorch's for-loop algorithm."""
import numpy as np

from .optimizer import (_GroupLoop, _decay, _check_lr, _check_nonneg, _to_float, _zero_buffers,
                        _mul_, _add_, _addcmul_)

__all__ = ["Adadelta"]


class Adadelta(_GroupLoop):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        _check_nonneg(rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        lr, rho, eps, wd = _to_float(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
        for p, g, state in self._each_grad(group, _zero_buffers("square_avg", "acc_delta")):
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            g = _decay(p, g, lr, wd)
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
