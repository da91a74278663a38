"""torch.onnx.symbolic_helper: the decorators symbolic functions are written with (they run only during an
export, which hookgrad does not have)."""
def parse_args(*arg_descriptors):
    """Declare how a symbolic function's arguments are parsed: the function is returned as it is."""
    def decorator(fn):
        return fn
    return decorator


def quantized_args(*arg_q_descriptors, scale=None, zero_point=None, quantize_output=True):
    def decorator(fn):
        return fn
    return decorator


from ._symbolic import export_only as __getattr__  # noqa: E402,F401  (the helpers: export only)
