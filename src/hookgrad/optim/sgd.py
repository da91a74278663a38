"""SGD with momentum, dampening, Nesterov, weight decay and maximize (PyTorch's for-loop algorithm)."""
import numpy as np

from .._jit import kernel
from .._tensor import Tensor
from .optimizer import (Optimizer, _use_grad_for_differentiable, _to_float, _add_, _mul_, _add_scalar, _bump, _fused,
                        _check_shapes, _numpy_errors_as_torch)

__all__ = ["SGD"]


@kernel
def _sgd_kernel(p, buf, g, neg_lr, wd, momentum, keep, nesterov, maximize, first):
    """One SGD step in float32, in the order of PyTorch's single-tensor loop: ``d = -g`` (maximize),
    ``d += wd * p``, ``buf = d`` (first step) or ``buf = buf * momentum + keep * d``, ``d += momentum * buf``
    (nesterov) or ``d = buf``, ``p += neg_lr * d``. ``momentum == 0``: no buffer (``buf`` is not touched)."""
    for i in range(p.size):
        d = -g[i] if maximize else g[i]
        if wd != 0:
            d = d + wd * p[i]
        if momentum != 0:
            b = d if first else buf[i] * momentum + keep * d
            buf[i] = b
            d = d + momentum * b if nesterov else b
        p[i] = p[i] + neg_lr * d


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self._check_not_differentiable(differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if a closure is given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            _numpy_errors_as_torch("SGD", self._step_group, group)
        return loss

    def _step_group(self, group):
        lr, wd, momentum = _to_float(group["lr"]), group["weight_decay"], group["momentum"]
        dampening, nesterov = group["dampening"], group["nesterov"]
        f32 = np.float32
        scalars = (f32(-lr), f32(wd), f32(momentum), f32(1 - dampening), bool(nesterov), bool(group["maximize"]))
        for p in group["params"]:
            if p._grad is None:
                continue
            g = p._grad._data
            _check_shapes(p, g, self.state.get(p) if momentum != 0 else None, wd != 0)
            if self._fused_step(p, g, momentum, scalars):
                continue
            if group["maximize"]:
                g = -g
            if wd != 0:
                g = _add_scalar(g, p._data, wd)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = Tensor._make(g.copy())
                else:
                    _mul_(buf, momentum)
                    _add_(buf, g, 1 - dampening)
                g = _add_scalar(g, buf._data, momentum) if nesterov else buf._data
            _add_(p, g, -lr)

    def _fused_step(self, p, g, momentum, scalars):
        """The step of one parameter as one compiled pass (float32); False where the NumPy path must run."""
        a = p._data
        if momentum == 0:
            if not _fused(_sgd_kernel, (a, a), (g,), *scalars, False):
                return False
        else:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            first = buf is None
            b = np.empty_like(a) if first else buf._data
            if not _fused(_sgd_kernel, (a, b), (g,), *scalars, first):
                return False
            if first:
                state["momentum_buffer"] = Tensor._make(b)
            else:
                buf._vc[0] += 2           # buf.mul_(momentum).add_(d, alpha=1 - dampening)
        _bump(p)
        return True
