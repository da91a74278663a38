"""hookgrad.tools: the hook toolkit users otherwise hand-write, built only on the public hook API.

One tool per module; see docs/tools/<tool>.md for each one's page with runnable examples. Every tool
takes a hookgrad model or a PyTorch one (``torch.nn.Module``): ``tools.lib.lib_of`` works out the library
from the objects given, so hookgrad never imports torch.
"""
from .registry import HookRegistry, HookRecord, default_registry, register
from . import why
from .capture import capture, StopForward, load_capture, CaptureBudgetError, phases
from .intervene import intervene, intercept
from .gradmon import GradientMonitor, GradientWarning
from .modifiers import scale_grad, clip_grad_value, clip_grad_norm, freeze, gradient_reversal
from .nan import detect_nonfinite, NonFiniteEvent
from .ophooks import OpTimer, OpPrinter, MemoryHook, HookTimeAccount, account
from .gradcam import GradCAM, GradCAMPlusPlus, feature_maps
from .trace import trace, grad_fn_graph
from .paths import module_paths, select, ModuleStack
from .per_sample import per_sample_grads
from .hookcheck import check_hooks, strict_hooks, HookMisuseWarning
from .grads_ready import register_full_post_accumulate_grad_hook
from .saved_bytes import saved_tensor_bytes
from . import hooknames
from .gradcam_tokens import TokenGradCAM, AttentionGradCAM, tokens_to_grid
from .view_hooks import register_view_hook
from .explain import explain_autograd_errors
from ..autograd.graph import OpHook, register_op_hook

__all__ = ["HookRegistry", "HookRecord", "default_registry", "register", "why", "capture", "StopForward",
           "intervene", "intercept", "GradientMonitor", "GradientWarning", "scale_grad", "clip_grad_value",
           "clip_grad_norm", "freeze", "gradient_reversal", "detect_nonfinite", "NonFiniteEvent", "OpTimer",
           "OpPrinter", "MemoryHook", "HookTimeAccount", "account", "GradCAM", "GradCAMPlusPlus", "feature_maps",
           "trace", "grad_fn_graph", "module_paths", "select", "ModuleStack", "OpHook", "register_op_hook",
           "load_capture", "CaptureBudgetError", "phases", "per_sample_grads", "check_hooks", "strict_hooks", "HookMisuseWarning",
           "register_full_post_accumulate_grad_hook", "saved_tensor_bytes", "hooknames",
           "TokenGradCAM", "AttentionGradCAM", "tokens_to_grid", "register_view_hook", "explain_autograd_errors"]
