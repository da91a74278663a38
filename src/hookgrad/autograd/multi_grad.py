"""register_multi_grad_hook (spec G1): one hook over the gradients of several tensors, once per
backward pass."""
import threading
from collections import defaultdict

from ..utils.hooks import RemovableHandle
from . import engine


class _MultiHandle(RemovableHandle):
    """Handle over several hooks (one per tensor); ``remove()`` removes them all."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state):
        self.handles = state


def _grad_fn_or_acc(t):
    if t.requires_grad and t.grad_fn is None:
        return t._grad_accumulator()
    if t.grad_fn is None:
        raise AssertionError("Expected gradient function to be set")
    return t.grad_fn


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` once per backward after the grads of ``tensors`` are computed.

    mode="all": ``fn(grads)`` with one entry per tensor (None where no grad is computed in this pass),
    called when the last grad the engine will compute among them arrives.
    mode="any": ``fn(grad)`` with the first grad computed among them.
    """
    supported = ("all", "any")
    if mode not in supported:
        raise ValueError(f"Expects mode to be one of {supported} but got {mode}")
    lock = threading.Lock()

    if mode == "all":
        tensors = tuple(tensors)
        count = {}
        buffer = {}
        nb_calls = None
        grad_fns = [_grad_fn_or_acc(t) for t in tensors]
        n = len(tensors)

        def get_inner_hook(idx):
            def inner_hook(grad):
                nonlocal nb_calls
                tid = engine._current_graph_task_id()
                assert tid != -1, "expected this hook to be called inside a backward call"
                with lock:      # PyTorch's lock: tasks on several threads share the counters
                    cur = count.get(tid, 0)
                    count[tid] = cur + 1
                    buf = buffer.setdefault(tid, [None] * n)
                    if cur == 0:
                        nb_calls = sum(map(engine._will_engine_execute_node, grad_fns))
                buf[idx] = grad
                if cur == nb_calls - 1:
                    del count[tid]
                    del buffer[tid]
                    fn(buf)
            return inner_hook

        handles = tuple(t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors))
    else:
        ran = defaultdict(bool)

        def wrapped_fn(grad):
            tid = engine._current_graph_task_id()
            assert tid != -1, "expected this hook to be called inside a backward call"
            with lock:
                prev, ran[tid] = ran[tid], True
            if prev:
                return
            fn(grad)

        handles = tuple(t.register_hook(wrapped_fn) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)
