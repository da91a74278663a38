"""torch.func: composable function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap) over hookgrad's
autograd engine, and functional_call / stack_module_state.

``vmap`` runs each op once on the whole batch where hookgrad has its batching rule (func/_rules.py) and once per
sample elsewhere (with PyTorch's performance warning); the differentiating transforms are built on
``autograd.grad`` (create_graph where an outer transform needs it), see func/_transforms.py."""
from . import _rules  # noqa: F401  (fills the batching rules' table)
from ._vmap import vmap
from ._transforms import grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize
from ._functional_call import functional_call, stack_module_state
from ._extras import replace_all_batch_norm_modules_, functionalize, debug_unwrap

__all__ = ["grad", "grad_and_value", "vmap", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "vjp",
           "functional_call", "stack_module_state", "replace_all_batch_norm_modules_", "functionalize", "debug_unwrap"]

from .._vmap_internals import _vmap as _legacy_vmap  # noqa: E402
from ..autograd.gradcheck import _vmap as _gradcheck_vmap  # noqa: E402  (the module: autograd's name is the function)
_gradcheck_vmap[0] = _legacy_vmap      # gradcheck's batched checks (check_batched_grad, check_batched_forward_grad)
from . import _fwad  # noqa: E402
from ..autograd.forward_ad import _vmap_support as _fwad_slot  # noqa: E402
_fwad_slot[0] = _fwad                   # forward AD with vmap's BatchedTensor tangents
