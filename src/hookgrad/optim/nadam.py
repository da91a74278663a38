"""NAdam (Nesterov-accelerated Adam, optional decoupled weight decay), PyTorch's for-loop algorithm."""
import numpy as np

from .._array import array_module
from .._tensor import Tensor
from .optimizer import (_GroupLoop, _decay, _check_adam_args, _to_float, _zero_buffers,
                        _mul_, _lerp_, _addcmul_, _addcdiv_)

__all__ = ["NAdam"]


def _init_state(p, state):
    step = state["step"]._data
    state["mu_product"] = Tensor._make(array_module(step).ones((), dtype=step.dtype))
    _zero_buffers("exp_avg", "exp_avg_sq")(p, state)


class NAdam(_GroupLoop):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_args(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        beta1, beta2 = group["betas"]
        lr, wd, eps, md = _to_float(group["lr"]), group["weight_decay"], group["eps"], group["momentum_decay"]
        for p, g, state in self._each_grad(group, _init_state):
            mu_product, exp_avg, exp_avg_sq = state["mu_product"], state["exp_avg"], state["exp_avg_sq"]
            step = state["step"].item()
            bias_correction2 = 1 - beta2 ** step
            g = _decay(p, g, lr, wd, group["decoupled_weight_decay"])
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
            _mul_(mu_product, mu)
            _lerp_(exp_avg, g, 1 - beta1)
            _mul_(exp_avg_sq, beta2)
            _addcmul_(exp_avg_sq, g, g, 1 - beta2)
            denom = np.sqrt(exp_avg_sq._data / exp_avg_sq._data.dtype.type(bias_correction2))
            mu_prod = mu_product.item()
            mu_product_next = mu_prod * mu_next
            denom += denom.dtype.type(eps)
            _addcdiv_(p, g, denom, -lr * (1.0 - mu) / (1.0 - mu_prod))
            _addcdiv_(p, exp_avg._data, denom, (-lr * mu_next) / (1.0 - mu_product_next))
