"""Run code that does ``import torch`` on hookgrad: ``install()`` makes ``torch`` an alias of hookgrad.

After ``install()``, ``import torch.x.y`` gives the module object ``hookgrad.x.y`` itself (registered in
``sys.modules`` under both names: no second copies, so ``isinstance`` checks across the two names hold).
``python -m hookgrad script.py`` installs the alias and runs the script (see ``__main__.py``).

The one exception is the top-level module. ``torch.__version__`` must be the PyTorch release hookgrad
mirrors (clients branch on it) while ``hookgrad.__version__`` stays hookgrad's own, so ``torch`` is a thin
module that forwards every attribute read, write, delete and ``dir()`` to hookgrad: ``torch.relu = f``
sets ``hookgrad.relu``, ``torch.__dict__`` is hookgrad's dict. It keeps its own ``__name__`` ("torch"),
``__version__``, ``__spec__`` and ``__loader__``. Every submodule, ``torch.nn`` included, is the hookgrad
module itself. Real PyTorch is never imported; if it already is, ``install()`` refuses.
Child processes started by multiprocessing's spawn/forkserver methods get the alias too (their
``import torch`` finds the stand-in in ``_spawn/`` first on the sys.path they inherit).
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
from types import ModuleType

__all__ = ["install", "uninstall", "is_installed", "TorchAlreadyImportedError"]

_ALIAS, _TARGET = "torch", "hookgrad"
_OWN = frozenset({"__name__", "__version__", "__spec__", "__loader__", "__package__", "__class__",
                  "__repr__", "__reduce__", "__reduce_ex__", "__getattribute__", "__setattr__",
                  "__delattr__", "__dir__"})
_lock = threading.RLock()
_state = {"module": None, "finder": None}


class TorchAlreadyImportedError(ImportError, RuntimeError):
    """install() was called after the real PyTorch was imported into this process."""


def _hookgrad():
    return sys.modules[_TARGET]


class _TorchModule(ModuleType):
    """The top-level ``torch``: hookgrad's attributes, PyTorch's name and version."""

    def __getattribute__(self, name):
        if name in _OWN:
            return ModuleType.__getattribute__(self, name)
        return getattr(sys.modules[_TARGET], name)

    def __setattr__(self, name, value):
        if name in _OWN:
            ModuleType.__setattr__(self, name, value)
        else:
            setattr(sys.modules[_TARGET], name, value)

    def __delattr__(self, name):
        if name in _OWN:
            ModuleType.__delattr__(self, name)
        else:
            delattr(sys.modules[_TARGET], name)

    def __dir__(self):
        return sorted(set(dir(sys.modules[_TARGET])) | {"__version__"})

    def __repr__(self):
        return f"<module 'torch' (hookgrad alias) from {sys.modules[_TARGET].__file__!r}>"


class _AliasLoader(importlib.abc.Loader):
    """Loads ``torch.x`` by returning the module ``hookgrad.x`` (imported if it was not)."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        if self.target is None:
            return _state["module"]
        module = importlib.import_module(self.target)
        # the import system stamps the alias spec on the module it is given; exec_module puts the
        # module's own back, so that hookgrad.x keeps its identity (pickle, reload, inspect)
        self._own_spec = getattr(module, "__spec__", None)
        return module

    def exec_module(self, module):
        if self.target is not None:
            ModuleType.__setattr__(module, "__spec__", self._own_spec)
            _lazy_getattr(module)


class _AliasFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: maps every ``torch.*`` import to the ``hookgrad.*`` module of that name."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
            return None
        if fullname == _ALIAS:
            return importlib.machinery.ModuleSpec(_ALIAS, _AliasLoader(None), is_package=True)
        real = _TARGET + fullname[len(_ALIAS):]
        if real in sys.modules:
            is_package = hasattr(sys.modules[real], "__path__")
        else:
            try:
                spec = importlib.util.find_spec(real)
            except ModuleNotFoundError:        # a parent that does not exist
                spec = None
            if spec is None:                   # hookgrad has no such module: "No module named 'torch.x'"
                lazy = _lazy_spec(fullname)
                if lazy is not None:
                    return lazy
                _raise_if_torch_has(fullname)
                _raise_if_named_directly(fullname)
                return None
            is_package = spec.submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), is_package=is_package)


class _LazyModuleLoader(importlib.abc.Loader):
    """Lazy mode: makes the placeholder module of a torch module hookgrad lacks (see hookgrad._missing)."""

    def __init__(self, where):
        self.where = where

    def create_module(self, spec):
        from ._missing import MissingModule
        return MissingModule(spec.name, self.where)

    def exec_module(self, module):
        pass


def _raise_if_named_directly(fullname):
    """An import statement (not a probe, not inside a try) of a torch module hookgrad lacks: Python's error, with
    where lazy mode is."""
    from . import _missing
    if _missing.direct_reference(sys._getframe(2)) is not None:
        raise ModuleNotFoundError(f"No module named {fullname!r} (hookgrad has no such module.{_missing.LAZY_HINT})",
                                  name=fullname)


def _lazy_getattr(module):
    """Lazy mode: a hookgrad module without a missing-name hook gets one, so that ``from torch.x import missing``
    gives a placeholder there too."""
    from . import _missing
    name = getattr(module, "__name__", "")
    if _missing.is_lazy() and name.startswith(_TARGET + ".") and "__getattr__" not in module.__dict__:
        module.__getattr__ = _missing.module_getattr(name, _ALIAS + name[len(_TARGET):])


def _lazy_spec(fullname):
    """In lazy mode, the spec of a placeholder module when an import statement names ``fullname`` directly."""
    from . import _missing
    if not _missing.is_lazy():
        return None
    where = _missing.direct_reference(sys._getframe(2))
    if where is None:
        return None
    return importlib.machinery.ModuleSpec(fullname, _LazyModuleLoader(where), is_package=True)


def _raise_if_torch_has(fullname):
    """A module PyTorch has and hookgrad does not: say so (later / non-goal) instead of "No module named"."""
    from . import _missing
    parent, _, leaf = fullname.rpartition(".")
    if leaf[:1] != "_" and leaf in _missing.torch_names(parent):
        raise ModuleNotFoundError(f"No module named {fullname!r}: {_missing.message(parent, leaf)}", name=fullname)


def _make_top():
    from .torch_version import __version__ as torch_version
    hg = _hookgrad()
    top = _TorchModule(_ALIAS, hg.__doc__)
    loader = _AliasLoader(None)
    spec = importlib.machinery.ModuleSpec(_ALIAS, loader, origin=getattr(hg, "__file__", None), is_package=True)
    spec.submodule_search_locations = list(getattr(hg, "__path__", []))
    for k, v in (("__version__", torch_version), ("__spec__", spec), ("__loader__", loader),
                 ("__package__", _ALIAS)):
        ModuleType.__setattr__(top, k, v)
    return top


def _real_torch_loaded():
    for name, mod in list(sys.modules.items()):
        if (name == _ALIAS or name.startswith(_ALIAS + ".")) and mod is not None and not _is_ours(name, mod):
            return name, mod
    return None


def _is_ours(name, mod):
    if mod is _state["module"] and mod is not None:
        return True
    return sys.modules.get(_TARGET + name[len(_ALIAS):]) is mod


def install(lazy=False):
    """Make ``import torch`` (and every ``torch.x.y``) give hookgrad's modules. Returns the ``torch`` module.

    Idempotent. Raises TorchAlreadyImportedError (an ImportError and a RuntimeError) if the real PyTorch
    is already imported in this process: two libraries cannot both be ``torch``.

    ``lazy=True`` turns on lazy mode (``python -m hookgrad --lazy``): torch names hookgrad lacks that code names
    directly resolve to placeholders that raise NotImplementedName only when used (rule: hookgrad._missing).
    """
    from . import _missing
    if lazy:
        _missing.set_lazy(True)
    with _lock:
        found = _real_torch_loaded()
        if found is not None:
            name, mod = found
            where = getattr(mod, "__file__", None) or repr(mod)
            raise TorchAlreadyImportedError(
                f"hookgrad.compat.install(): the real PyTorch is already imported in this process "
                f"(sys.modules[{name!r}] from {where}). Install the alias before anything imports torch "
                f"(first line of the program, or run it with `python -m hookgrad script.py`).", name=name)
        if _state["module"] is None:
            _state["module"] = _make_top()
        if _state["finder"] is None:
            _state["finder"] = _AliasFinder()
        if _state["finder"] not in sys.meta_path:
            sys.meta_path.insert(0, _state["finder"])
        sys.modules[_ALIAS] = _state["module"]
        _spawned_children_too()
        for name, mod in list(sys.modules.items()):       # the hookgrad modules already imported
            if name.startswith(_TARGET + ".") and mod is not None:
                sys.modules.setdefault(_ALIAS + name[len(_TARGET):], mod)
                _lazy_getattr(mod)
        return _state["module"]


def _spawned_children_too():
    """multiprocessing's spawn/forkserver children start a fresh interpreter that gets the parent's sys.path:
    put the _spawn folder first in what they get, so that their ``import torch`` installs the alias."""
    import multiprocessing.spawn as spawn
    if getattr(spawn.get_preparation_data, "_hookgrad_alias", False):
        return
    original = spawn.get_preparation_data
    folder = os.path.join(os.path.dirname(__file__), "_spawn")

    def get_preparation_data(name):
        data = original(name)
        if is_installed() and "sys_path" in data:
            data["sys_path"] = [folder] + [p for p in data["sys_path"] if p != folder]
        return data
    get_preparation_data._hookgrad_alias = True
    spawn.get_preparation_data = get_preparation_data


def is_installed():
    """True while ``torch`` means hookgrad in this process."""
    return _state["module"] is not None and sys.modules.get(_ALIAS) is _state["module"]


def uninstall():
    """Undo install(): ``torch`` and ``torch.*`` leave sys.modules and the finder leaves sys.meta_path.

    Objects made meanwhile stay hookgrad objects; modules that did ``import torch`` keep their reference.
    """
    from . import _missing
    _missing.set_lazy(False)
    with _lock:
        if _state["finder"] in sys.meta_path:
            sys.meta_path.remove(_state["finder"])
        for name, mod in list(sys.modules.items()):
            if (name == _ALIAS or name.startswith(_ALIAS + ".")) and _is_ours(name, mod):
                del sys.modules[name]
