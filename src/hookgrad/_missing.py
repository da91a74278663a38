"""The error for a PyTorch name that hookgrad does not implement.

Each hookgrad namespace that mirrors a torch namespace ends with
``__getattr__ = _missing.module_getattr(__name__, "torch.nn")``. Python calls that only after normal
lookup fails, so it costs nothing on found names. For a public name of torch 2.13 it raises
:class:`NotImplementedName`, an AttributeError (so ``hasattr`` is False and ``getattr(m, name, default)``
works) whose message names the PyTorch name and says whether it comes later or is a non-goal; any other
name (dunders included: ``copy``, ``pickle``, ``inspect`` and ``doctest`` probe them) gets Python's own
AttributeError. A submodule not imported yet is imported, as Python does for ``from pkg import sub``.

Placeholders for layers that come later. In ``torch.nn`` and ``torch.nn.functional`` a class or function
whose category is "later: ..." (issue 12's layers: ``nn.LSTM``, ``nn.Conv3d``, ``F.avg_pool3d``, ...)
resolves to a placeholder instead of raising: tools such as thop, ptflops and captum use these names as
dict keys and in ``isinstance`` checks when they are imported, so merely naming them must work. A
placeholder is a class (a subclass of ``nn.Module``) or a function, made on first access and then the
same object on every access (dict keys and ``isinstance`` work; ``isinstance(nn.Linear(1, 1), nn.LSTM)``
is False); constructing or calling it raises NotImplementedError with the message below. Placeholders
are not put in the module's ``__dict__`` or ``dir()``, so coverage still counts the names as missing.
Non-goals, everyday names and names of other namespaces still raise :class:`NotImplementedName`.
Which names get placeholders, and whether each is a class or a function, is ``PLACEHOLDERS`` in
``_coverage_names``.

torch's names come from ``_coverage_names`` (generated from torch by scripts/gen_torch_names.py).

Tensor methods get no such fallback: a ``Tensor.__getattr__`` makes CPython give up its specialised
attribute loads on every tensor (measured: attribute reads 3.7x slower), and class-level placeholders
would list names in ``dir(tensor)`` that raise when read.
"""
import importlib
import importlib.util
import sys

COVERAGE_PAGE = "docs/coverage.md"
_names_cache = {}
_placeholders = {}
_PLACEHOLDER_NAMESPACES = ("torch.nn", "torch.nn.functional")


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


def message(namespace, name):
    """The text of the not-implemented error for torch's ``namespace.name``."""
    cat = category(namespace, name)
    full = f"{namespace}.{name}"
    if cat is None:
        return f"{full} is not implemented in hookgrad yet (see {COVERAGE_PAGE})"
    kind, _, why = cat.partition(": ")
    if kind == "non-goal":
        return f"{full} is not implemented in hookgrad: a non-goal ({why}). See {COVERAGE_PAGE}"
    return f"{full} is not implemented in hookgrad yet; it comes later: {why}. See {COVERAGE_PAGE}"


def missing(obj, namespace, name, plain):
    """The exception for reading ``name`` from ``obj``, hookgrad's mirror of torch's ``namespace``:
    NotImplementedName for torch's public names, else AttributeError(plain)."""
    if name[:1] != "_" and name in torch_names(namespace):
        return NotImplementedName(message(namespace, name), name=name, obj=obj,
                                  torch_name=f"{namespace}.{name}", category=category(namespace, name))
    return AttributeError(plain, name=name, obj=obj)


def placeholder(module_name, namespace, name):
    """The placeholder for torch's ``namespace.name`` in hookgrad's module ``module_name``, or None when that
    name gets none (see the module docstring). Made once, then cached."""
    key = (namespace, name)
    obj = _placeholders.get(key)
    if obj is not None:
        return obj
    from . import _coverage_names as data
    kind = data.PLACEHOLDERS.get(namespace, {}).get(name)
    if kind is None:
        return None
    msg = message(namespace, name)
    if kind == "class":
        from .nn.modules.module import Module

        def __init__(self, *args, **kwargs):
            raise NotImplementedError(msg)
        obj = type(name, (Module,), {"__init__": __init__, "__module__": module_name, "__qualname__": name,
                                     "__doc__": f"Placeholder: {msg}"})
        __init__.__qualname__ = f"{name}.__init__"
    else:
        def obj(*args, **kwargs):
            raise NotImplementedError(msg)
        obj.__name__ = obj.__qualname__ = name
        obj.__module__ = module_name
        obj.__doc__ = f"Placeholder: {msg}"
    return _placeholders.setdefault(key, obj)


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
        if namespace in _PLACEHOLDER_NAMESPACES and name[:1] != "_":
            obj = placeholder(module_name, namespace, name)
            if obj is not None:
                return obj
        raise missing(module, namespace, name, f"module {module_name!r} has no attribute {name!r}")
    __getattr__.__qualname__ = __getattr__.__name__ = "__getattr__"
    return __getattr__
