"""torch.fx.graph: ``Graph``, a doubly linked list of Nodes with unique names, and ``CodeGen``, which writes it
as the Python source of a ``forward`` (the same text torch.fx writes: ``torch.*`` names, ``x + y`` for operator
calls, ``;  x = None`` after a value's last use)."""
import builtins
import contextlib
import copy
import dataclasses
import inspect
import keyword
import math
import re

from ._compatibility import compatibility
from .node import Node, _get_qualified_name, _type_repr, map_arg

__all__ = ["PythonCode", "CodeGen", "Graph"]

_illegal_names = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)    # a name may not shadow a builtin
_custom_builtins = {}


@dataclasses.dataclass
class _CustomBuiltin:
    import_str: str
    obj: object


def _register_custom_builtin(name, import_str, obj):
    _custom_builtins[name] = _CustomBuiltin(import_str, obj)
    _illegal_names[name] = obj


def _register_torch_builtins():
    import hookgrad
    from ..utils import _pytree
    from . import _pytree as fx_pytree
    _register_custom_builtin("inf", "from math import inf", math.inf)
    _register_custom_builtin("nan", "from math import nan", math.nan)
    _register_custom_builtin("NoneType", "NoneType = type(None)", type(None))
    _register_custom_builtin("torch", "import torch", hookgrad)
    _register_custom_builtin("device", "from torch import device", hookgrad.device)
    _register_custom_builtin("fx_pytree", "import torch.fx._pytree as fx_pytree", fx_pytree)
    _register_custom_builtin("pytree", "import torch.utils._pytree as pytree", _pytree)


def _is_magic(x):
    return x.startswith("__") and x.endswith("__")


def _snake_case(s):
    """``mod.pascalCase`` -> ``mod.pascal_case``, ``mod.ALL_CAPS`` -> ``mod.all_caps``."""
    return re.sub(r"(?<=[a-z])([A-Z])", r"_\1", s).lower()


_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")


def _is_from_torch(obj):
    module = getattr(obj, "__module__", None)
    if module is not None:
        return (module == "torch" or module.startswith("torch.") or module == "hookgrad" or
                module.startswith("hookgrad."))
    return False


class _Namespace:
    """Unique names for objects: one name per object, no name twice, no builtin shadowed (unless the object is
    that builtin)."""

    def __init__(self):
        self._obj_to_name = {}
        self._used_names = set()
        self._base_count = {}

    def create_name(self, candidate, obj):
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate)
            if not candidate:
                candidate = "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name, obj):
        existing = self._obj_to_name.setdefault(obj, name)
        if existing is not name:
            raise AssertionError("obj is already associated")

    def _rename_object(self, obj, name):
        self._obj_to_name[obj] = name
        self._used_names.add(name)

    def _delete_name(self, name):
        self._used_names.discard(name)


@compatibility(is_backward_compatible=True)
@dataclasses.dataclass
class PythonCode:
    """The source of a generated function and the globals it needs."""
    src: str
    globals: dict
    _lineno_map: dict = None
    _prologue_start: int = 0


def _format_target(base, target):
    r = base
    for e in target.split("."):
        r = f'getattr({r}, "{e}")' if not e.isidentifier() else f"{r}.{e}"
    return r


class _InsertPoint:
    def __init__(self, graph, new_insert):
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self):
        pass

    def __exit__(self, type, value, tb):
        self.graph._insert = self.orig_insert


class _node_list:
    def __init__(self, graph, direction="_next"):
        self.graph = graph
        self.direction = direction

    def __len__(self):
        return self.graph._len

    def __iter__(self):
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            nxt = getattr(cur, self.direction)     # the current node may be moved or erased by the caller
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return _node_list(self.graph, "_prev" if self.direction == "_next" else "_next")


reflectable_magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}", "truediv": "{} / {}",
    "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}", "lshift": "{} << {}", "rshift": "{} >> {}",
    "and_": "{} & {}", "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
magic_methods = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "pos": "+{}", "neg": "-{}", "invert": "~{}", **reflectable_magic_methods,
}
inplace_methods = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}", "imod": "{} %= {}",
    "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}", "ipow": "{} **= {}", "irshift": "{} >>= {}",
    "isub": "{} -= {}", "itruediv": "{} /= {}", "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}


@compatibility(is_backward_compatible=True)
class CodeGen:
    """Writes a Graph as the source of a Python function (``forward`` by default)."""

    def __init__(self):
        self._body_transformer = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars, maybe_return_annotation, *, expanded_def=False):
        if len(free_vars) == 0 or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args, *, descs=None, repr_fn=None):
        return f"return {(repr_fn or repr)(output_args)}"

    def process_inputs(self, *args):
        return args

    def process_outputs(self, outputs):
        return outputs

    def additional_globals(self):
        return []

    def _gen_python_code(self, nodes, root_module, namespace, *, verbose=False, **_):
        import hookgrad
        free_vars, body, globals_, wrapped_fns = [], [], {}, {}
        maybe_return_annotation = [""]

        def add_global(name_hint, obj):
            if _is_from_torch(obj) and obj is not hookgrad.device:
                return _get_qualified_name(obj)
            global_name = namespace.create_name(name_hint, obj)
            if global_name in globals_:
                if globals_[global_name] is not obj:
                    raise AssertionError(f"Global name {global_name} already assigned to different object")
                return global_name
            globals_[global_name] = obj
            return global_name

        for name, (_, obj) in ((k, (v.import_str, v.obj)) for k, v in _custom_builtins.items()):
            add_global(name, obj)

        def type_repr(o):
            if o == ():
                return "()"
            return add_global(_type_repr(o), o)

        def _get_repr(arg):
            if isinstance(arg, Node):
                return repr(arg)
            if isinstance(arg, tuple) and hasattr(arg, "_fields"):
                global_name = add_global(_get_qualified_name(type(arg)), type(arg))
                return f"{global_name}{repr(tuple(arg))}"
            if isinstance(arg, hookgrad.Tensor):
                return f"torch.Tensor(size={list(arg.size())}, dtype={str(arg.dtype).split('.')[-1]})"
            if isinstance(arg, tuple):
                if len(arg) == 1:
                    return f"({_get_repr(arg[0])},)"
                return "(" + ", ".join(_get_repr(a) for a in arg) + ")"
            if isinstance(arg, list):
                return "[" + ", ".join(_get_repr(a) for a in arg) + "]"
            if isinstance(arg, slice):
                return f"slice({_get_repr(arg.start)}, {_get_repr(arg.stop)}, {_get_repr(arg.step)})"
            return repr(arg)

        def _format_args(args, kwargs):
            res = [_get_repr(a) for a in args]
            res.extend(f"{k} = {_get_repr(v)}" for k, v in kwargs.items())
            return ", ".join(res)

        node_to_last_use, user_to_last_uses = {}, {}
        for node in reversed(nodes):
            for input_node in node._input_nodes:
                if input_node not in node_to_last_use:
                    node_to_last_use[input_node] = node
                    user_to_last_uses.setdefault(node, []).append(input_node)

        def delete_unused_values(user):
            if user.op == "placeholder":
                return
            if user.op == "output":
                body.append("\n")
                return
            to_delete = list(user_to_last_uses.get(user, []))
            if len(user.users) == 0:
                to_delete.append(user)
            if to_delete:
                body.append(f";  {' = '.join([repr(n) for n in to_delete] + ['None'])}\n")
            else:
                body.append("\n")

        def emit_node(node):
            ann = "" if node.type is None else f" : {type_repr(node.type)}"
            if node.op == "placeholder":
                default = "" if not node.args else f" = {_get_repr(node.args[0])}"
                free_vars.append(f"{node.target}{ann}{default}")
                raw_name = node.target.replace("*", "")
                if raw_name != repr(node):
                    body.append(f"{repr(node)} = {raw_name}\n")
                return
            if node.op == "call_method":
                body.append(f"{repr(node)}{ann} = {_format_target(_get_repr(node.args[0]), node.target)}"
                            f"({_format_args(node.args[1:], node.kwargs)})")
                return
            if node.op == "call_function":
                mod, name = getattr(node.target, "__module__", ""), getattr(node.target, "__name__", "")
                if mod == "_operator" and name in magic_methods:
                    body.append(f"{repr(node)}{ann} = {magic_methods[name].format(*(_get_repr(a) for a in node.args))}")
                    return
                if mod == "_operator" and name in inplace_methods:
                    body.append(f"{inplace_methods[name].format(*(_get_repr(a) for a in node.args))};  "
                                f"{repr(node)}{ann} = {_get_repr(node.args[0])}")
                    return
                global_name = add_global(_get_qualified_name(node.target), node.target)
                if global_name == "getattr" and isinstance(node.args, tuple) and len(node.args) == 2 and \
                        isinstance(node.args[1], str) and node.args[1].isidentifier():
                    body.append(f"{repr(node)}{ann} = {_format_target(_get_repr(node.args[0]), node.args[1])}")
                    return
                body.append(f"{repr(node)}{ann} = {global_name}({_format_args(node.args, node.kwargs)})")
                if node.meta.get("is_wrapped", False):
                    wrapped_fns.setdefault(global_name)
                return
            if node.op == "call_module":
                body.append(f"{repr(node)}{ann} = {_format_target(root_module, node.target)}"
                            f"({_format_args(node.args, node.kwargs)})")
                return
            if node.op == "get_attr":
                body.append(f"{repr(node)}{ann} = {_format_target(root_module, node.target)}")
                return
            if node.op == "output":
                if node.type is not None:
                    maybe_return_annotation[0] = f" -> {type_repr(node.type)}"
                body.append(self.generate_output(node.args[0], repr_fn=_get_repr))
                return
            raise NotImplementedError(f"node: {node.op} {node.target}")

        summary = None
        for node in nodes:
            if verbose and node.op not in ("placeholder", "output"):
                text = "\n# No stacktrace found for following nodes\n"
                if text != summary:
                    summary = text
                    body.append(text)
            emit_node(node)
            delete_unused_values(node)
        if len(body) == 0:
            body.append("pass\n")
        if wrapped_fns:
            wrap_name = "torch.fx._symbolic_trace.wrap"     # torch (hookgrad) is a global of the code
            wrap_stmts = "\n".join(f'{wrap_name}("{name}")' for name in wrapped_fns)
        else:
            wrap_stmts = ""
        if self._body_transformer:
            body = self._body_transformer(body)
        for name, value in self.additional_globals():
            add_global(name, value)
        prologue = self.gen_fn_def(free_vars, maybe_return_annotation[0])
        code = "".join(body).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        fn_code = f"\n{wrap_stmts}\n\n{prologue}\n{code}"
        return PythonCode(fn_code, globals_)


class _PyTreeInfo:
    def __init__(self, orig_args, in_spec, out_spec):
        self.orig_args, self.in_spec, self.out_spec = orig_args, in_spec, out_spec


class _PyTreeCodeGen(CodeGen):
    """The code of a graph whose inputs and outputs are pytrees (flattened on the way in, rebuilt on the way
    out)."""

    def __init__(self, pytree_info):
        super().__init__()
        self.pytree_info = pytree_info

    def process_inputs(self, *inputs):
        from ..utils._pytree import tree_flatten
        return tree_flatten(inputs)[0]

    def process_outputs(self, out):
        from ..utils._pytree import tree_unflatten
        if self.pytree_info is None or self.pytree_info.out_spec is None:
            return out
        if not isinstance(out, (list, tuple)):
            out = [out]
        return tree_unflatten(out, self.pytree_info.out_spec)

    def gen_fn_def(self, free_vars, maybe_return_annotation, *, expanded_def=False):
        if self.pytree_info is None:
            return super().gen_fn_def(free_vars, maybe_return_annotation)
        fn_args = list(self.pytree_info.orig_args)
        has_self = len(fn_args) > 0 and fn_args[0] == "self"
        fn_definition = super().gen_fn_def(fn_args[:], maybe_return_annotation)
        if len(free_vars) > 0:
            fn_signature = f"[{', '.join(fn_args[1:] if has_self else fn_args)}], self._in_spec"
            if len(free_vars) == 1:
                free_vars.append("")
            return f"{fn_definition}\n    {', '.join(free_vars)}, = fx_pytree.tree_flatten_spec({fn_signature})"
        return fn_definition

    def generate_output(self, output_args, *, descs=None, repr_fn=None):
        if self.pytree_info and self.pytree_info.out_spec:
            return f"return pytree.tree_unflatten({(repr_fn or repr)(output_args)}, self._out_spec)"
        return super().generate_output(output_args, repr_fn=repr_fn)


@compatibility(is_backward_compatible=True)
class Graph:
    """The IR of torch.fx: a list of Nodes (``graph.nodes``) built with ``placeholder``, ``get_attr``,
    ``call_function``, ``call_method``, ``call_module`` and ``output``.

        >>> g = Graph()
        >>> x = g.placeholder("x")
        >>> g.output(g.call_function(operator.add, (x, 1)))
    """

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        if not _custom_builtins:
            _register_torch_builtins()
        self._root = Node(self, "", "root", "", (), {})
        self._used_names = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields = {}

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self):
        """The Nodes in order (a live view: ``len(graph.nodes)``, ``reversed(graph.nodes)``)."""
        return _node_list(self)

    def find_nodes(self, *, op, target=None, sort=True):
        """The Nodes with this ``op`` (and ``target``)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copies the Nodes of ``g`` into this graph; ``val_map`` maps g's Nodes to the copies (filled here)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None):
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        g._codegen = copy.deepcopy(self._codegen)
        if output_vals is not None:
            output_val, old_output_node = output_vals
            new_output_node = g.output(output_val, type_expr=getattr(old_output_node, "type", None))
            new_output_node.meta = copy.copy(old_output_node.meta)
        return g

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Makes a Node and inserts it at the current insert point."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def process_inputs(self, *args):
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out):
        return self._codegen.process_outputs(out)

    def erase_node(self, to_erase):
        """Removes a Node that has no users."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in "
                               f"the graph: {to_erase.users}!")
        if to_erase.graph != self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings
            warnings.warn(f"erase_node({to_erase}) on an already erased node")
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def inserting_before(self, n=None):
        """``with graph.inserting_before(node):`` new Nodes go before ``node`` (the start of the graph for
        None)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph != self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        """``with graph.inserting_after(node):`` new Nodes go after ``node`` (the end of the graph for None)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph != self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None, name=None):
        return self.create_node("call_function", the_function, args, kwargs, name=name, type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda x: x):
        """A copy of ``node`` (of another graph) in this graph, its Node arguments mapped by ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def output(self, result, type_expr=None):
        return self.create_node(op="output", target="output", args=(result,), type_expr=type_expr)

    def _target_to_str(self, target):
        op = target.__name__ if callable(target) else target
        if _is_magic(op):
            op = op[2:-2]
        return _snake_case(op)

    def python_code(self, root_module, *, verbose=False, **kwargs):
        """The ``PythonCode`` of this graph, ``root_module`` the name of the module argument (``"self"``)."""
        namespace = _Namespace()
        for node in self.nodes:       # the Nodes keep their names in the code
            namespace.create_name(node.name, node)
        old_repr = {}
        try:
            for node in self.nodes:
                old_repr[node] = node._repr_fn
                node._repr_fn = lambda n: namespace.create_name(n.name, n)
            return self._codegen._gen_python_code(self.nodes, root_module, namespace, verbose=verbose)
        finally:
            for node, fn in old_repr.items():
                node._repr_fn = fn

    def __str__(self):
        placeholder_names = []
        maybe_return_typename = [""]
        node_strs = [node.format_node(placeholder_names) for node in self.nodes]
        s = f"graph({', '.join(placeholder_names)}){maybe_return_typename[0]}:"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    def print_tabular(self):
        """Prints the nodes as a table (opcode, name, target, args, kwargs)."""
        rows = [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        try:
            from tabulate import tabulate
            print(tabulate(rows, headers=headers))
            return
        except ImportError:
            pass
        widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(5)]
        line = "  ".join("-" * w for w in widths)
        print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
        print(line)
        for r in rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())

    def lint(self):
        """Checks the graph: each Node belongs here, its inputs come before it, names are unique, targets of
        get_attr / call_module exist in the owning module."""
        seen_names, seen_values = set(), set()
        for node in self.nodes:
            if node.op not in ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to this Graph, but was "
                                       "used as an argument! If you are copying nodes from another graph, make sure "
                                       "to use ``arg_transform`` on node_copy() to remap values\n{self}")
                if arg not in seen_values:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       "Please check that Nodes in the graph are topologically ordered\n{self}")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen_values.add(node)
        if self.owning_module:
            for node in self.nodes:
                if node.op in ("get_attr", "call_module"):
                    m_itr = self.owning_module
                    for i, atom in enumerate(node.target.split(".")):
                        new_m_itr = getattr(m_itr, atom, None)
                        seen_qualname = ".".join(node.target.split(".")[:i])
                        if new_m_itr is None:
                            raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                               f"{atom} of {seen_qualname}")
                        if node.op == "call_module" and not hasattr(new_m_itr, "forward") and \
                                i == len(node.target.split(".")) - 1:
                            raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen_qualname} does "
                                               "not reference an nn.Module")
                        m_itr = new_m_itr

    def eliminate_dead_code(self, is_impure_node=None):
        """Removes the Nodes nobody uses (impure ones stay); True if any was removed."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def set_codegen(self, codegen):
        self._codegen = codegen

    def on_generate_code(self, make_transformer):
        on_gen_code_old = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(on_gen_code_old)

        @contextlib.contextmanager
        def on_generate_code_context_manager():
            try:
                yield
            finally:
                self._codegen._body_transformer = on_gen_code_old
        return on_generate_code_context_manager()
