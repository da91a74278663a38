"""Adam and AdamW (amsgrad, maximize, L2 or decoupled weight decay), PyTorch's for-loop algorithm."""
import numpy as np

from .._jit import kernel
from .._tensor import Tensor
from .optimizer import (_GroupLoop, _decay, _check_adam_args, _to_float, _zero_buffers, _bump, _fused,
                        _mul_, _lerp_, _addcmul_, _addcdiv_)

__all__ = ["Adam", "AdamW"]


@kernel
def _adam_kernel(p, exp_avg, exp_avg_sq, max_sq, g, decay, wd, w1, beta2, w2, bc2_sqrt, eps, neg_step_size,
                 decoupled, amsgrad):
    """One Adam step in float32, in the order of PyTorch's single-tensor loop: weight decay (``p *= decay``,
    decoupled, or ``d = g + wd * p``), ``exp_avg.lerp_(d, w1)`` (its two-branch formula),
    ``exp_avg_sq = exp_avg_sq * beta2 + w2 * d * d``, ``max_sq = maximum(max_sq, exp_avg_sq)`` (amsgrad),
    ``denom = sqrt(...) / bc2_sqrt + eps``, ``p += neg_step_size * exp_avg / denom``."""
    small = abs(w1) < np.float32(0.5)
    for i in range(p.size):
        d = g[i]
        x = p[i]
        if wd != 0:
            if decoupled:
                x = x * decay
            else:
                d = d + wd * x
        m = exp_avg[i]
        m = m + w1 * (d - m) if small else d - (d - m) * (np.float32(1) - w1)
        exp_avg[i] = m
        v = exp_avg_sq[i] * beta2
        v = v + w2 * d * d
        exp_avg_sq[i] = v
        if amsgrad:
            mv = max_sq[i]
            if not (mv >= v or mv != mv):       # torch.maximum: NaN wins
                mv = v
            max_sq[i] = mv
            v = mv
        p[i] = x + neg_step_size * m / (np.sqrt(v) / bc2_sqrt + eps)


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
            step = state["step"].item()
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            if self._fused_step(p, g, state, group, amsgrad, beta1, beta2, lr, wd, eps, step_size,
                                bias_correction2 ** 0.5):
                continue
            g = _decay(p, g, lr, wd, group["decoupled_weight_decay"])
            _lerp_(exp_avg, g, 1 - beta1)
            _mul_(exp_avg_sq, beta2)
            _addcmul_(exp_avg_sq, g, g, 1 - beta2)
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

    @staticmethod
    def _fused_step(p, g, state, group, amsgrad, beta1, beta2, lr, wd, eps, step_size, bc2_sqrt):
        """The step of one parameter as one compiled pass (float32); False where the NumPy path must run."""
        a, m, v = p._data, state["exp_avg"], state["exp_avg_sq"]
        mx = state["max_exp_avg_sq"] if amsgrad else v
        decoupled = bool(group["decoupled_weight_decay"])
        f32 = np.float32
        if not _fused(_adam_kernel, (a, m._data, v._data, mx._data), (g,), f32(1 - lr * wd), f32(wd),
                      f32(1 - beta1), f32(beta2), f32(1 - beta2), f32(bc2_sqrt), f32(eps), f32(-step_size),
                      decoupled, bool(amsgrad)):
            return False
        p._vc[0] += 2 if wd != 0 and decoupled else 1     # param.mul_ (decoupled decay), param.addcdiv_
        _bump(m)                                          # exp_avg.lerp_
        v._vc[0] += 2                                     # exp_avg_sq.mul_(beta2).addcmul_(...)
        if amsgrad:
            _bump(mx)                                     # torch.maximum(..., out=max_exp_avg_sq)
        return True


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused, decoupled_weight_decay=True)
