"""torch._functorch.eager_transforms: vjp, jvp, jacrev, jacfwd, hessian, linearize (hookgrad/func)."""
from ..func import vjp, jvp, jacrev, jacfwd, hessian, linearize, grad, grad_and_value  # noqa: F401
from ..func._transforms import grad_and_value_impl, _slice_argnums, _vjp_with_argnums, _jvp_with_argnums  # noqa: F401
