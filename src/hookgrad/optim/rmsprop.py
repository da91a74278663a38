"""RMSprop (momentum, centered, weight decay, maximize), PyTorch's for-loop algorithm."""
import numpy as np

from .optimizer import (_GroupLoop, _decay, _check_lr, _check_nonneg, _to_float, _zero_buffers,
                        _add_, _mul_, _lerp_, _addcmul_, _addcdiv_)

__all__ = ["RMSprop"]


class RMSprop(_GroupLoop):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        _check_nonneg(eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        lr, alpha, eps, wd = _to_float(group["lr"]), group["alpha"], group["eps"], group["weight_decay"]
        momentum, centered = group["momentum"], group["centered"]
        init = _zero_buffers("square_avg", *(("momentum_buffer",) if momentum > 0 else ()),
                             *(("grad_avg",) if centered else ()))
        for p, g, state in self._each_grad(group, init):
            square_avg = state["square_avg"]
            g = _decay(p, g, lr, wd)
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
