"""Ready-made op-level hooks (Chainer's function hooks, which PyTorch lacks): a timer, a printer, a
memory counter, and an account of the time spent inside hooks against the time spent in the model.

All of them are :class:`hookgrad.autograd.graph.OpHook` subclasses used as context managers::

    with OpTimer(model) as t:
        model(x).sum().backward()
    print(t.summary())

With a ``model``, every op is tagged with the path of the innermost running module
(:class:`hookgrad.tools.paths.ModuleStack`); backward nodes get the path their forward op ran under
(recorded in ``node.metadata`` at forward time). Built only on the public hook API: OpHook, the
global module hooks, ``Module.register_forward_(pre_)hook`` and ``Node.register_(pre)hook``.

Ops that run *inside* a backward node (a gradient formula written with Tensor ops under
``create_graph=True``, or a tensor hook doing arithmetic) are part of that node's backward time and
bytes; the timer and the memory hook do not count them a second time as forward ops.

On a PyTorch model (or with ``lib=torch``), which has no op hook, :class:`TorchOpRunner` feeds the same
four methods: PyTorch's public ``TorchDispatchMode`` gives the forward ops (aten names in hookgrad's
spelling, ``aten.addmm`` -> ``Addmm``; ``forward_post`` gets ``node=None``, the node following in
``forward_node``), and pre- and post-hooks on the autograd graph's nodes give the backward. :class:`HookTimeAccount` on
torch places its backward markers where PyTorch's engine allows (see its docstring).
"""
import os
import re
import sys
import threading
import time
import traceback
import weakref

import numpy as np

from ..autograd.graph import OpHook, op_name
from .. import Tensor
from .lib import lib_of, torch_attr
from .threadstate import thread_list
from .paths import ModuleStack

__all__ = ["OpTimer", "OpPrinter", "MemoryHook", "HookTimeAccount", "account", "OpTool", "WHERE", "user_frame",
           "format_frame", "describe", "flat", "array_of", "TorchOpRunner"]

_perf = time.perf_counter
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
WHERE = "hookgrad.tools.where"       # node.metadata key: (module path, call index, user frame or None)


# --------------------------------------------------------------------------------------------
# shared helpers (also used by tools.nan)

def _lib_dirs():
    """The package folders whose frames are not the user's: hookgrad's, and torch's once imported."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.__name__ == "torch" and getattr(torch, "__file__", None):
        return (_PKG_DIR, os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    return (_PKG_DIR,)


def user_frame():
    """The innermost stack frame outside the hookgrad package (and torch's), as a
    ``traceback.FrameSummary`` (its ``.line`` is read lazily), or None."""
    dirs = _lib_dirs()
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(dirs):
        f = f.f_back
    if f is None:
        return None
    return traceback.FrameSummary(f.f_code.co_filename, f.f_lineno, f.f_code.co_name, lookup_line=False)


def format_frame(fs):
    if fs is None:
        return "<unknown>"
    line = (fs.line or "").strip()
    return f"{fs.filename}:{fs.lineno} in {fs.name}" + (f": `{line}`" if line else "")


# ModuleStack keeps per-path call indices (``where()``); the name is kept for this module's users.
ModuleCalls = ModuleStack


def flat(xs):
    """Tensors and scalars of an op's inputs/outputs, lists and tuples flattened one level."""
    out = []
    for x in (xs if isinstance(xs, (tuple, list)) else (xs,)):
        if isinstance(x, (tuple, list)):
            out.extend(x)
        else:
            out.append(x)
    return out


def array_of(x):
    """A tensor's values as a NumPy array (NumPy's ``__array__`` protocol: no copy on the CPU, and cheaper
    than ``numpy(force=True)``), an array itself, or None."""
    if isinstance(x, Tensor):
        return x.__array__()
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__.startswith("torch") and hasattr(x, "numpy"):      # a torch Tensor (or Parameter)
        lib = lib_of(x)
        if lib.is_torch and isinstance(x, lib.Tensor):
            try:
                return x.detach().cpu().numpy()       # shares the CPU tensor's memory
            except (RuntimeError, TypeError):        # bfloat16, meta, sparse...: no NumPy view
                return None
    return None


def describe(x):
    """``"(8, 8) float32"`` for a tensor, ``"None"``, or a short repr for anything else."""
    if x is None:
        return "None"
    a = array_of(x)
    if a is not None:
        return f"{tuple(a.shape)} {a.dtype}"
    if isinstance(x, (tuple, list)):
        return "[" + ", ".join(describe(v) for v in x) + "]"
    r = repr(x)
    return r if len(r) <= 24 else r[:21] + "..."


def _node_name(node):
    n = node.name()
    return n.rsplit("::", 1)[-1]


class OpTool(OpHook):
    """Base: registration as a context manager (or ``register()`` -> handle), the optional module
    tracker, and a per-thread depth of backward nodes running now."""

    def __init__(self, model=None, lib=None):
        self.model = model
        self.lib = lib_of(model, lib)
        self._mods = None
        self._handle = None
        self._tls = threading.local()

    # ---- registration ----
    def _start(self):
        if self._handle is not None:
            raise RuntimeError(f"{type(self).__name__} is already registered")
        if self.model is not None:
            self._mods = ModuleCalls(self.model).__enter__()
        self._handle = TorchOpRunner(self).start() if self.lib.is_torch else OpHook.register(self)

    def _stop(self):
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        if self._mods is not None:
            self._mods.__exit__(None, None, None)
            self._mods = None

    def register(self):
        """Register for every op until ``handle.remove()`` (same as entering the context)."""
        self._start()
        return _ToolHandle(self._stop)

    def __enter__(self):
        self._start()
        return self

    def __exit__(self, *exc):
        self._stop()

    # ---- what the torch runner reads ----
    wants_frames = False       # the runner records the user's frame for each node (tools.nan)

    def forward_node(self, output, node):
        """On torch: the grad_fn ``node`` of a forward op's ``output`` became known (after ``forward_post``,
        which there gets ``node=None``: TorchDispatchMode runs below autograd)."""

    def node_hooked(self, node):
        """On torch: the runner is about to hook ``node`` (a node of an op run inside the context, or one
        reachable from it); a tool may keep what it needs in ``node.metadata``, never the node itself."""

    def in_backward(self):
        """True while a backward node of this thread is running (its pre-hook ran, its post-hook not yet)."""
        return bool(self._bdepth())

    def where(self):
        """``(module path, call index)`` of the innermost running module, ``(None, None)`` without a model."""
        return self._where()

    @property
    def tracks_modules(self):
        return self._mods is not None

    # ---- helpers for subclasses ----
    def _bdepth(self):
        return getattr(self._tls, "bdepth", 0)

    def _enter_backward(self):
        self._tls.bdepth = self._bdepth() + 1

    def _leave_backward(self):
        self._tls.bdepth = self._bdepth() - 1

    def _where(self):
        return self._mods.where() if self._mods is not None else (None, None)

    def _tag(self, node, frame=None):
        """Record the current module path (and call index, frame) on a freshly created node."""
        if node is not None and self._mods is not None:
            path, idx = self._mods.where()
            node.metadata[WHERE] = (path, idx, frame)

    @staticmethod
    def _node_path(node):
        w = node.metadata.get(WHERE)
        return None if w is None else w[0]


def _camel(aten):
    """hookgrad's op name for an aten operator name: ``addmm`` -> ``Addmm``, ``_to_copy`` -> ``ToCopy``
    (the grad_fn name without ``Backward0``)."""
    name = "".join(p[:1].upper() + p[1:] for p in aten.split("_") if p)
    return _DIM_SUFFIX.sub(r"\1D", name)          # max_pool2d -> MaxPool2D, as MaxPool2DWithIndicesBackward0


_MODE_CLASSES = {}
_DIM_SUFFIX = re.compile(r"(\d)d(?![a-z])")
_NOT_OPS = {"detach", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like"}
# aten ops whose grad_fn is named otherwise (the name hookgrad and the backward node use)
_ATEN_ALIASES = {"_native_batch_norm_legit": "NativeBatchNorm", "_native_batch_norm_legit_no_training":
                 "NativeBatchNorm", "_native_batch_norm_legit_functional": "NativeBatchNorm"}


def _dispatch_mode_class(lib):
    """A ``TorchDispatchMode`` subclass of ``lib`` (torch) that hands every op to a runner."""
    cls = _MODE_CLASSES.get(lib.name)
    if cls is None:
        import importlib
        base = importlib.import_module(lib.name + ".utils._python_dispatch").TorchDispatchMode

        class ToolDispatchMode(base):
            def __init__(self, runner):
                super().__init__()
                self.runner = runner

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return self.runner.dispatch(func, args, kwargs or {})
        cls = _MODE_CLASSES[lib.name] = ToolDispatchMode
    return cls


class TorchOpRunner:
    """An op tool on torch: PyTorch's public ``TorchDispatchMode`` for the forward ops, and hooks on the
    autograd graph's nodes (``register_prehook`` / ``register_hook``) for the backward.

    The dispatch mode runs below autograd, so an op's grad_fn exists only once the op has returned: the
    outputs are kept (weakly) with where they ran, and at the next op, at a module's exit, or when the
    context closes their grad_fn gets ``node.metadata[WHERE]`` and the two node hooks, and so does every
    node reachable from it not hooked yet (``AccumulateGrad``, nodes of ops run before the context).
    Ops that run during a backward pass (the nodes' own formulas, the engine's gradient sums) are part
    of their node, as on hookgrad, and so is the seed ``ones_like`` that ``backward()`` makes."""

    def __init__(self, tool):
        self.tool = tool
        self.lib = tool.lib
        self.graph_task = torch_attr(self.lib.root, "graph_task_id", lambda: -1)
        self.pending = []            # [(weakref to an output, (path, call, frame))]
        self.handles = []            # the node hooks' handles
        self.kept = 1024
        self.token = _Token()        # the key this runner marks the nodes it hooked with, in node.metadata
        self.mode = None
        self.exit_handle = None
        self.frames = tool.wants_frames

    def start(self):
        self.mode = _dispatch_mode_class(self.lib)(self)
        self.mode.__enter__()
        if self.tool.tracks_modules:          # a module's exit resolves the ops it ran
            self.exit_handle = self.lib.register_module_forward_hook(lambda *a: self.flush(), always_call=True)
        return self

    def remove(self):
        if self.mode is None:
            return
        try:
            self.flush()
        finally:
            mode, self.mode = self.mode, None
            mode.__exit__(None, None, None)
            if self.exit_handle is not None:
                self.exit_handle.remove()
            for h in self.handles:
                h.remove()
            self.handles = []

    # ---- forward ----
    def dispatch(self, func, args, kwargs):
        if getattr(_IN_TOOL, "depth", 0):      # an op a tool runs itself (another tool's statistics...)
            return func(*args, **kwargs)
        self.flush()
        tool = self.tool
        aten = func.overloadpacket.__name__
        Tensor = self.lib.Tensor
        # the tensor arguments (and lists of them), as hookgrad's primitives take them
        inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor) or (
            isinstance(a, (list, tuple)) and a and all(isinstance(v, Tensor) for v in a))]
        if (self.graph_task() != -1 or tool.in_backward() or aten in _NOT_OPS
                or not any(isinstance(t, Tensor) for t in flat(inputs))
                or _called_from(sys._getframe(2), "_make_grads")):
            # backward's own ops, its seed gradient, autograd's detach of what it saves, and factories
            # (torch.empty, zeros_like...): no op on hookgrad either
            return func(*args, **kwargs)
        name = _ATEN_ALIASES.get(aten) or _camel(aten)
        with _in_tool():
            tool.forward_pre(name, inputs)
        out = func(*args, **kwargs)
        with _in_tool():
            tool.forward_post(name, inputs, out, None)
        where = tool.where() + ((user_frame() if self.frames else None),)
        for t in flat(out):
            if isinstance(t, self.lib.Tensor):
                self.pending.append((weakref.ref(t), where))
        return out

    def flush(self):
        """Hook the grad_fn of the outputs seen so far (their ops have returned through autograd)."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        for ref, where in pending:
            t = ref()
            node = None if t is None else t.grad_fn
            if node is not None and self.token not in node.metadata:
                if self.tool.tracks_modules or self.frames:
                    node.metadata[WHERE] = where
                with _in_tool():
                    self.tool.forward_node(t, node)
                self._hook_graph(node)

    def _hook_graph(self, root):
        # NOTE: a node's hooks must not hold the node: the hook dict lives in the C++ node, so a Python
        # reference back to it would be a cycle the garbage collector cannot see (the graph would never be
        # freed). They hold a NodeView (its name and its metadata dict) instead, and the node is marked as
        # hooked in its own metadata, under this runner's token (no table of nodes kept alive, no id reused).
        todo = [root]
        while todo:
            node = todo.pop()
            if node is None:
                continue
            md = node.metadata
            if self.token in md:
                continue
            md[self.token] = True
            with _in_tool():
                self.tool.node_hooked(node)
            view = NodeView(node.name(), md)
            self.handles.append(node.register_prehook(self._pre(view)))
            self.handles.append(node.register_hook(self._post(view)))
            todo.extend(n for n, _ in node.next_functions)
        if len(self.handles) > 2 * self.kept:       # forget the handles of freed graphs
            self.handles = [h for h in self.handles if h.hooks_dict_ref() is not None]
            self.kept = max(len(self.handles), 1024)

    # ---- backward ----
    def _pre(self, view):
        def tool_node_prehook(grad_outputs):
            if self.mode is not None:
                self.tool.backward_pre(view, grad_outputs)
        return tool_node_prehook

    def _post(self, view):
        def tool_node_hook(grad_inputs, grad_outputs):
            if self.mode is not None:
                self.tool.backward_post(view, grad_inputs, grad_outputs)
        return tool_node_hook


_IN_TOOL = threading.local()      # depth of tool code running on this thread (its ops are not the model's)


class _in_tool:
    __slots__ = ()

    def __enter__(self):
        _IN_TOOL.depth = getattr(_IN_TOOL, "depth", 0) + 1

    def __exit__(self, *exc):
        _IN_TOOL.depth -= 1


class _Token:
    __slots__ = ()

    def __repr__(self):
        return "hookgrad.tools.hooked"


class NodeView:
    """What an op tool sees of a torch node in backward: ``name()`` and ``metadata`` (the node's own dict)."""
    __slots__ = ("_name", "metadata")

    def __init__(self, name, metadata):
        self._name = name
        self.metadata = metadata

    def name(self):
        return self._name

    def __repr__(self):
        return f"<{self._name}>"


def _called_from(f, name, depth=3):
    """True when one of the ``depth`` innermost frames from ``f`` is a function ``name``."""
    while f is not None and depth:
        if f.f_code.co_name == name:
            return True
        f, depth = f.f_back, depth - 1
    return False


class _ToolHandle:
    def __init__(self, stop):
        self.remove = stop

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


# --------------------------------------------------------------------------------------------
# OpTimer

class OpTimer(OpTool):
    """Time of every primitive in forward (``forward_pre`` -> ``forward_post``) and of every backward
    node (``backward_pre`` -> ``backward_post``, which includes the tensor and node hooks that run at
    that node), per op name and, with a ``model``, per module path (the innermost running module:
    self time, not including children). ``AccumulateGrad`` is reported under that name.

    >>> with OpTimer(model) as t:
    ...     model(x).sum().backward()
    >>> t.report()["ops"]["Addmm"]["forward_calls"]
    """

    def __init__(self, model=None, lib=None):
        super().__init__(model, lib)
        self.reset()

    def reset(self):
        """Forget everything measured so far."""
        self.ops = {}        # name -> [fwd calls, fwd time, bwd calls, bwd time]
        self.modules = {}    # path -> same

    def _add(self, table, key, phase, dt):
        r = table.get(key)
        if r is None:
            r = table[key] = [0, 0.0, 0, 0.0]
        r[phase] += 1
        r[phase + 1] += dt

    def _starts(self):
        return thread_list(self._tls, "starts")

    def forward_pre(self, name, inputs):
        if not self._bdepth():
            self._starts().append(_perf())

    def forward_post(self, name, inputs, output, node):
        if self._bdepth():
            return
        dt = _perf() - self._starts().pop()
        self._add(self.ops, name, 0, dt)
        if self._mods is not None:
            self._add(self.modules, self._mods.path(), 0, dt)
            self._tag(node)

    def backward_pre(self, node, grad_outputs):
        self._enter_backward()
        self._starts().append(_perf())

    def backward_post(self, node, grad_inputs, grad_outputs):
        dt = _perf() - self._starts().pop()
        self._leave_backward()
        name = _node_name(node)
        self._add(self.ops, op_name(node) if name.endswith(tuple("0123456789")) else name, 2, dt)
        if self._mods is not None:
            self._add(self.modules, self._node_path(node), 2, dt)

    @staticmethod
    def _rows(table):
        out = {}
        for k, (fc, ft, bc, bt) in table.items():
            out[k] = {"forward_calls": fc, "forward_time": ft, "backward_calls": bc, "backward_time": bt,
                      "total_time": ft + bt}
        return dict(sorted(out.items(), key=lambda kv: -kv[1]["total_time"]))

    def report(self):
        """``{"ops": {name: stats}, "modules": {path: stats}, "forward_time", "backward_time"}``; stats
        are forward/backward calls and seconds and ``total_time``, sorted by total time. Module path
        None collects ops outside the model and AccumulateGrad."""
        ops = self._rows(self.ops)
        return {"ops": ops, "modules": self._rows(self.modules),
                "forward_time": sum(r["forward_time"] for r in ops.values()),
                "backward_time": sum(r["backward_time"] for r in ops.values())}

    def summary(self, by="op", top=None):
        """A text table sorted by total time; ``by="op"`` or ``"module"``."""
        if by not in ("op", "module"):
            raise ValueError(f"summary(by=...) expects 'op' or 'module', got {by!r}")
        rows = self._rows(self.ops if by == "op" else self.modules)
        total = sum(r["total_time"] for r in rows.values()) or 1.0
        body = []
        for k, r in list(rows.items())[:top]:
            label = k if by == "op" else ("<outside>" if k is None else (k or "<root>"))
            body.append([label, r["forward_calls"], f"{r['forward_time'] * 1e3:.3f}", r["backward_calls"],
                         f"{r['backward_time'] * 1e3:.3f}", f"{r['total_time'] * 1e3:.3f}",
                         f"{100 * r['total_time'] / total:.1f}"])
        return _table([by, "fwd calls", "fwd ms", "bwd calls", "bwd ms", "total ms", "%"], body)


# --------------------------------------------------------------------------------------------
# OpPrinter

class OpPrinter(OpTool):
    """Prints each primitive as it runs: forward with the module path, input and output shapes and
    dtypes; backward with the node name and the shapes of the incoming and produced gradients. Ops
    that run inside a backward node are printed indented under it. ``verbose=True`` adds the
    grad_fn name and min/max/mean of outputs and gradients. ``file`` defaults to ``sys.stdout`` at
    print time."""

    def __init__(self, model=None, file=None, verbose=False, lib=None):
        super().__init__(model, lib)
        self.file = file
        self.verbose = verbose

    def _print(self, text):
        print(("    " * self._bdepth()) + text, file=self.file if self.file is not None else sys.stdout)

    def _stats(self, xs):
        parts = []
        for x in flat(xs):
            a = array_of(x)
            if a is not None and a.size and a.dtype.kind in "fiub":
                parts.append(f"[min {a.min():.4g} max {a.max():.4g} mean {a.mean():.4g}]")
        return (" " + " ".join(parts)) if parts else ""

    def _path(self, path):
        return "" if self._mods is None else f" [{'<outside>' if path is None else path or '<root>'}]"

    def forward_post(self, name, inputs, output, node):
        self._tag(node)
        path = self._mods.path() if self._mods is not None else None
        text = f"fwd {name}{self._path(path)} {describe(list(inputs))} -> {describe(output)}"
        if self.verbose:
            text += f" grad_fn={None if node is None else node.name()}" + self._stats(output)
        self._print(text)

    def backward_pre(self, node, grad_outputs):
        self._enter_backward()

    def backward_post(self, node, grad_inputs, grad_outputs):
        self._leave_backward()
        text = (f"bwd {node.name()}{self._path(self._node_path(node))} "
                f"grad_outputs {describe(list(grad_outputs))} -> grad_inputs {describe(list(grad_inputs))}")
        if self.verbose:
            text += self._stats(grad_inputs)
        self._print(text)


# --------------------------------------------------------------------------------------------
# MemoryHook

class MemoryHook(OpTool):
    """Bytes allocated by op outputs in forward and by the gradients each backward node produces,
    per op and (with a ``model``) per module. Outputs that are views of an input (``T``, ``View``,
    ``Expand``...) and gradients passed through unchanged allocate nothing and are counted as views.
    ``peak_bytes`` is the peak of the bytes held by live op outputs and gradients created inside the
    context (tracked with weakref finalizers: an array kept alive elsewhere, e.g. by ``.numpy()``,
    is not followed)."""

    def __init__(self, model=None, track_live=True, lib=None):
        super().__init__(model, lib)
        self.track_live = track_live
        self.reset()

    def reset(self):
        self.ops = {}         # name -> [fwd allocs, fwd bytes, bwd allocs, bwd bytes, views]
        self.modules = {}
        self.live_bytes = 0
        self.peak_bytes = 0

    def _free(self, n):
        self.live_bytes -= n

    def _count(self, key_op, key_mod, phase, tensors, sources):
        src = [a for a in (array_of(s) for s in sources) if a is not None]
        nbytes = allocs = views = 0
        seen = {}           # id -> array, kept alive: array_of may return a fresh view whose id would be reused
        for t in tensors:
            a = array_of(t)
            if a is None or id(a) in seen:
                continue
            seen[id(a)] = a
            if any(a is s or np.may_share_memory(a, s) for s in src):
                views += 1
                continue
            allocs += 1
            nbytes += a.nbytes
            if self.track_live and not isinstance(t, np.ndarray):
                self.live_bytes += a.nbytes
                weakref.finalize(t, self._free, a.nbytes)
        if self.live_bytes > self.peak_bytes:
            self.peak_bytes = self.live_bytes
        for table, key in ((self.ops, key_op), (self.modules, key_mod)):
            if table is self.modules and self._mods is None:
                continue
            r = table.get(key)
            if r is None:
                r = table[key] = [0, 0, 0, 0, 0]
            r[phase] += allocs
            r[phase + 1] += nbytes
            r[4] += views

    def forward_post(self, name, inputs, output, node):
        if self._bdepth():
            return
        self._tag(node)
        path = self._mods.path() if self._mods is not None else None
        self._count(name, path, 0, flat(output), flat(inputs))

    def backward_pre(self, node, grad_outputs):
        self._enter_backward()

    def backward_post(self, node, grad_inputs, grad_outputs):
        self._leave_backward()
        name = _node_name(node)
        key = op_name(node) if name.endswith(tuple("0123456789")) else name
        self._count(key, self._node_path(node), 2, list(grad_inputs), list(grad_outputs))

    @staticmethod
    def _rows(table):
        out = {k: {"forward_allocs": fa, "forward_bytes": fb, "backward_allocs": ba, "backward_bytes": bb,
                   "views": v, "total_bytes": fb + bb} for k, (fa, fb, ba, bb, v) in table.items()}
        return dict(sorted(out.items(), key=lambda kv: -kv[1]["total_bytes"]))

    def report(self):
        """``{"ops": {name: stats}, "modules": {path: stats}, "forward_bytes", "backward_bytes",
        "peak_bytes", "live_bytes"}``, sorted by total bytes."""
        ops = self._rows(self.ops)
        return {"ops": ops, "modules": self._rows(self.modules),
                "forward_bytes": sum(r["forward_bytes"] for r in ops.values()),
                "backward_bytes": sum(r["backward_bytes"] for r in ops.values()),
                "peak_bytes": self.peak_bytes, "live_bytes": self.live_bytes}

    def summary(self, by="op", top=None):
        """A text table sorted by total bytes; ``by="op"`` or ``"module"``."""
        if by not in ("op", "module"):
            raise ValueError(f"summary(by=...) expects 'op' or 'module', got {by!r}")
        rows = self._rows(self.ops if by == "op" else self.modules)
        body = [[k if by == "op" else ("<outside>" if k is None else (k or "<root>")), r["forward_allocs"],
                 r["forward_bytes"], r["backward_allocs"], r["backward_bytes"], r["views"], r["total_bytes"]]
                for k, r in list(rows.items())[:top]]
        return (_table([by, "fwd allocs", "fwd bytes", "bwd allocs", "bwd bytes", "views", "total bytes"], body)
                + f"\npeak live bytes: {self.peak_bytes}")


# --------------------------------------------------------------------------------------------
# HookTimeAccount

class HookTimeAccount(OpTool):
    """Splits the wall time of what runs inside the context into *model* time, *hook* time and
    *framework* time, using only public hooks (nothing the user registered is moved or wrapped):

    * model, forward: the time of every primitive (OpHook ``forward_pre`` -> ``forward_post``) that
      does not run inside a hook;
    * hooks, module forward pre-hooks / forward hooks: on every module of ``model`` two marker
      pre-hooks (``prepend=True`` and appended) and two marker forward hooks bracket the module's own
      hooks; the time between each pair is hook time (the markers run first and last among the
      module's hooks registered before the context was entered);
    * backward: each node's window (``backward_pre`` -> ``backward_post``) is cut by a marker node
      pre-hook registered at ``backward_pre`` (so it runs after the tensor hooks and the user's node
      pre-hooks) and a marker node post-hook registered when the node was created in forward (so it
      runs before the user's node post-hooks): before the first mark and after the second is hook
      time, between them the node's own computation (model time). ``BackwardHookFunctionBackward``
      nodes, which run the module full-backward (pre-)hooks, count entirely as hook time. A node
      created outside the context has no post marker: its post-hooks count as model time.
    * framework: the rest of the wall time (module call machinery, Python in ``forward()``, the
      engine's scheduling, and the cost of this accounting itself, which grows with the op count).

    On a PyTorch model, whose engine runs a node's tensor hooks before its node pre-hooks and must not
    get a hook registered on the node it is running, the backward window of a node is: the gap since
    the previous node of the same backward finished (the node's tensor hooks: hook time when the node
    has any, on a tensor of the forward that made it or on the leaf it accumulates into; else engine
    time, framework), then the op runner's pre-hook, the user's node pre-hooks, a marker pre-hook, the
    computation, the runner's post-hook, the user's node post-hooks and a marker post-hook. The two
    markers are registered on a node when its parent node starts (before the node runs, after the
    user registered the node's hooks); the first node of a backward has none, so its node hooks count
    as framework time.

    >>> with HookTimeAccount(model) as acc:
    ...     model(x).sum().backward()
    >>> acc.report()   # {"wall", "model", "hooks", "framework", ...} in seconds
    """

    def __init__(self, model):
        super().__init__(None, lib=lib_of(model))      # the markers replace the module stack
        self.model_ = model
        self._mhandles = []
        self._nhandles = {}
        self._late = []              # torch: the marker hooks registered on nodes before they run
        self._keys = (_Token(), _Token(), _Token(), _Token())   # torch: node.metadata keys (kids, ins, late, th)
        self._t0 = 0.0
        self.reset()

    def reset(self):
        self.model_forward = 0.0
        self.model_backward = 0.0
        self.hooks_forward_pre = 0.0
        self.hooks_forward = 0.0
        self.hooks_backward = 0.0
        self.n_ops = 0
        self.n_nodes = 0
        self.wall = 0.0

    def _st(self, name):
        st = getattr(self._tls, name, None)
        if st is None:
            st = []
            setattr(self._tls, name, st)
        return st

    def _in_hook(self):
        return getattr(self._tls, "in_hook", 0)

    # ---- module markers ----
    def _mark_first(self, *a):
        self._st("hstarts").append(_perf())
        self._tls.in_hook = self._in_hook() + 1

    def _mark_last_pre(self, *a):
        self.hooks_forward_pre += _perf() - self._st("hstarts").pop()
        self._tls.in_hook = self._in_hook() - 1

    def _mark_last_fwd(self, *a):
        self.hooks_forward += _perf() - self._st("hstarts").pop()
        self._tls.in_hook = self._in_hook() - 1

    def _start(self):
        super()._start()
        self._t0 = _perf()
        for mod in self.model_.modules():
            self._mhandles += [mod.register_forward_pre_hook(self._mark_first, prepend=True),
                               mod.register_forward_pre_hook(self._mark_last_pre),
                               mod.register_forward_hook(self._mark_first, prepend=True, always_call=True),
                               mod.register_forward_hook(self._mark_last_fwd, always_call=True)]

    def _stop(self):
        if self._handle is not None:
            self.wall += _perf() - self._t0
        for h in self._mhandles:
            h.remove()
        self._mhandles = []
        for h in self._nhandles.values():
            h.remove()
        self._nhandles = {}
        for h in self._late:
            h.remove()
        self._late = []
        super()._stop()

    # ---- ops ----
    def forward_pre(self, name, inputs):
        if not self._bdepth() and not self._in_hook():
            self._st("starts").append(_perf())

    def forward_post(self, name, inputs, output, node):
        if self._bdepth() or self._in_hook():
            return
        self.model_forward += _perf() - self._st("starts").pop()
        self.n_ops += 1
        if node is not None:
            self._nhandles[id(node)] = node.register_hook(self._post_mark)
        elif self.lib.is_torch:         # the node comes in forward_node: keep the op's tensors (weakly) till then
            self._tls.last = [weakref.ref(t) for t in flat(inputs) if isinstance(t, self.lib.Tensor)]

    # ---- torch: what the markers need, kept in the nodes' own metadata (never the node in its own hooks) ----
    def node_hooked(self, node):
        kids, _, _, _ = self._keys
        node.metadata[kids] = [n for n, _ in node.next_functions if n is not None]

    def forward_node(self, output, node):
        _, ins, _, _ = self._keys
        last, self._tls.last = getattr(self._tls, "last", None), None
        if last:
            node.metadata[ins] = last

    def _has_tensor_hooks(self, node, parent_md):
        """Whether ``node`` has tensor hooks (PyTorch runs them before its pre-hooks): on the leaf it
        accumulates into, or on an input of the parent's forward op that ``node`` produced."""
        var = getattr(node, "variable", None)         # AccumulateGrad's leaf
        if var is not None:
            return any(h.kind == "grad" for h in self.lib.tensor_hooks(var))
        for ref in parent_md.get(self._keys[1], ()):
            t = ref()
            if t is not None and t.grad_fn is node and any(h.kind == "grad" for h in self.lib.tensor_hooks(t)):
                return True
        return False

    def _torch_pre(self, node, grad_outputs):
        kids, _, late, th = self._keys
        now = _perf()
        md = node.metadata
        task = self._task()
        prev = getattr(self._tls, "last_end", None)
        gap = now - prev[1] if prev is not None and prev[0] == task and md.get(th) else 0.0
        self._enter_backward()
        self._st("marks").append([now, None, None, late in md, gap, node.name()])
        for kid in md.get(kids, ()):                  # before the kids run: markers after the user's hooks
            km = kid.metadata
            if late not in km:
                km[late] = True
                km[th] = self._has_tensor_hooks(kid, md)
                self._late += [kid.register_prehook(self._pre_mark), kid.register_hook(self._late_post)]

    def _late_post(self, grad_inputs, grad_outputs):
        self._torch_end(_perf())

    def _torch_end(self, t3):
        t0, t1, t2, _, gap, name = self._st("marks").pop()
        self._leave_backward()
        self._tls.last_end = (self._task(), t3)
        self.n_nodes += 1
        if name == "BackwardHookFunctionBackward":
            self.hooks_backward += gap + t3 - t0
            return
        t1 = t0 if t1 is None else t1
        t2 = t3 if t2 is None else t2
        self.hooks_backward += gap + (t1 - t0) + (t3 - t2)
        self.model_backward += t2 - t1

    def _task(self):
        return torch_attr(self.lib.root, "graph_task_id", lambda: -1)()

    # ---- backward: window = [t0 | tensor + node pre-hooks | t1 | node | t2 | post-hooks | t3] ----
    def _pre_mark(self, grad_outputs):
        self._st("marks")[-1][1] = _perf()

    def _post_mark(self, grad_inputs, grad_outputs):
        self._st("marks")[-1][2] = _perf()

    def backward_pre(self, node, grad_outputs):
        if self.lib.is_torch:
            return self._torch_pre(node, grad_outputs)
        self._enter_backward()
        rec = [None, None, None, node.register_prehook(self._pre_mark)]
        self._st("marks").append(rec)
        rec[0] = _perf()

    def backward_post(self, node, grad_inputs, grad_outputs):
        t3 = _perf()
        if self.lib.is_torch:            # the runner's post-hook: after the computation, before the user's
            rec = self._st("marks")[-1]
            rec[2] = t3
            if not rec[3]:               # no marker after the user's post-hooks: the window ends here
                self._torch_end(t3)
            return
        self._leave_backward()
        t0, t1, t2, h = self._st("marks").pop()
        h.remove()
        ph = self._nhandles.pop(id(node), None)
        if ph is not None:
            ph.remove()
        self.n_nodes += 1
        if node.name() == "BackwardHookFunctionBackward":
            self.hooks_backward += t3 - t0
            return
        t1 = t0 if t1 is None else t1
        t2 = t3 if t2 is None else t2
        self.hooks_backward += (t1 - t0) + (t3 - t2)
        self.model_backward += t2 - t1

    def report(self):
        """Seconds: ``wall`` (inside the context), ``model`` (forward/backward/total), ``hooks``
        (forward_pre/forward/backward/total), ``framework`` (the rest), and ``hook_fraction`` =
        hooks / (model + hooks); ``ops`` and ``nodes`` counts."""
        wall = self.wall + (_perf() - self._t0 if self._handle is not None else 0.0)
        model = self.model_forward + self.model_backward
        hooks = self.hooks_forward_pre + self.hooks_forward + self.hooks_backward
        return {"wall": wall,
                "model": {"forward": self.model_forward, "backward": self.model_backward, "total": model},
                "hooks": {"forward_pre": self.hooks_forward_pre, "forward": self.hooks_forward,
                          "backward": self.hooks_backward, "total": hooks},
                "framework": wall - model - hooks,
                "hook_fraction": hooks / (model + hooks) if model + hooks else 0.0,
                "ops": self.n_ops, "nodes": self.n_nodes}

    def summary(self):
        r = self.report()
        rows = [["model (ops, nodes)", f"{r['model']['total'] * 1e3:.3f}"],
                ["  forward", f"{r['model']['forward'] * 1e3:.3f}"],
                ["  backward", f"{r['model']['backward'] * 1e3:.3f}"],
                ["hooks", f"{r['hooks']['total'] * 1e3:.3f}"],
                ["  module forward pre-hooks", f"{r['hooks']['forward_pre'] * 1e3:.3f}"],
                ["  module forward hooks", f"{r['hooks']['forward'] * 1e3:.3f}"],
                ["  backward hooks", f"{r['hooks']['backward'] * 1e3:.3f}"],
                ["framework + accounting", f"{r['framework'] * 1e3:.3f}"],
                ["wall", f"{r['wall'] * 1e3:.3f}"]]
        return _table(["", "ms"], rows)


def account(model, fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` (a forward + backward step of ``model``) under a
    :class:`HookTimeAccount` and return its ``report()``."""
    with HookTimeAccount(model) as acc:
        fn(*args, **kwargs)
    return acc.report()
