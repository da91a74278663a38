"""Saved-tensor accounting: the bytes autograd keeps for backward, per op and per module path, totalled
per step, on hookgrad and torch models.

>>> with saved_tensor_bytes(model) as acct:
...     model(x).sum().backward()
>>> acct.total, acct.by_module["layer1.conv1"], acct.by_op["Convolution"]
>>> print(acct.table())

What is counted is what ``autograd.graph.saved_tensors_hooks`` sees: a pack hook (that keeps the
tensor itself, so nothing is copied or moved, and its version, so that an in-place change is still an
error at unpack) adds ``numel * element_size`` of every tensor saved
for backward. On hookgrad that is every array the graph keeps (``total`` equals the sum of their
``nbytes``); on torch, every ``SavedVariable``. A tensor saved by two ops is counted twice in ``total``
and once in ``unique``. Saves inside an inner ``saved_tensors_hooks`` (activation checkpointing's
placeholders, ``save_on_cpu``) are that context's business and are not seen.

Attribution: the module path is the innermost module of ``model`` running when the tensor is saved
(``"<outside>"`` when none is, e.g. a loss computed after the model). The op is, on hookgrad, the primitive
running (op hooks); on torch, the autograd node whose ``_saved_*`` attributes hold it (read from the graph
when the model's forward returns: ops after it are counted in ``total`` and ``by_module`` only).
A step starts at each call of ``model``.
"""
import re

from .lib import lib_of, torch_attr

__all__ = ["saved_tensor_bytes", "SavedStep"]

OUTSIDE = "<outside>"
_BACKWARD = re.compile(r"Backward\d*$")


class SavedStep:
    """One step's account: ``total`` / ``unique`` bytes, ``count`` tensors, ``by_module`` and ``by_op``
    (``{name: bytes}``), ``by_module_op`` (``{(path, op): bytes}``)."""

    def __init__(self, index):
        self.index = index
        self.total = 0
        self.count = 0
        self.by_module = {}
        self.by_op = {}
        self.by_module_op = {}
        self._seen = set()
        self.unique = 0

    def add(self, path, op, nbytes, key):
        self.total += nbytes
        self.count += 1
        self.by_module[path] = self.by_module.get(path, 0) + nbytes
        if op is not None:
            self.by_op[op] = self.by_op.get(op, 0) + nbytes
            self.by_module_op[(path, op)] = self.by_module_op.get((path, op), 0) + nbytes
        if key not in self._seen:
            self._seen.add(key)
            self.unique += nbytes

    def __repr__(self):
        return f"SavedStep({self.index}: {self.total} bytes in {self.count} tensors, {self.unique} unique)"


class saved_tensor_bytes:
    """Context manager accounting the bytes saved for backward while it is active (see the module doc).

    Attributes: ``steps`` (a :class:`SavedStep` per call of ``model``, plus one for anything saved
    before the first call), and for the last step ``total``, ``unique``, ``by_module``, ``by_op``.
    """

    def __init__(self, model):
        self.model = model
        self.lib = lib_of(model)
        self.steps = []
        self._handles = []
        self._stack = []
        self.op = None
        self._ctx = None

    # ---- last step shortcuts ----
    def _last(self):
        if not self.steps:
            self.steps.append(SavedStep(0))
        return self.steps[-1]

    total = property(lambda self: self._last().total)
    unique = property(lambda self: self._last().unique)
    count = property(lambda self: self._last().count)
    by_module = property(lambda self: self._last().by_module)
    by_op = property(lambda self: self._last().by_op)
    by_module_op = property(lambda self: self._last().by_module_op)

    # ---- hooks ----
    def _pack(self, t):
        n = t.numel() * t.element_size()
        path = self._stack[-1] if self._stack else OUTSIDE
        self._last().add(path, self.op, n, (t.data_ptr(), n, t.dtype))
        gf = t.grad_fn         # named now: an in-place op later moves the tensor to a new grad_fn
        return t, torch_attr(t, "version"), (None if gf is None else (_BACKWARD.sub("", gf.name()), t.output_nr))

    @staticmethod
    def _unpack(packed):
        # NOTE: under saved_tensors_hooks PyTorch no longer checks that a saved tensor was not modified in
        # place since; without this check, attaching the tool would turn that error into wrong gradients.
        t, version, origin = packed
        if torch_attr(t, "version") != version:
            where = f", which is output {origin[1]} of {origin[0]}," if origin is not None else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[{t.type()} [{', '.join(map(str, t.shape))}]]{where} is at version {torch_attr(t, 'version')}; expected version "
                f"{version} instead. Hint: enable anomaly detection to find the operation that failed to compute its "
                "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
        return t

    def _pre(self, path, root):
        def hook(module, args):
            if root and not self._stack:
                self.steps.append(SavedStep(len(self.steps)))
            self._stack.append(path)
        return hook

    def _post(self, root):
        def hook(module, args, output):
            if self._stack:
                self._stack.pop()
            if root and not self._stack and self.lib.is_torch:
                self._walk_torch(output)
        return hook

    def _walk_torch(self, output):
        """torch: name each saved tensor's op from the graph (the node whose ``_saved_*`` holds it)."""
        step = self._last()
        todo, seen = [], set()
        for t in _tensors(output, self.lib.Tensor):
            if t.grad_fn is not None:
                todo.append(t.grad_fn)
        while todo:
            fn = todo.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            op = _BACKWARD.sub("", fn.name())          # MulBackward0 -> Mul, as hookgrad's op names
            for k in dir(fn):
                if k.startswith("_saved_"):
                    try:
                        v = getattr(fn, k)
                    except RuntimeError:           # freed, or modified in place since
                        continue
                    for t in _tensors(v, self.lib.Tensor):
                        n = t.numel() * t.element_size()
                        step.by_op[op] = step.by_op.get(op, 0) + n
            todo.extend(f for f, _ in fn.next_functions)

    def __enter__(self):
        if self._ctx is not None:
            raise RuntimeError("saved_tensor_bytes: this context is already active")
        lib = self.lib
        try:
            for path, mod in self.model.named_modules():
                root = mod is self.model
                self._handles.append(mod.register_forward_pre_hook(self._pre(path, root)))
                self._handles.append(mod.register_forward_hook(self._post(root), always_call=True))
            if not lib.is_torch:
                from ..autograd.graph import register_op_hook
                self._handles.append(register_op_hook(_OpName(self)))
            self._ctx = lib.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
            self._ctx.__enter__()
        except BaseException:
            self._remove()
            raise
        return self

    def _remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def __exit__(self, *exc):
        ctx, self._ctx = self._ctx, None
        if ctx is not None:
            ctx.__exit__(*exc)
        self._remove()
        self._stack = []

    def table(self, step=-1, top=20):
        """A text table of one step's bytes by module path and by op."""
        s = self.steps[step] if self.steps else SavedStep(0)
        lines = [f"step {s.index}: {s.total:,} bytes saved for backward in {s.count} tensors ({s.unique:,} unique)",
                 f"{'module path':<40} {'bytes':>14}"]
        for p, n in sorted(s.by_module.items(), key=lambda kv: -kv[1])[:top]:
            lines.append(f"{p or '<root>':<40} {n:>14,}")
        lines.append(f"{'op':<40} {'bytes':>14}")
        for p, n in sorted(s.by_op.items(), key=lambda kv: -kv[1])[:top]:
            lines.append(f"{p:<40} {n:>14,}")
        return "\n".join(lines)


class _OpName:
    """hookgrad: the primitive running while a tensor is saved (op hooks bracket every primitive)."""

    def __init__(self, acct):
        self.acct = acct

    def forward_pre(self, name, inputs):
        self.acct.op = name

    def forward_post(self, name, inputs, output, node):
        self.acct.op = None

    def backward_pre(self, node, grad_outputs):
        pass

    def backward_post(self, node, grad_inputs, grad_outputs):
        pass


def _tensors(x, cls):
    if isinstance(x, cls):
        yield x
    elif isinstance(x, (tuple, list)):
        for v in x:
            yield from _tensors(v, cls)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _tensors(v, cls)
