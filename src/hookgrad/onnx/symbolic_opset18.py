"""torch.onnx.symbolic_opset18: ONNX opset 18's symbolic functions, used only while exporting (hookgrad never
exports): reading one gives a function that raises NotImplementedError when called."""
from ._symbolic import export_only as __getattr__  # noqa: F401
