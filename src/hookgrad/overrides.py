"""torch.overrides: the ``__torch_function__`` protocol's helpers.

hookgrad's own functions do not dispatch to ``__torch_function__``; these helpers let Python code written
for the protocol (``if has_torch_function(args): return handle_torch_function(f, args, *args)``) run: plain
tensors never have a torch function, other objects that define ``__torch_function__`` get the call.
"""
import functools

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides", "handle_torch_function",
           "has_torch_function", "resolve_name", "is_tensor_like", "is_tensor_method_or_property",
           "wrap_torch_function", "enable_reentrant_dispatch", "redispatch_function"]


def _tensor_types():
    from ._tensor import Tensor
    from .primitives._inplace import _View
    return Tensor, _View


def _overloaded(a, plain):
    t = type(a)
    return t not in plain and getattr(t, "__torch_function__", None) is not None


def has_torch_function(relevant_args):
    """True if an argument (other than a plain tensor) defines ``__torch_function__``."""
    plain = _tensor_types()
    return any(_overloaded(a, plain) for a in relevant_args)


def has_torch_function_unary(arg):
    return has_torch_function((arg,))


def has_torch_function_variadic(*args):
    return has_torch_function(args)


def _get_overloaded_args(relevant_args):
    plain = _tensor_types()
    types, args = [], []
    for a in relevant_args:
        t = type(a)
        if t in types or not _overloaded(a, plain):
            continue
        # a subclass goes before its parent class, otherwise left to right (PyTorch's order)
        idx = len(args)
        for i, other in enumerate(args):
            if issubclass(t, type(other)):
                idx = i
                break
        types.append(t)
        args.insert(idx, a)
    return args


def resolve_name(f):
    """PyTorch's name of ``f`` (``torch.add``, ``torch.Tensor.add``), or None."""
    qual = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    mod = getattr(f, "__module__", None)
    if qual is None:
        return None
    if mod and mod.startswith("hookgrad"):
        mod = "torch" + mod[len("hookgrad"):]
    return f"{mod}.{qual}" if mod else qual


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Calls the ``__torch_function__`` of the overloaded arguments in turn until one does not return
    NotImplemented."""
    overloaded_args = _get_overloaded_args(relevant_args)
    types = tuple(map(type, overloaded_args))
    for overloaded_arg in overloaded_args:
        torch_func_method = overloaded_arg.__torch_function__
        if hasattr(torch_func_method, "__self__") and torch_func_method.__self__ is overloaded_arg:
            import warnings
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated and will be an error "
                          "in future, please define it as a classmethod.", DeprecationWarning)
        result = torch_func_method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    func_name = f"{public_api.__module__}.{public_api.__name__}"
    raise TypeError(f"no implementation found for '{func_name}' on types that implement __torch_function__: "
                    f"{[type(arg) for arg in overloaded_args]}")


def is_tensor_like(inp):
    """True for a Tensor (or subclass) instance or class, or an object whose type defines __torch_function__."""
    from ._tensor import Tensor
    return type(inp) is Tensor or isinstance(inp, Tensor) or inp is Tensor or \
        hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func):
    from ._tensor import Tensor
    name = getattr(func, "__name__", None)
    return name is not None and getattr(Tensor, name, None) is func or isinstance(func, property)


@functools.lru_cache(None)
def get_ignored_functions():
    """Functions that cannot be overridden by ``__torch_function__`` (hookgrad's creation functions)."""
    import hookgrad as h
    names = ("tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full", "arange", "linspace",
             "logspace", "eye", "rand", "randn", "randint", "randperm", "manual_seed", "seed", "initial_seed",
             "get_default_dtype", "set_default_dtype", "is_tensor", "is_storage", "set_grad_enabled", "no_grad",
             "enable_grad", "promote_types", "finfo", "iinfo", "typename", "save", "load", "compile",
             "set_num_threads", "get_num_threads", "hann_window", "hamming_window", "blackman_window",
             "bartlett_window", "kaiser_window", "tril_indices", "triu_indices", "scalar_tensor", "empty_strided",
             "frombuffer", "result_type", "can_cast")
    return {getattr(h, n) for n in names if n in h.__dict__}


def get_overridable_functions():
    """{namespace: [functions]} of what ``__torch_function__`` may override."""
    import hookgrad as h
    ignored = get_ignored_functions()
    out = {}
    for ns in (h, h.nn.functional, h.Tensor, h.linalg):
        fns = []
        for k, v in list(vars(ns).items()):
            if k.startswith("_") or not callable(v) or isinstance(v, type) or v in ignored:
                continue
            fns.append(v)
        out[ns] = fns
    return out


def get_testing_overrides():
    """{function: a lambda with the function's signature returning -1} (PyTorch's testing helper)."""
    import inspect
    out = {}
    for fns in get_overridable_functions().values():
        for f in fns:
            try:
                sig = inspect.signature(f)
            except (TypeError, ValueError):
                continue
            lam = lambda *a, **k: -1  # noqa: E731
            lam.__signature__ = sig
            out[f] = lam
    return out


def wrap_torch_function(dispatcher):
    """Decorator: the function dispatches to ``__torch_function__`` of the args ``dispatcher`` picks."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


class enable_reentrant_dispatch:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def redispatch_function(func, *args, **kwargs):
    return func(*args, **kwargs)


class TorchFunctionMode:
    """Subclassable so that code defining a mode imports; entering one raises (hookgrad's functions do not
    dispatch to ``__torch_function__``)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        raise NotImplementedError("torch.overrides.TorchFunctionMode: hookgrad's functions do not dispatch to "
                                  "__torch_function__, so a mode would not see them")

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False
