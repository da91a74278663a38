"""torch._functorch.vmap: vmap_impl and its helpers (hookgrad/func/_vmap.py)."""
from ..func._vmap import vmap_impl, _check_randomness_arg, _process_batched_inputs, _get_name  # noqa: F401
