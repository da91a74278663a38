"""``register_full_post_accumulate_grad_hook(module, hook)``: "all my grads are ready", on hookgrad and
torch modules.

``hook(module)`` runs once per backward pass, right after the last of the module's parameters (those that
require grad) has its ``.grad`` accumulated, inside the backward: the moment DDP's buckets use to start
their all-reduce, and the place to step a per-layer optimizer or clip a layer's gradients as soon as
they are complete.

Built on ``Tensor.register_post_accumulate_grad_hook`` (one per parameter), the engine's
``queue_callback`` (to close the pass) and the current backward pass's id (to tell passes apart).
"""
import warnings

from .lib import lib_of, torch_attr

__all__ = ["register_full_post_accumulate_grad_hook", "GradsReadyHandle"]

UNUSED = ("fire", "warn", "ignore")


class GradsReadyHandle:
    """What :func:`register_full_post_accumulate_grad_hook` returns: ``remove()`` (idempotent), a
    context manager, ``fired`` (how many backward passes fired the hook) and ``missing`` (the parameter
    names that got no gradient in the last pass that reached the module but not all of it)."""

    def __init__(self, module, hook, unused):
        self.module, self.hook, self.unused = module, hook, unused
        self._lib = lib = lib_of(module)
        self._task_id = torch_attr(lib.root, "graph_task_id")
        self._queue = torch_attr(lib.root, "queue_callback")
        seen, self.names = set(), {}
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                self.names[id(p)] = name
        self.params = [p for p in module.parameters() if id(p) in self.names]
        self.fired = 0
        self.missing = []
        self._task = None
        self._handles = [p.register_post_accumulate_grad_hook(self._on_acc) for p in self.params]

    def _on_acc(self, param):
        tid = self._task_id()
        if tid != self._task or tid == -1:
            self._task = tid
            self._seen = set()
            self._done = False
            self._expected = {id(p) for p in self.params if p.requires_grad}
            self._queue(self._end)
        self._seen.add(id(param))
        if not self._done and self._expected <= self._seen:
            self._done = True
            self.fired += 1
            self.hook(self.module)

    def _end(self):
        self._task = None
        if self._done:
            self.missing = []
            return
        self.missing = [self.names[i] for i in self._expected - self._seen]
        if self.unused == "fire":
            self.fired += 1
            self.hook(self.module)
        elif self.unused == "warn":
            warnings.warn(f"register_full_post_accumulate_grad_hook: {type(self.module).__name__}'s hook "
                          f"did not fire in this backward: {', '.join(sorted(self.missing))} got no gradient "
                          "(unused in the forward, or left out by backward(inputs=...)); pass unused='fire' to run "
                          "it at the end of the pass anyway", UserWarning, stacklevel=2)

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_full_post_accumulate_grad_hook(module, hook, *, unused="warn"):
    """Register ``hook(module)``, called once per backward pass when every parameter of ``module``
    (recursively; those requiring grad at registration) has its gradient accumulated into ``.grad``.

    ``unused`` says what happens in a pass that reaches some of the parameters but not all (a parameter
    unused in the forward, or ``backward(inputs=...)``): ``"warn"`` (default) warns naming the missing
    parameters, ``"fire"`` runs the hook at the end of the pass anyway (like DDP's
    ``find_unused_parameters``), ``"ignore"`` does nothing. ``autograd.grad`` accumulates nothing and
    so fires nothing. Returns a :class:`GradsReadyHandle`.

    >>> h = register_full_post_accumulate_grad_hook(model.layer1, lambda m: opt1.step())
    """
    if unused not in UNUSED:
        raise ValueError(f"register_full_post_accumulate_grad_hook: unused must be one of {UNUSED}, got {unused!r}")
    if not callable(hook):
        raise TypeError(f"register_full_post_accumulate_grad_hook: hook must be callable, got {type(hook).__name__}")
    h = GradsReadyHandle(module, hook, unused)
    if not h.params:
        h.remove()
        raise ValueError(f"register_full_post_accumulate_grad_hook: {type(module).__name__} has no parameter "
                         "that requires grad: the hook could never fire")
    return h
