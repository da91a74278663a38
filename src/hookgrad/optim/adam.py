"""Adam and AdamW (amsgrad, maximize, L2 or decoupled weight decay), PyTorch's for-loop algorithm."""
import numpy as np

from .._tensor import Tensor
from .optimizer import (_GroupLoop, _decay, _check_adam_args, _to_float, _zero_buffers, _bump,
                        _mul_, _lerp_, _addcmul_, _addcdiv_)

__all__ = ["Adam", "AdamW"]


class Adam(_GroupLoop):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_adam_args(lr, eps, betas, weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _step_group(self, group):
        beta1, beta2 = (_to_float(b) for b in group["betas"])
        lr, wd, eps, amsgrad = _to_float(group["lr"]), group["weight_decay"], group["eps"], group["amsgrad"]
        init = _zero_buffers("exp_avg", "exp_avg_sq", *(("max_exp_avg_sq",) if amsgrad else ()))
        for p, g, state in self._each_grad(group, init):
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            g = _decay(p, g, lr, wd, group["decoupled_weight_decay"])
            _lerp_(exp_avg, g, 1 - beta1)
            _mul_(exp_avg_sq, beta2)
            _addcmul_(exp_avg_sq, g, g, 1 - beta2)
            step = state["step"].item()
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            bc2_sqrt = p._data.dtype.type(bias_correction2 ** 0.5)
            if amsgrad:
                mx = state["max_exp_avg_sq"]
                np.maximum(mx._data, exp_avg_sq._data, out=mx._data)
                _bump(mx)
                denom = np.sqrt(mx._data) / bc2_sqrt
            else:
                denom = np.sqrt(exp_avg_sq._data) / bc2_sqrt
            denom += denom.dtype.type(eps)
            _addcdiv_(p, exp_avg._data, denom, -step_size)


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused, decoupled_weight_decay=True)
