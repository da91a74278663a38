"""PyTorch's default DDP communication hooks: allreduce (the behaviour of DDP without a hook), fp16 / bf16
compression, and the wrappers that compress around another hook."""
from ... import distributed_c10d as dist
from .... import _dtype as D
from ...._tensor import Tensor

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
           "bf16_compress_wrapper"]


def _group_or_world(process_group):
    return process_group if process_group is not None else dist.group.WORLD


def _allreduce_fut(process_group, tensor):
    """Average ``tensor`` over the group by an allreduce; a Future of the averaged tensor (``tensor`` itself)."""
    group_to_use = _group_or_world(process_group)
    # NOTE: divide first, so that float16 does not overflow in the sum
    tensor.div_(group_to_use.size())
    return dist.all_reduce(tensor, group=group_to_use, async_op=True).get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """Average the bucket's gradients by an allreduce: what DDP does without a hook.

    Example::
        >>> ddp_model.register_comm_hook(process_group, allreduce_hook)
    """
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    group_to_use = _group_or_world(process_group)
    world_size = group_to_use.size()
    buffer = bucket[0] if isinstance(bucket, tuple) else bucket.buffer()
    compressed_tensor = buffer.to(dtype).div_(world_size)

    def decompress(fut):
        # decompress in place into the bucket's buffer (PyTorch's issue 45968: peak memory)
        value = fut if isinstance(fut, Tensor) else fut.value()[0]
        buffer.copy_(value)
        return buffer

    return dist.all_reduce(compressed_tensor, group=group_to_use, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Cast the bucket to float16, divide by the group size, allreduce, and cast back into the bucket.

    Example::
        >>> ddp_model.register_comm_hook(process_group, fp16_compress_hook)
    """
    return _compress_hook(D.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """As fp16_compress_hook, in bfloat16 (needs the ml_dtypes package: NumPy has no bfloat16).

    Example::
        >>> ddp_model.register_comm_hook(process_group, bf16_compress_hook)
    """
    return _compress_hook(D.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook, name):
    def wrapper_hook(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            decompressed_tensor = bucket.buffer()
            decompressed_tensor.copy_(fut.value())
            return decompressed_tensor

        return fut.then(decompress)

    wrapper_hook.__name__ = wrapper_hook.__qualname__ = name
    return wrapper_hook


def fp16_compress_wrapper(hook):
    """``hook`` run on the bucket cast to float16, its result cast back to the bucket's dtype:
    ``fp16_compress_wrapper(allreduce_hook)`` is fp16_compress_hook.

    Example::
        >>> state = PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=10)
        >>> ddp_model.register_comm_hook(state, fp16_compress_wrapper(powerSGD_hook))
    """
    return _compress_wrapper(D.float16, hook, "fp16_compress_wrapper_hook")


def bf16_compress_wrapper(hook):
    """``hook`` run on the bucket cast to bfloat16, its result cast back (see fp16_compress_wrapper)."""
    return _compress_wrapper(D.bfloat16, hook, "bf16_compress_wrapper_hook")
