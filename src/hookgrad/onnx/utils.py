"""torch.onnx.utils: nothing is ever exported in hookgrad."""
from . import export, is_in_onnx_export, register_custom_op_symbolic, unregister_custom_op_symbolic  # noqa: F401
