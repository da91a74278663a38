"""torch.fx.node: ``Node``, one operation of a Graph (placeholder, get_attr, call_function, call_method,
call_module, output), and ``map_arg``/``map_aggregate`` over the nested arguments that hold Nodes."""
import builtins
import operator
import types

from .._tensor import Tensor
from .. import _dtype
from ._compatibility import compatibility
from .immutable_collections import immutable_dict, immutable_list

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target", "BaseArgumentTypes"]

Target = object
Argument = object
_side_effectful_functions = {operator.setitem}   # and torch._assert (added by _symbolic_trace)


BaseArgumentTypes = (str, int, float, bool, complex, _dtype.dtype, Tensor)
base_types = BaseArgumentTypes


@compatibility(is_backward_compatible=True)
def has_side_effect(fn):
    """Marks ``fn`` as impure: dead-code elimination keeps its calls."""
    _side_effectful_functions.add(fn)
    return fn


# ---- the names torch.fx prints for a function ----
_QUALIFIED = {}     # id(function) -> torch's qualified name, built once from hookgrad's namespaces


def _namespaces():
    import hookgrad
    return (("torch", hookgrad), ("torch.nn.functional", hookgrad.nn.functional), ("torch.linalg", hookgrad.linalg),
            ("torch.fft", hookgrad.fft), ("torch.special", hookgrad.special))


def _resolve(qualified):
    """The hookgrad object a ``torch.a.b`` name means, or None."""
    import hookgrad
    parts = qualified.split(".")
    if parts[0] != "torch":
        return None
    obj = hookgrad
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def _build_qualified():
    from ._torch_names import QUALIFIED
    for prefix, ns in reversed(_namespaces()):     # torch.<name> wins over its aliases in other namespaces
        for name, obj in vars(ns).items():
            if name.startswith("_") or not callable(obj) or isinstance(obj, type):
                continue
            q = f"{prefix}.{name}"
            alias = QUALIFIED.get(q)
            if alias is not None and callable(_resolve(alias)):
                q = alias
            if prefix != "torch" and getattr(obj, "__name__", None) != name:
                continue
            _QUALIFIED[id(obj)] = (q, obj)


def _get_qualified_name(func):
    """The name torch.fx prints for ``func``: ``getattr``, ``operator.add``, ``torch.relu``,
    ``torch.nn.functional.relu``, ``torch.Tensor.add``, ``module.qualname``."""
    if getattr(builtins, getattr(func, "__name__", ""), None) is func:
        return func.__name__
    if not _QUALIFIED:
        _build_qualified()
    hit = _QUALIFIED.get(id(func))
    if hit is not None and hit[1] is func:
        return hit[0]
    name = func.__name__
    if name == "<lambda>":
        try:
            import inspect
            name = inspect.getsource(func).split("=")[0].strip()
        except Exception as e:   # noqa: BLE001
            raise RuntimeError("Unable to represent lambda") from e
    if getattr(Tensor, name, None) is func:
        return f"torch.Tensor.{name}"
    module = getattr(func, "__module__", None) or ""
    if module.startswith("hookgrad"):
        module = "torch" + module[len("hookgrad"):]
    return f"{module}.{getattr(func, '__qualname__', name)}".replace("<locals>.", "")


def _type_repr(obj):
    if isinstance(obj, type):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        return f"{obj.__module__}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


def _format_arg(arg, max_list_len=float("inf")):
    if hasattr(arg, "_custom_fx_repr_fn"):
        return arg._custom_fx_repr_fn()
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{more}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"({items}{',' if len(arg) == 1 else ''}{more})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


# ---- Node ----
@compatibility(is_backward_compatible=True)
class Node:
    """One operation of a ``Graph``: ``op`` (placeholder, get_attr, call_function, call_module, call_method,
    output), its ``target``, ``args``/``kwargs`` (which may hold other Nodes), its ``users`` and ``meta``."""
    _args = ()
    _kwargs = immutable_dict()

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root"):
            raise AssertionError(f"Unexpected op: {op}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target).__name__} but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target).__name__} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}
        self.users = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self._repr_fn = None
        self.meta = {}
        self._update_args_kwargs(args, kwargs)

    # linked list
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Moves ``x`` (a Node of this graph) right before this Node."""
        if self.graph != x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Moves ``x`` right after this Node."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # arguments
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self):
        """The Nodes this Node reads, in order of first appearance."""
        return list(self._input_nodes.keys())

    def update_arg(self, idx, arg):
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx, arg):
        args = list(self.args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}

        def collect(n):
            if not isinstance(n, Node):
                return n
            self._input_nodes.setdefault(n)
            return n
        self._args = map_aggregate(tuple(new_args) if not isinstance(new_args, tuple) else new_args, collect)
        self._kwargs = map_aggregate(dict(new_kwargs), collect)
        for n in self._input_nodes:
            n.users.setdefault(self)

    @property
    def stack_trace(self):
        return self.meta.get("stack_trace", None)

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    def __repr__(self):
        if self._repr_fn:
            return self._repr_fn(self)
        return self.name

    @staticmethod
    def _pretty_print_target(target):
        if isinstance(target, str):
            return target
        if hasattr(target, "__module__"):
            name = getattr(target, "__name__", None)
            if name is None:
                return _get_qualified_name(target)
            if target.__module__ == "builtins":
                return f"builtins.{name}"
            if target.__module__ == "_operator":
                return f"operator.{name}"
        return _get_qualified_name(target)

    def format_node(self, placeholder_names=None, maybe_return_typename=None, *, include_tensor_metadata=False):
        """``%name : [num_users=N] = op[target=...](args = ..., kwargs = ...)``, as torch.fx prints it."""
        if self.op == "placeholder":
            arg_str = self.target
            arg_str += arg_str + f": {_type_repr(self.type)}" if self.type else ""
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            typename = f"{_type_repr(self.type)} " if self.type else ""
            default = "(default=" + str(self.args[0]) + ")" if self.args else ""
            return f"%{self.name} : {typename}[num_users={len(self.users)}] = {self.op}[target={self.target}]{default}"
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        if self.op == "get_attr":
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self._pretty_print_target(self.target)}]")
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *, propagate_meta=False):
        """Makes every user of this Node read ``replace_with`` instead; returns the users changed."""
        if propagate_meta:
            if len(replace_with.meta) != 0:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), but "
                                     "replace_with already has .meta keys")
            replace_with.meta.update(self.meta)
        to_process = list(self.users)
        skipped = []
        for use_node in to_process:
            if not delete_user_cb(use_node):
                skipped.append(use_node)
                continue
            use_node._replace_input(self, replace_with)
        if len(self.users) - len(skipped) != 0:
            raise AssertionError(f"Failed to replace all uses of {self}")
        return [n for n in to_process if n not in skipped]

    def replace_input_with(self, old_input, new_input):
        """Makes this Node read ``new_input`` wherever it read ``old_input``."""
        self._replace_input(old_input, new_input)

    def _replace_input(self, old, new):
        def swap(n):
            return new if n is old else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self, impure_random=True):
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful_functions
        if self.op == "call_module":
            if self.graph.owning_module is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return getattr(self.graph.owning_module.get_submodule(self.target), "_is_impure", False)
        return False

    def normalized_arguments(self, root, arg_types=None, kwarg_types=None, normalize_to_only_use_kwargs=False):
        return None

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)


@compatibility(is_backward_compatible=True)
def map_arg(a, fn):
    """``a`` with each Node in it replaced by ``fn(node)``."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


@compatibility(is_backward_compatible=True)
def map_aggregate(a, fn):
    """``a`` with ``fn`` applied to every value inside its tuples, lists, dicts and slices (lists and dicts
    come back immutable)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)
