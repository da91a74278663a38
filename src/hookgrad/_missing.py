"""The error for a PyTorch name that hookgrad does not implement.

Each hookgrad namespace that mirrors a torch namespace ends with
``__getattr__ = _missing.module_getattr(__name__, "torch.nn")``. Python calls that only after normal
lookup fails, so it costs nothing on found names. For a public name of torch 2.13 it raises
:class:`NotImplementedName`, an AttributeError (so ``hasattr`` is False and ``getattr(m, name, default)``
works) whose message names the PyTorch name and says whether it comes later or is a non-goal; any other
name (dunders included: ``copy``, ``pickle``, ``inspect`` and ``doctest`` probe them) gets Python's own
AttributeError. A submodule not imported yet is imported, as Python does for ``from pkg import sub``.

torch's names come from ``_coverage_names`` (generated from torch by scripts/gen_torch_names.py).

Tensor methods get no such fallback: a ``Tensor.__getattr__`` makes CPython give up its specialised
attribute loads on every tensor (measured: attribute reads 3.7x slower), and class-level stand-ins
would list names in ``dir(tensor)`` that raise when read.
"""
import importlib
import importlib.util
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
        raise missing(module, namespace, name, f"module {module_name!r} has no attribute {name!r}")
    __getattr__.__qualname__ = __getattr__.__name__ = "__getattr__"
    return __getattr__
