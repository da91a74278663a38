"""torch.autograd._functions.tensor: ``Resize`` (a reshape as a custom Function) and ``Type`` (a dtype cast)."""
import math

from ..function import Function


class Type(Function):
    @staticmethod
    def forward(ctx, i, dest_type):
        ctx.input_type = i.dtype
        return i.type(dest_type)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.to(ctx.input_type), None


class Resize(Function):
    @staticmethod
    def forward(ctx, tensor, sizes):
        ctx.sizes = sizes
        ctx.numel = math.prod(sizes)
        if tensor.numel() != ctx.numel:
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements in total), but the given "
                f"tensor has a size of {'x'.join(map(str, tensor.size()))} ({tensor.numel()} elements). autograd's "
                "resize can only change the shape of a given tensor, while preserving the number of elements. ")
        ctx.input_sizes = tensor.size()
        return tensor.contiguous().clone().view(*sizes)

    @staticmethod
    def backward(ctx, grad_output):
        if grad_output.numel() != ctx.numel:
            raise AssertionError(f"expected grad_output.numel() == {ctx.numel}, got {grad_output.numel()}")
        return grad_output.contiguous().view(ctx.input_sizes), None
