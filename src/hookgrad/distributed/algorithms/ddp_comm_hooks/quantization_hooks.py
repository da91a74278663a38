"""PyTorch's quantization DDP hooks: each rank quantizes its bucket to uint8 (one scale and zero point for the
bucket, or one per channel of ``bucket_size`` elements), the ranks allgather the quantized tensors and their
parameters, and each rank dequantizes and averages them."""
from ... import distributed_c10d as dist
from .... import _dtype as D
from ...._creation import tensor as _tensor, zeros
from ....primitives.join import cat, stack

__all__ = ["quantization_pertensor_hook", "quantization_perchannel_hook"]

_EPS = float(D.finfo(D.float32).eps)


def _qparams(min_val, max_val):
    """What PyTorch's MinMaxObserver (quint8, affine) gives for these minima and maxima: (scale float32,
    zero point int32), one per entry."""
    min_neg = min_val.clamp(max=0.0)
    max_pos = max_val.clamp(min=0.0)
    scale = ((max_pos - min_neg) / 255.0).clamp(min=_EPS)
    zero_point = (0 - (min_neg / scale).round().to(D.int32)).clamp(0, 255)
    return scale, zero_point


def _quantize_per_tensor_backend(x, scale, zero_point):
    return ((x / scale).round() + zero_point).clamp(0, 255).to(D.uint8)


def _dequantize_per_tensor_backend(y, scale, zero_point):
    return scale * (y.to(D.float32) - zero_point)


def _quantize_per_channel_backend(x, scale, zero_point):
    return ((x / scale.unsqueeze(1)).round() + zero_point.unsqueeze(1)).to(D.float32).clamp(0, 255).to(D.uint8)


def _dequantize_per_channel_backend(y, scale, zero_point):
    return scale.unsqueeze(1) * (y.to(D.float32) - zero_point.unsqueeze(1))


def _get_allgather_out_list(all_gather_in_list, world_size):
    return [zeros(all_gather_in_list.shape, dtype=all_gather_in_list.dtype) for _ in range(world_size)]


def _rank_and_size(process_group):
    group_to_use = process_group if process_group is not None else dist.group.WORLD
    rank = process_group.rank() if process_group is not None else dist.get_rank()
    return group_to_use, rank, group_to_use.size()


def _quantized_average(group_to_use, rank, world_size, tensor, s_and_z, quantize, dequantize):
    """Allgather the quantization parameters, then the quantized tensors; the mean of the dequantized ones."""
    all_ranks_s_and_z = _get_allgather_out_list(s_and_z, world_size)
    quantized = []

    # NOTE: PyTorch's callbacks read the gathered lists as ``fut.wait()[0]``, which under gloo (a flat list of
    # tensors) is rank 0's tensor, and fail; here they read the output lists (docs/differences.md)
    def quantize_and_allgather(fut):
        fut.wait()
        q = quantize(tensor, all_ranks_s_and_z[rank][0], all_ranks_s_and_z[rank][1])
        quantized.extend(_get_allgather_out_list(q, world_size))
        return dist.all_gather(quantized, q, group=group_to_use, async_op=True).get_future().wait()

    def dequantize_and_aggregate(fut):
        fut.wait()
        aggregated = zeros(quantized[0].shape, dtype=D.float32)
        for r, q in enumerate(quantized):
            aggregated += dequantize(q, all_ranks_s_and_z[r][0], all_ranks_s_and_z[r][1])
        return aggregated

    fut = dist.all_gather(all_ranks_s_and_z, s_and_z, group=group_to_use, async_op=True).get_future()
    return fut.then(quantize_and_allgather).then(dequantize_and_aggregate)


def quantization_pertensor_hook(process_group, bucket):
    """Quantize the bucket to uint8 with one scale and zero point (PyTorch's MinMaxObserver's), allgather,
    dequantize and average. Slower than allreduce: an allgather protocol. Works on flat gradients only.

    Example::
        >>> ddp_model.register_comm_hook(process_group, quantization_pertensor_hook)
    """
    group_to_use, rank, world_size = _rank_and_size(process_group)
    tensor = bucket.buffer()
    if tensor.numel():
        s, z = _qparams(tensor.min().reshape(1), tensor.max().reshape(1))
    else:
        s, z = _tensor([1.0]), _tensor([0])
    s_and_z = cat([s, z.to(D.float32)])
    fut = _quantized_average(group_to_use, rank, world_size, tensor, s_and_z, _quantize_per_tensor_backend,
                             _dequantize_per_tensor_backend)
    return fut.then(lambda fut: fut.value() / world_size)


def quantization_perchannel_hook(process_group, bucket, bucket_size=512):
    """As quantization_pertensor_hook with one scale and zero point per channel of ``bucket_size`` elements
    (the bucket zero-padded to whole channels).

    Example::
        >>> ddp_model.register_comm_hook(process_group, quantization_perchannel_hook)
    """
    group_to_use, rank, world_size = _rank_and_size(process_group)
    tensor = bucket.buffer()
    pad = bucket_size - len(tensor) % bucket_size
    tensor_in_channels = cat([tensor, zeros(pad, dtype=tensor.dtype)]).view(-1, bucket_size)
    s_ch, z_ch = _qparams(tensor_in_channels.amin(dim=1), tensor_in_channels.amax(dim=1))
    s_and_z = stack((s_ch, z_ch.to(D.float32)))
    fut = _quantized_average(group_to_use, rank, world_size, tensor_in_channels, s_and_z,
                             _quantize_per_channel_backend, _dequantize_per_channel_backend)
    return fut.then(lambda fut: fut.value().flatten()[:tensor.shape[0]] / world_size)
