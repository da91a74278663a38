"""torch.fx._pytree: flattening a pytree along a given spec (``tree_flatten_spec``), with per-type functions
registered by ``register_pytree_flatten_spec``."""
from collections import namedtuple

from ..utils._pytree import TreeSpec

__all__ = ["register_pytree_flatten_spec", "tree_flatten_spec"]

SUPPORTED_NODES = {}
SUPPORTED_NODES_EXACT_MATCH = {}


def register_pytree_flatten_spec(cls, flatten_fn_spec, flatten_fn_exact_match_spec=None):
    SUPPORTED_NODES[cls] = flatten_fn_spec
    SUPPORTED_NODES_EXACT_MATCH[cls] = flatten_fn_exact_match_spec


def _deregister_pytree_flatten_spec(cls):
    SUPPORTED_NODES.pop(cls, None)
    SUPPORTED_NODES_EXACT_MATCH.pop(cls, None)


def tree_flatten_spec(pytree, spec):
    """The leaves of ``pytree`` in the order of ``spec`` (dict entries by the spec's keys)."""
    if not isinstance(spec, TreeSpec):
        raise AssertionError(f"Expected TreeSpec, got {type(spec)}")
    if spec.is_leaf():
        return [pytree]
    if spec.type not in SUPPORTED_NODES:
        raise RuntimeError(f"{type(pytree)} does not have a flatten_fn_spec associated with it. Please register one "
                           "with torch.fx._pytree.register_pytree_flatten_spec.  If you have serialized your model, "
                           "make sure that any custom pytrees have been registered before loading it.")
    child_pytrees = SUPPORTED_NODES[spec.type](pytree, spec)
    result = []
    for child, child_spec in zip(child_pytrees, spec.children_specs):
        result += tree_flatten_spec(child, child_spec)
    return result


def _dict_flatten_spec(d, spec):
    return [d[k] for k in spec.context]


def _list_flatten_spec(d, spec):
    return [d[i] for i in range(spec.num_children)]


def _tuple_flatten_spec(d, spec):
    return [d[i] for i in range(spec.num_children)]


def _namedtuple_flatten_spec(d, spec):
    return [d[i] for i in range(spec.num_children)]


register_pytree_flatten_spec(dict, _dict_flatten_spec)
register_pytree_flatten_spec(list, _list_flatten_spec)
register_pytree_flatten_spec(tuple, _tuple_flatten_spec)
register_pytree_flatten_spec(namedtuple, _namedtuple_flatten_spec)
