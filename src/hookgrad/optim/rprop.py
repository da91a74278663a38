"""Rprop (resilient backpropagation), PyTorch's for-loop algorithm."""
import numpy as np

from .optimizer import _GroupLoop, _check_lr, _to_float, _zeros_like, _bump

__all__ = ["Rprop"]


class Rprop(_GroupLoop):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _GRAD_FIRST = True          # PyTorch's first op: grad.mul(prev)

    def _step_group(self, group):
        etaminus, etaplus = group["etas"]
        smin, smax = group["step_sizes"]

        def init(p, state):
            state["prev"] = _zeros_like(p)
            state["step_size"] = _zeros_like(p, _to_float(group["lr"]))
        for p, g, state in self._each_grad(group, init):
            prev, step_size = state["prev"], state["step_size"]
            f = g.dtype.type
            sign = np.sign(g * prev._data)
            sign[sign > 0] = f(etaplus)
            sign[sign < 0] = f(etaminus)
            sign[sign == 0] = 1
            s = step_size._data
            s *= sign
            _bump(step_size)
            np.clip(s, f(smin), f(smax), out=s)
            _bump(step_size)
            g = g.copy()
            g[sign == f(etaminus)] = 0
            p._data -= np.sign(g) * s
            _bump(p)
            prev._data[...] = g
            _bump(prev)
