"""Trace as a picture: record every hook point a forward and backward pass goes through, and draw it.

>>> with trace(model) as t:
...     loss = model(x).sum()
...     loss.backward()
>>> t.events[0]            # TraceEvent(step=0, phase='forward', kind='forward_pre', path='', ...)
>>> t.to_html("trace.html", grad_fn=loss)

How it observes (public hook API only, nothing of the user's is replaced or wrapped): on entry, every
module under ``model`` gets four *observer* hooks,

* a forward pre-hook registered with ``prepend=True`` (event ``forward_pre``: it runs before the
  module's own pre-hooks, so it sees the arguments as the caller passed them),
* a forward hook appended last, ``always_call=True`` (event ``forward``: it sees the output after
  every user forward hook, and still fires when forward raised),
* a full backward pre-hook with ``prepend=True`` (event ``backward_pre``) and a full backward hook
  appended last (event ``full_backward``).

Each module event lists in ``hooks`` the user's hooks of that kind on that module (and the global
``register_module_*`` hooks of that kind): the hooks that intercept at this point, right after a
``*_pre`` event, right before a ``forward``/``full_backward`` event. Optional sources:
``params=True`` adds a grad hook and a post-accumulate-grad hook on every parameter (events ``grad``
and ``post_accumulate_grad``, path = parameter name); :meth:`Trace.watch` adds a tensor's grad hook
and, with ``nodes=True``, a pre- and post-hook on every node of its grad_fn graph (events
``node_pre``/``node_post``). Every observer is removed on exit.

Caveats (PyTorch's rules, not ours): full backward hooks add ``BackwardHookFunctionBackward``
identity nodes around the module (values are unchanged, but an in-place op on a module's output
then raises as it would with any full backward hook; pass ``backward=False`` for such models); a
module with legacy ``register_backward_hook`` hooks gets no backward observers (PyTorch forbids
mixing both; listed in ``Trace.skipped``), and when a legacy *global* backward hook exists no module
gets backward observers. A module that received a full backward observer stays in "full backward
hook" mode after the trace, as after any removed full backward hook in PyTorch.
"""
import html
from collections import Counter, namedtuple

from .lib import lib_of, is_tensor
from .paths import module_paths

__all__ = ["trace", "Trace", "TraceEvent", "grad_fn_graph"]

TraceEvent = namedtuple("TraceEvent", "step phase kind path call shapes hooks")
TraceEvent.__doc__ = """One hook point passed during a traced forward/backward.

``step``: 0, 1, 2... in firing order; ``phase``: ``"forward"`` or ``"backward"``; ``kind``: one of
``forward_pre, forward, backward_pre, full_backward, grad, post_accumulate_grad, node_pre, node_post``;
``path``: the module path (``""`` = the root), parameter/tensor name, or node label; ``call``: which
call of that module (0, 1, ... for a module called more than once; None in backward); ``shapes``:
a dict of what the hook received (``args``/``output``, ``grad_output``/``grad_input``, ``grad``,
``grad_outputs``/``grad_inputs``), each a shape tuple, None, or a list of those; ``hooks``: the user
hooks intercepting at this point as ``"kind:name"`` strings."""

_FORWARD = ("forward_pre", "forward")
_USER_KIND = {"forward_pre": ("forward_pre",), "forward": ("forward",),
              "backward_pre": ("backward_pre",), "full_backward": ("full_backward", "backward")}


def _shape(x):
    if is_tensor(x):
        return tuple(x.shape)
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return [_shape(v) for v in x]
    if isinstance(x, dict):
        return {k: _shape(v) for k, v in x.items()}
    return type(x).__name__


def _hname(hook):
    name = getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None)
    if name is None:
        name = type(hook).__name__
    return name.replace(".<locals>.", ".")


class Trace:
    """The recorder returned by :func:`trace`; ``events`` is the ordered list of :class:`TraceEvent`."""

    def __init__(self, model, *, backward=True, params=False):
        self.model = model
        self.lib = lib_of(model)
        self.backward = backward
        self.params = params
        self.events = []
        self.skipped = {}            # path -> why it got no backward observers
        self.paths = module_paths(model)
        self.modules = []            # [(path, module)] once each, in named_modules order
        for path, mod in model.named_modules():
            self.modules.append((path, mod))
        self.param_names = {}        # id(param) -> name
        for name, p in model.named_parameters():
            self.param_names.setdefault(id(p), name)
        self.user_hooks = {}         # row path -> {"kind:name": flags}
        self.extra_rows = []         # (row label, kind) for watched tensors and nodes, first-seen order
        self._handles = []
        self._ours = set()
        self._calls = Counter()
        self._open = {}              # path -> stack of call indices in progress
        self._active = False
        self._watched = {}           # name -> tensor passed to watch()

    # ---- recording ----------------------------------------------------------------------------
    def _emit(self, kind, path, call, shapes, hooks=()):
        self.events.append(TraceEvent(len(self.events), "forward" if kind in _FORWARD else "backward",
                                      kind, path, call, shapes, tuple(hooks)))

    def _user(self, module, path, kind):
        """The user's hooks of ``kind`` on ``module`` (ours excluded), global ones first."""
        kinds = _USER_KIND[kind]
        out = [f"{i.kind}:{_hname(i.hook)} (global)" for i in self.lib.global_module_hooks() if i.kind in kinds and i.id not in self._ours]
        out += [f"{i.kind}:{_hname(i.hook)}" for i in self.lib.module_hooks(module)
                if i.kind in kinds and i.id not in self._ours]
        if out:
            ann = self.user_hooks.setdefault(path, {})
            for h in out:
                ann.setdefault(h, ())
        return out

    def _keep(self, handle):
        self._handles.append(handle)
        self._ours.add(handle.id)
        return handle

    def _observe_module(self, path, mod, legacy_global):
        def fwd_pre(module, args):
            call = self._calls[path]
            self._calls[path] += 1
            self._open.setdefault(path, []).append(call)
            self._emit("forward_pre", path, call, {"args": _shape(args)}, self._user(module, path, "forward_pre"))

        def fwd(module, args, output):
            stack = self._open.get(path)
            call = stack.pop() if stack else None
            self._emit("forward", path, call, {"args": _shape(args), "output": _shape(output)},
                       self._user(module, path, "forward"))

        def bwd_pre(module, grad_output):
            self._emit("backward_pre", path, None, {"grad_output": _shape(grad_output)},
                       self._user(module, path, "backward_pre"))

        def bwd(module, grad_input, grad_output):
            self._emit("full_backward", path, None,
                       {"grad_input": _shape(grad_input), "grad_output": _shape(grad_output)},
                       self._user(module, path, "full_backward"))

        self._keep(mod.register_forward_pre_hook(fwd_pre, prepend=True))
        self._keep(mod.register_forward_hook(fwd, always_call=True))
        if not self.backward:
            return
        if legacy_global:
            self.skipped[path] = "a legacy global backward hook is registered (register_module_backward_hook)"
            return
        if any(i.kind == "backward" for i in self.lib.module_hooks(mod)):
            self.skipped[path] = ("has legacy backward hooks (register_backward_hook); PyTorch forbids mixing "
                                  "them with full backward hooks")
            return
        self._keep(mod.register_full_backward_pre_hook(bwd_pre, prepend=True))
        self._keep(mod.register_full_backward_hook(bwd))

    def _row(self, label, kind):
        if all(r[0] != label for r in self.extra_rows):
            self.extra_rows.append((label, kind))

    def _observe_tensor(self, t, name, row_kind):
        def grad_hook(grad):
            self._emit("grad", name, None, {"grad": _shape(grad)},
                       [f"{i.kind}:{_hname(i.hook)}" for i in self.lib.tensor_hooks(t) if i.kind == "grad" and i.id not in self._ours])

        def acc_hook(p):
            self._emit("post_accumulate_grad", name, None, {"grad": _shape(p.grad)},
                       [f"{i.kind}:{_hname(i.hook)}" for i in self.lib.tensor_hooks(t)
                        if i.kind == "post_accumulate_grad" and i.id not in self._ours])

        for i in self.lib.tensor_hooks(t):
            self.user_hooks.setdefault(name, {}).setdefault(f"{i.kind}:{_hname(i.hook)}", ())
        if row_kind:
            self._row(name, row_kind)
        self._keep(t.register_hook(grad_hook))
        if t.grad_fn is None:
            self._keep(t.register_post_accumulate_grad_hook(acc_hook))

    def watch(self, tensor, name=None, *, nodes=False):
        """Also record ``tensor``'s grad hook (and post-accumulate-grad hook for a leaf) as ``grad``
        events under ``name``; with ``nodes=True`` also a pre- and post-hook on every node of its
        grad_fn graph (``node_pre``/``node_post`` events, path = the node's label as in
        :func:`grad_fn_graph`). Call inside the ``with`` block, before ``backward()``."""
        if not self._active:
            raise RuntimeError("Trace.watch() must be called inside the `with trace(model)` block")
        if not is_tensor(tensor) or not tensor.requires_grad:
            raise RuntimeError(f"Trace.watch(): tensor {name!r} does not require grad, so no hook on it can fire")
        name = name or f"tensor{sum(1 for r in self.extra_rows if r[1] == 'tensor')}"
        self._observe_tensor(tensor, name, "tensor")
        self._watched[name] = tensor
        if nodes and tensor.grad_fn is not None:
            named = dict(self.model.named_parameters())
            named.update(self._watched)
            for node, label, _ in _walk(tensor.grad_fn, named)[0]:
                self._row(label, "node")
                self._keep(node.register_prehook(self._node_pre(label)))
                self._keep(node.register_hook(self._node_post(label)))
        return tensor

    def _node_pre(self, label):
        def pre(grad_outputs):
            self._emit("node_pre", label, None, {"grad_outputs": _shape(grad_outputs)})
        return pre

    def _node_post(self, label):
        def post(grad_inputs, grad_outputs):
            self._emit("node_post", label, None, {"grad_inputs": _shape(grad_inputs),
                                                  "grad_outputs": _shape(grad_outputs)})
        return post

    def __enter__(self):
        if self._active:
            raise RuntimeError("this Trace is already active")
        self._active = True
        self.events, self.skipped, self.user_hooks, self.extra_rows = [], {}, {}, []
        self._calls, self._watched = Counter(), {}
        legacy_global = any(i.kind == "backward" for i in self.lib.global_module_hooks())
        if legacy_global and self.backward:
            self.skipped["*"] = "a legacy global backward hook is registered (register_module_backward_hook)"
        try:
            for path, mod in self.modules:
                for i in self.lib.module_hooks(mod):
                    if i.kind in ("forward_pre", "forward", "backward_pre", "full_backward", "backward"):
                        self.user_hooks.setdefault(path, {}).setdefault(f"{i.kind}:{_hname(i.hook)}", i.flags)
                self._observe_module(path, mod, legacy_global)
            if self.params:
                for name, p in self.model.named_parameters():
                    if p.requires_grad:
                        self._observe_tensor(p, name, None)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for h in reversed(self._handles):
            h.remove()
        self._handles = []
        self._ours = set()
        self._open = {}
        self._active = False
        return False

    # ---- output -------------------------------------------------------------------------------
    def format(self):
        """The event list as a plain-text table."""
        lines = [f"{'step':>4}  {'phase':<8} {'kind':<20} {'path':<22} {'call':>4}  shapes / user hooks"]
        for e in self.events:
            sh = "  ".join(f"{k}={_fmt(v)}" for k, v in e.shapes.items())
            hk = ("  [" + ", ".join(e.hooks) + "]") if e.hooks else ""
            lines.append(f"{e.step:>4}  {e.phase:<8} {e.kind:<20} {_label(e.path):<22} "
                         f"{'' if e.call is None else e.call:>4}  {sh}{hk}")
        return "\n".join(lines)

    __str__ = format

    def to_html(self, path=None, *, grad_fn=None, title="hookgrad trace"):
        """A self-contained HTML page (inline SVG and CSS, no external assets): the module tree with
        the forward flow (blue, numbered) and backward flow (orange), markers where user hooks
        intercept, the grad_fn graph of ``grad_fn`` (a tensor) if given, and the event table.
        Writes it to ``path`` if given; returns the HTML text."""
        parts = [f"<h1>{_e(title)}</h1>", _LEGEND]
        if self.skipped:
            parts.append("<p class='note'>No backward observers on: " + "; ".join(
                f"<b>{_e(_label(p))}</b>: {_e(r)}" for p, r in self.skipped.items()) + "</p>")
        parts.append("<h2>Module tree and hook flow</h2><div class='scroll'>" + self.to_svg() + "</div>")
        if grad_fn is not None:
            named = {n: p for n, p in self.model.named_parameters()}
            parts.append("<h2>grad_fn graph</h2><div class='scroll'>" + grad_fn_graph(grad_fn, named) + "</div>")
        parts.append("<h2>Events</h2>" + self._table())
        page = _page(title, "\n".join(parts))
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
        return page

    def _table(self):
        rows = ["<table><tr><th>step</th><th>phase</th><th>kind</th><th>path</th><th>call</th>"
                "<th>shapes</th><th>user hooks</th></tr>"]
        for e in self.events:
            sh = "<br>".join(f"{_e(k)}={_e(_fmt(v))}" for k, v in e.shapes.items())
            rows.append(f"<tr class='{e.phase}'><td>{e.step}</td><td>{e.phase}</td><td>{_e(e.kind)}</td>"
                        f"<td>{_e(_label(e.path))}</td><td>{'' if e.call is None else e.call}</td><td>{sh}</td>"
                        f"<td class='hook'>{_e(', '.join(e.hooks))}</td></tr>")
        rows.append("</table>")
        return "\n".join(rows)

    def to_svg(self):
        """The module tree (nested boxes by path) with the event timeline to its right as inline SVG."""
        RH, IND, CW = 26, 14, 6.7                        # row height, indent, monospace char width
        rows, depth, cls = [], {}, {}
        for path, mod in self.modules:
            rows.append(path)
            depth[path] = 0 if path == "" else path.count(".") + 1
            cls[path] = type(mod).__name__
        mod_rows = len(rows)
        extra = list(self.extra_rows)
        rowy = {p: 40 + i * RH for i, p in enumerate(rows)}
        y = 40 + mod_rows * RH
        if extra:
            y += RH                                       # header "watched tensors / grad_fn nodes"
        for label, _ in extra:
            rowy.setdefault(label, y)
            y += RH
        height = y + 20

        def text_of(p):
            return f"{_label(p)}  {cls[p]}"

        def badges(p):
            return list(self.user_hooks.get(p, {}))

        tree_w = 0
        for p in rows:
            w = depth[p] * IND + len(text_of(p)) * CW + 24 + sum(len(b) * 6 + 14 for b in badges(p))
            tree_w = max(tree_w, w)
        for label, _ in extra:
            tree_w = max(tree_w, 20 + len(label) * CW + 24 + sum(len(b) * 6 + 14 for b in badges(label)))
        tree_w = int(tree_w) + 20
        DX, tx0 = 30, tree_w + 30
        width = tx0 + max(1, len(self.events)) * DX + 40
        out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
               f"viewBox='0 0 {width} {height}' font-family='monospace' font-size='11'>", _DEFS]
        # phase bands behind the timeline
        start = None
        for i, e in enumerate(self.events + [None]):
            ph = e.phase if e else None
            if start is not None and (ph != self.events[start].phase):
                x0 = tx0 + start * DX - DX / 2
                out.append(f"<rect x='{x0}' y='28' width='{(i - start) * DX}' height='{height - 36}' "
                           f"class='band-{self.events[start].phase}'/>"
                           f"<text x='{x0 + 4}' y='22' class='bandlabel'>{self.events[start].phase} →</text>")
                start = None
            if start is None and e is not None:
                start = i
        # row guide lines
        for p, yy in rowy.items():
            out.append(f"<line x1='{tree_w}' y1='{yy}' x2='{width - 10}' y2='{yy}' class='guide'/>")
        # module tree: a container's box spans its descendants' rows
        for idx, p in enumerate(rows):
            last = idx
            for j in range(idx + 1, mod_rows):
                q = rows[j]
                if p == "" or q.startswith(p + "."):
                    last = j
                else:
                    break
            x = 8 + depth[p] * IND
            y0 = rowy[p] - RH / 2 + 2
            h = (last - idx + 1) * RH - 4
            out.append(f"<rect x='{x}' y='{y0}' width='{tree_w - x - 8}' height='{h}' rx='4' "
                       f"class='mod d{depth[p] % 4}'><title>{_e(text_of(p))}</title></rect>")
        for p in rows:
            x = 8 + depth[p] * IND
            out.append(f"<text x='{x + 6}' y='{rowy[p] + 4}' class='modlabel'>{_e(_label(p))} "
                       f"<tspan class='cls'>{_e(cls[p])}</tspan></text>")
            out.extend(self._badges(x + 6 + (len(text_of(p)) + 1) * CW, rowy[p], badges(p)))
        if extra:
            hy = 40 + mod_rows * RH
            out.append(f"<text x='8' y='{hy + 4}' class='hdr'>watched tensors / grad_fn nodes</text>")
            for label, kind in extra:
                out.append(f"<rect x='8' y='{rowy[label] - RH / 2 + 3}' width='{tree_w - 16}' height='{RH - 6}' "
                           f"rx='9' class='extra-{kind}'/><text x='16' y='{rowy[label] + 4}'>{_e(label)}</text>")
                out.extend(self._badges(16 + (len(label) + 1) * CW, rowy[label], badges(label)))
        # flow arrows between consecutive events, then the markers
        pts = []
        for e in self.events:
            yy = rowy.get(e.path)
            if yy is None:                                 # a parameter: its module's row
                owner = e.path.rsplit(".", 1)[0] if "." in e.path else ""
                yy = rowy.get(owner, 40)
            pts.append((tx0 + e.step * DX, yy))
        for i in range(1, len(pts)):
            (x1, y1), (x2, y2) = pts[i - 1], pts[i]
            ph = self.events[i].phase
            out.append(f"<line x1='{x1 + 6}' y1='{y1}' x2='{x2 - 8}' y2='{y2}' class='flow-{ph}' "
                       f"marker-end='url(#arrow-{ph})'/>")
        for e, (x, yy) in zip(self.events, pts):
            out.append(_marker(e, x, yy))
        out.append("</svg>")
        return "\n".join(out)

    @staticmethod
    def _badges(x, y, names):
        out = []
        for b in names:
            w = len(b) * 6 + 10
            out.append(f"<g class='badge'><rect x='{x}' y='{y - 8}' width='{w}' height='16' rx='3'/>"
                       f"<text x='{x + 5}' y='{y + 4}' font-size='10'>{_e(b)}</text>"
                       f"<title>user hook {_e(b)}</title></g>")
            x += w + 4
        return out


def trace(model, *, backward=True, params=False):
    """Record every module hook point (and, optionally, parameter/tensor/node hooks) that fires
    inside the ``with`` block, in order. Returns a :class:`Trace` context manager; see the module
    docstring for how it observes. ``backward=False``: forward observers only. ``params=True``: also
    a grad and a post-accumulate-grad observer on every parameter."""
    if not isinstance(model, lib_of(model).Module):
        raise TypeError(f"trace(): expected an nn.Module, got {type(model).__name__}")
    return Trace(model, backward=backward, params=params)


# ---- grad_fn graph ------------------------------------------------------------------------------
def _walk(root, named_params):
    """Nodes reachable from ``root`` in discovery (BFS) order as ``(node, label, sublabel)`` plus the
    edges ``(i, j)`` from node i to its next function j. Labels repeat a name with ``#k`` suffixes."""
    pid = {id(p): n for n, p in (named_params or {}).items()}
    order, index, edges = [root], {id(root): 0}, []
    for n in order:                      # breadth-first: ``order`` grows while we walk it
        for nxt, _ in getattr(n, "next_functions", ()) or ():
            if nxt is None:
                continue
            if id(nxt) not in index:
                index[id(nxt)] = len(order)
                order.append(nxt)
            edges.append((index[id(n)], index[id(nxt)]))

    def named_leaf(n):
        var = getattr(n, "variable", None)
        return pid.get(id(var)) if is_tensor(var) else None

    seen, labelled = Counter(), []
    counts = Counter(n.name() for n in order if named_leaf(n) is None)
    for n in order:
        name, leaf = n.name(), named_leaf(n)
        var = getattr(n, "variable", None)
        if leaf is not None:
            labelled.append((n, f"AccumulateGrad({leaf})", leaf))
            continue
        label = name if counts[name] == 1 else f"{name}#{seen[name]}"
        seen[name] += 1
        labelled.append((n, label, f"leaf {tuple(var.shape)}" if is_tensor(var) else ""))
    return labelled, edges


def grad_fn_graph(tensor, params=None, path=None):
    """The grad_fn graph of ``tensor`` as an SVG string (top: ``tensor.grad_fn``; an arrow from each
    node to each of its ``next_functions``). Nodes show ``node.name()``; AccumulateGrad nodes show the
    parameter name from ``params`` (``{name: tensor}``, e.g. ``dict(model.named_parameters())``) or the
    leaf's shape. Hooks visible through the public API are marked in red: the tensor's own grad hooks
    (on its grad_fn) and a leaf's grad / post-accumulate-grad hooks (on its AccumulateGrad).
    With ``path``, also writes a self-contained HTML page there."""
    if not is_tensor(tensor):
        raise TypeError(f"grad_fn_graph(): expected a Tensor, got {type(tensor).__name__}")
    root = tensor.grad_fn
    if root is None:
        raise RuntimeError("grad_fn_graph(): the tensor has no grad_fn (a leaf, or made without grad); "
                           "nothing to draw")
    nodes, edges = _walk(root, params)
    hooks = {}
    L = lib_of(tensor)
    if L.tensor_hooks(tensor):
        hooks[0] = [f"{i.kind}:{_hname(i.hook)}" for i in L.tensor_hooks(tensor)]
    for i, (n, _, _) in enumerate(nodes):
        var = getattr(n, "variable", None)
        if is_tensor(var) and L.tensor_hooks(var):
            hooks[i] = [f"{h.kind}:{_hname(h.hook)}" for h in L.tensor_hooks(var)]
    # layers: longest distance from the root (Kahn's order over the DAG)
    indeg = Counter(j for _, j in edges)
    succ = {}
    for i, j in edges:
        succ.setdefault(i, []).append(j)
    layer = {0: 0}
    ready = [0]
    while ready:
        i = ready.pop()
        for j in succ.get(i, ()):
            layer[j] = max(layer.get(j, 0), layer[i] + 1)
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    for i in range(len(nodes)):          # unreachable by Kahn (cannot happen in a DAG) -> keep visible
        layer.setdefault(i, 0)
    CW, BH, GAP, LH = 6.7, 34, 16, 70
    boxw = [max(len(lbl), len(sub), *(len(h) for h in hooks.get(i, ()))) * CW + 18
            for i, (_, lbl, sub) in enumerate(nodes)]
    by_layer = {}
    for i in range(len(nodes)):
        by_layer.setdefault(layer[i], []).append(i)
    layer_w = {L: sum(boxw[i] for i in ids) + GAP * (len(ids) - 1) for L, ids in by_layer.items()}
    width = int(max(layer_w.values())) + 40
    pos = {}
    for L, ids in by_layer.items():
        x = (width - layer_w[L]) / 2
        for i in ids:
            pos[i] = (x, 20 + L * LH)
            x += boxw[i] + GAP
    height = 20 + (max(by_layer) + 1) * LH + 10
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' font-family='monospace' font-size='11'>", _DEFS]
    for i, j in edges:
        (x1, y1), (x2, y2) = pos[i], pos[j]
        out.append(f"<line x1='{x1 + boxw[i] / 2:.1f}' y1='{y1 + BH}' x2='{x2 + boxw[j] / 2:.1f}' y2='{y2 - 3}' "
                   f"class='edge' marker-end='url(#arrow-edge)'/>")
    for i, (n, lbl, sub) in enumerate(nodes):
        x, y = pos[i]
        kind = "acc" if getattr(n, "variable", None) is not None else "node"
        hk = hooks.get(i)
        tip = lbl + (f" ({sub})" if sub and sub not in lbl else "") + ("; hooks: " + ", ".join(hk) if hk else "")
        sub_txt = ", ".join(hk) if hk else (sub if sub and sub not in lbl else "")
        out.append(f"<g class='gnode {kind}{' hooked' if hk else ''}'><rect x='{x:.1f}' y='{y}' width='{boxw[i]:.1f}' "
                   f"height='{BH}' rx='5'/><text x='{x + 9:.1f}' y='{y + (14 if sub_txt else 21)}'>{_e(lbl)}</text>"
                   f"<text x='{x + 9:.1f}' y='{y + 27}' class='sub'>{_e(sub_txt)}</text>"
                   f"<title>{_e(tip)}</title></g>")
    out.append("</svg>")
    svg = "\n".join(out)
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(_page("grad_fn graph", "<h1>grad_fn graph</h1><div class='scroll'>" + svg + "</div>"))
    return svg


# ---- rendering helpers --------------------------------------------------------------------------
def _e(s):
    return html.escape(str(s), quote=True)


def _label(path):
    return "(root)" if path == "" else path


def _fmt(v):
    if v is None:
        return "None"
    if isinstance(v, tuple):
        return "(" + ",".join(str(d) for d in v) + ")"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) + "}"
    return str(v)


_SHAPE = {"forward_pre": ("circle", "open"), "forward": ("circle", "fill"),
          "backward_pre": ("circle", "open"), "full_backward": ("circle", "fill"),
          "grad": ("diamond", "open"), "post_accumulate_grad": ("diamond", "fill"),
          "node_pre": ("square", "open"), "node_post": ("square", "fill")}


def _marker(e, x, y):
    shape, style = _SHAPE.get(e.kind, ("circle", "fill"))
    cls = f"ev {e.phase} {style}{' hooked' if e.hooks else ''}"
    if shape == "circle":
        mk = f"<circle cx='{x}' cy='{y}' r='7'/>"
    elif shape == "diamond":
        mk = f"<polygon points='{x},{y - 8} {x + 8},{y} {x},{y + 8} {x - 8},{y}'/>"
    else:
        mk = f"<rect x='{x - 6}' y='{y - 6}' width='12' height='12'/>"
    tip = f"#{e.step} {e.kind} {_label(e.path)}" + ("" if e.call is None else f" call {e.call}")
    tip += "".join(f"\n{k}={_fmt(v)}" for k, v in e.shapes.items())
    if e.hooks:
        tip += "\nuser hooks: " + ", ".join(e.hooks)
    flag = (f"<text x='{x + 7}' y='{y - 8}' class='flag'>⚑</text>") if e.hooks else ""
    return (f"<g class='{cls}'>{mk}<text x='{x}' y='{y + 19}' class='num'>{e.step}</text>{flag}"
            f"<title>{_e(tip)}</title></g>")


_DEFS = """<defs>
<marker id='arrow-forward' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='6' markerHeight='6' orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='#1f6fd1'/></marker>
<marker id='arrow-backward' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='6' markerHeight='6' orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='#e0701b'/></marker>
<marker id='arrow-edge' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' markerHeight='7' orient='auto'><path d='M0,0 L10,5 L0,10 z' fill='#555'/></marker>
</defs>"""

_CSS = """
body { font-family: sans-serif; margin: 16px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 24px; }
.scroll { overflow: auto; border: 1px solid #ddd; }
.note { background: #fff4e0; padding: 6px; }
.legend span { margin-right: 14px; }
.legend .f { color: #1f6fd1; } .legend .b { color: #e0701b; } .legend .h { color: #c62828; }
svg .mod { fill: #ffffff; fill-opacity: 0.55; stroke: #8a8a8a; }
svg .mod.d0 { fill: #f3f3f3; } svg .mod.d1 { fill: #e8f0fb; } svg .mod.d2 { fill: #eef7ea; } svg .mod.d3 { fill: #fbf3e6; }
svg .cls { fill: #777; }
svg .hdr { font-weight: bold; fill: #555; }
svg .extra-tensor { fill: #e9f6ef; stroke: #4a9a6a; } svg .extra-node { fill: #f2ecfa; stroke: #7b57b5; }
svg .guide { stroke: #eee; }
svg .band-forward { fill: #1f6fd1; fill-opacity: 0.05; } svg .band-backward { fill: #e0701b; fill-opacity: 0.06; }
svg .bandlabel { fill: #888; font-style: italic; }
svg .flow-forward { stroke: #1f6fd1; stroke-width: 1.4; } svg .flow-backward { stroke: #e0701b; stroke-width: 1.4; }
svg .ev.forward * { stroke: #1f6fd1; } svg .ev.backward * { stroke: #e0701b; }
svg .ev circle, svg .ev polygon, svg .ev rect { stroke-width: 2; fill: #fff; }
svg .ev.forward.fill circle { fill: #1f6fd1; } svg .ev.backward.fill circle { fill: #e0701b; }
svg .ev.backward.fill polygon { fill: #3c9a5f; } svg .ev.backward polygon { stroke: #3c9a5f; }
svg .ev.backward.fill rect { fill: #7b57b5; } svg .ev.backward rect { stroke: #7b57b5; }
svg .ev.hooked circle, svg .ev.hooked polygon, svg .ev.hooked rect { stroke: #c62828; stroke-width: 3; }
svg .ev.forward text, svg .ev.backward text { stroke: none; }
svg .num { text-anchor: middle; font-size: 9px; fill: #444; }
svg .flag { fill: #c62828; font-size: 11px; }
svg .badge rect { fill: #fdecea; stroke: #c62828; } svg .badge text { fill: #b71c1c; }
svg .edge { stroke: #555; stroke-width: 1.2; }
svg .gnode rect { fill: #eef3fb; stroke: #4a6fa5; } svg .gnode.acc rect { fill: #e9f6ef; stroke: #3c9a5f; }
svg .gnode.hooked rect { stroke: #c62828; stroke-width: 2.5; }
svg .gnode .sub { fill: #666; font-size: 10px; } svg .gnode.hooked .sub { fill: #c62828; }
table { border-collapse: collapse; font-size: 12px; font-family: monospace; }
td, th { border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; text-align: left; }
tr.forward td:nth-child(2) { color: #1f6fd1; } tr.backward td:nth-child(2) { color: #e0701b; }
td.hook { color: #c62828; }
"""

_LEGEND = ("<p class='legend'><span class='f'>&#9675; forward_pre &#9679; forward (blue arrows, downward)</span>"
           "<span class='b'>&#9675; backward_pre &#9679; full_backward (orange arrows, upward)</span>"
           "<span>&#9671;/&#9670; tensor grad / post-accumulate-grad</span>"
           "<span>&#9633;/&#9632; grad_fn node pre/post</span>"
           "<span class='h'>&#9873; red: user hooks intercept here (hover a marker for shapes)</span></p>")


def _page(title, body):
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>"
            f"<style>{_CSS}</style></head><body>\n{body}\n</body></html>\n")
