"""torch.utils._pytree: nested containers (tuple, list, dict, OrderedDict, namedtuple, defaultdict, deque and the
types registered with ``register_pytree_node``) flattened to their leaves and a ``TreeSpec`` that rebuilds them,
in PyTorch's order (dicts in insertion order) and with PyTorch's spec repr, equality and JSON form.

    >>> leaves, spec = tree_flatten({"b": 1, "a": [2, (3, None)]})
    >>> leaves, tree_unflatten([x * 10 for x in leaves], spec)
    ([1, 2, 3, None], {'b': 10, 'a': [20, (30, None)]})
"""
import dataclasses
import functools
import json
import threading
from collections import OrderedDict, defaultdict, deque, namedtuple
from typing import Any, Callable, NamedTuple, Optional

__all__ = ["PyTree", "Context", "FlattenFunc", "UnflattenFunc", "DumpableContext", "ToDumpableContextFn",
           "FromDumpableContextFn", "TreeSpec", "LeafSpec", "keystr", "key_get", "register_pytree_node",
           "tree_flatten", "tree_flatten_with_path", "tree_unflatten", "tree_iter", "tree_leaves",
           "tree_leaves_with_path", "tree_structure", "tree_map", "tree_map_with_path", "tree_map_", "tree_map_only",
           "tree_map_only_", "tree_all", "tree_any", "tree_all_only", "tree_any_only", "treespec_dumps",
           "treespec_loads", "treespec_pprint", "treespec_leaf", "treespec_tuple", "treespec_dict", "is_namedtuple",
           "is_namedtuple_class", "is_namedtuple_instance", "is_structseq", "is_structseq_class",
           "is_structseq_instance", "SequenceKey", "MappingKey", "GetAttrKey", "register_dataclass",
           "register_constant", "tree_is_leaf"]

PyTree = Any
Context = Any
DumpableContext = Any
FlattenFunc = Callable[[PyTree], tuple[list, Context]]
UnflattenFunc = Callable[[list, Context], PyTree]
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]
NO_SERIALIZED_TYPE_NAME_FOUND = "NO_SERIALIZED_TYPE_NAME_FOUND"
DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL = 1


class NodeDef(NamedTuple):
    type: type
    flatten_fn: FlattenFunc
    unflatten_fn: UnflattenFunc
    flatten_with_keys_fn: Optional[Callable] = None


class _SerializeNodeDef(NamedTuple):
    typ: type
    serialized_type_name: str
    to_dumpable_context: Optional[ToDumpableContextFn]
    from_dumpable_context: Optional[FromDumpableContextFn]


SUPPORTED_NODES: dict = {}
SUPPORTED_SERIALIZED_TYPES: dict = {}
SERIALIZED_TYPE_TO_PYTHON_TYPE: dict = {}
CONSTANT_NODES: set = set()
_NODE_REGISTRY_LOCK = threading.Lock()


# ---- key paths ----
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


KeyEntry = Any
KeyPath = tuple


def keystr(kp):
    """``"['a'][0]"`` for the key path (MappingKey('a'), SequenceKey(0))."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    for k in kp:
        obj = k.get(obj)
    return obj


# ---- registration ----
def _private_register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                                  to_dumpable_context=None, from_dumpable_context=None, flatten_with_keys_fn=None):
    with _NODE_REGISTRY_LOCK:
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
        if (to_dumpable_context is None) != (from_dumpable_context is None):
            raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must be None or "
                             "registered.")
        name = NO_SERIALIZED_TYPE_NAME_FOUND if serialized_type_name is None else serialized_type_name
        SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(cls, name, to_dumpable_context, from_dumpable_context)
        SERIALIZED_TYPE_TO_PYTHON_TYPE[name] = cls


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None):
    """Make ``cls`` a container: ``flatten_fn(obj) -> (children, context)``,
    ``unflatten_fn(children, context) -> obj``."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    _private_register_pytree_node(cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
                                  to_dumpable_context=to_dumpable_context, from_dumpable_context=from_dumpable_context,
                                  flatten_with_keys_fn=flatten_with_keys_fn)


def _register_pytree_node(cls, flatten_fn, unflatten_fn, to_str_fn=None, maybe_from_str_fn=None, *,
                          serialized_type_name=None, to_dumpable_context=None, from_dumpable_context=None,
                          flatten_with_keys_fn=None):
    """The deprecated spelling of ``register_pytree_node`` (its string functions are ignored, as in PyTorch)."""
    _private_register_pytree_node(cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
                                  to_dumpable_context=to_dumpable_context, from_dumpable_context=from_dumpable_context,
                                  flatten_with_keys_fn=flatten_with_keys_fn)


def _deregister_pytree_node(cls):
    with _NODE_REGISTRY_LOCK:
        SUPPORTED_NODES.pop(cls, None)
        node = SUPPORTED_SERIALIZED_TYPES.pop(cls, None)
        if node is not None and node.serialized_type_name != NO_SERIALIZED_TYPE_NAME_FOUND:
            SERIALIZED_TYPE_TO_PYTHON_TYPE.pop(node.serialized_type_name, None)


def register_dataclass(cls, *, field_names=None, drop_field_names=None, serialized_type_name=None):
    """Register a dataclass (or, with ``field_names``, any class): its fields that are not None are the
    children, in declaration order; the context is ``[names with a value, names that were None]``."""
    drop_field_names = drop_field_names or []
    if not dataclasses.is_dataclass(cls):
        if field_names is None:
            raise ValueError("field_names must be specified with a list of all fields used to initialize "
                             f"{cls}, as it is not a dataclass.")
    elif field_names is None:
        field_names = [f.name for f in dataclasses.fields(cls) if f.init]
    else:
        init_fields = {f.name for f in dataclasses.fields(cls) if f.init} - set(drop_field_names)
        if init_fields != set(field_names):
            raise ValueError("field_names does not include all dataclass fields.\n")
    field_names = list(field_names)

    def flatten(obj):
        values, names, none_names = [], [], []
        for name in field_names:
            v = getattr(obj, name)
            if v is None:
                none_names.append(name)
            else:
                values.append(v)
                names.append(name)
        return values, [names, none_names]

    def unflatten(values, context):
        names, none_names = context
        return cls(**dict(zip(names, values)), **dict.fromkeys(none_names))

    def flatten_with_keys(obj):
        values, (names, _) = flatten(obj)
        return [(GetAttrKey(k), v) for k, v in zip(names, values)], names
    _private_register_pytree_node(cls, flatten, unflatten, serialized_type_name=serialized_type_name,
                                  flatten_with_keys_fn=flatten_with_keys)


class ConstantNode(NamedTuple):
    value: Any


def register_constant(cls):
    """Instances of ``cls`` become part of the spec (no leaves)."""
    def flatten(x):
        return [], ConstantNode(x)

    def unflatten(_, context):
        return context.value
    _private_register_pytree_node(cls, flatten, unflatten, flatten_with_keys_fn=lambda x: ([], ConstantNode(x)))
    CONSTANT_NODES.add(cls)


def is_constant_class(cls):
    return cls in CONSTANT_NODES


# ---- the built-in containers ----
def _tuple_flatten(d):
    return list(d), None


def _tuple_unflatten(values, context):
    return tuple(values)


def _list_flatten(d):
    return d, None


def _list_unflatten(values, context):
    return list(values)


def _seq_keys(d):
    return [(SequenceKey(i), v) for i, v in enumerate(d)], None


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _dict_flatten_with_keys(d):
    values, context = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(context, values)], context


def _dict_unflatten(values, context):
    return dict(zip(context, values))


def _namedtuple_flatten(d):
    return list(d), type(d)


def _namedtuple_flatten_with_keys(d):
    values, context = _namedtuple_flatten(d)
    return [(GetAttrKey(f), v) for f, v in zip(context._fields, values)], context


def _namedtuple_unflatten(values, context):
    return context(*values)


_NAMEDTUPLE_NAMES = {}


def _register_namedtuple(cls, *, serialized_type_name):
    """Give the namedtuple class ``cls`` a name for ``treespec_dumps``."""
    _NAMEDTUPLE_NAMES[cls] = serialized_type_name
    _NAMEDTUPLE_NAMES[serialized_type_name] = cls


def _namedtuple_serialize(context):
    if context not in _NAMEDTUPLE_NAMES:
        raise NotImplementedError(f"Can't serialize TreeSpec of namedtuple class {context} because we didn't "
                                  "register a serializated_type_name. Please register using `_register_namedtuple`.")
    return json.dumps(_NAMEDTUPLE_NAMES[context])


def _namedtuple_deserialize(dumpable_context):
    name = json.loads(dumpable_context)
    if name not in _NAMEDTUPLE_NAMES:
        raise NotImplementedError(f"Can't deserialize TreeSpec of namedtuple class {name} because we couldn't find "
                                  "the serializated name.")
    return _NAMEDTUPLE_NAMES[name]


def _ordereddict_flatten(d):
    return list(d.values()), list(d.keys())


def _ordereddict_flatten_with_keys(d):
    return _dict_flatten_with_keys(d)


def _ordereddict_unflatten(values, context):
    return OrderedDict((k, v) for k, v in zip(context, values))


_odict_flatten, _odict_unflatten = _ordereddict_flatten, _ordereddict_unflatten


def _defaultdict_flatten(d):
    values, dict_context = _dict_flatten(d)
    return values, [d.default_factory, dict_context]


def _defaultdict_flatten_with_keys(d):
    values, context = _defaultdict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(context[1], values)], context


def _defaultdict_unflatten(values, context):
    default_factory, dict_context = context
    return defaultdict(default_factory, _dict_unflatten(values, dict_context))


def _defaultdict_serialize(context):
    default_factory, dict_context = context
    return {"default_factory_module": default_factory.__module__,
            "default_factory_name": default_factory.__qualname__, "dict_context": dict_context}


def _defaultdict_deserialize(dumpable_context):
    import importlib
    module = importlib.import_module(dumpable_context["default_factory_module"])
    return [getattr(module, dumpable_context["default_factory_name"]), dumpable_context["dict_context"]]


def _deque_flatten(d):
    return list(d), d.maxlen


def _deque_unflatten(values, context):
    return deque(values, maxlen=context)


_private_register_pytree_node(tuple, _tuple_flatten, _tuple_unflatten, serialized_type_name="builtins.tuple",
                              flatten_with_keys_fn=_seq_keys)
_private_register_pytree_node(list, _list_flatten, _list_unflatten, serialized_type_name="builtins.list",
                              flatten_with_keys_fn=_seq_keys)
_private_register_pytree_node(dict, _dict_flatten, _dict_unflatten, serialized_type_name="builtins.dict",
                              flatten_with_keys_fn=_dict_flatten_with_keys)
_private_register_pytree_node(namedtuple, _namedtuple_flatten, _namedtuple_unflatten,
                              serialized_type_name="collections.namedtuple", to_dumpable_context=_namedtuple_serialize,
                              from_dumpable_context=_namedtuple_deserialize,
                              flatten_with_keys_fn=_namedtuple_flatten_with_keys)
_private_register_pytree_node(OrderedDict, _ordereddict_flatten, _ordereddict_unflatten,
                              serialized_type_name="collections.OrderedDict",
                              flatten_with_keys_fn=_ordereddict_flatten_with_keys)
_private_register_pytree_node(defaultdict, _defaultdict_flatten, _defaultdict_unflatten,
                              serialized_type_name="collections.defaultdict",
                              to_dumpable_context=_defaultdict_serialize,
                              from_dumpable_context=_defaultdict_deserialize,
                              flatten_with_keys_fn=_defaultdict_flatten_with_keys)
_private_register_pytree_node(deque, _deque_flatten, _deque_unflatten, serialized_type_name="collections.deque",
                              flatten_with_keys_fn=lambda d: (_seq_keys(d)[0], d.maxlen))
STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})
BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})


def is_namedtuple_class(cls):
    return isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple) \
        and all(isinstance(f, str) for f in cls._fields) and callable(getattr(cls, "_make", None)) \
        and callable(getattr(cls, "_asdict", None))


def is_namedtuple_instance(obj):
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj):
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def _structseq_base():
    from ..primitives.return_types import _StructSeq
    return _StructSeq


def is_structseq_class(cls):
    """torch.return_types' named tuples (PyTorch's structseq)."""
    return isinstance(cls, type) and issubclass(cls, _structseq_base()) and cls is not _structseq_base()


def is_structseq_instance(obj):
    return is_structseq_class(type(obj))


def is_structseq(obj):
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def _structseq_flatten(d):
    return list(d), None


def _get_node_type(tree):
    t = type(tree)
    if t in SUPPORTED_NODES:        # the common case first (a subclass of a registered type is a leaf)
        return t
    if issubclass(t, tuple):
        if is_namedtuple_class(t):
            return namedtuple
        if is_structseq_class(t):
            return t
    return t


def _node_def(t):
    node = SUPPORTED_NODES.get(t)
    if node is None and is_structseq_class(t):
        node = NodeDef(t, _structseq_flatten, lambda values, context, t=t: t(values))
    return node


def _is_leaf(tree, is_leaf=None):
    return (is_leaf is not None and is_leaf(tree)) or _node_def(_get_node_type(tree)) is None


tree_is_leaf = _is_leaf


# ---- TreeSpec ----
@dataclasses.dataclass(init=True, frozen=True, eq=True, repr=False)
class TreeSpec:
    """The structure of a pytree: a node ``type``, its ``context`` and its children's specs."""
    type: Any
    _context: Context
    _children: list

    num_nodes: int = dataclasses.field(init=False)
    num_leaves: int = dataclasses.field(init=False)
    num_children: int = dataclasses.field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "num_nodes", 1 + sum(c.num_nodes for c in self._children))
        object.__setattr__(self, "num_leaves", sum(c.num_leaves for c in self._children))
        object.__setattr__(self, "num_children", len(self._children))

    def __repr__(self, indent=0):
        head = f"TreeSpec({self.type.__name__}, {self._context}, ["
        body = ""
        if self.num_children > 0:
            indent += 2
            body += self._children[0].__repr__(indent)
            body += "," if self.num_children > 1 else ""
            body += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self._children[1:])
        return head + body + "])"

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is self.__class__:
            return str(self.type) == str(other.type) and self._context == other._context and \
                self._children == other._children
        return NotImplemented

    def __hash__(self):
        return hash((str(self.type), repr(self._context), tuple(self._children)))

    @property
    def context(self):
        return self._context

    @property
    def children_specs(self):
        return self._children

    def is_leaf(self):
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self):
        return list(self._children)

    def child(self, index):
        return self._children[index]

    def flatten_up_to(self, tree):
        """The subtrees of ``tree`` at this spec's leaves (ValueError where the structures differ)."""
        out = []

        def rec(spec, t):
            if spec.is_leaf():
                out.append(t)
                return
            node_type = _get_node_type(t)
            if node_type is not spec.type and not (spec.type in STANDARD_DICT_TYPES and
                                                   node_type in STANDARD_DICT_TYPES):
                raise ValueError(f"Type mismatch; expected {spec.type!r}, but got {node_type!r}.")
            children, context = _node_def(node_type).flatten_fn(t)
            if len(children) != spec.num_children:
                raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got {len(children)}.")
            if node_type in STANDARD_DICT_TYPES:
                keys = spec._context[1] if spec.type is defaultdict else spec._context
                got = context[1] if node_type is defaultdict else context
                if set(keys) != set(got):
                    raise ValueError(f"Node keys mismatch; expected {keys!r}, but got {got!r}.")
                children = [t[k] for k in keys]
            elif context != spec._context:
                raise ValueError(f"Node context mismatch for custom node type {spec.type!r}.")
            for s, c in zip(spec._children, children):
                rec(s, c)
        rec(self, tree)
        return out

    def unflatten(self, leaves):
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to "
                             f"a pytree that holds {self.num_leaves} items ({self}).")
        if self.is_leaf():
            return leaves[0]
        start, children = 0, []
        for c in self._children:
            children.append(c.unflatten(leaves[start:start + c.num_leaves]))
            start += c.num_leaves
        return _node_def(self.type).unflatten_fn(children, self._context)


class LeafSpec(TreeSpec):
    """The spec of a leaf (printed ``*``); ``treespec_leaf()`` is the shared instance."""

    def __init__(self):
        super().__init__(None, None, [])

    def __post_init__(self):
        object.__setattr__(self, "num_nodes", 1)
        object.__setattr__(self, "num_leaves", 1)
        object.__setattr__(self, "num_children", 0)

    def __repr__(self, indent=0):
        return "*"


_LEAF_SPEC = LeafSpec()


def treespec_leaf():
    return _LEAF_SPEC


def treespec_tuple(iterable=(), /):
    return TreeSpec(tuple, None, list(iterable))


def treespec_dict(mapping=(), /, **kwargs):
    d = dict(mapping, **kwargs)
    return TreeSpec(dict, list(d.keys()), list(d.values()))


# ---- flatten / unflatten ----
def _flatten(tree, leaves, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF_SPEC
    node_type = _get_node_type(tree)
    node = _node_def(node_type)
    if node is None:
        leaves.append(tree)
        return _LEAF_SPEC
    children, context = node.flatten_fn(tree)
    return TreeSpec(node_type, context, [_flatten(c, leaves, is_leaf) for c in children])


def tree_flatten(tree, is_leaf=None):
    """``(leaves, spec)``: the leaves of ``tree`` in PyTorch's order and the spec that rebuilds it."""
    leaves = []
    return leaves, _flatten(tree, leaves, is_leaf)


def tree_unflatten(leaves, treespec):
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    if _is_leaf(tree, is_leaf):
        yield tree
        return
    children, _ = _node_def(_get_node_type(tree)).flatten_fn(tree)
    for c in children:
        yield from tree_iter(c, is_leaf)


def tree_leaves(tree, is_leaf=None):
    return list(tree_iter(tree, is_leaf))


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def _key_children(tree, node_type):
    node = _node_def(node_type)
    if node.flatten_with_keys_fn is not None:
        return node.flatten_with_keys_fn(tree)[0]
    children, _ = node.flatten_fn(tree)
    return [(SequenceKey(i), c) for i, c in enumerate(children)]


def _paths(tree, prefix, is_leaf):
    if _is_leaf(tree, is_leaf):
        yield prefix, tree
        return
    for k, c in _key_children(tree, _get_node_type(tree)):
        yield from _paths(c, prefix + (k,), is_leaf)


def tree_flatten_with_path(tree, is_leaf=None):
    return list(_paths(tree, (), is_leaf)), tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None):
    return list(_paths(tree, (), is_leaf))


def tree_map(func, tree, *rests, is_leaf=None):
    """``tree`` with each leaf replaced by ``func(leaf, *same leaves of rests)``."""
    leaves, treespec = tree_flatten(tree, is_leaf=is_leaf)
    flat_args = [leaves] + [treespec.flatten_up_to(r) for r in rests]
    return treespec.unflatten(map(func, *flat_args))


def tree_map_(func, tree, *rests, is_leaf=None):
    """Calls ``func`` on each leaf (for its side effects) and returns ``tree``."""
    leaves, treespec = tree_flatten(tree, is_leaf=is_leaf)
    flat_args = [leaves] + [treespec.flatten_up_to(r) for r in rests]
    deque(map(func, *flat_args), maxlen=0)
    return tree


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    keypath_leaves, treespec = tree_flatten_with_path(tree, is_leaf)
    keypaths, leaves = zip(*keypath_leaves) if keypath_leaves else ((), ())
    all_leaves = [leaves] + [treespec.flatten_up_to(r) for r in rests]
    return treespec.unflatten(func(*xs) for xs in zip(keypaths, *all_leaves))


def _type_pred(type_or_types_or_pred):
    if isinstance(type_or_types_or_pred, (type, tuple)) or (
            type(type_or_types_or_pred).__name__ == "UnionType"):
        return lambda x: isinstance(x, type_or_types_or_pred)
    if callable(type_or_types_or_pred):
        return type_or_types_or_pred
    raise TypeError("Argument must be a type, a tuple of types, or a callable.")


def map_only(type_or_types_or_pred, /):
    """``map_only(T)(f)``: f applied to the leaves of type T, the others passed through."""
    pred = _type_pred(type_or_types_or_pred)

    def wrapper(func):
        @functools.wraps(func)
        def wrapped(x):
            return func(x) if pred(x) else x
        return wrapped
    return wrapper


def tree_map_only(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None):
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, /, pred, tree, is_leaf=None):
    t = _type_pred(type_or_types)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if t(x))


def tree_any_only(type_or_types, /, pred, tree, is_leaf=None):
    t = _type_pred(type_or_types)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if t(x))


def arg_tree_leaves(*args, **kwargs):
    """The leaves of ``(args, kwargs)``."""
    return tree_leaves(args) + tree_leaves(kwargs)


def _broadcast_to_and_flatten(tree, treespec, is_leaf=None):
    """``tree``'s leaves repeated over ``treespec`` (a leaf of ``tree`` covers a whole subtree), or None."""
    if _is_leaf(tree, is_leaf):
        return [tree] * treespec.num_leaves
    if treespec.is_leaf():
        return None
    node_type = _get_node_type(tree)
    if node_type != treespec.type:
        return None
    children, context = _node_def(node_type).flatten_fn(tree)
    if len(children) != treespec.num_children or context != treespec._context:
        return None
    out = []
    for c, s in zip(children, treespec._children):
        r = _broadcast_to_and_flatten(c, s, is_leaf)
        if r is None:
            return None
        out += r
    return out


# ---- serialization (PyTorch's JSON, protocol 1) ----
def _treespec_to_json(treespec):
    if treespec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    node = SUPPORTED_SERIALIZED_TYPES.get(treespec.type)
    if node is None:
        raise NotImplementedError(f"Serializing {treespec.type} in pytree is not registered.")
    if node.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(f"No registered serialization name for {treespec.type} found. Please update your "
                                  "_register_pytree_node call with a `serialized_type_name` kwarg.")
    if node.to_dumpable_context is None:
        try:
            context = json.dumps(treespec._context)
        except TypeError as e:
            raise TypeError("Unable to serialize context. Please make the context json dump-able, or register a "
                            "custom serializer using _register_pytree_node.") from e
    else:
        context = node.to_dumpable_context(treespec._context)
    return {"type": node.serialized_type_name, "context": context,
            "children_spec": [_treespec_to_json(c) for c in treespec._children]}


def _json_to_treespec(d):
    if d["type"] is None and d["context"] is None and len(d["children_spec"]) == 0:
        return _LEAF_SPEC
    if d["type"] not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(f'Deserializing {d["type"]} in pytree is not registered.')
    typ = SERIALIZED_TYPE_TO_PYTHON_TYPE[d["type"]]
    node = SUPPORTED_SERIALIZED_TYPES[typ]
    context = json.loads(d["context"]) if node.from_dumpable_context is None else \
        node.from_dumpable_context(d["context"])
    return TreeSpec(typ, context, [_json_to_treespec(c) for c in d["children_spec"]])


def treespec_dumps(treespec, protocol=None):
    """PyTorch's JSON text of ``treespec``: ``[protocol, {"type": ..., "context": ..., "children_spec": [...]}]``."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"treespec_dumps(treespec, protocol): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    protocol = DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL if protocol is None else protocol
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return json.dumps((protocol, _treespec_to_json(treespec)))


def treespec_loads(serialized):
    protocol, json_schema = json.loads(serialized)
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return _json_to_treespec(json_schema)


class _Asterisk(str):
    def __new__(cls):
        return super().__new__(cls, "*")

    def __repr__(self):
        return "*"


def treespec_pprint(treespec):
    return repr(tree_unflatten([_Asterisk()] * treespec.num_leaves, treespec))
