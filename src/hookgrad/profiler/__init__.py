"""torch.profiler: record what a region runs (every op under its aten name, every backward node, the
``record_function`` ranges) and summarise it as PyTorch does (``key_averages().table()``, Chrome traces),
built on hookgrad's op hooks (see autograd/profiler.py)."""
from ..autograd.profiler import KinetoStepTracker, record_function  # noqa: F401
from ..autograd.profiler_util import DeviceType
from .profiler import (_KinetoProfile, ExecutionTraceObserver, profile, ProfilerAction, schedule,  # noqa: F401
                       supported_activities, tensorboard_trace_handler, ProfilerActivity, _ExperimentalConfig)
from . import itt, profiler  # noqa: F401

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "DeviceType", "record_function", "ExecutionTraceObserver"]


def kineto_available():
    """False: hookgrad has no Kineto backend (its profiler records through op hooks)."""
    return False


class RecordScope:
    """torch._C._profiler.RecordScope names (accepted for imports)."""
    FUNCTION = 0
    BACKWARD_FUNCTION = 1
    TORCHSCRIPT_FUNCTION = 2
    KERNEL_FUNCTION_DTYPE = 3
    CUSTOM_CLASS = 4
    BUILD_FEATURE = 5
    LITE_INTERPRETER = 6
    USER_SCOPE = 7
    STATIC_RUNTIME_OP = 8
    STATIC_RUNTIME_MODEL = 9


from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.profiler")
