"""torch.nn.utils.convert_parameters: parameters to one flat vector and back."""
from ..._tensor import Tensor
from ...primitives.join import cat

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated, in order (differentiable, as PyTorch's ``cat`` of views)."""
    return cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Make each parameter's ``.data`` the next slice of ``vec`` (a view into it), in order."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    ptr = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[ptr:ptr + n].view_as(p).data
        ptr += n
