"""nn.Parameter and nn.Buffer."""
from .._tensor import Tensor, _init


class Parameter(Tensor):
    """A Tensor that is a module parameter: a leaf that requires grad by default."""

    def __new__(cls, data=None, requires_grad=True):
        import numpy as np
        if data is None:
            data = Tensor._make(np.zeros((0,), np.float32))
        if requires_grad and data._data.dtype.kind != "f":
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

    def __new__(cls, data=None, *, persistent=True):
        import numpy as np
        if data is None:
            data = Tensor._make(np.zeros((0,), np.float32))
        t = Tensor._make(data._data, data.requires_grad, None, 0, data._vc)
        t.persistent = persistent
        t._is_buffer = True
        return t

    def __init__(self, data=None, *, persistent=True):
        pass
