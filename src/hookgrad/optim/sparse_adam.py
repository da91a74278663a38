"""SparseAdam: Adam's moments and step on the rows a sparse gradient specifies only (PyTorch's sparse_adam)."""
import math

import numpy as np

from .._array import array_module
from .._tensor import Tensor
from .. import _layout
from ..autograd.grad_mode import no_grad
from .optimizer import Optimizer, _bump, _to_float

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam for sparse gradients (nn.Embedding(sparse=True)): each step updates the moments and the parameter at the
    gradient's (coalesced) indices only, in PyTorch's order of operations."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse, cplx = [], []
        for i, group in enumerate(self.param_groups):
            for j, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse.append([i, j])
                if p.is_complex():
                    cplx.append([i, j])
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense parameter tensors")
        if cplx:
            raise ValueError(f"Complex params at indices {cplx}: SparseAdam does not support complex parameters")

    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if a closure is given."""
        loss = self._run_closure(closure)
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group):
        beta1, beta2 = group["betas"]
        lr, eps = _to_float(group["lr"]), group["eps"]
        for p in group["params"]:
            grad = p._grad
            if grad is None:
                continue
            if not isinstance(grad._data, _layout.SparseCOO):
                raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
            state = self.state[p]
            if len(state) == 0:
                state["step"] = 0
                state["exp_avg"] = Tensor._make(array_zeros(p))
                state["exp_avg_sq"] = Tensor._make(array_zeros(p))
            state["step"] += 1
            g = grad._data
            if group["maximize"]:
                g = g._with_values(-g.values)
            g = g.coalesce()        # the update is not linear: one entry per index
            if g.values.size == 0:
                continue
            idx = tuple(g.indices)
            vals = g.values
            ea, eas, w = state["exp_avg"], state["exp_avg_sq"], p._data
            dt = vals.dtype.type
            old = ea._data[idx]
            upd = (vals - old) * dt(1 - beta1)
            ea._data[idx] += upd
            old_sq = eas._data[idx]
            upd_sq = (vals ** 2 - old_sq) * dt(1 - beta2)
            eas._data[idx] += upd_sq
            numer = upd + old
            denom = np.sqrt(upd_sq + old_sq) + dt(eps)
            step = state["step"]
            step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            w[idx] += dt(-step_size) * (numer / denom)
            for t in (ea, eas, p):
                _bump(t)


def array_zeros(p):
    return array_module(p._data).zeros_like(p._data)
