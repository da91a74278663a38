"""SGD with momentum, dampening, Nesterov, weight decay and maximize (PyTorch's for-loop algorithm)."""
from .._tensor import Tensor
from .optimizer import Optimizer, _use_grad_for_differentiable, _to_float, _add_, _mul_, _add_scalar

__all__ = ["SGD"]


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
            lr, wd, momentum = _to_float(group["lr"]), group["weight_decay"], group["momentum"]
            dampening, nesterov = group["dampening"], group["nesterov"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                g = p._grad._data
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
        return loss
