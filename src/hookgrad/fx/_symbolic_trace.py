"""torch.fx._symbolic_trace: ``Tracer`` and ``symbolic_trace``. The root's ``forward`` runs on Proxies while
``nn.Module.__call__`` and ``__getattr__`` are patched: a call of a leaf module (hookgrad's own nn modules, not
Sequential) becomes one call_module Node, a parameter read a get_attr Node, and functions marked with ``wrap``
one call_function Node each."""
import builtins
import collections
import copy
import functools
import inspect
import math
import types

from .._tensor import Tensor
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ..utils import _pytree as pytree
from ._compatibility import compatibility
from .graph import Graph, _PyTreeCodeGen, _PyTreeInfo
from .graph_module import GraphModule
from ..primitives import _dispatch
from .node import _side_effectful_functions, map_aggregate
from .proxy import ParameterProxy, Proxy, Scope, ScopeContextManager, TracerBase

__all__ = ["PH", "ProxyableClassMeta", "Tracer", "symbolic_trace", "wrap", "is_fx_tracing"]

from types import FunctionType  # noqa: E402,F401  (torch's module has it; torch_geometric's tracer reads it here)

HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


class ScriptObject:
    """TorchScript's objects (torch._C.ScriptObject): hookgrad has none; tracers test ``isinstance`` with it."""
_orig_module_call = Module.__call__
_orig_module_getattr = Module.__getattr__
_proxyable_classes = {}
_is_fx_tracing_flag = False


def is_fx_tracing():
    """True while ``symbolic_trace`` / ``Tracer.trace`` runs."""
    return _is_fx_tracing_flag


@compatibility(is_backward_compatible=True)
class ProxyableClassMeta(type):
    """A metaclass whose classes, constructed from Proxies while tracing, are recorded as call_function Nodes."""

    def __init__(cls, name, bases, attrs):
        _proxyable_classes.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args, **kwargs):
        instance = cls.__new__(cls)
        if not is_fx_tracing():
            cls.__init__(instance, *args, **kwargs)
            return instance
        found = []

        def check_proxy(a):
            if isinstance(a, Proxy):
                found.append(a)
        map_aggregate(args, check_proxy)
        map_aggregate(kwargs, check_proxy)
        if found:
            return found[0].tracer.create_proxy("call_function", cls, args, kwargs)
        cls.__init__(instance, *args, **kwargs)
        return instance


class PHBase:
    """Object representing an input placeholder to ``concrete_args``."""

    def __repr__(self):
        return "PH"


PH = PHBase()


def _assert_is_none(value, msg):
    assert value is None, msg


def _patch_function(fn, nargs):
    """``fn`` (with *args / **kwargs) as a function of ``nargs`` positional arguments, so that its placeholders
    can be passed positionally."""
    co = fn.__code__
    co_flags = co.co_flags & ~HAS_VARSTUFF
    co_args = dict(co_argcount=nargs, co_posonlyargcount=0, co_kwonlyargcount=0, co_nlocals=co.co_nlocals,
                   co_flags=co_flags)
    new_code = co.replace(**co_args)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


@compatibility(is_backward_compatible=True)
class Tracer(TracerBase):
    """Records a module's (or a function's) ``forward`` as a ``Graph``: ``Tracer().trace(model)``.

    ``autowrap_modules`` (``math`` by default) and ``autowrap_functions`` are recorded as call_function Nodes when
    called on Proxies; ``param_shapes_constant`` makes parameters answer shape queries with real values."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for name, value in (n for m in autowrap_modules for n in m.__dict__.items())
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update({id(f) for f in autowrap_functions})
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root_module_name = ""
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}
        self.node_name_to_scope = {}

    def create_arg(self, a):
        """Also: parameters, buffers and submodules of the root become get_attr Nodes, other tensors are kept as
        ``_tensor_constant<N>`` attributes of the root."""
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for n_, p_ in self.root.named_buffers():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
        elif isinstance(a, Module):
            for n_, p_ in self.root.named_modules():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return self.create_node("call_function", a.__class__, tuple(self.create_arg(e) for e in a), {})
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(a)
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if type(a) in _proxyable_classes:
            i = 0
            while True:
                qualname = f"_{a.__class__.__name__}_constant_{i}"
                if not hasattr(self.root, qualname):
                    break
                i += 1
            setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def get_fresh_qualname(self, prefix):
        qualname = f"{prefix}0"
        if not hasattr(self.root, qualname):
            self.num_calls[prefix] = 0
            return qualname
        i = self.num_calls.get(prefix, 0)
        while True:
            qualname = f"{prefix}{i}"
            i += 1
            if not hasattr(self.root, qualname):
                break
        self.num_calls[prefix] = i
        return qualname

    def is_leaf_module(self, m, module_qualified_name):
        """The standard nn modules (defined in torch.nn, that is hookgrad.nn) are leaves, Sequential is not."""
        from ..nn.modules.container import Sequential
        mod = m.__module__
        return mod.startswith(("torch.nn", "torch.ao.nn", "hookgrad.nn", "hookgrad.ao.nn")) and \
            not isinstance(m, Sequential)

    def path_of_module(self, mod):
        """The qualified name of ``mod`` in the root (NameError when it is not a submodule)."""
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        """A leaf module becomes a call_module Node; any other module is traced through."""
        module_qualified_name = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(module_qualified_name, type(m))) as _scope:
            self.module_stack[_scope.module_path] = (module_qualified_name, _scope.module_type)
            try:
                if not self.is_leaf_module(m, module_qualified_name):
                    ret_val = forward(*args, **kwargs)
                else:
                    ret_val = self.create_proxy("call_module", module_qualified_name, args, kwargs)
            finally:
                self.module_stack.popitem(last=True)
        return ret_val

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A parameter of the root read in forward becomes (one) get_attr Proxy; other values stay."""
        def proxy_for(attr_val, collection, cache):
            for n, p in collection:
                if attr_val is p:
                    if n not in cache:
                        factory = None if not self.param_shapes_constant else \
                            (lambda node: ParameterProxy(self, node, n, attr_val))
                        kwargs = {}
                        if "proxy_factory_fn" in inspect.signature(self.create_proxy).parameters:
                            kwargs["proxy_factory_fn"] = factory
                        cache[n] = self.create_proxy("get_attr", n, (), {}, **kwargs)
                    return cache[n]
            return None
        if isinstance(attr_val, Parameter):
            p = proxy_for(attr_val, self.root.named_parameters(), parameter_proxy_cache)
            if p is not None:
                return p
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            p = proxy_for(attr_val, self.root.named_buffers(), parameter_proxy_cache)
            if p is not None:
                return p
        return attr_val

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        """The placeholders of ``root_fn``'s parameters (``self`` is the root; ``concrete_args`` are fixed)."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        orig_args = list(co.co_varnames)
        names_iter = iter(co.co_varnames)
        args = []
        skip_arg_idx = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip_arg_idx = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        arg_names = [next(names_iter) for _ in range(skip_arg_idx, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got {len(concrete_args)} "
                                   "concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))

        def proxy_placeholder(name):
            return self._proxy_placeholder(name, concrete_args, sig, fn_for_analysis)
        args.extend(proxy_placeholder(name) for name in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(proxy_placeholder("*" + next(names_iter)))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(proxy_placeholder("**" + next(names_iter)))
            root_fn = _patch_function(root_fn, len(args))
        flat_args, in_spec = pytree.tree_flatten(tuple(args))
        if not all(child.is_leaf() for child in in_spec.children_specs):
            # concrete_args with pytree structure: the graph takes the flattened leaves
            self.graph._codegen = _PyTreeCodeGen(_PyTreeInfo(orig_args[:total_args], in_spec, None))

            def flatten_fn(*args):
                tree_args = pytree.tree_unflatten(list(args), in_spec)
                tree_out = root_fn(*tree_args)
                out_args, out_spec = pytree.tree_flatten(tree_out)
                self.graph._codegen.pytree_info = _PyTreeInfo(orig_args[:total_args], in_spec, out_spec)
                return out_args
            return flatten_fn, flat_args
        return root_fn, args

    def _proxy_placeholder(self, name, concrete_args, sig, fn_for_analysis):
        if concrete_args is not None and name in concrete_args:
            cnt = 0

            def replace_ph(x):
                nonlocal cnt
                cnt += 1
                param = sig.parameters[name]
                default = () if param.default is inspect.Parameter.empty else (param.default,)
                out = self.create_proxy("placeholder", f"{name}_{cnt}", default, {})
                if isinstance(x, PHBase):
                    return out
                if type(x) is bool or type(x) in (str, int, float):
                    _assert(out == x, f"{name} has been specialized to have value {x} but got another value")
                elif x is None:
                    self.create_proxy("call_function", _assert_is_none,
                                      (out, f"{name} has been specialized to have value None but got another value"),
                                      {})
                else:
                    import warnings
                    warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to specialized "
                                  "function. It is up to the user to make sure that your inputs match the inputs you "
                                  "specialized the function with.")
                return x
            return pytree.tree_map(replace_ph, concrete_args[name])
        if name[0] == "*":
            default = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=fn_for_analysis.__annotations__.get(name, None))

    def trace(self, root, concrete_args=None):
        """The ``Graph`` of ``root`` (a Module's forward, or a function)."""
        global _is_fx_tracing_flag
        old_flag = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
        try:
            if isinstance(root, Module):
                self.root = root
                fn = getattr(type(root), self.traced_func_name)
                self.root_module_name = root._get_name()
                self.submodule_paths = {mod: name for name, mod in root.named_modules()}
            else:
                self.root = Module()
                fn = root
            self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
            if hasattr(fn, "__code__"):
                code = fn.__code__
                self.graph._co_fields = {"co_name": code.co_name, "co_filename": code.co_filename,
                                         "co_firstlineno": code.co_firstlineno}
            self.tensor_attrs = {}

            def collect_tensor_attrs(m, prefix_atoms):
                for k, v in m.__dict__.items():
                    if isinstance(v, Tensor):
                        self.tensor_attrs[v] = ".".join(prefix_atoms + [k])
                for k, v in m.named_children():
                    collect_tensor_attrs(v, prefix_atoms + [k])
            collect_tensor_attrs(self.root, [])
            if not isinstance(fn, types.FunctionType):
                raise AssertionError(f"Expected FunctionType, got {type(fn)}")
            fn_globals = fn.__globals__
            fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
            parameter_proxy_cache = {}

            @functools.wraps(_orig_module_getattr)
            def module_getattr_wrapper(mod, attr):
                attr_val = _orig_module_getattr(mod, attr)
                return self.getattr(attr, attr_val, parameter_proxy_cache)

            @functools.wraps(_orig_module_call)
            def module_call_wrapper(mod, *args, **kwargs):
                def forward(*args, **kwargs):
                    return _orig_module_call(mod, *args, **kwargs)
                _autowrap_check(patcher, getattr(getattr(mod, "forward", mod), "__globals__", {}),
                                self._autowrap_function_ids)
                return self.call_module(mod, forward, args, kwargs)

            with _Patcher() as patcher:
                patcher.patch_method(Module, "__getattr__", module_getattr_wrapper, deduplicate=False)
                patcher.patch_method(Module, "__call__", module_call_wrapper, deduplicate=False)
                _patch_wrapped_functions(patcher)
                _patch_tensor_operators(patcher)
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                for module in self._autowrap_search:
                    _autowrap_check(patcher, module.__dict__, self._autowrap_function_ids)
                self.create_node("output", "output", (self.create_arg(fn(*args)),), {},
                                 type_expr=fn.__annotations__.get("return", None))
            self.submodule_paths = None
        finally:
            _is_fx_tracing_flag = old_flag
        return self.graph

    def __deepcopy__(self, memo):
        new_tracer = Tracer.__new__(Tracer)
        for k, v in self.__dict__.items():
            new_tracer.__dict__[k] = copy.copy(v) if k == "_autowrap_search" else copy.deepcopy(v, memo)
        return new_tracer


# ---- functions recorded as leaves (wrap) and the patches in place while tracing ----
_wrapped_fns_to_patch = {}      # (id(globals), name) -> the globals dict of the module that called wrap()
_wrapped_methods_to_patch = []


def _find_proxy(*objects_to_search):
    proxy = None

    def find_proxy(x):
        nonlocal proxy
        if isinstance(x, Proxy):
            proxy = x
    map_aggregate(objects_to_search, find_proxy)
    return proxy


def _create_wrapped_func(orig_fn):
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return_proxy = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            return_proxy.node.meta["is_wrapped"] = True
            return return_proxy
        return orig_fn(*args, **kwargs)
    return wrapped


def _create_wrapped_method(cls, name):
    orig_fn = getattr(cls, name)

    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_method", name, args, kwargs)
        return orig_fn(*args, **kwargs)
    return wrapped


class _Patcher:
    """Patches globals and class attributes for the time of a trace, and undoes them in reverse order."""

    def __init__(self):
        self.patches_made = []
        self.visited = set()

    def patch(self, frame_dict, name, new_fn, deduplicate=True):
        new_fn.__fx_already_patched = deduplicate
        if name not in frame_dict and hasattr(builtins, name):
            self.patches_made.append((frame_dict, name, None, "del"))
        elif getattr(frame_dict[name], "__fx_already_patched", False):
            return
        else:
            self.patches_made.append((frame_dict, name, frame_dict[name], "set"))
        frame_dict[name] = new_fn

    def patch_method(self, cls, name, new_fn, deduplicate=True):
        new_fn.__fx_already_patched = deduplicate
        orig_fn = getattr(cls, name)
        if getattr(orig_fn, "__fx_already_patched", False):
            return
        self.patches_made.append((cls, name, cls.__dict__.get(name, _MISSING), "attr"))
        setattr(cls, name, new_fn)

    def visit_once(self, thing):
        idx = id(thing)
        if idx in self.visited:
            return False
        self.visited.add(idx)
        return True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        while self.patches_made:
            where, name, orig, how = self.patches_made.pop()
            if how == "del":
                del where[name]
            elif how == "set":
                where[name] = orig
            elif orig is _MISSING:
                delattr(where, name)
            else:
                setattr(where, name, orig)
        self.visited.clear()


_MISSING = object()


def _patch_wrapped_functions(patcher):
    for (_, name), frame_dict in _wrapped_fns_to_patch.copy().items():
        if name not in frame_dict and hasattr(builtins, name):
            orig_fn = getattr(builtins, name)
        else:
            orig_fn = frame_dict[name]
        patcher.patch(frame_dict, name, _create_wrapped_func(orig_fn))
    for cls, name in _wrapped_methods_to_patch:
        patcher.patch_method(cls, name, _create_wrapped_method(cls, name))


# ``tensor <op> proxy``: PyTorch's Tensor operators hand the call to Proxy.__torch_function__, which records these
# methods; hookgrad's fast operators do not look at __torch_function__, so they are patched while tracing
_TENSOR_OPERATORS = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
                     "__floordiv__": "__floordiv__", "__mod__": "remainder", "__pow__": "pow", "__matmul__": "matmul",
                     "__and__": "__and__", "__or__": "__or__", "__xor__": "__xor__", "__lshift__": "__lshift__",
                     "__rshift__": "__rshift__", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le",
                     "__gt__": "gt", "__ge__": "ge"}


def _tensor_operator(orig, method_name):
    @functools.wraps(orig)
    def op(self, other):
        if isinstance(other, Proxy):
            return other.tracer.create_proxy("call_method", method_name, (self, other), {})
        return orig(self, other)
    return op


def _patch_tensor_operators(patcher):
    for name, method_name in _TENSOR_OPERATORS.items():
        patcher.patch_method(Tensor, name, _tensor_operator(getattr(Tensor, name), method_name))


def _autowrap_check(patcher, frame_dict, function_ids):
    if patcher.visit_once(frame_dict):
        for name, value in frame_dict.items():
            if not name.startswith("_") and callable(value) and id(value) in function_ids:
                patcher.patch(frame_dict, name, _create_wrapped_func(value))


@compatibility(is_backward_compatible=True)
def wrap(fn_or_name):
    """Called at module level (``torch.fx.wrap("f")`` or as ``@torch.fx.wrap``): calls of that module's global
    ``f`` on Proxies are recorded as one call_function Node instead of being traced through."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    fn_name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    f = inspect.currentframe().f_back
    if f.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(f.f_globals), fn_name)] = f.f_globals
    return fn_or_name


@compatibility(is_backward_compatible=True)
def symbolic_trace(root, concrete_args=None):
    """The ``GraphModule`` of ``root`` (a Module or a function) recorded by symbolic tracing.

        >>> gm = torch.fx.symbolic_trace(model)
        >>> print(gm.code)
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)


def _assert(condition, message=""):
    """torch._assert: ``assert condition, message``, recorded as a Node when ``condition`` is a Proxy."""
    if type(condition) is not Tensor and _dispatch.torch_function_objects:
        out = _dispatch.torch_function(_assert, (condition, message), {})
        if out is not NotImplemented:
            return out
    assert condition, message


_assert.__module__ = "hookgrad"
_side_effectful_functions.update((_assert, _assert_is_none))
