"""Loss primitives PyTorch computes with one kernel each: soft margin, multi-class margin, multilabel margin and
CTC. Forward on arrays; the gradient beside it.

PyTorch defines no derivative of the multi-margin, multilabel-margin and CTC backward kernels: their gradient
is a value recorded on (grad_output, input) by ``NoDerivative``, whose own backward raises PyTorch's error.
"""
import functools

import numpy as np

from ..autograd.node import Node
from .. import _array
from .._array import array_module
from .._creation import _SampledNoGrad as NoDerivative   # a value with no derivative (backward raises)
from .nn import _PointLoss

_REDUCTION_ENUM = 'reduction=("none", "mean", "sum").index(reduction)'


def _reduce(node, loss, n, dt):
    """A per-sample loss reduced as PyTorch's kernels do (mean over ``n`` samples); the shape for 'none' is
    the node's ``out_shape``."""
    xp = array_module(loss)
    if node.reduction == "none":
        return loss.reshape(node.out_shape).astype(dt, copy=False)
    s = loss.sum(dtype=dt)
    if node.reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            s = s / dt.type(n)
    return xp.asarray(s, dt)


def _grad_factor(node, g, per_sample, n):
    """grad_output times the per-sample derivative array ``per_sample`` (n, C): PyTorch's backward kernels."""
    ga = g._data
    if node.reduction == "none":
        return per_sample * ga.reshape(-1, 1)
    if node.reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            return per_sample * (ga / ga.dtype.type(n))
    return per_sample * ga


class SoftMarginLoss(_PointLoss, name="SoftMarginLossBackward0"):
    """log(1 + exp(-y x)); the target gets no gradient (PyTorch's derivative is not defined for it)."""

    def forward(self, x, y):
        with np.errstate(over="ignore"):
            return self._reduce(np.log1p(np.exp(-y * x)), x.dtype)

    def _grads(self, g, x, y):
        return -y * (-(y * x)).sigmoid() * g, None


class MultiMarginLoss(Node, name="MultiMarginLossBackward0"):
    """sum over j != y of max(0, margin - x[y] + x[j])^p (times weight[y]) / C per sample."""
    save = (0,)
    saved_names = ("self",)
    saved_attrs = ("margin", "p", _REDUCTION_ENUM)

    def forward(self, x, t, w=None):
        xp = array_module(x)
        c = x.shape[-1] if x.ndim else 1
        x2 = x.reshape(-1, c)
        n = x2.shape[0]
        tf = t.reshape(-1)
        if tf.size and (tf.min() < 0 or tf.max() >= c):
            raise RuntimeError("target out of range")
        rows = xp.arange(n)
        z = (x.dtype.type(self.margin) - x2[rows, tf][:, None]) + x2
        pos = z > 0
        pos[rows, tf] = False
        h = np.where(pos, z if self.p == 1 else z * z, 0)
        d = np.where(pos, 1 if self.p == 1 else 2 * z, 0).astype(x.dtype)
        if w is not None:
            h = h * w[tf][:, None]
            d = d * w[tf][:, None]
        d = d / x.dtype.type(c)
        d[rows, tf] = -d.sum(1)
        self.d, self.n = d, n
        return _reduce(self, h.sum(1) / x.dtype.type(c), n, x.dtype)

    def backward(self, g):
        (x,) = self.saved_values
        v = _grad_factor(self, g, self.d, self.n).reshape(x.shape)
        return NoDerivative.apply(g, x, _v=v, op="multi_margin_loss_backward"), None, None


class MultilabelMarginLoss(Node, name="MultilabelMarginLossBackward0"):
    """For each target class j (the row's entries before the first -1) and each non-target class k:
    max(0, 1 - (x[j] - x[k])), summed and divided by C."""
    save = (0,)
    saved_names = ("self",)
    saved_attrs = (_REDUCTION_ENUM,)

    def forward(self, x, t):
        xp = array_module(x)
        c = x.shape[-1] if x.ndim else 1
        x2, t2 = x.reshape(-1, c), t.reshape(-1, c)
        n = x2.shape[0]
        if t2.size and (t2.min() < -1 or t2.max() >= c):
            raise RuntimeError("argument #2 'target' is out of range")
        valid = np.cumprod(t2 >= 0, axis=1).astype(bool)        # the targets before the first -1
        ts = np.where(valid, t2, 0)
        rows = np.broadcast_to(xp.arange(n)[:, None], (n, c))
        is_t = xp.zeros((n, c), bool)
        is_t[rows[valid], ts[valid]] = True
        xt = np.take_along_axis(x2, ts, 1)
        z = (1 - xt[:, :, None]) + x2[:, None, :]                  # (sample, target slot, class)
        m = valid[:, :, None] & ~is_t[:, None, :] & (z > 0)
        loss = np.where(m, z, 0).sum((1, 2)) / x.dtype.type(c)
        d = (m.sum(1) / c).astype(x.dtype)
        np.add.at(d, (rows[valid], ts[valid]), -(m.sum(2) / c).astype(x.dtype)[valid])
        self.d, self.n = d, n
        return _reduce(self, loss.astype(x.dtype, copy=False), n, x.dtype)

    def backward(self, g):
        (x,) = self.saved_values
        v = _grad_factor(self, g, self.d, self.n).reshape(x.shape)
        return NoDerivative.apply(g, x, _v=v, op="multilabel_margin_loss_backward"), None


# ---------------------------------------------------------------------------------------------- CTC
def _logsumexp(*terms):
    """log(sum(exp)) of arrays of one shape, with PyTorch's guard: a max of -inf counts as 0."""
    m = functools.reduce(np.maximum, terms)       # (NumPy's maximum.reduce would stack a list on the host)
    m = np.where(np.isneginf(m), 0, m)
    with np.errstate(divide="ignore"):
        return np.log(sum(np.exp(a - m) for a in terms)) + m


class CtcLoss(Node, name="CtcLossBackward0"):
    """The negative log-likelihood of each target under the CTC alignment model (log_probs (T, N, C)),
    by PyTorch's alpha recursion; the gradient is its alpha-beta formula with respect to log_probs."""
    nondiff_outputs = (1,)
    save = (0,)
    saved_names = ("log_probs",)
    saved_attrs = ("blank", "input_lengths", "target_lengths", "zero_infinity")

    def forward(self, lp):
        xp = array_module(lp)
        if xp is not np:    # NOTE: the recursion runs on the host (a few tiny steps per time step); results go back
            nll, alphas = self.forward(_array.to_host(lp))
            self.grad = xp.asarray(self.grad)
            return xp.asarray(nll), xp.asarray(alphas)
        t_max, n = lp.shape[0], lp.shape[1]
        s_max = 2 * max(self.target_lengths, default=0) + 1
        nll = xp.zeros(n, lp.dtype)
        alphas = xp.full((n, t_max, s_max), -np.inf, lp.dtype)
        self.grad = xp.zeros(lp.shape, lp.dtype)
        for b in range(n):
            tl, il = self.target_lengths[b], self.input_lengths[b]
            ext = xp.full(2 * tl + 1, self.blank, np.int64)
            ext[1::2] = self.targets[b][:tl]
            p = lp[:il, b]
            e = p[:, ext]                                           # (il, 2L+1): log-prob of each extended label
            skip = xp.zeros(2 * tl + 1, bool)
            skip[3::2] = ext[3::2] != ext[1:-2:2]                   # s-2 -> s allowed between different labels
            a = alphas[b]
            if il:
                a[0, 0] = e[0, 0]
                if tl:
                    a[0, 1] = e[0, 1]
            for t in range(1, il):
                prev = a[t - 1, :2 * tl + 1]
                a1 = np.concatenate([[-np.inf], prev[:-1]])
                a2 = np.where(skip, np.concatenate([[-np.inf, -np.inf], prev[:-2]])[:2 * tl + 1], -np.inf)
                a[t, :2 * tl + 1] = _logsumexp(prev, a1, a2) + e[t]
            if not il:
                ll = 0.0 if not tl else -np.inf
            elif tl:
                ll = _logsumexp(a[il - 1, 2 * tl:2 * tl + 1], a[il - 1, 2 * tl - 1:2 * tl])[0]
            else:
                ll = a[il - 1, 0]
            nll[b] = -ll
            if il:
                self._backward_one(b, lp, e, a, ext, skip, il, tl, -ll)
        return nll, alphas

    def _backward_one(self, b, lp, e, a, ext, skip, il, tl, nll):
        """PyTorch's beta recursion for batch entry b; self.grad[:, b] = exp(lp) - exp(log(sum alpha*beta
        per label) + nll - lp), the gradient per unit grad_output (zero where the loss is infinite and
        zero_infinity is set, and after the input length)."""
        s = 2 * tl + 1
        beta = np.full((il, s), -np.inf, lp.dtype)
        beta[il - 1, s - 1] = e[il - 1, s - 1]
        if tl:
            beta[il - 1, s - 2] = e[il - 1, s - 2]
        skip_next = np.concatenate([skip[2:], [False, False]])[:s]   # s -> s+2 allowed
        for t in range(il - 2, -1, -1):
            nxt = beta[t + 1]
            b2 = np.concatenate([nxt[1:], [-np.inf]])
            b3 = np.where(skip_next, np.concatenate([nxt[2:], [-np.inf, -np.inf]])[:s], -np.inf)
            beta[t] = _logsumexp(nxt, b2, b3) + e[t]
        ab = a[:il, :s] + beta
        c = lp.shape[2]
        acc = np.full((il, c), -np.inf, lp.dtype)
        for k in range(s):                          # log-add alpha*beta into each extended label's class
            acc[:, ext[k]] = _logsumexp(acc[:, ext[k]], ab[:, k])
        if self.zero_infinity and np.isinf(nll):
            return
        p = lp[:il, b]
        with np.errstate(over="ignore", invalid="ignore"):
            self.grad[:il, b] = np.exp(p) - np.exp(acc + nll - p)

    def backward(self, g):
        (lp,) = self.saved_values
        v = self.grad * g._data.reshape(1, -1, 1)
        return NoDerivative.apply(g, lp, _v=v, op="_ctc_loss_backward")

