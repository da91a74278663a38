"""torch._functorch.functional_call: functional_call and stack_module_state (hookgrad/func)."""
from ..func import functional_call, stack_module_state  # noqa: F401
