"""hookgrad.autograd: backward, grad, grad modes, Function, graph hooks (mirrors torch.autograd)."""
from .grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, \
    is_inference_mode_enabled, set_multithreading_enabled, is_multithreading_enabled, \
    _unsafe_preserve_version_counter, _force_original_view_tracking
from .grad_mode import _is_view_replay_enabled as is_view_replay_enabled  # noqa: F401
from . import graph
from .graph import Node
from . import engine as _engine
from . import function
from .function import Function, once_differentiable
from . import functional
from . import anomaly_mode
from .anomaly_mode import detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled
from .gradcheck import gradcheck, gradgradcheck, GradcheckError, _calculate_shape  # noqa: F401
from .saved import SavedTensor  # noqa: F401
from .api import backward, grad, Variable, _tensor_cls  # noqa: F401

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "graph", "Node",
           "Function", "functional", "gradcheck", "gradgradcheck", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "once_differentiable"]


# the legacy `variable` module and function, the profiler, forward_ad (names only) and is_tensor_like
from . import variable as _variable_module, profiler, forward_ad  # noqa: E402,F401
from . import profiler_util  # noqa: E402,F401
from .profiler import _profiler_enabled  # noqa: E402,F401
from .profiler_util import DeviceType  # noqa: E402,F401


def variable(*args, **kwargs):
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


def is_tensor_like(inp):
    """True for a Tensor or an object that defines ``__torch_function__`` (PyTorch's overrides check)."""
    return isinstance(inp, _tensor_cls()) or hasattr(inp, "__torch_function__")


def kineto_available():
    """False: hookgrad has no profiler backend."""
    return False


# a torch name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from .. import _missing  # noqa: E402
_missing_getattr = _missing.module_getattr(__name__, 'torch.autograd')


def __getattr__(name):
    if name == "torch":         # torch.autograd imports torch: ``torch.autograd.torch`` is the package itself
        import sys
        return sys.modules[__name__.rpartition(".")[0]]
    return _missing_getattr(name)
