"""torch.library: define operators from Python and register their kernels, fakes and autograd formulas.

hookgrad has no C++ dispatcher; its stand-in is the operator registry in ``hookgrad.ops`` (``_registry``):
an operator overload has a schema and kernels by dispatch key. A call ``torch.ops.<ns>.<op>(...)`` runs
the ``Autograd`` kernel when one is registered (``register_autograd``), else the backend kernel: ``CPU``,
then ``CompositeExplicitAutograd``, then ``CompositeImplicitAutograd`` (``impl`` with no key). A kernel
runs with grad mode as it is, so a kernel made of hookgrad ops is differentiable through its ops, as a
Python kernel is in PyTorch 2.13. Fake (Meta) kernels, autocast and vmap rules are stored and not used:
nothing in hookgrad traces with fake tensors.

>>> import hookgrad as torch
>>> lib = torch.library.Library("mylib", "FRAGMENT")
>>> lib.define("twice(Tensor x) -> Tensor")
'twice'
>>> lib.impl("twice", lambda x: x * 2, "CPU")
>>> torch.ops.mylib.twice(torch.ones(2))
tensor([2., 2.])
"""
import collections.abc
import contextlib
import functools
import inspect
import sys
import typing
import warnings
import weakref

from . import ops as _ops
from .ops import OpOverload, OpOverloadPacket

__all__ = ["Library", "impl", "define", "fallthrough_kernel", "impl_abstract", "register_autocast", "register_fake",
           "register_torch_dispatch", "register_vmap", "get_ctx", "get_kernel", "custom_op", "triton_op",
           "wrap_triton", "infer_schema"]

_impls = set()
_defs = set()
_reserved_namespaces = ["prim"]
_def_owner = {}         # namespace -> where its one "DEF" library was made
_keep_alive = []
_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "mps": "MPS", "xpu": "XPU", "xla": "XLA",
                "hpu": "HPU", "ipu": "IPU", "privateuseone": "PrivateUse1", "default": "CompositeExplicitAutograd"}


def fallthrough_kernel():
    """A dummy kernel: registered for a key, the dispatcher skips that key."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


class _KeySet:
    """The dispatch key set a ``with_keyset=True`` kernel receives first (hookgrad dispatches on CPU only)."""

    def __repr__(self):
        return "DispatchKeySet(CPU)"


def _where(depth):
    f = sys._getframe(depth + 1)
    return f"registered at {f.f_code.co_filename}:{f.f_lineno}"


def _split(op_name, default_ns):
    """'name', 'name.overload', 'ns::name[.overload]' or an OpOverload -> (ns, name, overload)."""
    if isinstance(op_name, OpOverload):
        return op_name._namespace, op_name._opname, op_name._overloadname
    if isinstance(op_name, OpOverloadPacket):
        return op_name._namespace, op_name.__name__, "default"
    ns, _, rest = op_name.rpartition("::")
    name, ov = _ops._parse_name(rest)
    return ns or default_ns, name, ov


class Library:
    """A set of operator definitions and kernel registrations in namespace ``ns`` (torch.library.Library).

    ``kind``: "DEF" (a namespace's one defining library), "FRAGMENT" (more definitions of a namespace) or
    "IMPL" (kernels only). Registrations are undone by ``_destroy()`` or when the object is collected."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if ns in _reserved_namespaces and kind in ("DEF", "FRAGMENT"):
            raise ValueError(f"{ns} is a reserved namespace. Please try creating a library with another name.")
        where = _where(1)
        if kind == "DEF":
            if ns in _def_owner:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please put all of "
                    f"your definitions in a single TORCH_LIBRARY block.  If you were trying to specify "
                    f"implementations, consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you really "
                    f"intended to define operators for a single namespace in a distributed way, you can use "
                    f"TORCH_LIBRARY_FRAGMENT to explicitly indicate this.  Previous registration of TORCH_LIBRARY "
                    f"was {_def_owner[ns]}; latest registration was {where}")
            _def_owner[ns] = where
        self.m = _Registrations(ns, kind, where)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._op_defs = self.m.defs
        self._op_impls = self.m.impl_keys
        self._registration_handles = []
        weakref.finalize(self, self.m.reset)

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema, alias_analysis="", *, tags=()):
        """Define an operator of this namespace from its schema (``"foo(Tensor x) -> Tensor"``); returns its name."""
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        if self.m is None:
            raise AssertionError("Library object has been destroyed")
        if self.kind == "IMPL":
            raise RuntimeError("Cannot define an operator inside of a TORCH_LIBRARY_IMPL block.  All def()s should "
                               "be placed in the (unique) TORCH_LIBRARY block for their namespace.")
        name = _ops._define(self.ns, schema, owner=self.m.where if self.kind == "DEF" else _where(1))
        self.m.defs.add(f"{self.ns}::{name}")
        _defs.add(f"{self.ns}::{name}")
        return name

    def _register_fake(self, op_name, fn, _stacklevel=1, *, allow_override=True):
        ns, name, ov = _split(op_name, self.ns)
        self.m.kernel(ns, name, ov, "Meta", fn)

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False, allow_override=True):
        """Register ``fn`` as the kernel of ``op_name`` (a name, ``name.overload`` or an OpOverload) for
        ``dispatch_key`` (default: the library's; none: CompositeImplicitAutograd)."""
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type {type(fn)}")
        if not isinstance(op_name, (str, OpOverload, OpOverloadPacket)):
            raise RuntimeError(f"impl should be passed either a name or an OpOverload object as the first "
                               f"argument, got {type(op_name)}")
        if dispatch_key == "":
            dispatch_key = self.dispatch_key
        ns, name, ov = _split(op_name, self.ns)
        key = f"{self.ns}/{name if ov == 'default' else name + '.' + ov}/{dispatch_key}"
        if not allow_override and key in _impls:
            raise RuntimeError(f"This is not allowed since there's already a kernel registered from python "
                               f"overriding {name}'s behavior for {dispatch_key} dispatch key and {self.ns} namespace.")
        if self.m is None:
            raise AssertionError("Library object has been destroyed")
        if fn is fallthrough_kernel:
            fn = None
        elif with_keyset:
            fn = functools.partial(fn, _KeySet())
        self.m.kernel(ns, name, ov, dispatch_key or "CompositeImplicitAutograd", fn)
        _impls.add(key)
        self.m.impl_keys.add(key)

    def fallback(self, fn, dispatch_key="", *, with_keyset=False):
        raise NotImplementedError("torch.library.Library.fallback is not implemented in hookgrad (it has no "
                                  "dispatcher to fall back through)")

    def _destroy(self):
        if self.m is not None:
            self.m.reset()
        self.m = None
        for handle in self._registration_handles:
            handle.destroy()
        self._registration_handles.clear()


class _Registrations:
    """What one Library registered (so destroying it undoes exactly that); held by the library's finalizer,
    which must not hold the library itself."""

    def __init__(self, ns, kind, where):
        self.ns, self.kind, self.where = ns, kind, where
        self.defs, self.impl_keys, self.kernels = set(), set(), []
        self.live = True

    def kernel(self, ns, name, ov, key, fn):
        old = _ops._set_kernel(ns, name, key, fn, overload=ov)
        self.kernels.append((ns, name, ov, key, fn, old))

    def reset(self):
        if not self.live:
            return
        self.live = False
        for ns, name, ov, key, fn, old in reversed(self.kernels):
            op = _ops._lookup(ns, name, ov)
            table = op.kernels if op is not None else _ops._pending.get((f"{ns}::{name}", ov), {})
            if table.get(key) is fn:
                _ops._set_kernel(ns, name, key, old, overload=ov)
        self.kernels.clear()
        for q in self.defs:
            ns, _, rest = q.partition("::")
            name, ov = _ops._parse_name(rest)
            _ops._undefine(ns, name, ov)
            _defs.discard(q)
        global _impls
        _impls -= self.impl_keys
        if self.kind == "DEF" and _def_owner.get(self.ns) == self.where:
            del _def_owner[self.ns]


def _namespace_of(qualname):
    if not isinstance(qualname, str) or "::" not in qualname:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator name should look "
                         f"something like ns::foo")
    return qualname.split("::")[0]


def _lib_for(ns, lib):
    if lib is not None:
        return lib
    use = Library(ns, "FRAGMENT")
    _keep_alive.append(use)
    return use


@functools.singledispatch
def define(qualname, schema, *, lib=None, tags=()):
    """Define operator ``qualname`` ("ns::name") with ``schema`` ("(Tensor x) -> Tensor")."""
    if not isinstance(qualname, str):
        raise ValueError(f"define(qualname, schema): expected qualname to be instance of str, got {type(qualname)}")
    ns = _namespace_of(qualname)
    name = qualname.split("::", 1)[1]
    import re
    if not re.fullmatch(r"\(.*\) -> .*", schema):
        raise ValueError(f'define(qualname, schema, ...): expected schema to look like e.g. "(Tensor x) -> Tensor" '
                         f'but got "{schema}"')
    _lib_for(ns, lib).define(name + schema, alias_analysis="", tags=tags)


@define.register
def _(lib: Library, schema, alias_analysis=""):
    """The old torch.library.define(lib, schema): a decorator that defines and implements."""
    def wrap(f):
        name = lib.define(schema, alias_analysis)
        lib.impl(name, f)
        return f
    return wrap


def _device_type_to_key(device_type):
    return _DEVICE_KEYS.get(device_type, device_type)


@functools.singledispatch
def impl(qualname, types, func=None, *, lib=None):
    """Register ``func`` for ``qualname`` on device types ``types`` ("cpu", "default" = all); a decorator
    when ``func`` is None."""
    return _impl(qualname, types, func, lib=lib)


@impl.register
def _(lib: Library, name, dispatch_key=""):
    """The old torch.library.impl(lib, name, dispatch_key) decorator."""
    def wrap(f):
        lib.impl(name, f, dispatch_key)
        return f
    return wrap


def _impl(qualname, types, func=None, *, lib=None, disable_dynamo=False):
    if isinstance(types, str):
        types = (types,)
    keys = {_device_type_to_key(t) for t in types}

    def register_(func):
        use = _lib_for(_namespace_of(qualname), lib)
        for key in keys:
            use.impl(qualname, func, key)
    if func is None:
        return register_
    register_(func)
    return None


def _qualname_of(op, api):
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, OpOverload):
        return op._name if op._overloadname == "default" else f"{op._namespace}::{op._opname}.{op._overloadname}"
    if isinstance(op, str):
        d = _custom_defs.get(op)
        return d if d is not None else op
    raise ValueError(f"{api}({op}): got unexpected type for op: {type(op)}")


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """Register ``func`` as ``op``'s implementation on ``device_types`` (None: every device)."""
    op = _qualname_of(op, "register_kernel")
    if isinstance(op, CustomOpDef):
        return op.register_kernel(device_types, func)
    if device_types is None:
        device_types = "CompositeExplicitAutograd"
    return _impl(op, device_types, func, lib=lib)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1, allow_override=True):
    """Register ``op``'s FakeTensor implementation (stored; hookgrad runs no fake tensors)."""
    op = _qualname_of(op, "register_fake")
    if isinstance(op, CustomOpDef):
        return op.register_fake if func is None else op.register_fake(func)

    def register(func):
        ns = _namespace_of(op)
        _lib_for(ns, lib)._register_fake(op, func, _stacklevel=_stacklevel + 1, allow_override=allow_override)
        return func
    if func is None:
        return register
    return register(func)


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """The old name of register_fake."""
    warnings.warn("`torch.library.impl_abstract` was renamed to `torch.library.register_fake`. Please use that "
                  "instead; we will remove `torch.library.impl_abstract` in a future version of PyTorch.",
                  FutureWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib, _stacklevel=_stacklevel + 1)


def _operator(qualname):
    ns, _, rest = qualname.partition("::")
    name, ov = _ops._parse_name(rest)
    op = _ops._lookup(ns, name, ov)
    if op is None:
        raise AttributeError(f"'_OpNamespace' '{ns}' object has no attribute '{name}'")
    return op


def _autograd_kernel(op, backward, setup_context):
    """The Autograd kernel of ``op``: an autograd.Function whose forward runs the backend kernel (grad mode
    off) and whose backward is the user's ``backward(ctx, *grads)``; ``setup_context(ctx, inputs, output)``
    saves what it needs. PyTorch's grad_fn name: GeneratedBackwardFor_<ns>_<name>_<overload>Backward."""
    from .autograd.function import Function
    from .autograd.grad_mode import _state
    from ._tensor import Tensor

    def _forward(*args):
        return _ops._run_backend(op, args)

    def _setup(ctx, inputs, output):
        if setup_context is not None:
            setup_context(ctx, inputs, output)

    def _backward(ctx, *grads):
        res = backward(ctx, *grads)
        return res if isinstance(res, tuple) else (res,)

    name = f"GeneratedBackwardFor_{op.ns}_{op.name}_{op.overload}"
    fn_cls = type(name, (Function,), {"forward": staticmethod(_forward), "setup_context": staticmethod(_setup),
                                      "backward": staticmethod(_backward)})

    def kernel(*args, **kwargs):
        if kwargs:
            args = _ops._bind(op, args, kwargs)
        if _state.enabled and any(isinstance(a, Tensor) and a.requires_grad for a in _flat(args)):
            return fn_cls.apply(*args)
        return _ops._run_backend(op, args)
    kernel._function = fn_cls
    return kernel


def _flat(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """Register ``backward(ctx, *grads)`` (and ``setup_context(ctx, inputs, output)``) as ``op``'s gradient."""
    op = _qualname_of(op, "register_autograd")
    if isinstance(op, CustomOpDef):
        op.register_autograd(backward, setup_context=setup_context)
        return
    opdef = _operator(op)
    ns, name = opdef.ns, opdef.name
    key_name = name if opdef.overload == "default" else f"{name}.{opdef.overload}"
    _lib_for(ns, lib).impl(f"{ns}::{key_name}", _autograd_kernel(opdef, backward, setup_context), "Autograd")


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """Accepted and stored; hookgrad's autocast does not dispatch to custom operators."""
    op = _qualname_of(op, "register_autocast")
    if isinstance(op, CustomOpDef):
        op = op._qualname
    _lib_for(_namespace_of(op), lib).impl(op, lambda *a, **k: None, f"Autocast{_device_type_to_key(device_type)}")


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """Accepted and ignored: hookgrad has no __torch_dispatch__ rules per operator."""
    def register(func):
        return func
    return register if func is None else register(func)


def register_vmap(op, func=None, /, *, lib=None):
    """Accepted and ignored: hookgrad's vmap runs the operator per sample."""
    def register(func):
        return func
    return register if func is None else register(func)


class FakeImplCtx:
    """What a fake implementation gets from get_ctx(): ``new_dynamic_size`` (a fresh unknown size)."""

    def new_dynamic_size(self, *, min=0, max=None):
        raise RuntimeError("hookgrad runs no fake tensors: get_ctx().new_dynamic_size() has no meaning here")

    create_unbacked_symint = new_dynamic_size


def get_ctx():
    """The context of the fake implementation being run."""
    return FakeImplCtx()


def get_kernel(op, dispatch_key):
    """The kernel registered for ``op`` and ``dispatch_key`` (a plain callable)."""
    q = _qualname_of(op, "get_kernel")
    if isinstance(q, CustomOpDef):
        q = q._qualname
    opdef = _operator(q)
    key = str(dispatch_key).split(".")[-1]
    fn = opdef.kernels.get(key) or opdef.kernels.get("CompositeExplicitAutograd") or \
        opdef.kernels.get("CompositeImplicitAutograd")
    if fn is None:
        raise RuntimeError(f"no kernel for {q} and dispatch key {key}")
    return fn


# ------------------------------------------------------------------------------ custom_op
_custom_defs = {}       # qualname -> CustomOpDef


def _type_name(ann):
    from ._tensor import Tensor
    if ann is Tensor:
        return "Tensor"
    if ann in (int, float, bool, str):
        return {int: "SymInt", float: "float", bool: "bool", str: "str"}[ann]
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Union and type(None) in args and len(args) == 2:
        inner = _type_name(args[0] if args[1] is type(None) else args[1])
        return inner + "?"
    if origin in (list, tuple, typing.Sequence, collections.abc.Sequence) and args:
        return _type_name(args[0]) + "[]"
    name = getattr(ann, "__name__", str(ann))
    return {"dtype": "ScalarType", "device": "Device"}.get(name, name)


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema string of a type-annotated function (``"(Tensor x, float a) -> Tensor"``)."""
    sig = inspect.signature(prototype_function)
    mutated = set(mutates_args) if not isinstance(mutates_args, str) else set()
    parts, kw = [], False
    for p in sig.parameters.values():
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(f"infer_schema(func): Parameter {p.name} must have a type annotation.")
        if p.kind == p.KEYWORD_ONLY and not kw:
            parts.append("*")
            kw = True
        t = _type_name(p.annotation)
        if p.name in mutated:
            t = t.replace("Tensor", "Tensor(a!)", 1)
        s = f"{t} {p.name}"
        if p.default is not inspect.Parameter.empty:
            s += f"={p.default}"
        parts.append(s)
    ret = sig.return_annotation
    if ret is None or ret is type(None):
        rs = "()"
    elif typing.get_origin(ret) is tuple:
        rs = "(" + ", ".join(_type_name(a) for a in typing.get_args(ret)) + ")"
    else:
        rs = _type_name(ret)
    return f"({', '.join(parts)}) -> {rs}"


class CustomOpDef:
    """What ``@torch.library.custom_op`` returns: callable as the operator, with ``register_fake``,
    ``register_autograd``, ``register_kernel``; the operator is ``torch.ops.<ns>.<name>``."""

    def __init__(self, namespace, name, schema, fn, tags=()):
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._schema_str = schema
        self._init_fn = fn
        self._lib = Library(namespace, "FRAGMENT")
        self._lib.define(name + schema, tags=tags)
        self._opoverload = getattr(getattr(_ops, namespace), name).default
        self._backend_fns = {}
        self._abstract_fn = None
        self._backward_fn = self._setup_context_fn = None
        self._lib.impl(name, self._backend, "CompositeExplicitAutograd")
        self._lib.impl(name, _autograd_kernel(_operator(self._qualname), self._no_backward, None), "Autograd")
        functools.update_wrapper(self, fn)

    def _backend(self, *args, **kwargs):
        fn = self._backend_fns.get("cpu") or self._backend_fns.get(None) or self._init_fn
        return fn(*args, **kwargs)

    def _no_backward(self, ctx, *grads):
        raise RuntimeError(f"Trying to backward through {self._namespace}.{self._name}.default but no autograd "
                           f"formula was registered. Please use register_autograd to add one.")

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    def register_kernel(self, device_types, fn=None, /):
        def inner(fn):
            types = (device_types,) if device_types is None or isinstance(device_types, str) else device_types
            for t in types:
                self._backend_fns[t] = fn
            return fn
        return inner if fn is None else inner(fn)

    def register_fake(self, fn, /):
        self._abstract_fn = fn
        self._lib._register_fake(self._name, fn)
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        self._backward_fn, self._setup_context_fn = backward, setup_context
        self._lib.impl(self._name, _autograd_kernel(_operator(self._qualname), backward, setup_context), "Autograd")

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        return (lambda f: f) if fn is None else fn

    def register_vmap(self, func=None):
        return (lambda f: f) if func is None else func

    def register_autocast(self, device_type, cast_inputs):
        return None

    def _destroy(self):
        self._lib._destroy()
        _custom_defs.pop(self._qualname, None)


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Wrap a function into a custom operator ``name`` ("ns::op"): ``@custom_op("mylib::f", mutates_args=())``."""
    def inner(fn):
        ns = _namespace_of(name)
        opname = name.split("::", 1)[1]
        s = schema if schema is not None else infer_schema(fn, mutates_args=mutates_args)
        old = _custom_defs.pop(name, None)
        if old is not None:         # a redefinition replaces the op, as in PyTorch
            old._destroy()
        d = CustomOpDef(ns, opname, s, fn, tags=tags or ())
        if device_types is not None:
            d.register_kernel(device_types, fn)
        _custom_defs[name] = d
        return d
    if fn is None:
        return inner
    return inner(fn)


def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """A custom_op (hookgrad has no Triton; the function runs as it is)."""
    return custom_op(name, fn, mutates_args=mutates_args, schema=schema)


def wrap_triton(triton_kernel, /):
    raise NotImplementedError("torch.library.wrap_triton: hookgrad runs no Triton kernels")


def opcheck(op, args, kwargs=None, *, test_utils=("test_schema", "test_autograd_registration", "test_faketensor",
                                                   "test_aot_dispatch_dynamic"), raise_exception=True,
            rtol=None, atol=None):
    """A minimal torch.library.opcheck: runs ``op`` and checks that no output is an input or a view of one
    (test_schema) and, where an input requires grad, that a backward through the outputs runs
    (test_autograd_registration). The fake-tensor tests pass vacuously (hookgrad has no fake tensors)."""
    from ._tensor import Tensor
    kwargs = kwargs or {}
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    result = {}
    for t in test_utils:
        try:
            if t == "test_schema":
                out = op(*args, **kwargs)
                outs = out if isinstance(out, (tuple, list)) else (out,)
                ins = [a for a in _flat(args) if isinstance(a, Tensor)]
                for o in outs:
                    if isinstance(o, Tensor) and any(o is a or (o._data.base is not None and
                                                                (o._data.base is a._data or
                                                                 o._data.base is a._data.base)) for a in ins):
                        raise RuntimeError(f"{op}: The output of this custom operator (1) must not also be an "
                                           f"input to this custom operator and (2) may not alias any inputs to this "
                                           f"custom operator or other returns.")
            elif t == "test_autograd_registration":
                out = op(*args, **kwargs)
                outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
                        if isinstance(o, Tensor) and o.requires_grad]
                if outs:
                    from .autograd import backward as _backward
                    _backward([o.sum() for o in outs], inputs=[a for a in _flat(args)
                                                              if isinstance(a, Tensor) and a.requires_grad])
            result[t] = "SUCCESS"
        except Exception as e:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {t} failed with {e}") from e
            result[t] = e
    return result


class OpCheckError(Exception):
    pass


@contextlib.contextmanager
def _scoped_library(*args, **kwargs):
    """A Library destroyed at the end of the ``with`` block."""
    lib = Library(*args, **kwargs)
    try:
        yield lib
    finally:
        lib._destroy()
