"""torch._custom_ops: the older custom-operator API (define, then ``impl``, ``impl_abstract``,
``impl_save_for_backward`` + ``impl_backward``), on hookgrad's operator registry (see hookgrad.library)."""
import collections
import inspect

from . import library as _library
from .library import get_ctx

__all__ = ["custom_op", "impl", "impl_abstract", "get_ctx", "impl_save_for_backward", "impl_backward"]

_ops_by_name = {}       # qualname -> _Old


class _Old:
    """One operator of this API: its Library, and the save/backward pair once both are given."""

    def __init__(self, qualname, schema):
        ns, name = _parse(qualname)
        self.qualname, self.ns, self.name = qualname, ns, name
        self.lib = _library.Library(ns, "FRAGMENT")
        self.lib.define(name + schema)
        self.save_fn = self.backward_fn = None
        self.output_differentiability = None

    @property
    def arg_names(self):
        return [a.name for a in _library._operator(self.qualname).schema.arguments]

    def maybe_register_autograd(self):
        if self.save_fn is None or self.backward_fn is None:
            return
        names = self.arg_names
        Inputs = collections.namedtuple("Inputs", names)
        save_fn, backward_fn = self.save_fn, self.backward_fn

        def setup_context(ctx, inputs, output):
            ctx.saved = save_fn(Inputs(*inputs), output)

        def backward(ctx, *grads):
            got = backward_fn(ctx, ctx.saved, *grads)
            if not isinstance(got, dict):
                raise RuntimeError(f"impl_backward(backward_fn) for {self.qualname}: expected backward_fn to return a "
                                   f"dict, got {type(got).__name__}")
            extra = set(got) - set(names)
            if extra:
                raise RuntimeError(f"impl_backward for {self.qualname}: got gradients for unknown inputs "
                                   f"{sorted(extra)}")
            return tuple(got.get(n) for n in names)
        _library.register_autograd(self.qualname, backward, setup_context=setup_context, lib=self.lib)


def _parse(qualname):
    if not isinstance(qualname, str) or "::" not in qualname:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator name should look "
                         f"something like ns::foo")
    ns, name = qualname.split("::", 1)
    if "." in name:
        raise ValueError(f"The torch.custom_ops APIs do not handle overloads, i.e. operator names with '.' in "
                         f"them. Please name your operator something like ns::foo. Got: {qualname}")
    if ns == "aten" or ns in ("prim", "prims", "torch", "pytorch"):
        raise ValueError(f"custom_op(...): namespace '{ns}' is reserved")
    return ns, name


def _find(qualname):
    op = _ops_by_name.get(qualname)
    if op is None:
        raise RuntimeError(f"Could not find custom op \"{qualname}\". Did you register it via the torch._custom_ops "
                           f"API?")
    return op


def custom_op(qualname, func_or_schema=None):
    """Define operator ``qualname`` from a schema string, or from a type-annotated function (decorator)."""
    ns, name = _parse(qualname)

    def inner(func):
        if not inspect.isfunction(func):
            raise ValueError(f"custom_op(...)(func): Expected `func` to be a Python function, got: {type(func)}")
        if func.__name__ != name:
            raise ValueError(f"custom_op(qualname='{qualname}', ...)(func): expected `func` to have name '{name}' but "
                             f"got '{func.__name__}'. Please either change the name of `func` or the qualname that "
                             f"is passed to `custom_op`")
        _ops_by_name[qualname] = _Old(qualname, _library.infer_schema(func, mutates_args=()))
        return func
    if func_or_schema is None:
        return inner
    if isinstance(func_or_schema, str):
        _ops_by_name[qualname] = _Old(qualname, func_or_schema)
        return None
    return inner(func_or_schema)


def impl(qualname, *, device_types=("cpu", "cuda"), func=None):
    """Register ``func`` as the operator's kernel for ``device_types``."""
    def inner(func):
        op = _find(qualname)
        types = (device_types,) if isinstance(device_types, str) else device_types
        for t in types:
            op.lib.impl(op.name, func, _library._device_type_to_key(t))
        return func
    return inner if func is None else inner(func)


def impl_abstract(qualname, *, func=None):
    """Register the abstract (fake) implementation: stored, not run."""
    return _library.register_fake(qualname, func, _stacklevel=2)


def impl_save_for_backward(qualname, *, func=None):
    """``func(inputs, output)`` returns what backward needs (``inputs`` has the arguments by name)."""
    def inner(func):
        op = _find(qualname)
        op.save_fn = func
        op.maybe_register_autograd()
        return func
    return inner if func is None else inner(func)


def impl_backward(qualname, output_differentiability=None, *, func=None):
    """``func(ctx, saved, *grads)`` returns {input name: gradient}."""
    def inner(func):
        op = _find(qualname)
        op.backward_fn = func
        op.output_differentiability = output_differentiability
        op.maybe_register_autograd()
        return func
    return inner if func is None else inner(func)


def _destroy(qualname):
    """De-register operator ``qualname`` (test helper, as torch's)."""
    op = _ops_by_name.pop(qualname, None)
    if op is not None:
        op.lib._destroy()
