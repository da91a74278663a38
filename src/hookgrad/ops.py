"""hookgrad.ops: PyTorch's operator namespace (``torch.ops``), not hookgrad's primitives (those are in
``hookgrad.primitives``).

``hookgrad.ops.aten.<op>`` is an :class:`OpOverloadPacket` for every aten operator of torch 2.13 (the names
and overload names are data generated from torch, ``_coverage_names.ATEN_OVERLOADS``): callable, with
``.default`` and the named overloads (``.Tensor``, ``.Scalar``, ...) as :class:`OpOverload` objects,
``overloads()``, ``__name__`` and ``_qualified_op_name`` (``"aten::mm"``). Calling one runs hookgrad's
implementation of the operator: the function of the same name in ``hookgrad``, then the Tensor method,
then ``nn.functional`` (aten's schemas are those of ``torch.<op>``), or an adapter in ``_ADAPTERS`` where
aten's arguments differ (``convolution``, ``_softmax``, ``slice``...). An operator hookgrad lacks raises
NotImplementedError naming it when called; a name torch has no operator for raises torch's AttributeError.

Other namespaces hold the operators defined through ``torch.library`` (hookgrad.library) and those of the one
compiled library hookgrad stands in for: ``load_library`` of torchvision's ``_C`` registers hookgrad's own
implementations of its operators (hookgrad.primitives.vision) as their CPU kernels; any other library raises
OSError, as torch does for a library it cannot load. The registry (``_registry``) keeps, per operator overload,
its schema and its kernels by dispatch key; a call binds its arguments by the schema and runs the Autograd
kernel if one is registered, else the backend kernel (CPU, CompositeExplicitAutograd, CompositeImplicitAutograd).
"""
import sys
import types

_PAGE = "docs/coverage.md"


def _aten_table():
    from ._coverage_names import ATEN_OVERLOADS
    return ATEN_OVERLOADS


# ---- aten operators whose arguments differ from the hookgrad function of the same name

def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, *_flags):
    from .nn import functional as F
    nd = weight.dim() - 2
    if transposed:
        fn = getattr(F, f"conv_transpose{nd}d", None)
        args = (input, weight, bias, stride, padding, output_padding, groups, dilation)
    else:
        fn = getattr(F, f"conv{nd}d", None)
        args = (input, weight, bias, stride, padding, dilation, groups)
    if fn is None:
        raise NotImplementedError(f"aten::convolution with {nd} spatial dimensions is not implemented in "
                                  f"hookgrad yet (see {_PAGE})")
    return fn(*args)


def _softmax(self, dim, half_to_float=False):
    from .nn import functional as F
    return F.softmax(self, dim)


def _log_softmax(self, dim, half_to_float=False):
    from .nn import functional as F
    return F.log_softmax(self, dim)


def _slice(self, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * self.dim()
    index[dim] = slice(start, end, step)
    return self[tuple(index)]


def _max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    from .nn import functional as F
    return F.max_pool2d(self, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def _expand(self, size, *, implicit=False):
    return self.expand(size)


def _to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    return self.to(dtype=dtype if dtype is not None else self.dtype, copy=True)


def _ntuple(v, n):
    v = tuple(v) if isinstance(v, (list, tuple)) else (v,)
    return v * n if len(v) == 1 else v


def _convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                          output_padding, groups, output_mask):
    """aten::convolution_backward: (grad_input, grad_weight, grad_bias), None where ``output_mask`` is False;
    computed by the convolution's own differentiable adjoints (so it has a backward and forward AD)."""
    from .primitives import nn as N
    nd = weight.dim() - 2
    geo = dict(stride=_ntuple(stride, nd), padding=tuple(x for v in _ntuple(padding, nd) for x in (v, v)),
               dilation=_ntuple(dilation, nd), groups=groups)
    gi = gw = gb = None
    if transposed:          # forward: ConvTr(input, weight); grad_output has the output's shape
        if output_mask[0]:
            gi = N.ConvGrad.apply(grad_output, weight, **geo)
        if output_mask[1]:
            gw = N.ConvW.apply(grad_output, input, wshape=tuple(weight.shape), **geo)
    else:
        if output_mask[0]:
            gi = N.ConvTrGrad.apply(grad_output, weight, out_hw=tuple(input.shape[2:]), **geo)
        if output_mask[1]:
            gw = N.ConvW.apply(input, grad_output, wshape=tuple(weight.shape), **geo)
    if output_mask[2]:
        gb = grad_output.sum((0,) + tuple(range(2, grad_output.dim())))
    return gi, gw, gb


def _new_zeros_with_same_feature_meta(self, other, *, self_num_batch_dims=0):
    """aten::_new_zeros_with_same_feature_meta (forward AD's tangent layout): zeros with ``self``'s first
    ``self_num_batch_dims`` sizes, then ``other``'s sizes and strides; ``other``'s storage offset, and a storage of
    ``other``'s storage size per batch element."""
    import hookgrad
    numel = other.untyped_storage().nbytes() // other.element_size()
    sizes, strides = list(other.shape), list(other.stride())
    prod = numel
    for i in range(self_num_batch_dims - 1, -1, -1):
        sizes.insert(0, self.shape[i])
        strides.insert(0, prod)
        prod *= self.shape[i]
    return hookgrad.zeros(prod, dtype=other.dtype).as_strided(sizes, strides, other.storage_offset())


def _has_same_storage_numel(self, other):
    """aten::_has_same_storage_numel: whether the two tensors' storages hold as many elements."""
    return (self.untyped_storage().nbytes() // self.element_size()
            == other.untyped_storage().nbytes() // other.element_size())


def _alias(self):
    """aten::alias: a view of the whole tensor (AliasBackward0)."""
    return self[...]


_ADAPTERS = {
    "alias": _alias,
    "convolution_backward": _convolution_backward,
    "_new_zeros_with_same_feature_meta": _new_zeros_with_same_feature_meta,
    "_has_same_storage_numel": _has_same_storage_numel,
    "convolution": _convolution, "_convolution": _convolution, "_softmax": _softmax,
    "_log_softmax": _log_softmax, "slice": _slice, "max_pool2d_with_indices": _max_pool2d_with_indices,
    "expand": _expand, "_to_copy": _to_copy, "_unsafe_view": lambda self, size: self.reshape(size),
}


def _resolve(name):
    """hookgrad's implementation of aten operator ``name``, or None."""
    if name in _ADAPTERS:
        return _ADAPTERS[name]
    import hookgrad
    from .nn import functional as F
    for space in (hookgrad, hookgrad.Tensor, F):
        fn = getattr(space, name, None)
        if isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)) \
                or type(fn).__name__ == "method_descriptor":
            return fn
    return None


class OpOverloadPacket:
    """``torch.ops.<namespace>.<op>``: an operator with all its overloads (torch._ops.OpOverloadPacket)."""

    def __init__(self, namespace, name, overload_names):
        self._qualified_op_name = f"{namespace}::{name}"
        self.__name__ = name
        self._namespace = namespace
        self._overload_names = overload_names
        self._dir = list(overload_names)
        self._impl = None
        self._overloads = {}

    def overloads(self):
        return list(self._overload_names)

    @property
    def op(self):
        return self.__call__

    _op = op

    def _call(self, overload, args, kwargs):
        if self._namespace != "aten":
            return _dispatch(self._namespace, self.__name__, overload[1:] or None, args, kwargs)
        fn = self._impl
        if fn is None:
            fn = self._impl = _resolve(self.__name__)
            if fn is None:
                raise NotImplementedError(f"{self._qualified_op_name}{overload} (torch.ops.{self._namespace}."
                                          f"{self.__name__}) is not implemented in hookgrad yet (see {_PAGE})")
        return fn(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self._call("", args, kwargs or {})

    def __getattr__(self, key):
        if key[:2] == "__" or key not in self.__dict__.get("_overload_names", ()):
            raise AttributeError(f"The underlying op of '{self}' has no overload name '{key}'", name=key, obj=self)
        ov = self._overloads.get(key)
        if ov is None:
            ov = self._overloads[key] = OpOverload(self, key)
            self.__dict__[key] = ov
        return ov

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._overload_names))

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._namespace}.{self.__name__}')>"

    def __str__(self):
        return f"{self._namespace}.{self.__name__}"

    def __reduce__(self):
        return _packet, (self._namespace, self.__name__)


class OpOverload:
    """``torch.ops.aten.<op>.<overload>``: one schema of an operator (torch._ops.OpOverload)."""

    def __init__(self, packet, overload):
        self._overloadpacket = packet
        self._opname = packet.__name__
        self._overloadname = overload
        self._namespace = packet._namespace
        self.__name__ = f"{packet.__name__}.{overload}"
        self._name = packet._qualified_op_name + ("" if overload == "default" else f".{overload}")
        self.__qualname__ = self._name
        self.tags = ()

    overloadpacket = property(lambda self: self._overloadpacket)
    op = property(lambda self: self.__call__)
    _op = op

    namespace = property(lambda self: self._namespace)

    @property
    def _schema(self):
        op = _registry.get(f"{self._namespace}::{self._opname}", {}).get(self._overloadname)
        if op is None:
            return FunctionSchema(f"{self._namespace}::{self._opname}", "" if self._overloadname == "default"
                                  else self._overloadname, "")
        return op.schema

    def name(self):
        return self._name

    def __call__(self, *args, **kwargs):
        if _redirect:
            fn = _redirect.get(self._name)
            if fn is not None:      # inside a dispatch mode's __torch_dispatch__ for this op: the op below the mode
                return fn(*args, **kwargs)
        return self._overloadpacket._call("." + self._overloadname, args, kwargs or {})

    # an operator is its qualified name: the overload a dispatch mode is handed (utils._python_dispatch) equals,
    # and hashes as, torch.ops.<ns>.<op>.<overload> (policies compare ops; selective checkpointing keys on them)
    def __eq__(self, other):
        return isinstance(other, OpOverload) and other._name == self._name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f"<OpOverload(op='{self._namespace}.{self._opname}', overload='{self._overloadname}')>"

    def __str__(self):
        return f"{self._namespace}.{self._opname}.{self._overloadname}"

    def __reduce__(self):
        return getattr, (_packet(self._namespace, self._opname), self._overloadname)


class _OpNamespace(types.ModuleType):
    """``torch.ops.<namespace>`` (torch._ops._OpNamespace): its operators appear as attributes. hookgrad
    knows the operators of ``aten``; reading an operator of another namespace raises an AttributeError
    (so ``hasattr`` probes for optional libraries' operators are False)."""

    def __init__(self, name):
        super().__init__("torch.ops." + name)
        self.name = name
        self._dir = []

    def __getattr__(self, op_name):
        table = _aten_table() if self.name == "aten" else {}
        overloads = table.get(op_name)
        if overloads is None and self.name != "aten":
            defined = _registry.get(f"{self.name}::{op_name}")
            if defined:
                overloads = " ".join(defined)
        if overloads is None or op_name[:2] == "__" and op_name[-2:] == "__" and op_name not in table:
            from ._missing import NotImplementedName
            if self.name == "aten" or op_name[:2] == "__":
                raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'",
                                     name=op_name, obj=self)
            raise NotImplementedName(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}' (hookgrad "
                                     f"knows the torch.ops.aten operators and those defined through torch.library "
                                     f"or a library hookgrad stands in for; see {_PAGE})",
                                     name=op_name, obj=self,
                                     torch_name=f"torch.ops.{self.name}.{op_name}")
        packet = OpOverloadPacket(self.name, op_name, tuple(overloads.split()))
        setattr(self, op_name, packet)
        self._dir.append(op_name)
        return packet

    def __repr__(self):
        return f"<module 'torch.ops.{self.name}' from 'torch.ops'>"


def _packet(namespace, name):
    return getattr(getattr(sys.modules[__name__], namespace), name)


loaded_libraries = set()


def _is_torchvision_c(path):
    """torchvision's operator library: ``torchvision/_C.so`` (or ``_C.<abi>.so`` / ``_C.pyd``)."""
    import os
    parent, base = os.path.split(os.path.abspath(path))
    return os.path.basename(parent) == "torchvision" and (base == "_C.so" or base.startswith("_C.")) \
        and base.endswith((".so", ".pyd", ".dylib"))


def load_library(path):
    """torch.ops.load_library: hookgrad runs no compiled libtorch code, so it loads a library only where
    it has its own implementation of the operators the library registers: torchvision's ``_C`` (nms,
    roi_align, roi_pool, ps_roi_align, ps_roi_pool, deform_conv2d and their backward operators, from
    ``hookgrad.primitives.vision``). Any other library raises OSError, as torch does for a library it
    cannot load (so ``try: ... except OSError`` fallbacks in packages take their pure-Python path)."""
    import os
    path = os.fspath(path)
    if not _is_torchvision_c(path) or not os.path.exists(path):
        why = "no such file" if not os.path.exists(path) else \
            "hookgrad cannot load compiled libtorch extensions (it implements torchvision's _C operators only)"
        raise OSError(f"Could not load this library: {path} ({why})")
    real = os.path.realpath(path)
    if real not in loaded_libraries:
        _register_torchvision()
        loaded_libraries.add(real)


def _register_torchvision():
    from .primitives import vision
    for name, (schema, fn) in vision.OPERATORS.items():
        if f"torchvision::{name}" not in _registry:
            _define("torchvision", schema, owner="torchvision/_C")
        _set_kernel("torchvision", name, "CPU", fn)


# ---- operators defined from Python (torch.library) or by a library hookgrad stands in for

class FunctionSchema:
    """A parsed operator schema (the few fields of torch._C.FunctionSchema that callers read)."""

    def __init__(self, name, overload_name, text):
        self.name, self.overload_name, self._text = name, overload_name, text

    @property
    def arguments(self):
        args = self.__dict__.get("_args")
        if args is None:            # parsed once (every call with keywords or omitted defaults reads it)
            text = self._text.split("(", 1)[1].rsplit(") ->", 1)[0] if "(" in self._text else ""
            args = self._args = [SimpleArg(a) for a in _split_args(text)]
        return args

    def __str__(self):
        return self._text

    __repr__ = __str__


class SimpleArg:
    def __init__(self, text):
        text = text.strip()
        self.kwarg_only = False
        head, _, default = text.partition("=")
        typ, _, name = head.strip().rpartition(" ")
        self.type, self.name = typ, name
        self.default_value = default or None

    def __repr__(self):
        return f"{self.type} {self.name}"


def _split_args(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip() and cur.strip() != "*":
        out.append(cur)
    return [a for a in out if a.strip() != "*"]


class _Operator:
    """One overload of a defined operator: its schema, its kernels by dispatch key, its fake."""
    __slots__ = ("ns", "name", "overload", "schema", "kernels", "fake", "owner", "autograd")

    def __init__(self, ns, name, overload, schema, owner):
        self.ns, self.name, self.overload, self.schema, self.owner = ns, name, overload, schema, owner
        self.kernels, self.fake, self.autograd = {}, None, None


_registry = {}          # "ns::name" -> {overload name: _Operator}
_pending = {}           # kernels registered before their operator's definition: ("ns::name", overload) -> {key: fn}
_BACKEND_KEYS = ("CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd")
_AUTOGRAD_KEYS = ("Autograd", "AutogradCPU", "CompositeImplicitAutograd")


def _parse_name(name):
    """'foo' / 'foo.out' / 'ns::foo.out' -> (name, overload name: 'default' when none)."""
    name = name.split("::")[-1]
    base, _, ov = name.partition(".")
    return base, ov or "default"


def _define(ns, schema, owner=None):
    """Define ``schema`` ("name.overload(args) -> ret") in namespace ``ns``; returns the name as torch's
    Library.define does. A name defined twice raises torch's RuntimeError."""
    head = schema.split("(", 1)[0].strip()
    if "::" in head:
        ns2, head = head.split("::", 1)
        if ns2 != ns:
            raise ValueError(f"Explicitly provided namespace ({ns2}) in schema string does not match namespace "
                             f"of enclosing TORCH_LIBRARY_FRAGMENT block ({ns}).")
    name, ov = _parse_name(head)
    if not name.isidentifier() or "(" not in schema or "->" not in schema:
        raise RuntimeError(f"Error parsing schema: {schema!r}")
    qual = f"{ns}::{name}"
    text = f"{ns}::{schema.strip()}"
    ops = _registry.setdefault(qual, {})
    if ov in ops:
        old = ops[ov]
        raise RuntimeError(f"Tried to register an operator ({text}) with the same name and overload name multiple "
                           f"times. Each overload's schema should only be registered with a single call to def(). "
                           f"Duplicate registration: {owner}. Original registration: {old.owner}")
    op = ops[ov] = _Operator(ns, name, ov, FunctionSchema(qual, "" if ov == "default" else ov, text), owner)
    op.kernels.update(_pending.pop((qual, ov), {}))
    _refresh(ns, name)
    return head


def _undefine(ns, name, overload):
    ops = _registry.get(f"{ns}::{name}")
    if ops is not None:
        ops.pop(overload, None)
        if not ops:
            del _registry[f"{ns}::{name}"]
    _refresh(ns, name)


def _refresh(ns, name):
    """Drop the cached packet torch.ops.<ns>.<name> so the next read sees the current overloads."""
    space = sys.modules[__name__].__dict__.get(ns)
    if space is not None and name in vars(space):
        delattr(space, name)
        if name in space._dir:
            space._dir.remove(name)


def _lookup(ns, name, overload):
    return _registry.get(f"{ns}::{name}", {}).get(overload)


def _set_kernel(ns, name, key, fn, overload=None):
    """Register kernel ``fn`` for dispatch key ``key`` ('' = CompositeImplicitAutograd); returns the previous one."""
    if overload is None:
        name, overload = _parse_name(name)
    key = key or "CompositeImplicitAutograd"
    op = _lookup(ns, name, overload)
    table = op.kernels if op is not None else _pending.setdefault((f"{ns}::{name}", overload), {})
    old = table.get(key)
    if fn is None:
        table.pop(key, None)
    else:
        table[key] = fn
    return old


# The dispatch modes (utils._python_dispatch): while a mode runs __torch_dispatch__ for an operator, calling that
# operator's overload runs what is below the mode: ``_redirect`` maps its qualified name to that. ``_mode_dispatch[0]``,
# set while a mode is active, runs the backend kernel of a defined operator through the mode: fn(overload, kernel, args).
_redirect = {}
_mode_dispatch = [None]


def _run_backend(op, args):
    """The backend kernel of defined operator ``op`` on ``args``, through the active dispatch mode if any."""
    kernel = _backend_kernel(op)
    hook = _mode_dispatch[0]
    if hook is not None:
        return hook(getattr(_packet(op.ns, op.name), op.overload), kernel, args)
    return kernel(*args)


def _backend_kernel(op):
    for key in _BACKEND_KEYS:
        fn = op.kernels.get(key)
        if fn is not None:
            return fn
    raise NotImplementedError(
        f"Could not run '{op.ns}::{op.name}' with arguments from the 'CPU' backend. This could be because the "
        f"operator doesn't exist for this backend, or was omitted during the selective/custom build process (if "
        f"using custom build). '{op.ns}::{op.name}' is only available for these backends: "
        f"[{', '.join(sorted(op.kernels)) or 'none'}].")


def _dispatch(ns, name, overload, args, kwargs):
    ops = _registry.get(f"{ns}::{name}")
    if not ops:
        raise RuntimeError(f"{ns}::{name}: the operator was deleted (its Library was destroyed)")
    if overload is None:
        op = ops.get("default") or next(iter(ops.values()))
    else:
        op = ops.get(overload)
        if op is None:
            raise RuntimeError(f"{ns}::{name}.{overload}: no such overload")
    if kwargs or len(args) < len(op.schema.arguments):
        args = _bind(op, args, kwargs)
    for key in ("Autograd", "AutogradCPU"):
        fn = op.kernels.get(key)
        if fn is not None:
            return fn(*args)
    return _run_backend(op, args)


def _bind(op, args, kwargs):
    """The arguments in schema order, as PyTorch hands them to a Python kernel: keywords placed by the schema's
    names, omitted ones filled from its defaults, then trailing arguments equal to their defaults dropped."""
    import ast
    out, defaults = list(args), []
    kwargs = dict(kwargs)
    schema_args = op.schema.arguments
    for a in schema_args[len(args):]:
        if a.name in kwargs:
            out.append(kwargs.pop(a.name))
        elif a.default_value is not None:
            d = a.default_value.strip()
            try:
                out.append(ast.literal_eval(d))
            except (ValueError, SyntaxError):
                out.append(d)
        else:
            raise RuntimeError(f"{op.ns}::{op.name}() is missing value for argument '{a.name}'. Declaration: "
                               f"{op.schema}")
    if kwargs:
        raise RuntimeError(f"Unknown keyword argument '{next(iter(kwargs))}' for operator '{op.ns}::{op.name}'. "
                           f"Schema: {op.schema}")
    for a in schema_args:
        d = a.default_value
        if d is None:
            defaults.append(None)
            continue
        try:
            defaults.append(ast.literal_eval(d.strip()))
        except (ValueError, SyntaxError):
            defaults.append(d.strip())
    while out and len(out) <= len(defaults) and schema_args[len(out) - 1].default_value is not None \
            and type(out[-1]) in (int, float, bool, str, type(None)) and out[-1] == defaults[len(out) - 1]:
        out.pop()
    return tuple(out)


def import_module(module):
    """torch.ops.import_module: imports the Python module ``module`` (which may register operators)."""
    import importlib
    importlib.import_module(module)


aten = _OpNamespace("aten")
# torch.ops.profiler: the record_function entry points PyTorch registers as operators (legacy and new)
profiler = _OpNamespace("profiler")
from .autograd.profiler import _record_function_enter, _record_function_exit  # noqa: E402
profiler._record_function_enter = profiler._record_function_enter_new = _record_function_enter
profiler._record_function_exit = _record_function_exit


def __getattr__(name):
    """Any other namespace (``torch.ops.quantized``, ``torch.ops.torchvision``...) exists, as in torch,
    but has no operators in hookgrad."""
    if name[:2] == "__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
    ns = _OpNamespace(name)
    setattr(sys.modules[__name__], name, ns)
    return ns
