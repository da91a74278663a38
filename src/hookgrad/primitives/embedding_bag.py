"""EmbeddingBag: the sums, means or maxima of bags of embedding rows, in one node (EmbeddingBagBackward0).

PyTorch defines no derivative of its backward kernels: under create_graph the weight's gradient is recorded
by ``EmbeddingBagGrad`` and per_sample_weights' by ``NoDerivative``, whose backwards raise PyTorch's errors.
"""
import numpy as np

from .._layout import SparseCOO
from .._tensor import Tensor
from ..autograd.node import Node
from .._array import array_module
from .._creation import _SampledNoGrad as NoDerivative

MODES = ("sum", "mean", "max")


class EmbeddingBag(Node, name="EmbeddingBagBackward0"):
    """Bag ``bag[k]`` (-1: in no bag, or padding) gathers weight row ``idx[k]``. Outputs: the bags, then
    PyTorch's offset2bag, bag_size and max_indices (no gradient)."""
    nondiff_outputs = (1, 2, 3)
    saved_attrs = ("indices=idx", "num_weights=num", "scale_grad_by_freq")

    def forward(self, w, psw=None):
        xp = array_module(w)
        if xp is not np:        # the bags were worked out on the host: to the weight's device, once
            self.idx, self.bag = xp.asarray(self.idx), xp.asarray(self.bag)
        idx, bag, nb = self.idx, self.bag, self.nbags
        self.num, d = w.shape
        keep = bag >= 0
        kb, ki = bag[keep], idx[keep]
        counts = np.bincount(kb, minlength=nb)
        self.counts = counts
        rows = w[ki]
        if psw is not None:
            rows = rows * psw[keep][:, None]
        out = xp.zeros((nb, d), w.dtype)
        am = xp.full((nb, d), -1, np.int64)
        if self.mode == "max":
            out[:] = -np.inf
            array_module(out).maximum.at(out, kb, rows)
            out[counts == 0] = 0
            for k in range(len(kb) - 1, -1, -1):        # the first row reaching the maximum, as PyTorch's loop
                hit = rows[k] == out[kb[k]]
                am[kb[k], hit] = ki[k]
            self.am = am
        else:
            array_module(out).add.at(out, kb, rows)
            if self.mode == "mean":
                out /= np.maximum(counts, 1)[:, None].astype(w.dtype)
        sizes = counts if self.mode != "sum" else xp.zeros(nb, np.int64)
        aux = am if self.mode == "max" else sizes.copy()
        return out, np.where(bag >= 0, bag, 0), xp.asarray(sizes, np.int64), aux

    sparse = False

    def _weight_grad(self, ga, psw):
        xp = array_module(ga)
        keep = self.bag >= 0
        kb, ki = self.bag[keep], self.idx[keep]
        if self.mode == "max":
            gw = xp.zeros((self.num, ga.shape[1]), ga.dtype)
            b, col = np.nonzero(self.am >= 0)
            array_module(gw).add.at(gw, (self.am[b, col], col), ga[b, col])
            return gw
        rows = ga[kb]
        if psw is not None:
            rows = rows * psw[keep][:, None]
        if self.mode == "mean":
            rows = rows / np.maximum(self.counts, 1)[kb][:, None].astype(ga.dtype)
        if self.scale_grad_by_freq:
            if self.sparse:
                raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
            rows = rows / np.bincount(self.idx, minlength=self.num)[ki][:, None].astype(ga.dtype)
        if self.sparse:     # PyTorch's _embedding_bag_sparse_backward: one COO entry per index in a bag, in order
            return SparseCOO(xp.asarray(ki, np.int64)[None], xp.ascontiguousarray(rows, ga.dtype),
                             (self.num, ga.shape[1]), False)
        gw = xp.zeros((self.num, ga.shape[1]), ga.dtype)
        array_module(gw).add.at(gw, ki, rows)
        return gw

    def _grad_value(self, g, gw, *inputs):
        """The weight's gradient: a sparse one as it is (PyTorch defines no derivative of it either way)."""
        if self.sparse:
            return Tensor._make(gw)
        return EmbeddingBagGrad.apply(g, *inputs, _v=gw)

    def backward(self, g):
        gw = self._weight_grad(g._data, None)
        return self._grad_value(g, gw), None


class WeightedEmbeddingBag(EmbeddingBag, name="EmbeddingBagBackward0"):
    """Mode 'sum' with per_sample_weights: bag = sum of psw[k] * weight[idx[k]]."""
    save = (0, 1)
    saved_names = ("weight", "per_sample_weights")
    save_if = ((1,), (0,))

    def backward(self, g):
        w, psw = self.saved_values
        nf = self.next_functions
        gw = gp = None
        if nf[0][0] is not None:
            gw = self._grad_value(g, self._weight_grad(g._data, psw._data), psw)
        if nf[1][0] is not None:
            keep = self.bag >= 0
            ga = g._data
            v = array_module(ga).zeros(len(self.idx), ga.dtype)
            v[keep] = (ga[self.bag[keep]] * w._data[self.idx[keep]]).sum(1)
            gp = NoDerivative.apply(g, w, _v=v, op="_embedding_bag_per_sample_weights_backward")
        return gw, gp


class EmbeddingBagGrad(Node, name="EmbeddingBagBackwardBackward0"):
    """The weight gradient of EmbeddingBag as a value; PyTorch defines no derivative of it."""

    def forward(self, *inputs):
        return self._v

    def backward(self, g):
        raise NotImplementedError("the derivative for '_embedding_bag_backward' is not implemented.")
