"""torch.fx.experimental.proxy_tensor: hookgrad has no tracing dispatch modes (make_fx), so there is never an
active proxy mode."""

__all__ = ["get_proxy_mode", "make_fx", "py_sym_types"]

py_sym_types = ()


def get_proxy_mode():
    """The active ProxyTorchDispatchMode: always None in hookgrad (no make_fx tracing)."""
    return None


def make_fx(f, decomposition_table=None, tracing_mode="real", *args, **kwargs):
    raise NotImplementedError("torch.fx.experimental.proxy_tensor.make_fx (tracing through the dispatcher) is not "
                              "implemented in hookgrad; use torch.fx.symbolic_trace")
