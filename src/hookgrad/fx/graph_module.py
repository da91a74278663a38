"""torch.fx.graph_module: ``GraphModule``, an nn.Module whose ``forward`` is the Python code generated from a
Graph (``gm.code``), holding the submodules, parameters and buffers the graph uses (copied from the root)."""
import copy
import itertools
import linecache

from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .._tensor import Tensor
from ._compatibility import compatibility
from .graph import Graph, _PyTreeCodeGen
from .node import _get_qualified_name, map_arg

__all__ = ["GraphModule", "reduce_graph_module"]

_USER_PRESERVED_ATTRIBUTES_KEY = "_user_preserved_attributes"


class _EvalCacheLoader:
    """Keeps the source of generated forwards for tracebacks and ``inspect.getsource``."""

    def __init__(self):
        self.eval_cache = {}
        self.next_id = itertools.count()

    def cache(self, src, globals):
        key = f"<eval_with_key>.{next(self.next_id)}"
        self.eval_cache[key] = src
        globals_copy = globals.copy()
        globals_copy["__file__"] = key
        globals_copy["__name__"] = key
        globals_copy["__loader__"] = self
        linecache.lazycache(key, globals_copy)
        return key

    def get_source(self, module_name):
        return self.eval_cache.get(module_name)


_loader = _EvalCacheLoader()


def _exec_with_source(src, globals, co_fields=None):
    key = _loader.cache(src, globals)
    exec(compile(src, key, "exec"), globals)


def _forward_from_src(src, globals, co_fields=None):
    globals_copy = globals.copy()
    _exec_with_source(src, globals_copy, co_fields)
    forward_fn = globals_copy["forward"]
    del globals_copy["forward"]
    return forward_fn


class _NodeRef:
    """A Node argument in a pickled graph: the Node's name."""

    def __init__(self, name):
        self.name = name


def _graph_state(graph):
    """The Nodes of ``graph`` as plain data: a function target that is a torch name (``torch.relu``) is kept as
    that name, since hookgrad's public functions are wrappers that pickle cannot find by their qualified name."""
    from .node import _resolve
    nodes = []
    for n in graph.nodes:
        target = n.target
        if callable(target):
            name = _get_qualified_name(target)
            if name.startswith("torch.") and _resolve(name) is target:
                target = ("torch", name)
        ref = (lambda a: _NodeRef(a.name))
        nodes.append((n.op, target, map_arg(n.args, ref), map_arg(n.kwargs, ref), n.name, n.type, n.meta))
    return nodes, graph._codegen


def _graph_from_state(state):
    from .node import _resolve
    nodes, codegen = state
    graph = Graph()
    by_name = {}

    def load(a):
        if isinstance(a, _NodeRef):
            return by_name[a.name]
        if isinstance(a, (tuple, list)) and not hasattr(a, "_fields"):
            return type(a)(load(x) for x in a) if isinstance(a, tuple) else [load(x) for x in a]
        if isinstance(a, dict):
            return {k: load(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(load(a.start), load(a.stop), load(a.step))
        return a
    for op, target, args, kwargs, name, type_expr, meta in nodes:
        if isinstance(target, tuple) and len(target) == 2 and target[0] == "torch":
            target = _resolve(target[1])
        node = graph.create_node(op, target, load(tuple(args)), load(dict(kwargs)), name, type_expr)
        node.meta = meta
        by_name[name] = node
    graph._codegen = codegen
    return graph


def reduce_graph_module(body, graph_state):
    """Unpickles a GraphModule: its attributes and its graph as it was (PyTorch traces the pickled code again)."""
    graph = _graph_from_state(graph_state)
    gm = GraphModule(_CodeOnlyModule(body), graph, class_name=body.get("_graphmodule_cls_name", "GraphModule"))
    for k, v in body.items():
        if not hasattr(gm, k):
            setattr(gm, k, v)
    return gm


def _copy_attr(from_module, to_module, target):
    """Copies ``from_module.<target>`` (a dotted path) to ``to_module``, making plain Modules for the missing
    parents; a tensor that is no Parameter becomes a buffer."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return      # a parent was copied already: the rest came with it
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


class _CodeOnlyModule(Module):
    def __init__(self, body):
        super().__init__()
        self.__dict__ = body


@compatibility(is_backward_compatible=True)
class GraphModule(Module):
    """An nn.Module made from a Graph: ``GraphModule(root, graph)`` copies from ``root`` (a Module, or a dict
    of qualified name -> value) what the graph's get_attr and call_module Nodes use, and compiles the graph's
    code as its ``forward``. Change ``gm.graph`` and call ``gm.recompile()`` to update ``forward``."""

    def __new__(cls, *args, **kwargs):
        # each instance gets a class of its own, which holds its generated forward
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            if isinstance(root, _CodeOnlyModule):
                for k, _ in root.named_children():
                    _copy_attr(root, self, k)
                for k, _ in root.named_buffers():
                    _copy_attr(root, self, k)
                for k, _ in root.named_parameters():
                    _copy_attr(root, self, k)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets_to_copy = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError("Node " + str(node) + " referenced target " + node.target +
                                           " but that target was not provided in ``root``!")
                    targets_to_copy.append(node.target)
            targets_to_copy.sort(key=lambda t: t.count("."))
            for target in targets_to_copy:
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self._tracer_cls = None
        if self.graph._tracer_cls and "<locals>" not in self.graph._tracer_cls.__qualname__:
            self._tracer_cls = self.graph._tracer_cls
        self._tracer_extras = {}
        if self.graph._tracer_extras:
            self._tracer_extras = self.graph._tracer_extras
        self.meta = {}
        self._replace_hooks = []
        self._create_node_hooks = []
        self._erase_node_hooks = []
        self._deepcopy_hooks = []

    __jit_unused_properties__ = ["graph"]

    @property
    def graph(self):
        """The Graph of this module (assigning one recompiles ``forward``)."""
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The Python source of ``forward``."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self):
        """Regenerates ``forward`` from ``self.graph`` (after the graph was changed)."""
        if isinstance(self._graph._codegen, _PyTreeCodeGen):
            self._in_spec = self._graph._codegen.pytree_info.in_spec
            self._out_spec = self._graph._codegen.pytree_info.out_spec
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        self._lineno_map = python_code._lineno_map
        cls = type(self)
        cls.forward = _forward_from_src(self._code, python_code.globals, getattr(self._graph, "_co_fields", {}))
        return python_code

    def to_folder(self, folder, module_name="FxModule"):
        raise NotImplementedError("GraphModule.to_folder is not implemented in hookgrad; pickle the GraphModule "
                                  "(hookgrad.save) or save gm.code and gm.state_dict()")

    def add_submodule(self, target, m):
        """Installs ``m`` at the dotted path ``target`` (making plain Modules for the missing parents)."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                setattr(mod, item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        atoms = target.split(".")
        path, target_submod = atoms[:-1], atoms[-1]
        mod = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, target_submod) or not isinstance(getattr(mod, target_submod), Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self):
        """Removes the submodules no call_module / get_attr Node uses."""
        used = []
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                fullpath = node.target.split(".")
                used.extend(".".join(fullpath[:i]) for i in range(1, len(fullpath)))
                used.append(node.target)
                if node.op == "call_module":
                    try:
                        submod = self.get_submodule(node.target)
                        used.extend(f"{node.target}.{n}" for n, _ in submod.named_modules() if n != "")
                    except AttributeError:
                        pass
        to_delete = [name for name, _ in self.named_modules() if name not in used]
        for name in to_delete:
            self.delete_submodule(name)

    def print_readable(self, print_output=True, include_stride=False, include_device=False, colored=False, **kw):
        """``forward``'s code as a class body (nested GraphModules too); printed and returned."""
        out = self._print_readable(self.__class__.__name__)
        if print_output:
            print(out)
        return out

    def _print_readable(self, module_name):
        src = self._graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
        body = src.split("\n")
        submodule_code = []
        for name, mod in self.named_children():
            if isinstance(mod, GraphModule):
                submodule_code.append(mod._print_readable(name))
        text = f"class {module_name}(torch.nn.Module):\n"
        text += "\n".join(("    " + ln) if ln.strip() else "" for ln in body).rstrip() + "\n"
        for sub in submodule_code:
            text += "\n".join("    " + ln if ln else ln for ln in sub.split("\n")) + "\n"
        return text

    def __reduce__(self):
        dict_without_graph = self.__dict__.copy()
        dict_without_graph["_graphmodule_cls_name"] = self.__class__.__name__
        del dict_without_graph["_graph"]
        return (reduce_graph_module, (dict_without_graph, _graph_state(self._graph)))

    def __deepcopy__(self, memo):
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake_mod = _CodeOnlyModule(copy.deepcopy(self.__dict__, memo))
        GraphModule.__init__(res, fake_mod, fake_mod.__dict__["_graph"], self.__class__.__name__)
        for attr in ("meta", "_replace_hooks", "_create_node_hooks", "_erase_node_hooks", "_deepcopy_hooks"):
            if attr in fake_mod.__dict__:
                setattr(res, attr, copy.deepcopy(fake_mod.__dict__[attr], memo))
        if _USER_PRESERVED_ATTRIBUTES_KEY in fake_mod.__dict__.get("meta", {}):
            for k, v in fake_mod.__dict__["meta"][_USER_PRESERVED_ATTRIBUTES_KEY].items():
                setattr(res, k, v)
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph, self.__class__.__name__)
        res.meta = getattr(self, "meta", {})
        return res

    def __str__(self):
        orig_str = super().__str__()
        reminder = "# To see more debug info, please use `graph_module.print_readable()`"
        return "\n".join([orig_str, self._code, reminder])

    def _replicate_for_data_parallel(self):
        new_gm = self.__copy__()
        new_gm._is_replica = True
        return new_gm
