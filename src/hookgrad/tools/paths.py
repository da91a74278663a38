"""Module paths: the path of every module of a model, selecting modules by path pattern, and the path
of the module running now. Shared by the tools that name modules by path."""
import fnmatch
import threading

from .lib import lib_of
from .threadstate import thread_list

__all__ = ["module_paths", "select", "match", "ModuleStack"]


def module_paths(model):
    """``{id(module): path}`` for every module under ``model`` (a shared module keeps its first path;
    the root's path is ``""``)."""
    paths = {}
    for name, mod in model.named_modules(remove_duplicate=False):
        paths.setdefault(id(mod), name)
    return paths


def select(model, patterns):
    """``[(path, module)]`` whose path matches any fnmatch pattern (``"layer*.conv1"``, ``"*"``); a
    module reachable by several paths (shared) is matched by any of them."""
    if isinstance(patterns, str):
        patterns = (patterns,)
    return [(name, mod) for name, mod in model.named_modules(remove_duplicate=False)
            if any(fnmatch.fnmatchcase(name, p) for p in patterns)]


def match(model, patterns, tool):
    """``[(path, module)]`` for modules whose path matches a pattern; a module reachable by several paths
    (shared) is listed once, under its first matching path. A pattern matching nothing is an error."""
    if isinstance(patterns, str):
        patterns = (patterns,)
    named = list(model.named_modules(remove_duplicate=False))
    out, seen = [], set()
    for p in patterns:
        if not isinstance(p, str):
            raise TypeError(f"{tool}: module path patterns must be str, got {type(p).__name__} ({p!r})")
        hits = [(n, m) for n, m in named if fnmatch.fnmatchcase(n, p)]
        if not hits:
            some = [n or '""' for n, _ in named[:12]]
            raise ValueError(f"{tool}: pattern {p!r} matches no module of {type(model).__name__}; "
                             f"module paths are: {', '.join(some)}{', ...' if len(named) > 12 else ''}")
        for n, m in hits:
            if id(m) not in seen:
                seen.add(id(m))
                out.append((n, m))
    # keep model order (named_modules order), not pattern order
    rank = {}
    for n, m in named:
        rank.setdefault(id(m), len(rank))
    out.sort(key=lambda nm: rank[id(nm[1])])
    return out


class ModuleStack:
    """Tracks the module calls in progress under ``model`` through the global module hooks, with
    each path's call index (0 for a module's first call inside the context, 1 for its second...).

    >>> with ModuleStack(model) as stack:
    ...     model(x)          # inside, stack.path() is e.g. "layer1.0.conv1"; stack.where() adds the call
    """

    def __init__(self, model):
        self.lib = lib_of(model)
        self.paths = module_paths(model)
        self.counts = {}
        self._tls = threading.local()
        self._handles = []

    def _stack(self):
        return thread_list(self._tls, "stack")

    def _pre(self, module, args):
        path = self.paths.get(id(module))
        if path is not None:
            n = self.counts.get(path, 0)
            self.counts[path] = n + 1
            self._stack().append((path, n))

    def _post(self, module, args, output):
        if id(module) in self.paths:
            st = self._stack()
            if st:
                st.pop()

    def path(self):
        """The innermost running module's path ("" for the root; None outside the model)."""
        st = self._stack()
        return st[-1][0] if st else None

    def where(self):
        """``(path, call index)`` of the innermost running module, ``(None, None)`` outside."""
        st = self._stack()
        return st[-1] if st else (None, None)

    def __enter__(self):
        self._handles = [self.lib.register_module_forward_pre_hook(self._pre),
                         self.lib.register_module_forward_hook(self._post, always_call=True)]
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []
