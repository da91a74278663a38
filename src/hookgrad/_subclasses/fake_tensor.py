"""torch._subclasses.fake_tensor: ``is_fake(x)`` is False for every hookgrad tensor (there are no fake tensors)."""
from .._tensor import Tensor


class FakeTensor(Tensor):
    """A tensor with metadata and no data, made by FakeTensorMode while PyTorch traces; hookgrad makes none."""


class FakeTensorMode:
    """The mode that makes fake tensors: hookgrad has no tracing, so using it raises."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch._subclasses.fake_tensor.FakeTensorMode: hookgrad has no fake tensors "
                                  "(it never traces; see docs/differences.md)")


def is_fake(x):
    """Whether ``x`` is a fake tensor (or a subclass wrapping one): never, in hookgrad."""
    return False
