"""torch.fx.immutable_collections: the list and dict a Node's ``args``/``kwargs`` are made of (mutation raises
NotImplementedError, as in PyTorch); both are pytree containers."""
from ..utils._pytree import (_dict_flatten, _dict_flatten_with_keys, _dict_unflatten, _list_flatten, _list_unflatten,
                             _seq_keys, _private_register_pytree_node)

__all__ = ["immutable_list", "immutable_dict"]


def _no_mutation(self, *args, **kwargs):
    raise NotImplementedError(f"{type(self).__name__!r} object does not support mutation. {_help}")


_help = ("If you are attempting to modify the kwargs or args of a torch.fx.Node object,\ninstead create a new copy "
         "of it and assign the copy to the node:\n    new_args = ... # copy and mutate args\n    node.args = new_args\n")


def _create_immutable_container(base, mutable_functions):
    container = type("immutable_" + base.__name__, (base,), {})
    for attr in mutable_functions:
        setattr(container, attr, _no_mutation)
    return container


immutable_list = _create_immutable_container(
    list, ("__delitem__", "__iadd__", "__imul__", "__setitem__", "append", "clear", "extend", "insert", "pop",
           "remove", "reverse", "sort"))
immutable_list.__reduce__ = lambda self: (immutable_list, (tuple(iter(self)),))
immutable_list.__hash__ = lambda self: hash(tuple(self))

immutable_dict = _create_immutable_container(
    dict, ("__delitem__", "__ior__", "__setitem__", "clear", "pop", "popitem", "setdefault", "update"))
immutable_dict.__reduce__ = lambda self: (immutable_dict, (iter(self.items()),))
immutable_dict.__hash__ = lambda self: hash(tuple(self.items()))

_private_register_pytree_node(immutable_list, _list_flatten, lambda v, c: immutable_list(v),
                              flatten_with_keys_fn=_seq_keys)
_private_register_pytree_node(immutable_dict, _dict_flatten, lambda v, c: immutable_dict(_dict_unflatten(v, c)),
                              flatten_with_keys_fn=_dict_flatten_with_keys)
del _list_unflatten
