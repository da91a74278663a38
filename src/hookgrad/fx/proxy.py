"""torch.fx.proxy: ``Proxy``, the stand-in value symbolic tracing passes through the code, which records each
operation done on it as a Node (operators as ``call_function`` on ``operator.*``, attribute reads as
``getattr``, method calls as ``call_method``, hookgrad functions through ``__torch_function__``), and
``TracerBase``, which turns values into Node arguments."""
import bisect
import collections
import copy
import dis
import inspect
import operator

from .._tensor import Tensor
from .. import _dtype
from ..primitives import _dispatch
from ._compatibility import compatibility
from .graph import Graph, magic_methods, reflectable_magic_methods
from .node import Node, map_aggregate

__all__ = ["TracerBase", "GraphAppendingTracer", "TraceError", "Proxy", "Attribute", "ParameterProxy", "Scope",
           "ScopeContextManager"]


@compatibility(is_backward_compatible=False)
class Scope:
    """The module being traced: its path (``layer1.0``) and type."""

    def __init__(self, module_path, module_type):
        self.module_path = module_path
        self.module_type = module_type


@compatibility(is_backward_compatible=False)
class ScopeContextManager:
    """Sets the tracer's scope for the time of a module call."""

    def __init__(self, scope, current_scope):
        self._prev_scope = copy.copy(scope)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self):
        return self._scope

    def __exit__(self, *args):
        self._scope.module_path = self._prev_scope.module_path
        self._scope.module_type = self._prev_scope.module_type


@compatibility(is_backward_compatible=True)
class TracerBase:
    graph: Graph
    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"
    scope: Scope
    module_stack: collections.OrderedDict
    node_name_to_scope: dict

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        """Makes a Node in ``self.graph`` (with the scope and module stack in its ``meta``)."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        scope = getattr(self, "scope", None)
        if scope is not None:
            self.node_name_to_scope[node.name] = (scope.module_path, scope.module_type)
        stack = getattr(self, "module_stack", None)
        if stack:
            node.meta["nn_module_stack"] = copy.copy(stack)
        return node

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        """A Proxy over a new Node whose arguments are ``create_arg(args)`` and ``create_arg(kwargs)``."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        if not isinstance(args_, tuple) or not isinstance(kwargs_, dict):
            raise AssertionError("create_arg must return a tuple for args and a dict for kwargs")
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if self.record_stack_traces and not node.stack_trace:
            import traceback
            node.stack_trace = "".join(traceback.format_stack()[:-2])
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def _find_user_frame(self):
        return inspect.currentframe()

    def create_arg(self, a):
        """``a`` as a Node argument: Proxies become their Nodes, containers are mapped, constants stay."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return type(a)(*[self.create_arg(elem) for elem in a])
            return type(a)([self.create_arg(elem) for elem in a])
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            r = {}
            for k, v in a.items():
                k = self.create_arg(k)

                def no_node(arg):
                    if isinstance(arg, Node):
                        raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got "
                                           f"key: {k}")
                map_aggregate(k, no_node)
                r[k] = self.create_arg(v)
            return r
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, (str, int, float, bool, complex, _dtype.dtype, Tensor)) or a is None or a is ...:
            return a
        import hookgrad
        if isinstance(a, (hookgrad.device, hookgrad.memory_format, hookgrad.layout)) or type(a) is type:
            return a
        import enum
        if isinstance(a, enum.Enum):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop or"
                         " as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a more "
                         "detailed explanation of what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj):
        return Attribute(obj, "keys")()


@compatibility(is_backward_compatible=True)
class GraphAppendingTracer(TracerBase):
    """The tracer of a Proxy made over a Node by hand: new Nodes go to that Node's graph."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}


@compatibility(is_backward_compatible=False)
def assert_fn(x):
    assert x


@compatibility(is_backward_compatible=True)
class TraceError(ValueError):
    pass


@compatibility(is_backward_compatible=True)
class Proxy:
    """A value under symbolic tracing: what is done to it is recorded as Nodes of ``tracer.graph``.

    Control flow that depends on it (``if x.sum() > 0``), iterating it without a known length and ``len(x)``
    cannot be recorded: they raise TraceError / RuntimeError, as in PyTorch."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node
        self._count()

    def _count(self):
        # hookgrad's public functions look for __torch_function__ only while a Proxy lives (primitives/_dispatch)
        self.__dict__["_fx_counted"] = True
        _dispatch.torch_function_objects += 1

    def __del__(self):
        if self.__dict__.get("_fx_counted"):
            self.__dict__["_fx_counted"] = False
            try:
                _dispatch.torch_function_objects -= 1
            except (AttributeError, TypeError):     # interpreter shutdown: the module is gone
                pass

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__") or k == "_fx_counted":
            raise AttributeError(k)     # copy, pickle and numpy probe these: no Node for them
        return Attribute(self, k)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_fx_counted"}

    def __setstate__(self, d):
        self.__dict__ = dict(d)
        self._count()

    def __deepcopy__(self, memo):
        new = Proxy.__new__(type(self))
        for k, v in self.__dict__.items():
            if k != "_fx_counted":
                new.__dict__[k] = copy.deepcopy(v, memo)
        new._count()
        return new

    def __copy__(self):
        new = Proxy.__new__(type(self))
        new.__dict__.update(self.__getstate__())
        new._count()
        return new

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        frame = inspect.currentframe()
        calling_frame = frame.f_back
        insts = list(dis.get_instructions(calling_frame.f_code))
        inst = insts[bisect.bisect_left(insts, calling_frame.f_lasti, key=lambda x: x.offset)]
        if inst.opname == "UNPACK_SEQUENCE":     # ``a, b = proxy``: as many getitem Nodes
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __abs__(self):
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self):
        if self.tracer.trace_asserts:
            frame = inspect.currentframe().f_back
            insts = list(dis.get_instructions(frame.f_code))
            for i, inst in enumerate(insts):
                if inst.offset == frame.f_lasti:
                    nxt = insts[i + 1] if i + 1 < len(insts) else None
                    if nxt is not None and nxt.opname == "LOAD_ASSERTION_ERROR":
                        self.tracer.create_proxy("call_function", assert_fn, (self,), {})
                        return True
                    break
        return self.tracer.to_bool(self)

    def keys(self):
        return self.tracer.keys(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers = {}

        def find_tracer(a):
            if isinstance(a, cls):
                tracers[a.tracer] = None
        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers.keys())} while trying to trace "
                               f"operations {orig_method}")
        tracer = next(iter(tracers.keys()))
        method = _tensor_method_name(orig_method)
        if method is not None:      # torch.Tensor.view(proxy, ...)
            return tracer.create_proxy("call_method", method, args, kwargs)
        name = getattr(orig_method, "__name__", "")
        args, kwargs = _torch_layout(orig_method, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs,
                                   name=tracer.graph._target_to_str(name))


_TENSOR_METHODS = {}


def _tensor_method_name(fn):
    """The name under which ``fn`` is a method of Tensor, or None."""
    if not _TENSOR_METHODS:
        for k in dir(Tensor):
            v = getattr(Tensor, k, None)
            if callable(v) and not isinstance(v, type):
                _TENSOR_METHODS.setdefault(id(v), (k, v))
    hit = _TENSOR_METHODS.get(id(fn))
    return hit[0] if hit is not None and hit[1] is fn else None


def _torch_layout(fn, args, kwargs):
    """nn.functional's Python functions hand PyTorch's ``__torch_function__`` their arguments in a fixed way
    (``relu(x)`` arrives as ``(x,), {inplace: False}``): the same here, so that the graphs are torch's."""
    from ._torch_names import F_LAYOUTS
    if getattr(fn, "__module__", None) != "hookgrad.nn.functional":
        return args, kwargs
    layout = F_LAYOUTS.get(fn.__name__)
    if layout is None:
        return args, kwargs
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return args, kwargs
    bound.apply_defaults()
    values = bound.arguments
    pos, kw = layout.split("|")
    try:
        new_args = tuple(values[p] for p in pos.split())
        new_kwargs = {}
        for item in kw.split():
            k, _, v = item.partition("=")
            new_kwargs[k] = values[v or k]
    except KeyError:
        return args, kwargs
    return new_args, new_kwargs


@compatibility(is_backward_compatible=True)
class Attribute(Proxy):
    """``proxy.attr``: a ``getattr`` Node made only when the value is used (a call makes a call_method)."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None
        self._count()

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


@compatibility(is_backward_compatible=False)
class ParameterProxy(Proxy):
    """A Proxy of a parameter (a get_attr Node) that answers shape, size(), dim() and ndim with the real values."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        if not isinstance(param, Tensor):
            raise AssertionError(f"Expected Parameter, got {type(param)}")
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


def _scope(method):
    def impl(*args, **kwargs):
        tracer = args[0].tracer
        return tracer.create_proxy("call_function", getattr(operator, method), args, kwargs)
    impl.__name__ = method
    setattr(Proxy, f'__{method.strip("_")}__', impl)


for _method in magic_methods:
    _scope(_method)


def _define_reflectable(orig_method_name):
    method_name = f'__r{orig_method_name.strip("_")}__'

    def impl(self, rhs):
        return self.tracer.create_proxy("call_function", getattr(operator, orig_method_name), (rhs, self), {})
    impl.__name__ = method_name
    impl.__qualname__ = method_name
    setattr(Proxy, method_name, impl)


for _name in reflectable_magic_methods:
    _define_reflectable(_name)
del _method, _name
