"""torch.fx.annotate: ``annotate(value, type)`` sets the type of a Proxy's Node (shown in the generated code)."""
from ._compatibility import compatibility
from .proxy import Proxy


@compatibility(is_backward_compatible=False)
def annotate(val, type):
    """Gives the Node of the Proxy ``val`` the type annotation ``type``; other values pass through."""
    if isinstance(val, Proxy):
        if val.node.type:
            raise RuntimeError(f"Tried to annotate a value that already had a type on it! Existing type is "
                               f"{val.node.type} and new type is {type}. This could happen if you tried to annotate "
                               "a function parameter value (in which case you should use the type slot on the "
                               "function signature) or you called annotate on the same value twice")
        val.node.type = type
        return val
    return val
