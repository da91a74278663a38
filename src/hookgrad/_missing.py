"""The error for a PyTorch name that hookgrad does not implement.

Each hookgrad namespace that mirrors a torch namespace ends with
``__getattr__ = _missing.module_getattr(__name__, "torch.nn")``. Python calls that only after normal
lookup fails, so it costs nothing on found names. For a public name of torch 2.13 it raises
:class:`NotImplementedName`, an AttributeError (so ``hasattr`` is False and ``getattr(m, name, default)``
works) whose message names the PyTorch name and says whether it comes later or is a non-goal; any other
name (dunders included: ``copy``, ``pickle``, ``inspect`` and ``doctest`` probe them) gets Python's own
AttributeError. A submodule not imported yet is imported, as Python does for ``from pkg import sub``.

torch's names come from ``_coverage_names`` (generated from torch by scripts/gen_torch_names.py).

Lazy mode (``python -m hookgrad --lazy script.py`` or ``hookgrad.compat.install(lazy=True)``) lets code that names
torch names hookgrad lacks load, and fails only where it uses one. The rule: a missing name that code outside
hookgrad names *directly*, in attribute syntax (``torch.x.name``) or an import statement (``from torch.x import
name``, ``import torch.x.mod``), outside any ``try``/``with`` block, resolves to a placeholder (:class:`MissingName`;
a module: :class:`MissingModule`). ``hasattr``/``getattr(obj, name, default)``/``importlib.import_module`` and code
inside a ``try`` keep Python's answer (AttributeError, ImportError), so feature detection and fallbacks run as
before. Using a placeholder raises NotImplementedName naming the PyTorch name and the file:line that first named
it: calling it, instantiating a class derived from it, reading it as a value (truth, arithmetic, comparison with
order, iteration, len, indexing, int/float) or assigning to its attributes. Reading an attribute of a placeholder
gives a placeholder for the longer name (``torch.missing.Enum.MEMBER`` can sit in a default argument), a class
statement may derive from it (the class raises when instantiated), ``isinstance(x, placeholder)`` is False,
and repr, hashing, identity comparison and annotations work.

Tensor methods get no such fallback: a ``Tensor.__getattr__`` makes CPython give up its specialised
attribute loads on every tensor (measured: attribute reads 3.7x slower), and class-level stand-ins
would list names in ``dir(tensor)`` that raise when read.
"""
import dis
import importlib
import importlib.util
import os
import sys

COVERAGE_PAGE = "docs/coverage.md"
_names_cache = {}


class NotImplementedName(AttributeError):
    """A public PyTorch name that hookgrad does not implement (yet, or on purpose).

    ``torch_name`` is the full PyTorch name (e.g. ``"torch.nn.LSTM"``), ``category`` is
    ``"later: ..."``, ``"non-goal: ..."`` or None."""

    def __init__(self, msg, *, name=None, obj=None, torch_name=None, category=None):
        super().__init__(msg, name=name, obj=obj)
        self.torch_name = torch_name
        self.category = category


def torch_names(namespace):
    """The set of torch 2.13's public names in ``namespace`` (e.g. ``"torch.nn"``)."""
    names = _names_cache.get(namespace)
    if names is None:
        from . import _coverage_names as data
        names = _names_cache[namespace] = frozenset(data.NAMES.get(namespace, "").split())
    return names


def category(namespace, name):
    """``"later: ..."``, ``"non-goal: ..."`` or None (everyday API) for torch's ``namespace.name``."""
    from . import _coverage_names as data
    return data.CATEGORY.get(namespace, {}).get(name)


LAZY_HINT = (" To run code that names it without using it, use lazy mode: `python -m hookgrad --lazy script.py` "
             "or hookgrad.compat.install(lazy=True).")


def message(namespace, name, hint=True):
    """The text of the not-implemented error for torch's ``namespace.name`` (``hint``: the lazy-mode sentence,
    shown in the strict default)."""
    cat = category(namespace, name)
    full = f"{namespace}.{name}"
    if cat is None:
        text = f"{full} is not implemented in hookgrad yet (see {COVERAGE_PAGE})."
    else:
        kind, _, why = cat.partition(": ")
        if kind == "non-goal":
            text = f"{full} is not implemented in hookgrad: a non-goal ({why}). See {COVERAGE_PAGE}."
        else:
            text = f"{full} is not implemented in hookgrad yet; it comes later: {why}. See {COVERAGE_PAGE}."
    return text + (LAZY_HINT if hint and not _lazy[0] else "")


def missing(obj, namespace, name, plain):
    """The exception for reading ``name`` from ``obj``, hookgrad's mirror of torch's ``namespace``:
    NotImplementedName for torch's public names, else AttributeError(plain)."""
    if name[:1] != "_" and name in torch_names(namespace):
        return NotImplementedName(message(namespace, name), name=name, obj=obj,
                                  torch_name=f"{namespace}.{name}", category=category(namespace, name))
    return AttributeError(plain, name=name, obj=obj)


def module_getattr(module_name, namespace):
    """A module-level ``__getattr__`` (PEP 562) for hookgrad's module ``module_name`` mirroring torch's
    ``namespace``."""
    def __getattr__(name):
        module = sys.modules.get(module_name)
        if name[:2] != "__" and module is not None and hasattr(module, "__path__"):
            sub = f"{module_name}.{name}"
            if sub not in sys.modules:
                try:
                    found = importlib.util.find_spec(sub) is not None
                except (ImportError, ValueError):
                    found = False
                if found:
                    return importlib.import_module(sub)
        return not_found(module, namespace, name, f"module {module_name!r} has no attribute {name!r}")
    __getattr__.__qualname__ = __getattr__.__name__ = "__getattr__"
    return __getattr__


def not_found(obj, namespace, name, plain):
    """What reading the missing ``name`` of the hookgrad module ``obj`` (torch's ``namespace``) gives: a placeholder
    in lazy mode when the reading code names it directly (see the module docstring), else the exception of
    :func:`missing` raised."""
    if _lazy[0] and name[:2] != "__":
        where = direct_reference(sys._getframe(2))
        if where is not None:
            return placeholder(f"{namespace}.{name}", where)
    raise missing(obj, namespace, name, plain)


# ------------------------------------------------------------------------------------------------- lazy mode
_lazy = [False]
_HERE = os.path.dirname(os.path.abspath(__file__))
_TRANSPARENT = (os.path.join(_HERE, "compat.py"), os.path.join(_HERE, "_missing.py"), "<frozen importlib")
_DIRECT = frozenset(dis.opmap[n] for n in ("LOAD_ATTR", "LOAD_METHOD", "IMPORT_FROM", "IMPORT_NAME", "LOAD_SUPER_ATTR")
                    if n in dis.opmap)
_try_ranges = {}
_placeholders = {}


def set_lazy(on):
    """Turn lazy mode on or off (hookgrad.compat.install(lazy=True) turns it on)."""
    _lazy[0] = bool(on)


def is_lazy():
    return _lazy[0]


def _protected(code, offset):
    """Whether the instruction at ``offset`` of ``code`` lies in a try/with block (or its handler)."""
    ranges = _try_ranges.get(code)
    if ranges is None:
        parse = getattr(dis, "_parse_exception_table", None)
        ranges = _try_ranges[code] = tuple((e.start, e.end) for e in parse(code)) if parse else ()
    return any(start <= offset < end for start, end in ranges)


def direct_reference(frame):
    """``"file:line"`` of the code that is reading a name, when it names it directly (an attribute load or an
    import statement, outside any try/with block), skipping hookgrad's alias and import machinery; else None."""
    while frame is not None and frame.f_code.co_filename.startswith(_TRANSPARENT):
        frame = frame.f_back
    if frame is None or frame.f_code.co_filename.startswith(_HERE + os.sep):
        return None                 # hookgrad's own lookups stay strict
    code, offset = frame.f_code, frame.f_lasti
    if offset < 0 or code.co_code[offset] not in _DIRECT or _protected(code, offset):
        return None
    return f"{code.co_filename}:{frame.f_lineno}"


def placeholder(torch_name, where):
    """The placeholder of ``torch_name`` (one per name: it remembers where it was first named)."""
    p = _placeholders.get(torch_name)
    if p is None:
        p = _placeholders[torch_name] = MissingName(torch_name, where)
    return p


def _lazy_error(torch_name, where, how):
    namespace, _, name = torch_name.rpartition(".")
    known = name in torch_names(namespace)
    base = message(namespace, name, hint=False) if known else (
        f"{torch_name} is not implemented in hookgrad (see {COVERAGE_PAGE}).")
    return NotImplementedName(f"{base} It was {how}; lazy mode let the code that names it load "
                              f"(first named at {where}).", name=name, torch_name=torch_name,
                              category=category(namespace, name) if known else None)


class MissingName:
    """Lazy mode's stand-in for a torch name hookgrad lacks: harmless to name, raises NotImplementedName when used
    (see the module docstring for what counts as a use)."""
    __slots__ = ("_torch_name", "_where", "_base", "__weakref__")

    def __init__(self, torch_name, where):
        object.__setattr__(self, "_torch_name", torch_name)
        object.__setattr__(self, "_where", where)
        object.__setattr__(self, "_base", None)

    def _fail(self, how):
        raise _lazy_error(self._torch_name, self._where, how)

    def __repr__(self):
        return f"<hookgrad lazy placeholder for {self._torch_name} (first named at {self._where})>"

    def __getattr__(self, name):
        if name[:2] == "__":
            raise AttributeError(name)
        return placeholder(f"{self._torch_name}.{name}", self._where)

    def __setattr__(self, name, value):
        self._fail(f"assigned to (.{name} = ...)")

    def __delattr__(self, name):
        self._fail(f"changed (del .{name})")

    def __call__(self, *args, **kwargs):
        self._fail("called")

    def __mro_entries__(self, bases):
        """``class C(placeholder):`` derives C from a stand-in base whose instances cannot be made."""
        if self._base is None:
            ph = self

            def __new__(cls, *args, **kwargs):
                raise _lazy_error(ph._torch_name, ph._where, f"instantiated (as the base of {cls.__qualname__})")
            base = type(self._torch_name.rpartition(".")[2], (), {"__new__": __new__, "__module__": "torch"})
            object.__setattr__(self, "_base", base)
        return (self._base,)

    def __instancecheck__(self, obj):
        return False

    def __subclasscheck__(self, cls):
        return False

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = object.__hash__


def _value_use(op):
    def use(self, *args):
        self._fail(f"read as a value ({op})")
    use.__name__ = op
    return use


for _op in ("__bool__", "__len__", "__iter__", "__contains__", "__getitem__", "__setitem__", "__delitem__",
            "__int__", "__float__", "__index__", "__complex__", "__neg__", "__pos__", "__abs__", "__invert__",
            "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
            "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__",
            "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__and__", "__rand__", "__or__", "__ror__",
            "__xor__", "__rxor__", "__lshift__", "__rshift__", "__enter__", "__exit__", "__await__",
            "__fspath__", "__format__"):
    setattr(MissingName, _op, _value_use(_op))
del _op


class MissingModule(type(sys)):
    """Lazy mode's stand-in for ``import torch.x.mod`` of a module hookgrad lacks: every name read from it is a
    placeholder (the module itself is missing), and its submodules import as MissingModules too."""

    def __init__(self, name, where):
        super().__init__(name, f"hookgrad lazy placeholder for the missing module {name} (first named at {where})")
        self.__path__ = []
        self._where = where

    def __getattr__(self, name):
        if name[:2] == "__":
            raise AttributeError(name)
        return placeholder(f"{self.__name__}.{name}", self.__dict__.get("_where", "?"))

    def __repr__(self):
        return f"<hookgrad lazy placeholder module {self.__name__!r} (first named at {self._where})>"
