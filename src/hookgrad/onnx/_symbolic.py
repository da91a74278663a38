"""The stand-in of every symbolic function of torch.onnx.symbolic_opset*: packages reference them in their own
symbolic functions, which only an export would call."""


def export_only(name):
    if name.startswith("__"):
        raise AttributeError(name)

    def symbolic(*args, **kwargs):
        raise NotImplementedError(f"torch.onnx symbolic function {name!r}: hookgrad has no ONNX export")
    symbolic.__name__ = name
    return symbolic
