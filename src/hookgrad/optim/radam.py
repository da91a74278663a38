"""RAdam (rectified Adam, optional decoupled weight decay), PyTorch's for-loop algorithm."""
import numpy as np

from .optimizer import (_GroupLoop, _decay, _check_adam_args, _to_float, _zero_buffers,
                        _mul_, _add_, _lerp_, _addcmul_)

__all__ = ["RAdam"]


class RAdam(_GroupLoop):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_adam_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        beta1, beta2 = group["betas"]
        lr, wd, eps = _to_float(group["lr"]), group["weight_decay"], group["eps"]
        for p, g, state in self._each_grad(group, _zero_buffers("exp_avg", "exp_avg_sq")):
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            step = state["step"].item()
            g = _decay(p, g, lr, wd, group["decoupled_weight_decay"])
            _lerp_(exp_avg, g, 1 - beta1)
            _mul_(exp_avg_sq, beta2)
            _addcmul_(exp_avg_sq, g, g, 1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            f = exp_avg._data.dtype.type
            update = exp_avg._data / f(bias_correction1) * f(lr)
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if rho_t > 5.0:
                sq = np.sqrt(exp_avg_sq._data)
                sq += f(eps)
                adaptive_lr = f(bias_correction2 ** 0.5) / sq
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                update = update * adaptive_lr * f(rect)
            _add_(p, update, -1.0)
