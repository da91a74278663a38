"""SyncBatchNorm's autograd Function (torch.nn.modules._functions.SyncBatchNorm): batch statistics over every
rank of a process group.

Forward: each rank's per-channel mean, biased variance and count are all-gathered (counts may differ between
ranks; a rank with an empty batch sends zeros and is left out), merged into the global mean and variance, and
the running stats are updated with the global unbiased variance. Backward: sum(dy) and sum(dy * (x - mean))
are all-reduced, which makes the input gradient the full batch's; the weight and bias gradients stay local
(DDP all-reduces them). The grad_fn is ``SyncBatchNormBackward``, as in PyTorch.
"""
import numpy as np

from ..._array import array_module
from ..._tensor import Tensor
from ...autograd.function import Function

__all__ = []


def _layout(x):
    """(channel count, reduction axes, the broadcast shape of a per-channel vector) of an (N, C, *) array."""
    c = x.shape[1]
    return c, (0,) + tuple(range(2, x.ndim)), (1, c) + (1,) * (x.ndim - 2)


class SyncBatchNorm(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, process_group, world_size):
        from ...distributed import distributed_c10d as dist
        x = input._data
        xp = array_module(x)
        c, axes, pshape = _layout(x)
        size = x.size // c
        if size == 1 and world_size < 2:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
        acc = np.float64      # NOTE: statistics accumulate in float64, as hookgrad's BatchNorm's do
        if x.size > 0:
            xa = x.astype(acc)
            mean = xa.mean(axis=axes)
            xc = xa - mean.reshape(pshape)
            combined = xp.concatenate([mean, (xc * xc).mean(axis=axes), xp.asarray([size], acc)])
        else:   # an empty batch still joins the all_gather (its zero count leaves it out of the statistics)
            combined = xp.zeros(2 * c + 1, acc)
        parts = [Tensor._make(xp.empty_like(combined)) for _ in range(world_size)]
        dist.all_gather(parts, Tensor._make(combined), process_group)
        table = xp.stack([p._data for p in parts])
        table = table[table[:, -1] >= 1]
        means, variances, counts = table[:, :c], table[:, c:2 * c], table[:, 2 * c:]
        n = counts.sum()
        mean = (counts * means).sum(axis=0) / n
        var = (counts * (variances + (means - mean) ** 2)).sum(axis=0) / n
        if running_mean is not None:
            rm = running_mean._data
            rm *= 1 - momentum
            rm += (momentum * mean).astype(rm.dtype)
            running_mean._vc[0] += 1
        if running_var is not None:
            rv = running_var._data
            rv *= 1 - momentum
            rv += (momentum * var * (n / (n - 1))).astype(rv.dtype)
            running_var._vc[0] += 1
        invstd = 1.0 / xp.sqrt(var + eps)
        ctx.save_for_backward(input, weight, Tensor._make(mean), Tensor._make(invstd),
                              Tensor._make(counts.astype(np.int32)))
        ctx.process_group = process_group
        if x.size == 0:
            return Tensor._make(xp.empty_like(x))
        y = (x.astype(acc) - mean.reshape(pshape)) * invstd.reshape(pshape)
        if weight is not None:
            y = y * weight._data.astype(acc).reshape(pshape)
        if bias is not None:
            y = y + bias._data.astype(acc).reshape(pshape)
        return Tensor._make(y.astype(x.dtype))

    @staticmethod
    def backward(ctx, grad_output):
        from ...distributed import distributed_c10d as dist
        saved_input, weight, mean, invstd, counts = ctx.saved_tensors
        x = saved_input._data
        xp = array_module(x)
        c, axes, pshape = _layout(x)
        need_input, need_weight, need_bias = ctx.needs_input_grad[:3]
        grad_input = grad_weight = grad_bias = None
        if x.size == 0:
            # an empty batch contributes nothing, but its peers wait for its share of the all_reduce
            if need_input:
                dist.all_reduce(Tensor._make(xp.zeros(2 * c, mean._data.dtype)), group=ctx.process_group)
            return grad_input, grad_weight, grad_bias, None, None, None, None, None, None
        acc = mean._data.dtype
        g = grad_output._data.astype(acc)
        m, istd = mean._data.reshape(pshape), invstd._data
        xmu = x.astype(acc) - m
        sum_dy = g.sum(axis=axes)
        sum_dy_xmu = (g * xmu).sum(axis=axes)
        if weight is not None and need_weight:
            grad_weight = Tensor._make((sum_dy_xmu * istd).astype(weight._data.dtype))
        if weight is not None and need_bias:
            grad_bias = Tensor._make(sum_dy.astype(weight._data.dtype))
        if need_input:
            combined = Tensor._make(xp.concatenate([sum_dy, sum_dy_xmu]))
            dist.all_reduce(combined, group=ctx.process_group)
            sum_dy, sum_dy_xmu = combined._data[:c], combined._data[c:]
            n = counts._data.sum()
            scale = istd if weight is None else istd * weight._data.astype(acc)
            gi = (g - (sum_dy / n).reshape(pshape) - xmu * (istd * istd * sum_dy_xmu / n).reshape(pshape)) \
                * scale.reshape(pshape)
            grad_input = Tensor._make(gi.astype(x.dtype))
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None
