"""torch._subclasses: PyTorch's tensor subclasses for tracing (fake and functional tensors). hookgrad traces
nothing, so no tensor is ever one of them; the names exist for the checks packages make."""
from .fake_tensor import FakeTensor, FakeTensorMode  # noqa: F401
