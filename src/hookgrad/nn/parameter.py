"""nn.Parameter and nn.Buffer."""
from .._tensor import Tensor, _init
from .._dtype import is_floating as _is_floating


class Parameter(Tensor):
    """A Tensor that is a module parameter: a leaf that requires grad by default."""
    _tensor_repr = True         # _printing: prints as tensor(...) (a subclass: its own name, inside Parameter(...))
    _repr_wrap = "Parameter"

    def __new__(cls, data=None, requires_grad=True):
        import numpy as np
        from .._array import default_module
        if data is None:
            data = Tensor._make(default_module().zeros((0,), np.float32))
        if requires_grad and not _is_floating(data._data.dtype) and data._data.dtype.kind != "c":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        self = object.__new__(cls)
        _init(self, data._data, requires_grad, None, 0, data._vc)
        return self

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self._data.copy(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        new = Parameter(Tensor._make(self._data.copy()), self.requires_grad)
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new


def _rebuild_parameter(data, requires_grad):
    return Parameter(Tensor._make(data), requires_grad)


class _BufferMeta(type):
    # isinstance(t, Buffer) is true for plain tensors marked by Buffer(...), as in PyTorch
    def __instancecheck__(self, instance):
        if self is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marker: assigning ``nn.Buffer(t, persistent=...)`` to a module attribute registers a buffer.

    As in PyTorch, the result is a plain Tensor (a detached alias of ``data``) flagged ``_is_buffer``.
    """
    _tensor_repr = True

    def __new__(cls, data=None, *, persistent=True):
        import numpy as np
        from .._array import default_module
        if data is None:
            data = Tensor._make(default_module().zeros((0,), np.float32))
        t = Tensor._make(data._data, data.requires_grad, None, 0, data._vc)
        t.persistent = persistent
        t._is_buffer = True
        return t

    def __init__(self, data=None, *, persistent=True):
        pass


# lazy parameters and buffers (torch.nn.parameter's UninitializedParameter / UninitializedBuffer)
def _uninitialized_use(cls):
    """PyTorch's ValueError for an operation on an uninitialised tensor; names the hookgrad function that
    touched it (the outermost hookgrad frame of the failing call)."""
    import sys
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    f = sys._getframe(2)
    name = None
    while f is not None and f.f_code.co_filename.startswith(root):
        name = f.f_code.co_qualname
        f = f.f_back
    return ValueError(
        f"Attempted to use an uninitialized parameter in {name}. This error happens when you are using a `LazyModule` "
        f"or explicitly manipulating `torch.nn.parameter.{cls.__name__}` objects. When using LazyModules Call "
        "`forward` with a dummy batch to initialize the parameters before calling torch functions")


def _get_lazy_data(self):
    raise _uninitialized_use(type(self))


def _set_lazy_data(self, value):
    self.__dict__["_lazy_data"] = value


class UninitializedTensorMixin:
    """A tensor whose shape is not known yet: every operation on it raises PyTorch's ValueError (its array is
    out of reach of the operations), until :meth:`materialize` gives it a shape and turns it into
    ``cls_to_become``. Its dtype, device, ``requires_grad``, ``size()`` and conversions stay usable."""
    _data = property(_get_lazy_data, _set_lazy_data)

    def materialize(self, shape, device=None, dtype=None):
        """Create the tensor's storage with ``shape`` (uninitialised memory in PyTorch; zeros here)."""
        from .. import _creation as C
        from .._tensor import _check_device
        _check_device(device)
        new = C.empty(shape, dtype=dtype if dtype is not None else self.dtype)
        del self.__dict__["_lazy_data"]
        self.__class__ = self.cls_to_become
        self._data = new._data

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")

    @property
    def dtype(self):
        from .. import _dtype as D
        return D._NP_TO_DT[self.__dict__["_lazy_data"].dtype]

    @property
    def ndim(self):
        return 1

    @property
    def data(self):
        return Tensor._make(self.__dict__["_lazy_data"])

    @data.setter
    def data(self, value):
        raise _uninitialized_use(type(self))

    def size(self, dim=None):
        return Tensor._make(self.__dict__["_lazy_data"]).size(dim)

    def is_floating_point(self):
        return self.__dict__["_lazy_data"].dtype.kind in "fV"

    # methods that check something else before they read the array: PyTorch's ValueError comes first
    def _refuse(name):
        def method(self, *args, **kwargs):
            raise _uninitialized_use(type(self))
        method.__name__ = method.__qualname__ = name
        return method

    for _name in ("requires_grad_", "numpy", "zero_", "fill_", "uniform_", "normal_", "add_", "mul_", "clamp_",
                  "bernoulli_", "exponential_", "random_"):
        locals()[_name] = _refuse(_name)
    del _name, _refuse

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize the parameters "
            "before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __format__(self, spec):
        return format(repr(self), spec)

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))

    # conversions (Module.to/float/double/... before the first call) change the dtype the tensor will have
    def to(self, *args, **kwargs):
        dt = Tensor._make(self.__dict__["_lazy_data"]).to(*args, **kwargs).dtype
        return self._convert(dt)

    def _convert(self, dtype):
        self.__dict__["_lazy_data"] = self.__dict__["_lazy_data"].astype(dtype.np)
        return self

    def float(self, memory_format=None):
        from .._dtype import float32
        return self._convert(float32)

    def double(self, memory_format=None):
        from .._dtype import float64
        return self._convert(float64)

    def half(self, memory_format=None):
        from .._dtype import float16
        return self._convert(float16)

    def cpu(self, memory_format=None):
        return self

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        Tensor._make(self.__dict__["_lazy_data"]).cuda(device)
        return self


def is_lazy(param):
    """True for an UninitializedParameter or UninitializedBuffer."""
    return isinstance(param, UninitializedTensorMixin)


def _uninitialized(cls, requires_grad, device, dtype):
    from .. import _creation as C
    base = C.empty(0, dtype=dtype, device=device)
    self = object.__new__(cls)
    _init(self, base._data, requires_grad, None, 0, base._vc)
    return self


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is inferred later (lazy modules); becomes a :class:`Parameter` when materialised."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return _uninitialized(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, None, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is inferred later (lazy modules); becomes a plain Tensor when materialised."""
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        self = _uninitialized(cls, requires_grad, device, dtype)
        self.persistent = persistent
        self._is_buffer = True
        return self

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, None, self.dtype, self.persistent)
        memo[id(self)] = result
        return result
