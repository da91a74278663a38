"""torch._functorch.apis: vmap, grad, grad_and_value (hookgrad/func)."""
from ..func import vmap, grad, grad_and_value  # noqa: F401
