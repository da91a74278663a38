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


_ADAPTERS = {
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

    def name(self):
        return self._name

    def __call__(self, *args, **kwargs):
        return self._overloadpacket._call("." + self._overloadname, args, kwargs or {})

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
        if overloads is None or op_name[:2] == "__" and op_name[-2:] == "__" and op_name not in table:
            from ._missing import NotImplementedName
            if self.name == "aten" or op_name[:2] == "__":
                raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'",
                                     name=op_name, obj=self)
            raise NotImplementedName(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}' (hookgrad "
                                     f"implements only the torch.ops.aten operators; see {_PAGE})",
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


def load_library(path):
    """torch.ops.load_library: hookgrad cannot load PyTorch's C++ operator libraries."""
    raise NotImplementedError(f"torch.ops.load_library({path!r}): hookgrad cannot load PyTorch C++ operator "
                              f"libraries (see {_PAGE})")


def import_module(module):
    """torch.ops.import_module: imports the Python module ``module`` (which may register operators)."""
    import importlib
    importlib.import_module(module)


aten = _OpNamespace("aten")


def __getattr__(name):
    """Any other namespace (``torch.ops.quantized``, ``torch.ops.torchvision``...) exists, as in torch,
    but has no operators in hookgrad."""
    if name[:2] == "__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
    ns = _OpNamespace(name)
    setattr(sys.modules[__name__], name, ns)
    return ns
