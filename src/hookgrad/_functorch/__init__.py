"""torch._functorch: where PyTorch defines torch.func; hookgrad's transforms live in hookgrad/func, these
modules name them where PyTorch's code imports them from."""
from . import apis, eager_transforms, vmap, functional_call  # noqa: F401
