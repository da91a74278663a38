"""torch.onnx.symbolic_opset11: ONNX opset 11's symbolic functions, used only while exporting (hookgrad never
exports): reading one gives a function that raises NotImplementedError when called."""
from ._symbolic import export_only as __getattr__  # noqa: F401
