"""Tensor: a NumPy array plus what autograd needs (requires_grad, grad, grad_fn, hooks).

Arithmetic and other methods are installed by ``hookgrad.primitives`` (each op lives with its gradient), and the
autograd entry points (``backward``, ``_grad_accumulator``) by ``hookgrad.autograd``: this file holds the state
and the hook registration methods, and imports nothing from autograd (it sits below it).
"""
import os as _os
import sys
import threading
import warnings
import weakref as _weakref

import numpy as np

from . import _array
from . import _layout
from . import _dtype as D
from .utils.hooks import add_hook, HookDict

_CPP_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "int16": "short int",
              "int8": "signed char", "uint8": "unsigned char", "bool": "bool", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
_SAME = object()
_op_hooks = HookDict()          # autograd.op_hooks' registry, kept here: Tensor.detach reports to it
_op_hooks_detach = [None]       # set by autograd.op_hooks: fn(tensor, detached)
_INPLACE_DETACHED = [False]     # set once some non-leaf tensor was detached in place (detach_)
_NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


class Size(tuple):
    """torch.Size: a tuple that prints as ``torch.Size([2, 3])``."""
    __slots__ = ()

    def __repr__(self):
        return f"torch.Size([{', '.join(str(s) for s in self)}])"

    __str__ = __repr__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __reduce__(self):
        return (Size, (tuple(self),))


class device:
    """Only 'cpu' exists in hookgrad; the class mirrors torch.device for API compatibility."""
    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        if ":" in type:
            type, idx = type.split(":")
            index = int(idx)
        self.type = type
        self.index = index

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    # ``with torch.device("meta"):`` makes it the default device of the factories inside, as in PyTorch
    def __enter__(self):
        _DEVICE_STACK.append(_array.default_module())
        set_default_device(self)
        return self

    def __exit__(self, *exc):
        _array.set_default_module(_DEVICE_STACK.pop())


_DEVICE_STACK = []
_CPU = device("cpu")


def get_default_device():
    """The device factory functions use by default: the device of the default array module."""
    m = _array.default_module()
    return _CPU if m is np else _device_of(m.zeros(()))


def set_default_device(device):
    """Tensors made from nothing go to ``device`` from now on (None: the CPU); PyTorch's error for a device
    hookgrad does not have."""
    _array.set_default_module(np if device is None else _check_device(device))


def _check_device(d):
    """The array module of device ``d`` (None for None); raises PyTorch's error for a device hookgrad lacks
    ("cuda" without CuPy and a GPU: "Torch not compiled with CUDA enabled"). An int is a CUDA ordinal, as in
    PyTorch. The CPU's module is the default module, unless that is a device's (then NumPy)."""
    if d is None:
        return None
    if type(d) is str and d == "cpu":
        return _cpu_module()
    dv = d if isinstance(d, device) else device("cuda", d) if isinstance(d, int) else device(str(d))
    if dv.type == "cpu":
        return _cpu_module()
    m = _array.device_module(dv.type) if (dv.type == "cuda" and (dv.index or 0) == 0) or dv.type == "meta" else None
    if m is None:
        from ._errors import no_device
        raise no_device(dv)
    return m


def _cpu_module():
    m = _array.default_module()
    return m if _array.device_type_of_module(m) == "cpu" else np


_CUDA0 = device("cuda", 0)
_META = device("meta")


def _device_of(a):
    """The torch.device of array ``a``."""
    if type(a) is np.ndarray:
        return _CPU
    k = _array.device_type(a)
    return _CPU if k == "cpu" else _CUDA0 if k == "cuda" else _META if k == "meta" else device(k, 0)



_warned_scalar_with_grad = False


def _warn_scalar_with_grad():
    """float(t) on a tensor requiring grad warns once per process, as PyTorch (TORCH_WARN_ONCE)."""
    global _warned_scalar_with_grad
    _warned_scalar_with_grad = True
    warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                  "Consider using tensor.detach() first.", UserWarning, stacklevel=3)


class _GradState(threading.local):
    """The thread's grad modes (autograd.grad_mode switches them; kept here, below autograd, because a few
    Tensor methods depend on them: ``numpy()`` of a tensor requiring grad is allowed under no_grad)."""

    def __init__(self):
        self.enabled = True         # grad mode
        self.inference = False      # inference mode
        self.multithreading = True
        self.view_replay = False    # _force_original_view_tracking


_grad_state = _GradState()


class Tensor:
    """A multi-dimensional array with autograd support, API-compatible with torch.Tensor."""
    __slots__ = ("_data", "_requires_grad", "grad_fn", "_output_nr", "_vc", "__weakref__", "__dict__")
    # rarely-set state lives in the instance __dict__ only once set; these are the defaults
    _grad = None
    _post_accumulate_grad_hooks = None
    _base = None
    _grad_acc = None
    _retains_grad = False
    _view_fn = None
    _creation = None          # views: "no_grad" / "inference" when made there (PyTorch's CreationMeta)
    _bits = 0                 # PyTorch's conjugate (1) and negative (2) bits, as metadata (primitives/complex.py)
    _lazy_rg = False          # views compute requires_grad (PyTorch: own flag, grad_fn or the base's)
    _inference = False        # an inference tensor: allocated in inference mode (torch.is_inference)
    _tensor_repr = True       # _printing: prints as tensor(...) (read from a class's own dict: subclasses print their name)

    __array_priority__ = 1000

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # NOTE: hookgrad keeps a tensor's array in the slot ``_data``; torch has no such attribute, and subclasses
        # written for torch often store their own ``self._data`` (a wrapped tensor). A subclass defined outside
        # hookgrad gets ``_user_data``: what its own code assigns and reads is kept apart from the slot.
        if not cls.__module__.startswith("hookgrad") and "_data" not in cls.__dict__:
            cls._data = _user_data

    def __new__(cls, *args, **kwargs):
        # the legacy constructor torch.Tensor(data) / torch.Tensor(2, 3) / torch.Tensor(tensor) (an alias), built
        # here as PyTorch does: a subclass's __init__ (``super().__init__()``) finds the tensor made
        self = object.__new__(cls)
        if args and isinstance(args[0], np.ndarray) and kwargs.get("_internal"):
            return self
        try:
            _legacy_init(self, args)
        except (TypeError, ValueError):
            if cls is Tensor:
                raise
            _legacy_init(self, ())      # a subclass's own arguments: its __init__ makes what it needs
        return self

    def __init__(self, *args, **kwargs):
        pass

    # NOTE: the flag lives in the slot ``_requires_grad``: code inside hookgrad reads and writes the slot
    # (a property costs ~4x a slot read on CPython 3.11, and ops read the flag of every input); the public
    # property checks what a user sets, as PyTorch does
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        _set_requires_grad(self, value)

    @requires_grad.deleter
    def requires_grad(self):
        raise RuntimeError("requires_grad must be a bool")

    # NOTE: no __delattr__ (nor __setattr__): defining either sends every attribute assignment of every tensor
    # through a Python-level slot (~1 us more per op). PyTorch's deletion errors come from descriptors instead.
    @property
    def _backward_hooks(self):
        """The tensor's gradient hooks (a HookDict once one is registered), kept in the instance __dict__."""
        return self.__dict__.get("_backward_hooks")

    @_backward_hooks.setter
    def _backward_hooks(self, value):
        self.__dict__["_backward_hooks"] = value

    @_backward_hooks.deleter
    def _backward_hooks(self):
        raise RuntimeError("Deletion of _backwards_hooks not allowed!")

    @property
    def _grad_fn(self):
        return self.grad_fn

    @_grad_fn.deleter
    def _grad_fn(self):
        raise RuntimeError("Deletion of _grad_fn not allowed. Detach tensor instead!")

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, **kwargs):
        """torch.Tensor._make_subclass: an instance of ``cls`` (a Tensor subclass, its __init__ not called) over
        ``data``'s memory and version counter, a leaf that requires grad if ``require_grad``."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                            "possible. Make sure your class inherits from Tensor.")
        t = object.__new__(cls)
        t._data = data._data
        t._requires_grad = False
        t.grad_fn = None
        t._output_nr = 0
        t._vc = data._vc
        if require_grad:
            t.requires_grad_(True)
        return t

    @staticmethod
    def _make_wrapper_subclass(cls, size, strides=None, storage_offset=None, memory_format=None, dtype=None,
                               layout=None, device=None, pin_memory=False, requires_grad=False,
                               dispatch_sizes_strides_policy=None, dispatch_device=False, dispatch_layout=False,
                               _extra_dispatch_keys=None, storage_size=None):
        """torch.Tensor._make_wrapper_subclass: an instance of ``cls`` (its __init__ runs next, as for any
        ``__new__``) with the given size, strides, dtype and requires_grad, and no data of its own: a subclass
        keeps the tensors it wraps. NOTE: hookgrad does not dispatch ops to ``__torch_dispatch__``: an op on such
        a tensor raises (its ``__torch_function__``, where it has one, is called by autograd.backward/grad and
        by custom Functions as in PyTorch)."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                            "possible. Make sure your class inherits from Tensor.")
        if type(getattr(cls, "__torch_dispatch__", None)).__name__ in ("NoneType", "_DisabledTorchFunctionImpl"):
            raise TypeError(f"{cls.__name__} must define __torch_dispatch__")
        shape = tuple(int(n) for n in size)
        dt = (dtype if dtype is not None else D.get_default_dtype()).np
        st = _contiguous_strides(shape) if strides is None else [int(v) for v in strides]
        off = int(storage_offset or 0)
        n = off + 1 + sum((a - 1) * b for a, b in zip(shape, st)) if all(shape) else off
        buf = np.zeros(max(n, 1) if storage_size is None else max(int(storage_size), n, 1), dt)   # (calloc: no pages)
        arr = np.lib.stride_tricks.as_strided(buf[off:], shape, tuple(v * buf.itemsize for v in st))
        t = object.__new__(cls)
        _init(t, arr.view(_WrapperArray), False, None, 0, None)
        if requires_grad:
            t.requires_grad_(True)
        return t

    @staticmethod
    def _make(data, requires_grad=False, grad_fn=None, output_nr=0, vc=None):
        t = object.__new__(Tensor)
        t._data = data
        t._requires_grad = requires_grad
        t.grad_fn = grad_fn
        t._output_nr = output_nr
        t._vc = vc if vc is not None else [0]
        return t

    # ---- basic properties ---------------------------------------------------------------
    @property
    def dtype(self):
        return D._NP_TO_DT[self._data.dtype]

    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    def dim(self):
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self):
        return self._data.ndim

    def numel(self):
        return int(self._data.size)

    nelement = numel

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    @property
    def device(self):
        return _device_of(self._data)

    @property
    def is_cuda(self):
        return _device_of(self._data).type == "cuda"

    is_quantized = False
    is_mkldnn = False
    is_nested = False

    # sparse tensors: ``_data`` is a sparse storage (_layout.SparseCOO / Compressed); primitives/sparse.py has the ops
    @property
    def layout(self):
        d = self._data
        return _layout.strided if type(d) is np.ndarray else _layout.layout_of(d)

    @property
    def is_sparse(self):
        return type(self._data) is _layout.SparseCOO

    @property
    def is_sparse_csr(self):
        return type(self._data) is _layout.Compressed and self._data.layout is _layout.sparse_csr

    def get_device(self):
        d = _device_of(self._data)
        return -1 if d.type == "cpu" else d.index

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def _version(self):
        return self._vc[0]

    def is_floating_point(self):
        return self._data.dtype.kind in "fV"        # V: bfloat16 (ml_dtypes), the one non-NumPy dtype

    def is_complex(self):
        return self._data.dtype.kind == "c"

    def is_contiguous(self, memory_format=None):
        if memory_format is None:
            return bool(self._data.flags.c_contiguous)
        from ._layout import is_contiguous
        return is_contiguous(self._data, memory_format)

    def stride(self, dim=None):
        isz = self._data.itemsize
        st = tuple(s // isz for s in self._data.strides)
        if not self._data.size and not any(st) and st:
            # NOTE: NumPy gives an empty array zero strides; PyTorch keeps the contiguous ones it was made with
            st = _contiguous_strides(self._data.shape)
        return st if dim is None else st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self):
        return (self.data_ptr() - _array.data_ptr(_root(self._data))) // self._data.itemsize

    def untyped_storage(self):
        """The bytes under this tensor and every view of its base (``data_ptr()``, ``nbytes()``, ``size()``)."""
        return UntypedStorage._of(_root(self._data))

    def storage(self):
        """PyTorch's (deprecated) TypedStorage: the base's elements in this tensor's dtype."""
        from ._warnings import warn_once
        warn_once(_TYPED_STORAGE_WARNING, UserWarning)
        return TypedStorage._of(_root(self._data), self.dtype)

    def new(self, *args, device=None, storage=None, other=None, size=None, data=None):
        """Legacy ``x.new(...)``: ``new(2, 3)`` uninitialised, ``new([1, 2])`` from data, ``new()`` empty, ``new(t)``
        t itself; all of x's dtype. PyTorch's overloads name the one argument storage/other/size/data."""
        _check_device(device)
        given = {k: v for k, v in (("storage", storage), ("other", other), ("size", size), ("data", data))
                 if v is not None}
        if given:
            if args or len(given) > 1:
                raise TypeError(f"new() received an invalid combination of arguments - got "
                                f"({', '.join([type(a).__name__ for a in args] + [f'{k}={type(v).__name__}' for k, v in given.items()])}, "
                                "), but expected one of:")
            (k, v), = given.items()
            args = tuple(v) if k == "size" else (v,)
        return _legacy_new(self.dtype, args, "new")


    def data_ptr(self):
        return _array.data_ptr(self._data)

    def _is_view(self):
        return self._base is not None

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(_NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            gdt = self._grad_dtype
            if gdt is _SAME:
                gdt = self.dtype
            if gdt is not None and value.dtype is not gdt:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_CPP_NAMES.get(value.dtype.name, value.dtype.name)}'"
                    f" to a tensor with grad_dtype '{gdt._legacy[:-6]}'. The gradient must match the tensor's "
                    "grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a "
                    "specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of "
                    "a tensor and its gradient may break downstream systems that assume they match.")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    _grad_dtype = _SAME                 # the dtype .grad must have: the tensor's own (default), a dtype, or None (any)

    @property
    def grad_dtype(self):
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        gdt = self._grad_dtype
        return self.dtype if gdt is _SAME else gdt

    @grad_dtype.setter
    def grad_dtype(self, value):
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, D.dtype):
            raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}")
        g = self._grad
        if g is not None and value is not None and g.dtype is not value:
            raise RuntimeError(f"Cannot set grad_dtype to '{value._legacy[:-6]}' because there is already a gradient "
                               f"with dtype '{_CPP_NAMES.get(g.dtype.name, g.dtype.name)}'. Please clear the gradient "
                               "(.grad = None) before changing grad_dtype, or ensure the new grad_dtype matches the "
                               "existing gradient's dtype.")
        self._grad_dtype = value

    @property
    def data(self):
        t = Tensor._make(self._data)
        return t

    @data.deleter
    def data(self):
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")

    @data.setter
    def data(self, value):
        if value is None or isinstance(value, (bool, int, float, complex, str, list, tuple)):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if isinstance(value, Tensor):
            if getattr(value._data, "_layout", None) is not getattr(self._data, "_layout", None):
                raise RuntimeError("Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` have "
                                   "incompatible tensor type.")
            if self._requires_grad and value._data.dtype.kind not in "fcV":
                raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex "
                                   "dtype")
        self._data = value._data if isinstance(value, Tensor) else _array.default_module().asarray(value)

    @property
    def retains_grad(self):
        return self._retains_grad

    def requires_grad_(self, requires_grad=True):
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad and self._data.dtype.kind not in "fcV":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = requires_grad
        return self

    # ---- detach / clone share-or-copy ----------------------------------------------------
    def detach(self):
        t = Tensor._make(self._data, False, None, 0, self._vc)
        if self._bits:
            t._bits = self._bits
        if _op_hooks:           # the op hooks (a dispatch mode, the profiler) see aten::detach
            _op_hooks_detach[0](self, t)
        return t

    def detach_(self):
        if self._base is not None and self._base.requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
                               "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
                               "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
                               "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        gf = self.grad_fn
        if gf is not None:      # a node that saved this tensor before raises in backward (autograd.node)
            self.__dict__["_detached_from"] = _weakref.ref(gf)
            _INPLACE_DETACHED[0] = True
        self.grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        self.__dict__.pop("_fw_grad", None)     # forward AD: detach_ drops the tangent too
        return self

    # ---- hooks -------------------------------------------------------------------------
    def register_hook(self, hook):
        """Register ``hook(grad) -> Tensor or None``, called each time the gradient w.r.t. this
        tensor is computed (all paths summed). A returned tensor replaces the gradient.

        >>> v = tensor([0., 0., 0.], requires_grad=True)
        >>> h = v.register_hook(lambda grad: grad * 2)
        >>> v.backward(tensor([1., 2., 3.])); v.grad
        tensor([2., 4., 6.])
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        hooks = self._backward_hooks
        if hooks is None:
            gf = self.grad_fn       # first: a stale view's grad_fn is regenerated (and its hooks reset) here
            hooks = self._backward_hooks = HookDict()
            if gf is not None:
                gf._register_tensor_hooks(self._output_nr, hooks)
        else:
            # PyTorch: a hook added to an existing dict goes where the dict is, even if a view's history
            # moved since (the dict is reset only when the view's grad_fn is regenerated)
            gf = _raw_grad_fn(self)
        if gf is None:
            acc = self._grad_acc() if self._grad_acc is not None else None
            if acc is not None:
                acc._hooked = True    # leaf hooks run at its AccumulateGrad (flag checked by the engine)
        handle = add_hook(hooks, hook)
        return handle

    def register_post_accumulate_grad_hook(self, hook):
        """Register ``hook(tensor)``, run after ``.grad`` of this leaf has been accumulated."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = HookDict()
        handle = add_hook(self._post_accumulate_grad_hooks, hook)
        return handle

    def hooks(self):
        """The hooks registered on this tensor: ``HookInfo("grad", ...)`` for register_hook and
        ``HookInfo("post_accumulate_grad", ...)`` for register_post_accumulate_grad_hook."""
        from .utils.hooks import HookInfo
        out = []
        for kind, d in (("grad", self._backward_hooks), ("post_accumulate_grad", self._post_accumulate_grad_hooks)):
            if d:
                out.extend(HookInfo(kind, hid, hook, ()) for hid, hook in d.items())
        return out

    def remove_hooks(self, kind=None):
        """Remove this tensor's hooks (``kind`` "grad" or "post_accumulate_grad", or both); returns how
        many were removed. Handles obtained earlier become no-ops."""
        n = 0
        for k, d in (("grad", self._backward_hooks), ("post_accumulate_grad", self._post_accumulate_grad_hooks)):
            if d and kind in (None, k):
                n += len(d)
                d.clear()
        return n

    def retain_grad(self):
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self.grad_fn._register_retain_grad(self._output_nr, self)
        self._retains_grad = True

    @property
    def _xp(self):
        """The array module of this tensor's storage (NumPy, or another module with NumPy's API)."""
        return _array.array_module(self._data)

    # ---- conversions ----------------------------------------------------------------------
    def numpy(self, *, force=False):
        if not force and type(self._data) is not np.ndarray and self.device.type != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        if self.requires_grad and not force and _grad_state.enabled:     # allowed under no_grad, as PyTorch
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self._data.dtype.kind == "V":       # bfloat16, float8: ml_dtypes' types, which NumPy code does not know
            raise TypeError(f"Got unsupported ScalarType {self.dtype._legacy[:-len('Tensor')]}")
        return _array.to_numpy(self._data)      # a NumPy ndarray (sharing memory where the module can)

    @property
    def is_meta(self):
        return type(self._data) is not np.ndarray and _array.device_type(self._data) == "meta"

    def item(self):
        if type(self._data) is not np.ndarray and self.is_meta:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return _array.to_host(self._data).reshape(()).item()

    def tolist(self):
        return _array.to_host(self._data).tolist()

    def __array__(self, dtype=None, copy=None):
        if type(self._data) is not np.ndarray and self.device.type != "cpu":
            self.numpy(force=False)         # PyTorch's TypeError for a device tensor
        a = _array.to_numpy(self._data)
        return a if dtype is None else a.astype(dtype)

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return bool(_array.to_host(self._data))

    def __float__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self.requires_grad and not _warned_scalar_with_grad:
            _warn_scalar_with_grad()
        return float(self.item())

    def __int__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, proto):
        from .utils.hooks import warn_if_has_hooks
        warn_if_has_hooks(self)
        return (_rebuild, (self._data.copy(), self.requires_grad))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol "
                               "at the moment.  If you were attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        import copy
        cls = type(self)
        new = cls.__new__(cls)
        _init(new, self._data.copy(), self.requires_grad, None, 0, None)
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        # hooks and autograd bookkeeping are not copied (spec 2.11); other Python attributes are
        for k, v in self.__dict__.items():
            if k not in _NOT_DEEPCOPIED:
                setattr(new, k, copy.deepcopy(v, memo))
        return new

    def __repr__(self, *, tensor_contents=None):
        from ._printing import tensor_repr
        return tensor_repr(self, tensor_contents)

    def __str__(self):
        return self.__repr__()

    def __format__(self, spec):
        if self._data.ndim == 0 and (type(self) is Tensor or type(self).__dict__.get("_plain_repr", False)):
            # f"{loss}" formats the number, as PyTorch (for a plain tensor or a view; not for a Parameter)
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            return "torch." + self.dtype._legacy
        if isinstance(dtype, _LegacyTensorType):
            dtype = dtype.dtype
        if isinstance(dtype, str):
            name = dtype.replace("torch.", "")
            for d in D.ALL:
                if d._legacy == name:
                    return self.to(d)
            return self.to(D.to_dtype(name))
        return self.to(D.to_dtype(dtype))


_NOT_DEEPCOPIED = frozenset(("_grad", "_backward_hooks", "_post_accumulate_grad_hooks", "_grad_acc", "_base",
                             "_view_fn", "_retains_grad", "_creation", "_attr_ver", "_index"))


def _set_requires_grad(t, value):
    """``t.requires_grad = value`` with PyTorch's checks: a bool, on a leaf, and only float (or complex) tensors
    can require grad. (Setting the flag on a non-leaf would cut it out of the graph.)"""
    if type(value) is not bool:
        raise RuntimeError("requires_grad must be a bool")
    if t.grad_fn is not None:
        msg = "you can only change requires_grad flags of leaf variables."
        if not value:
            msg += (" If you want to use a computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
        raise RuntimeError(msg)
    if value and t._data.dtype.kind not in "fcV":
        raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
    t._requires_grad = value


def _zero_grad(t, set_to_none):
    """Module.zero_grad and Optimizer.zero_grad on one tensor: ``.grad = None``, or the grad detached from its
    graph and filled with zeros in place (one version bump)."""
    g = t._grad
    if g is None:
        return
    if set_to_none:
        t.grad = None
        return
    if g.grad_fn is not None:
        g.detach_()
    else:
        g.requires_grad_(False)
    g._data[...] = 0
    g._vc[0] += 1


class _WrapperArray(np.ndarray):
    """The array of a tensor made by ``_make_wrapper_subclass``: its shape, strides and dtype, and no values (an op
    on it raises: hookgrad does not run ``__torch_dispatch__``)."""

    def __array_ufunc__(self, *args, **kwargs):
        raise NotImplementedError(_WRAPPER_OP)

    def __array_function__(self, *args, **kwargs):
        raise NotImplementedError(_WRAPPER_OP)

    def _no_values(self, *args, **kwargs):
        raise NotImplementedError(_WRAPPER_OP)

    tolist = item = copy = astype = __array__ = __getitem__ = __setitem__ = _no_values


_WRAPPER_OP = ("hookgrad does not dispatch ops to __torch_dispatch__: a tensor made by Tensor._make_wrapper_subclass "
               "has no values of its own to compute on (unwrap the tensors it holds; see docs/differences.md)")


def _contiguous_strides(shape):
    """PyTorch's contiguous strides (in elements) of ``shape``; a size-0 dim counts as 1, as PyTorch's do."""
    st, k = [], 1
    for n in reversed(shape):
        st.append(k)
        k *= max(n, 1)
    return tuple(reversed(st))


_data_slot = Tensor.__dict__["_data"]
_HOOKGRAD_DIR = _os.path.dirname(_os.path.abspath(__file__)) + _os.sep


def _from_hookgrad(depth=2):
    """Whether the code ``depth`` frames up (the reader or writer of an attribute) is hookgrad's own."""
    return sys._getframe(depth).f_code.co_filename.startswith(_HOOKGRAD_DIR)


def _get_user_data(self):
    user = self.__dict__.get("_data", _MISSING)
    if user is _MISSING or _from_hookgrad():
        return _data_slot.__get__(self)
    return user


def _set_user_data(self, value):
    if _from_hookgrad():
        _data_slot.__set__(self, value)
    else:
        self.__dict__["_data"] = value


def _del_user_data(self):
    if self.__dict__.pop("_data", _MISSING) is _MISSING:
        raise AttributeError("_data")


_MISSING = object()
_user_data = property(_get_user_data, _set_user_data, _del_user_data,
                      "A Tensor subclass's own ``_data`` attribute (hookgrad's array is read by hookgrad's code).")


def _legacy_init(t, args):
    xp = _array.default_module()
    dt = D.get_default_dtype().np
    if len(args) == 1 and isinstance(args[0], Tensor):
        a = args[0]
        if a._data.dtype == dt:         # an alias of the tensor (its memory and version counter)
            _init(t, a._data, False, None, 0, a._vc)
            return
        data = xp.array(a.tolist(), dtype=dt)
    elif len(args) == 1 and not isinstance(args[0], int):
        data = xp.array(args[0], dtype=dt)
    else:
        data = xp.zeros(tuple(args) if args else (0,), dt)
    _init(t, data, False, None, 0, None)


def _init(t, data, requires_grad, grad_fn, output_nr, vc):
    t._data = data
    t._requires_grad = requires_grad
    t.grad_fn = grad_fn
    t._output_nr = output_nr
    t._vc = vc if vc is not None else [0]


def _rebuild(data, requires_grad):
    t = Tensor._make(data)
    t._requires_grad = requires_grad
    t._backward_hooks = HookDict()
    return t


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


_raw_grad_fn = Tensor.__dict__["grad_fn"].__get__     # the slot, without a view's regeneration


# ---- the legacy tensor API: storages, FloatTensor & co., Tensor.new ---------------------------------------
_TYPED_STORAGE_WARNING = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class. "
    "This should only matter to you if you are using storages directly.  To access UntypedStorage directly, use "
    "tensor.untyped_storage() instead of tensor.storage()")


def _root(a):
    """The NumPy array that owns the memory under ``a`` (its storage): views of one base share it."""
    while a.base is not None and _array.is_array(a.base):
        a = a.base
    return a


class UntypedStorage:
    """torch.UntypedStorage as tools read it: the owning buffer's bytes (``data_ptr``, ``nbytes``, ``size``)."""
    __slots__ = ("_array",)
    device = _CPU
    is_cuda = False

    @classmethod
    def _of(cls, array):
        s = object.__new__(cls)
        s._array = array
        return s

    def data_ptr(self):
        return _array.data_ptr(self._array)

    def nbytes(self):
        return self._array.nbytes

    def size(self):
        return self._array.nbytes

    __len__ = size

    def __sizeof__(self):       # sys.getsizeof as PyTorch's (torchinfo's "Input size"): the object, then the bytes
        return 48 + self.size()

    def element_size(self):
        return 1

    def tolist(self):
        return _bytes(self._array).tolist()

    def untyped(self):
        return self

    def __getitem__(self, i):
        """A byte (int), or for a slice a storage viewing those bytes, as PyTorch's."""
        if isinstance(i, slice):
            if i.step not in (None, 1):
                raise RuntimeError(f"Trying to slice with a step of {i.step}, but only a step of 1 is supported")
            return UntypedStorage._of(_bytes(self._array)[i])
        return _bytes(self._array)[i].tolist()

    @classmethod
    def from_file(cls, filename, shared=False, nbytes=0):
        """The file's first ``nbytes`` bytes, memory-mapped: written back to the file if ``shared``, else
        copy-on-write (changes stay in this process), as PyTorch maps it."""
        import os
        filename = os.fspath(filename)
        if nbytes == 0:
            nbytes = os.path.getsize(filename)
        try:
            data = np.memmap(filename, dtype=np.uint8, mode="r+" if shared else "c", shape=(nbytes,))
        except (OSError, ValueError) as e:
            raise RuntimeError(f"UntypedStorage.from_file: unable to map {filename!r} ({nbytes} bytes): {e}") from None
        return cls._of(np.ndarray(data.shape, np.uint8, buffer=data))

    def __eq__(self, other):
        return type(other) is type(self) and other._array is self._array

    def __hash__(self):
        return hash(id(self._array))

    def __repr__(self):
        data = " " + "\n ".join(str(v) for v in self.tolist()) + "\n" if self.size() else ""
        return f"{data}[torch.storage.UntypedStorage(device=cpu) of size {self.size()}]"


class TypedStorage(UntypedStorage):
    """torch.TypedStorage (deprecated in PyTorch, still read by tools): the base's elements in a dtype."""
    __slots__ = ("dtype",)

    @classmethod
    def _of(cls, array, dtype):
        s = object.__new__(cls)
        s._array = array
        s.dtype = dtype
        return s

    def size(self):
        return self._array.nbytes // self.dtype.itemsize

    __len__ = size

    def element_size(self):
        return self.dtype.itemsize

    def _values(self):
        return _bytes(self._array).view(self.dtype.np)

    def tolist(self):
        return self._values().tolist()

    def __getitem__(self, i):
        return self._values()[i].tolist()

    def untyped(self):
        return UntypedStorage._of(self._array)

    _untyped_storage = property(untyped)

    def __eq__(self, other):
        return type(other) is type(self) and other._array is self._array and other.dtype is self.dtype

    __hash__ = UntypedStorage.__hash__

    def __repr__(self):
        data = " " + "\n ".join(str(v) for v in self.tolist()) + "\n" if self.size() else ""
        return f"{data}[torch.storage.TypedStorage(dtype={self.dtype}, device=cpu) of size {self.size()}]"


def _bytes(a):
    """The bytes of an owning array, as a flat uint8 array (its memory may be laid out in any order)."""
    if a.flags.c_contiguous:
        return a.reshape(-1).view(np.uint8)
    if a.flags.f_contiguous:
        return a.T.reshape(-1).view(np.uint8)
    return _array.array_module(a).frombuffer(a.tobytes(), np.uint8)


def is_storage(obj):
    return isinstance(obj, UntypedStorage)


# ---- PyTorch's argument parser for int lists (sizes, dims): here, next to Size, for the legacy constructors
def _tname(x):
    """The type name PyTorch's argument parser prints (``float``, ``NoneType``, ``numpy.float64``, ``Tensor``)."""
    t = type(x)
    if isinstance(x, Tensor):
        return "Tensor"
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _as_int(x, first):
    """x as a Python int if PyTorch's IntArrayRef parser takes it, else None (a bool only after the first)."""
    if isinstance(x, bool):
        return None if first else int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, Tensor) and x._data.ndim == 0 and x._data.dtype.kind in "iu":
        return int(x._data)
    return None


_SEQS = (tuple, list, Size)


def int_list(args, fname, argname="size", pos=1, varargs=True, overloaded=False):
    """Parse an int-list argument as PyTorch's argument parser does, raising its TypeError.

    args: the positional varargs (``zeros(2, 3)`` -> (2, 3); ``zeros((2, 3))`` -> ((2, 3),)), or with
    varargs=False the one argument itself. Returns a tuple of Python ints (not yet checked for sign)."""
    if not varargs:
        args = (args,)
    seq = args[0] if len(args) == 1 and type(args[0]) in _SEQS else args
    if seq and all(type(x) is int for x in seq):      # the common case: plain ints, nothing to check
        return tuple(seq)
    at = f"argument '{argname}'" + (f" (position {pos})" if pos else "")
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        seq, single = args[0], True
    elif len(args) == 1:
        v = _as_int(args[0], True)
        if v is not None:
            return (v,)
        if overloaded:
            raise TypeError(f"{fname}() received an invalid combination of arguments - got ({_tname(args[0])}), but "
                            "expected one of:")
        raise TypeError(f"{fname}(): {at} must be tuple of ints, not {_tname(args[0])}")
    else:
        seq, single = args, False
    out = []
    for i, x in enumerate(seq):
        v = _as_int(x, i == 0)
        if v is None:
            if i == 0 and overloaded:
                raise TypeError(f"{fname}() received an invalid combination of arguments - got "
                                f"({', '.join(_tname(a) for a in args)}), but expected one of:")
            if i == 0 and not single:
                raise TypeError(f"{fname}() takes 1 positional argument but {len(args)} were given")
            if i == 0 and isinstance(x, bool):      # PyTorch then rejects the whole sequence
                raise TypeError(f"{fname}(): {at} must be tuple of ints, not {_tname(seq)}")
            if i == 0:
                raise TypeError(f"{fname}(): {at} must be tuple of ints, but found element of type {_tname(x)} at pos 0")
            raise TypeError(f"{fname}(): argument '{argname}' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got {_tname(x)}\"")
        out.append(v)
    return tuple(out)


def size_args(args, size, fname, argname="size", overloaded=False):
    """PyTorch's ``f(*size)`` that also takes its list by keyword: ``zeros(2, 3)``, ``zeros((2, 3))`` and
    ``zeros(size=(2, 3))`` (``permute(dims=...)``, ``reshape(shape=...)``, ...); returns the int tuple."""
    if size is not None:
        if args:
            raise TypeError(f"{fname}() got multiple values for argument '{argname}'")
        if not isinstance(size, (tuple, list, Size)):      # by keyword: only a sequence (zeros(size=2) fails)
            if overloaded:
                raise TypeError(f"{fname}() received an invalid combination of arguments - got ({argname}="
                                f"{_tname(size)}, ), but expected one of:")
            raise TypeError(f"{fname}(): argument '{argname}' must be tuple of ints, not {_tname(size)}")
        return int_list(size, fname, argname, pos=0, varargs=False)

    if not args:
        if overloaded:
            raise TypeError(f"{fname}() received an invalid combination of arguments - got (), but expected one of:")
        raise TypeError(f'{fname}() missing 1 required positional arguments: "{argname}"')
    return int_list(args, fname, argname, overloaded=overloaded)


def _legacy_new(dt, args, fname):
    """The legacy constructors (``torch.FloatTensor(...)``, ``x.new(...)``): sizes, data, another tensor or nothing."""
    if not args:
        return Tensor._make(_array.default_module().zeros((0,), dt.np))
    if len(args) == 1 and isinstance(args[0], Tensor):
        from ._errors import scalar_name
        t = args[0]
        if t.dtype is not dt:
            raise TypeError(f"expected TensorOptions(dtype={scalar_name(dt.np)}, device=cpu) "
                            f"(got TensorOptions(dtype={scalar_name(t.dtype.np)}, device=cpu))")
        return t
    if len(args) == 1 and isinstance(args[0], UntypedStorage):
        st = args[0]
        return Tensor._make(_bytes(st._array).view(dt.np))
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args) or \
            len(args) == 1 and isinstance(args[0], Size):
        shape = size_args(args, None, fname)
        return Tensor._make(_array.default_module().zeros(shape, dt.np))       # PyTorch leaves it uninitialised
    if len(args) == 1:
        data = args[0]
        return Tensor._make(_array.default_module().array(data.tolist() if isinstance(data, Tensor) else data,
                                                           dtype=dt.np))
    raise TypeError(f"{fname}() received an invalid combination of arguments - got "
                    f"({', '.join(type(a).__name__ for a in args)}), but expected one of:")


class _LegacyTensorType(type):
    """The metaclass of torch.FloatTensor & co. (PyTorch's ``torch.tensortype``): calling the class builds a tensor
    of its dtype; ``isinstance(x, FloatTensor)`` holds iff x is a float32 CPU tensor."""

    def __instancecheck__(cls, other):
        return isinstance(other, Tensor) and other._data.dtype == cls.dtype.np

    def __subclasscheck__(cls, other):
        return other is cls

    def __call__(cls, *args, device=None):
        _check_device(device)
        return _legacy_new(cls.dtype, args, "new")

    def __repr__(cls):
        return f"<class 'torch.{cls.__name__}'>"

    is_cuda = False
    is_sparse = False


def _legacy_types():
    out = {}
    for dt in D.ALL:
        name = dt._legacy
        out[name] = _LegacyTensorType(name, (), {"dtype": dt, "__module__": "torch", "__qualname__": name})
    return out


_LEGACY = _legacy_types()
FloatTensor, DoubleTensor, HalfTensor = _LEGACY["FloatTensor"], _LEGACY["DoubleTensor"], _LEGACY["HalfTensor"]
LongTensor, IntTensor, ShortTensor = _LEGACY["LongTensor"], _LEGACY["IntTensor"], _LEGACY["ShortTensor"]
CharTensor, ByteTensor, BoolTensor = _LEGACY["CharTensor"], _LEGACY["ByteTensor"], _LEGACY["BoolTensor"]


def typename(obj):
    """torch.typename: 'torch.FloatTensor' for a tensor, else the object's module-qualified class name."""
    if isinstance(obj, Tensor):
        return "torch." + obj.dtype._legacy
    module = getattr(obj, "__module__", "") or ""
    if module in ("", "builtins") or not isinstance(module, str):
        module = ""
    else:
        module = module.replace("hookgrad", "torch", 1) if module.startswith("hookgrad") else module
        module += "."
    qual = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qual is None or not isinstance(obj, type) and not callable(obj):
        qual = type(obj).__qualname__
        module = type(obj).__module__
        module = "" if module == "builtins" else (module.replace("hookgrad", "torch", 1) + ".")
    return module + qual


def set_default_tensor_type(t):
    """Deprecated in PyTorch: set the default floating dtype from a legacy type (``torch.DoubleTensor`` or
    'torch.DoubleTensor')."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning, stacklevel=2)
    if isinstance(t, str):
        name = t.replace("torch.", "")
        if name not in _LEGACY:
            raise TypeError(f"invalid type: '{t}'")
        t = _LEGACY[name]
    if not isinstance(t, _LegacyTensorType):
        raise TypeError(f"invalid type: '{t}'")
    if not t.dtype.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type")
    D.set_default_dtype(t.dtype)
