"""torch.nn.utils.clip_grad: the total norm of gradients, and clipping them by norm or by value."""
import math

import numpy as np

from ..._tensor import Tensor
from ..._array import array_module, default_module
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _params(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _norm(a, p):
    a = np.abs(a.astype(np.float64, copy=False)).ravel()
    if p == math.inf:
        return a.max(initial=0.0)
    if p == -math.inf:
        return a.min(initial=math.inf)
    if p == 0:
        return float((a != 0).sum())
    if p == 2:
        return math.sqrt(float(np.dot(a, a)))
    return float((a ** p).sum() ** (1.0 / p))


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    ts = [t for t in _params(tensors) if t is not None]
    norm_type = float(norm_type)
    if not ts:
        return Tensor._make(default_module().asarray(0.0, np.float32))
    total = _norm(np.array([_norm(t._data, norm_type) for t in ts]), norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    d = ts[0]._data
    return Tensor._make(array_module(d).asarray(total, d.dtype))


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    coef = min(float(max_norm) / (float(total_norm) + 1e-6), 1.0)
    with no_grad():
        for g in grads:
            g._data *= g._data.dtype.type(coef)
            g._vc[0] += 1


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so that their joint norm is at most max_norm; return the norm before."""
    params = _params(parameters)
    total = get_total_norm([p.grad for p in params if p.grad is not None], norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    clip_value = float(clip_value)
    with no_grad():
        for p in _params(parameters):
            if p.grad is not None:
                g = p.grad
                np.clip(g._data, -clip_value, clip_value, out=g._data)
                g._vc[0] += 1
