"""ASGD (averaged SGD), PyTorch's for-loop algorithm."""
from .._array import array_module
from .._tensor import Tensor
from .. import _dtype as D
from .optimizer import (_GroupLoop, _decay, _check_lr, _check_nonneg, _to_float, _zeros_like, _bump,
                        _mul_, _add_)

__all__ = ["ASGD"]


def _scalar(value, like):
    return Tensor._make(array_module(like._data).asarray(value, dtype=like._data.dtype))


class ASGD(_GroupLoop):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonneg(weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group):
        lr, lambd, alpha, t0, wd = (_to_float(group["lr"]), group["lambd"], group["alpha"], group["t0"],
                                    group["weight_decay"])

        def init(p, state):
            state["eta"] = _scalar(lr, state["step"])
            state["mu"] = _scalar(1.0, state["step"])
            state["ax"] = _zeros_like(p)
        for p, g, state in self._each_grad(group, init):
            eta, mu, ax = state["eta"], state["mu"], state["ax"]
            g = _decay(p, g, lr, wd)
            eta_value = eta.item()
            _mul_(p, 1 - lambd * eta_value)
            _add_(p, g, -eta_value)
            if mu.item() != 1:
                ax._data += (p._data - ax._data) * ax._data.dtype.type(mu.item())
            else:
                ax._data[...] = p._data
            _bump(ax)
            step = state["step"].item()
            # torch.as_tensor(python float) rounds to the default dtype before the copy (a NumPy scalar: no array
            # module; every module writes it into its array)
            to_default = D.get_default_dtype().np.type
            eta._data[...] = to_default(lr / ((1 + lambd * lr * step) ** alpha))
            _bump(eta)
            mu._data[...] = to_default(1 / max(1, step - t0))
            _bump(mu)
