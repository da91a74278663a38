"""Op-level hooks (Chainer's function hooks, which PyTorch lacks): an OpHook sees every primitive in
forward and every node in backward. ``Node.apply`` checks the registry (one dict test per op) and the
engine's node step calls ``run_backward_op_hooks`` around each node while one is registered."""
import re
import threading

from ..utils.hooks import add_hook

__all__ = ["OpHook", "register_op_hook", "op_name", "aten_name", "run_composite", "composite_open"]


from .._tensor import _op_hooks, _op_hooks_detach   # noqa: E402  id -> OpHook; checked (one global lookup) on every op
# The input cast at an op's entry (autocast, hookgrad.amp): None, or fn(cls, args, params) -> (args, fix), where
# fix is None or fn(out) -> out, applied to the op's result (params, a dict or None, may be updated in place).
# Its owner also keeps an entry in _op_hooks while it is set, so that every op (fast paths included) comes
# through here. A composite op that PyTorch casts as a whole calls it with its aten name instead of a class
# (cast_composite).
_input_cast = [None]
# Dispatch modes active (utils._python_dispatch): while nonzero, backward formulas compute with Tensors (the engine's
# TENSORS space, without recording a graph unless create_graph), so that the ops they run are seen.
_formula_ops = [0]
# Forward AD (autograd/_forward.py): None, or fn(cls, args, params, run) -> out, which runs the op and gives its
# outputs their tangents; set, with an entry in _op_hooks, only while a dual level is active.
_tangent_step = [None]


class _OpTLS(threading.local):
    def __init__(self):
        self.busy = False       # True while op hooks run: ops they call themselves are not hooked
        self.composites = []    # the composite ops open on this thread (run_composite), innermost last
        self.pending = None     # (class, hooks, name, args): forward_post of the op running, not called yet
        self.inplace = False    # the op running is the in-place form (aten's ``fill_``) of its primitive


_op_tls = _OpTLS()


class OpHook:
    """An op-level hook: sees every primitive in forward and every node in backward.

    Override any of the four methods; register with ``register()`` (returns a RemovableHandle) or use
    the hook as a context manager. Ops that a hook method itself runs are not hooked.

    >>> class Count(OpHook):
    ...     n = 0
    ...     def forward_post(self, name, inputs, output, node):
    ...         self.n += 1
    >>> with Count() as c:
    ...     _ = hookgrad.ones(2) * 2 + 1
    >>> c.n
    2
    """

    def forward_pre(self, name, inputs):
        """Before a primitive runs: ``name`` is its op name (e.g. ``"Mul"``), ``inputs`` its arguments."""

    def forward_post(self, name, inputs, output, node):
        """After it ran: ``output`` (Tensor or tuple); ``node`` is the grad_fn it recorded, or None."""

    def backward_pre(self, node, grad_outputs):
        """Before a backward node runs, with the gradients flowing into it."""

    def backward_post(self, node, grad_inputs, grad_outputs):
        """After it ran, with the gradients it produced for its inputs."""

    def composite_pre(self, name, inputs, parts=()):
        """Before a composite or factory op of PyTorch runs (``run_composite``): ``name`` is its aten name
        (``"linear"``, ``"randn"``), ``parts`` the aten ops PyTorch's kernel of a factory calls (``("empty",
        "normal_")``), which hookgrad does not run as ops of their own."""

    def composite_post(self, name):
        """After it ran (or raised)."""

    # factory_post(self, name, args, kwargs, out), where defined: after a factory (``parts`` given) returned
    # ``out``, before composite_post; ``args``/``kwargs`` are the public function's (dispatch modes)

    def register(self):
        return register_op_hook(self)

    def __enter__(self):
        self._handle = self.register()
        return self

    def __exit__(self, *exc):
        self._handle.remove()


def register_op_hook(hook):
    """Register an OpHook (or any object with its methods) for every op and backward node."""
    h = add_hook(_op_hooks, hook)
    return h


_OP_NAMES = {}


def op_name(node_or_cls):
    """The forward op's name of a node class or node: ``MulBackward0`` -> ``Mul``."""
    name = node_or_cls.__name__ if isinstance(node_or_cls, type) else node_or_cls.name()
    op = _OP_NAMES.get(name)
    if op is None:
        op = _OP_NAMES[name] = re.sub(r"Backward\d*$", "", name)
    return op


def cast_composite(name, args):
    """``args`` as autocast casts them at the composite op ``name`` (aten's name: ``"linear"``), which PyTorch
    casts as a whole; call only while ``_input_cast[0]`` is set."""
    return _input_cast[0](name, args, None)[0]


_ATEN_NAMES = {}
_SNAKE = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z0-9])(?=[A-Z][a-z])")


def aten_name(node_or_cls):
    """PyTorch's aten operator name of a primitive (class, node, or its ``op_name``): ``AddmmBackward0`` ->
    ``"addmm"``, ``MaxPool2DWithIndicesBackward0`` -> ``"max_pool2d_with_indices"``, ``ToCopyBackward0`` ->
    ``"_to_copy"``. The profiler names its events with it (``aten::addmm``), autocast and the flop counter
    look their tables up by it."""
    name = node_or_cls if isinstance(node_or_cls, str) else op_name(node_or_cls)
    op = _ATEN_NAMES.get(name)
    if op is None:
        from .._coverage_names import ATEN_OVERLOADS as table
        op = _SNAKE.sub("_", name.rsplit("::", 1)[-1]).lower()
        if op not in table:     # aten's spellings the grad_fn name does not show
            for alt in ("_" + op, re.sub(r"([a-z])(\d+d)$", r"\1_\2", op), re.sub(r"(\d)_", r"\1", op),
                        op + "_backward", re.sub(r"_(\d)", r"\1", op), re.sub(r"_backwards$", "_", op)):
                if alt in table:
                    op = alt
                    break
        _ATEN_NAMES[name] = op
    return op


def _apply_with_op_hooks(cls, args, params, run=None):
    """``cls.apply(*args, **params)`` (or ``run(*args)``, a fast path computing the same op) between
    the op hooks' forward_pre and forward_post, after the input cast (autocast) if one is set."""
    cast = _input_cast[0]
    fix = None
    if cast is not None:
        args, fix = cast(cls, args, params)
    hooks = tuple(_op_hooks.values())
    name = op_name(cls)
    tls = _op_tls
    tls.busy = True         # the op itself, and any op a hook runs, go unhooked
    # the op's parameters and class, for hooks that need them (utils._python_dispatch); not an in-place op's
    # destination (``Node._into``: hookgrad's, not PyTorch's argument)
    tls.params = params if not params or "_into" not in params else {k: v for k, v in params.items() if k != "_into"}
    tls.cls = cls
    try:
        for h in hooks:
            h.forward_pre(name, args)
        step = _tangent_step[0]
        early = ()
        if step is None and fix is None:
            early = tuple(h for h in hooks if getattr(h, "early_post", False))
            if early:           # the op's node calls their forward_post between its saved inputs and outputs
                tls.pending = (cls, early, name, args)
        if step is None:
            out = run(*args) if run is not None else cls.apply(*args, **params)
        else:
            out = step(cls, args, params, run)
        if fix is not None:
            out = fix(out)
        done = early if early and tls.pending is None else ()
        tls.pending = None
        node = (out[0] if type(out) is tuple else out).grad_fn
        node = node if type(node) is cls else None
        for h in hooks:
            if h not in done:
                h.forward_post(name, args, out, node)
    finally:
        tls.busy = False
        tls.pending = None
    return out


def _detach_seen(t, out):
    """Tensor.detach, for the op hooks: an op (``aten::detach``) that records no node."""
    tls = _op_tls
    if tls.busy:
        return
    hooks = tuple(_op_hooks.values())
    tls.busy = True
    tls.cls = tls.params = None
    try:
        for h in hooks:
            h.forward_pre("Detach", (t,))
        for h in hooks:
            h.forward_post("Detach", (t,), out, None)
    finally:
        tls.busy = False


_op_hooks_detach[0] = _detach_seen


def run_unrecorded(name, fn, args):
    """``fn(*args)``: an op of PyTorch's that hookgrad computes without a primitive (a comparison: ``name``
    ``"Gt"``), between the op hooks' forward_pre and forward_post (with no node). Check ``_op_hooks`` and
    ``_op_tls.busy`` first."""
    tls = _op_tls
    hooks = tuple(_op_hooks.values())
    tls.busy = True
    tls.cls = tls.params = None
    try:
        for h in hooks:
            h.forward_pre(name, args)
        out = fn(*args)
        for h in hooks:
            h.forward_post(name, args, out, None)
    finally:
        tls.busy = False
    return out


def inplace_op(apply, *args, **params):
    """``apply(*args, **params)``, the primitive of an in-place op (``x.fill_(v)``), marked as in-place for the
    op hooks (``_op_tls.inplace``: dispatch modes name it aten's ``fill_``)."""
    tls = _op_tls
    prev, tls.inplace = tls.inplace, not tls.busy
    try:
        return apply(*args, **params)
    finally:
        tls.inplace = prev


def unseen(fn, *args):
    """``fn(*args)`` with the op hooks off: hookgrad's own bookkeeping ops, which PyTorch does not run."""
    tls = _op_tls
    if tls.busy:
        return fn(*args)
    tls.busy = True
    try:
        return fn(*args)
    finally:
        tls.busy = False


def post_now(node, out):
    """Called by ``node`` while it records its graph under saved-tensor hooks, before packing its outputs: the
    forward_post of the op hooks marked ``early_post`` (dispatch modes) runs now, as PyTorch's modes see an op
    after its inputs were saved and before its outputs are (a pack hook that raises, a checkpoint's early stop,
    then stops after the mode saw the op). Other op hooks see the op once it is recorded."""
    p = _op_tls.pending
    if p is not None and type(node) is p[0]:
        _op_tls.pending = None
        _, hooks, name, args = p
        for h in hooks:
            h.forward_post(name, args, out, node)


def composite_open(name=None):
    """Whether a composite op's public function should go through ``run_composite`` now: op hooks are
    registered, none is running, and no factory (an op with ``parts``) nor ``name`` itself is open."""
    if not _op_hooks:
        return False
    tls = _op_tls
    if tls.busy:
        return False
    c = tls.composites
    return not c or (c[-1] is not None and name not in c)


def run_composite(name, fn, args, kwargs=None, parts=None, inputs=None):
    """``fn(*args, **kwargs)``, PyTorch's composite op ``name`` (``"linear"``: made of primitives, each
    hooked as usual) or factory (``"randn"``, with ``parts``: the ops its aten kernel runs), as one range for
    the op hooks' ``composite_pre``/``composite_post`` (the profiler's ``aten::linear`` event around
    ``aten::t`` and ``aten::addmm``); the hooks see ``inputs`` (aten's arguments; default ``args``). Check
    ``composite_open(name)`` first."""
    tls = _op_tls
    hooks = tuple(_op_hooks.values())
    factory = parts is not None
    tls.composites.append(None if factory else name)    # None: a factory, nothing nests in it
    opened = []
    try:
        tls.busy = True
        try:
            for h in hooks:
                pre = getattr(h, "composite_pre", None)
                if pre is not None:
                    pre(name, args if inputs is None else inputs, parts or ())
                    opened.append(h)
        finally:
            tls.busy = factory          # a factory's own ops are its parts, not events of their own
        out = fn(*args, **(kwargs or {}))
        if factory:
            tls.busy = True
            for h in hooks:
                done = getattr(h, "factory_post", None)
                if done is not None:
                    done(name, args if inputs is None else inputs, kwargs or {}, out)
        return out
    finally:
        tls.busy = False
        tls.composites.pop()
        for h in reversed(opened):
            h.composite_post(name)


def run_backward_op_hooks(fn, grad_outputs, grad_inputs=None, post=False):
    """Called by the engine around a node while op hooks are registered."""
    tls = _op_tls
    tls.busy = True
    try:
        if post:
            for h in tuple(_op_hooks.values()):
                h.backward_post(fn, grad_inputs, grad_outputs)
        else:
            for h in tuple(_op_hooks.values()):
                h.backward_pre(fn, grad_outputs)
    finally:
        tls.busy = False
