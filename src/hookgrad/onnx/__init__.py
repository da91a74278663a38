"""torch.onnx: hookgrad has no ONNX exporter (a non-goal: it has no graph capture). What packages use at load time
works: ``is_in_onnx_export()`` is False, ``register_custom_op_symbolic`` records the symbolic function (it is only
called during an export), ``symbolic_helper.parse_args`` decorates; ``export``/``dynamo_export`` raise
NotImplementedError naming the function."""
import enum

__all__ = ["export", "dynamo_export", "is_in_onnx_export", "register_custom_op_symbolic",
           "unregister_custom_op_symbolic", "TrainingMode", "OperatorExportTypes", "TensorProtoDataType",
           "select_model_mode_for_export", "is_onnxrt_backend_supported", "utils", "symbolic_helper"]

producer_name = "pytorch"
_custom_symbolics = {}


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class TensorProtoDataType(enum.IntEnum):
    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16


def _no_export(name):
    def f(*args, **kwargs):
        raise NotImplementedError(f"torch.onnx.{name} is not implemented in hookgrad: a non-goal (hookgrad has no "
                                  "graph capture to export). See docs/coverage.md")
    f.__name__ = name
    return f


export = _no_export("export")
dynamo_export = _no_export("dynamo_export")
select_model_mode_for_export = _no_export("select_model_mode_for_export")


def is_in_onnx_export():
    """Whether an ONNX export is running: never, in hookgrad."""
    return False


def is_onnxrt_backend_supported():
    return False


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Record the ONNX symbolic function of a custom operator (it would run during an export)."""
    _custom_symbolics[(symbolic_name, opset_version)] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    _custom_symbolics.pop((symbolic_name, opset_version), None)


from . import symbolic_helper  # noqa: E402,F401
from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.onnx")
