"""Autograd errors in the user's terms (nnsight #473, PRs #694/#699), on hookgrad and torch models.

>>> with explain_autograd_errors(model):
...     loss = model(x).sum()
...     loss.backward()
...     loss.backward()            # RuntimeError: Trying to backward through the graph a second time ...
...                                # (explain_autograd_errors: in the backward of AddmmBackward0, an op of
...                                #  module 'encoder.1.fc' (call 0) in forward 0 of the model; ...)

While active, every autograd node a module of ``model`` creates is tagged (in ``node.metadata``) with the
module path, that module's call index within the forward, and the forward's index, and gets a node pre-hook and post-hook that note
the node running backward. A ``RuntimeError`` of backward leaving the ``with`` block ("backward through
the graph a second time", "modified by an inplace operation") is raised again, same type, with the
failing node's module and call appended (the original is chained as ``__cause__``).
"""
import threading

from .lib import lib_of

__all__ = ["explain_autograd_errors"]

_KEY = "explain_autograd_errors"
_FREED = "backward through the graph a second time"
_INPLACE = "modified by an inplace operation"


class explain_autograd_errors:
    """Context manager; see the module doc. ``where(node)`` -> ``(path, call, forward)`` of a tagged node."""

    def __init__(self, model):
        self.model = model
        self.lib = lib_of(model)
        self._handles = []
        self._node_handles = []
        self._tls = threading.local()
        self.forwards = -1
        self._calls = {}

    def where(self, node):
        return node.metadata.get(_KEY) if node is not None else None

    def _pre_root(self, module, args):
        if not getattr(self._tls, "depth", 0):
            self.forwards += 1
            self._calls = {}            # call indices count within one forward of the model
        self._tls.depth = getattr(self._tls, "depth", 0) + 1

    def _post_root(self, module, args, output):
        self._tls.depth = max(0, getattr(self._tls, "depth", 1) - 1)

    def _tagger(self, path):
        def hook(module, args, output):
            calls = self._calls
            tag = (path, calls.get(path, 0), max(self.forwards, 0))
            calls[path] = tag[1] + 1
            todo = [t.grad_fn for t in _tensors(output, self.lib.Tensor) if t.grad_fn is not None]
            while todo:
                fn = todo.pop()
                if fn is None or _KEY in fn.metadata or fn.name() == "torch::autograd::AccumulateGrad" \
                        or fn.name() == "AccumulateGrad":
                    continue
                fn.metadata[_KEY] = tag
                self._node_handles.append(fn.register_prehook(self._running(fn.name(), tag)))
                self._node_handles.append(fn.register_hook(self._done))
                todo.extend(f for f, _ in fn.next_functions)
        return hook

    def _running(self, name, tag):
        # NOTE: the pre-hook keeps the node's name and tag, not the node (no reference cycle); the last node
        # entered is the one whose backward raised (CPU backward runs one node at a time per thread)
        tls = self._tls

        def explain_autograd_errors_pre(grad_outputs):
            tls.last = (name, tag)
        return explain_autograd_errors_pre

    def _done(self, grad_inputs, grad_outputs):
        self._tls.last = None       # finished: an error after this is not this node's

    def __enter__(self):
        if self._handles:
            raise RuntimeError("explain_autograd_errors: this context is already active")
        self._handles.append(self.model.register_forward_pre_hook(self._pre_root))
        for path, mod in self.model.named_modules():
            self._handles.append(mod.register_forward_hook(self._tagger(path)))
        self._handles.append(self.model.register_forward_hook(self._post_root, always_call=True))
        return self

    def __exit__(self, exc_type, exc, tb):
        for h in self._handles + self._node_handles:
            h.remove()
        self._handles, self._node_handles = [], []
        if exc_type is not RuntimeError:
            return False
        text = str(exc)
        kind = "freed" if _FREED in text else "inplace" if _INPLACE in text else None
        if kind is None:
            return False
        last = getattr(self._tls, "last", None)
        if last is None:
            return False
        name, (path, call, fwd) = last
        what = (f"in the backward of {name}, an op of module {path or '<root>'!r} (call {call}) in forward "
                f"{fwd} of {type(self.model).__name__}")
        hint = ("; that forward's graph was freed by an earlier backward: run the forward again, or pass "
                "retain_graph=True to the first backward" if kind == "freed" else
                "; a tensor this op saved was changed in place after the op ran (an in-place op later in the forward, "
                "or between backward calls): use the out-of-place op, or .clone() before changing it")
        raise RuntimeError(f"{text}\n(explain_autograd_errors: {what}{hint})") from exc


def _tensors(x, cls):
    if isinstance(x, cls):
        yield x
    elif isinstance(x, (tuple, list)):
        for v in x:
            yield from _tensors(v, cls)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _tensors(v, cls)
