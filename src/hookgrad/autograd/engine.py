"""The autograd engine: the only graph traversal in hookgrad. It knows no op and no node type.

It follows PyTorch's engine: count dependencies over the reachable graph, then run nodes from a
ready queue ordered by sequence number (latest-created first; AccumulateGrad before anything else).
Each backward call is a *graph task* (:class:`_GraphTask`): its dependency counts, input buffers,
captures (autograd.grad / backward(inputs=)), final callbacks and the nodes whose saved tensors are
released once the pass succeeded. It is visible to hooks through ``_current_graph_task_id`` /
``_will_engine_execute_node`` (register_multi_grad_hook).

At each node, one step (:func:`_node_step`, PyTorch's verified order, spec section 2.1):

1. tensor hooks of each output slot, chained;  2. retain_grad;  3. node pre-hooks;
4. the node itself (AccumulateGrad writes ``.grad`` and runs post-accumulate hooks);
5. node post-hooks;  then the loop sums the gradients into the next nodes' input buffers.

What is chosen once per pass, not per node: the *gradient space* (``formulas.TENSORS`` under
create_graph, ``formulas.ARRAYS`` otherwise), in which buffers hold gradients and nodes compute
(hooks always see Tensors: ``space.tensor`` / ``space.carry``); and the node runner: the step
itself, or the step wrapped by anomaly mode and/or the op hooks.
"""
import heapq
import itertools
import threading

from .grad_mode import _state
from . import node as _g
from .node import check_tuple_result, run_tensor_hooks, GraphRoot
from .saved import _hooks_tls
from .op_hooks import _op_hooks, _formula_ops, run_backward_op_hooks
from .formulas import TENSORS, ARRAYS
from . import anomaly_mode as _anomaly
from .. import _progress


class _TLS(threading.local):
    def __init__(self):
        self.tasks = []
        self.depth = 0      # backward passes nested on this thread (a backward inside a backward)


# A backward inside a backward (reentrant) nests the Python stack; past this many levels on one thread, the
# nested pass runs on a fresh thread while this one waits (PyTorch's engine escapes the same way: its
# reentrant passes move to a worker thread when the stack gets deep), so depth is bounded by memory only.
_MAX_DEPTH_PER_THREAD = 16


_tls = _TLS()
_task_ids = itertools.count()


# --------------------------------------------------------------------------------------------
# the node step: PyTorch's per-node order, written once

def _node_step(task, fn, buf):
    """Steps 1-5 at one node: ``buf`` (the node's input buffer, carried in the task's space) in, one
    carried gradient per next_functions entry out. Without hooks this is the node and three attribute
    checks; ``_hooked`` is set by every registration that binds a hook or retain_grad to a node.

    Under backward(inputs=) / autograd.grad, grads towards nodes that will not run are dropped
    before the post-hooks, as PyTorch's built-in nodes never compute them (custom Functions do)."""
    space = on = task.space         # ``on``: the carrier the node runs on
    had = False
    if fn._hooked:
        _slot_hooks(fn, buf, space)                         # 1-2
        pre = fn._pre_hooks
        if pre or fn._post_hooks:
            go = space.tensors(buf)
            if pre:                                         # 3
                for hook in tuple(pre.values()):
                    go = check_tuple_result(hook, go, hook(go), fn, "grad_outputs")
            buf.clear()             # the engine holds the gradients once only (AccumulateGrad may take one)
            if fn._post_hooks:
                # the post-hooks see these Tensors as grad_outputs, so the node runs on them: a .grad
                # taken from the buffer is then the very Tensor the post-hooks see (PyTorch)
                had = True
                buf = list(go)
                on = TENSORS
            else:
                buf.extend(space.carry_all(go))
            go = None
    outs = fn._run_backward(buf, on)                        # 4
    if task.needed is not None and fn._masks_unneeded:
        needed, caps = task.needed, task.captures
        outs = [None if nxt is None or not (needed.get(nxt) or (caps is not None and nxt in caps)) else g
                for (nxt, _), g in zip(fn.next_functions, outs)]
    if fn._post_hooks:                                      # 5
        return _post_hooks(fn, outs, tuple(buf) if had else (), on, space)
    if on is not space:
        return space.carry_all(outs)
    return outs


def _post_hooks(fn, outs, go, on, space):
    """Step 5: the node post-hooks on (grad_inputs, grad_outputs). A post-hook registered while the
    node ran (say by an unpack hook through _current_autograd_node) runs too, with an empty
    grad_outputs (PyTorch kept no inputs)."""
    outs = on.tensors(outs)
    for hook in tuple(fn._post_hooks.values()):
        outs = check_tuple_result(hook, outs, hook(outs, go), fn)
    return space.carry_all(outs)


def _slot_hooks(fn, buf, space):
    """Steps 1-2, in place on ``buf``: the tensor hooks of each output slot (chained; a leaf's hooks
    are slot 0 of its accumulator), then retain_grad."""
    tph = fn._tensor_pre_hooks
    if tph:
        for slot, hooks in tuple(tph):
            if hooks:
                buf[slot] = space.carry(run_tensor_hooks(hooks, space.tensor(buf[slot])))
    rg = fn._retains_grad
    if rg:
        grad_mode = _state.enabled
        for slot, ref in tuple(rg.items()):
            t = ref()
            g = buf[slot]
            if t is not None and g is not None:
                g = space.tensor(g)
                if t._grad is None:
                    t._grad = g.clone() if grad_mode else g.detach().clone()
                else:
                    t._grad = t._grad + (g if grad_mode else g.detach())


def _op_hooked(run):
    """A node runner with the op hooks (autograd.graph.OpHook) before and after the step ``run``."""
    def run_op_hooked(task, fn, buf):
        space = task.space
        go = space.tensors(buf)
        run_backward_op_hooks(fn, go)
        if not fn._hooked:      # ``buf`` keeps the gradients: no second reference while the node runs (AccumulateGrad
            go = None           # takes a gradient only the engine holds, as without op hooks)
        outs = run(task, fn, buf)
        run_backward_op_hooks(fn, space.tensors(buf) if go is None else go, space.tensors(outs), post=True)
        return outs
    return run_op_hooked


# --------------------------------------------------------------------------------------------
# the graph task and its one traversal

class _GraphTask:
    """One backward pass: what it will run, its buffers, captures and callbacks."""
    __slots__ = ("id", "space", "run", "deps", "seen", "needed", "captures", "captured", "node", "keep_graph",
                 "callbacks", "executed", "first", "roots")

    def __init__(self, first, keep_graph, create_graph, inputs, accumulate):
        self.id = next(_task_ids)
        self.space = TENSORS if create_graph or _formula_ops[0] else ARRAYS   # (a dispatch mode sees formulas' ops)
        run = _node_step
        if _anomaly.state.enabled:
            run = _anomaly.wrap_step(run, self.space)
        if _op_hooks:
            run = _op_hooked(run)
        self.run = run
        self.deps, self.seen = _collect(first)
        self.first = first
        self.roots = None       # the root nodes when several (first is then their GraphRoot)
        self.needed = self.captures = self.captured = None
        if inputs is not None:
            self.needed = _needed(first, inputs, accumulate)
            if not accumulate:
                caps = self.captures = {}
                for i, (fn, slot) in enumerate(inputs):
                    caps.setdefault(fn, []).append((slot, i))
                self.captured = [None] * len(inputs)
        self.node = None        # the node being evaluated (torch._C._current_autograd_node)
        self.keep_graph = keep_graph
        self.callbacks = None   # queue_callback: run once the pass succeeded, while it is still current
        self.executed = []      # nodes with saved tensors, released at the end of a successful pass

    def execute(self, first, first_buf):
        """The traversal: run every ready node (``run``: the node step) and sum its gradients into
        the input buffers of the nodes it feeds."""
        deps = self.deps
        needed = self.needed
        captures = self.captures
        run = self.run
        space = self.space
        add = space.add
        bare = run is _node_step and needed is None
        executed = self.executed
        buffers = {first: first_buf}
        ready = []
        counter = 0
        pop = heapq.heappop
        push = heapq.heappush
        pending = first         # a node ready to run next without a trip through the heap (chains)
        comms = _progress.pending   # non-blocking collectives (DDP) advance between nodes while there are any
        while pending is not None or ready:
            if comms:
                _progress.tick()
            if pending is not None:
                fn = pending
                pending = None
            else:
                fn = pop(ready)[2]
            self.node = fn
            buf = buffers.pop(fn)
            if needed is not None:
                need = needed.get(fn, False)
                if not need and fn._hooked:
                    _slot_hooks(fn, buf, self.space)        # a captured gradient sees its tensor hooks
                if captures is not None:
                    caps = captures.get(fn)
                    if caps:
                        captured = self.captured
                        for slot, i in caps:
                            captured[i] = buf[slot]
                if not need:
                    continue
            if bare and not fn._hooked:
                # a node with no hooks under the plain runner: the step is the node alone (steps 1-3
                # empty; step 5 only for a post-hook registered while the node ran)
                outs = fn._run_backward(buf, space)
                if fn._post_hooks:
                    outs = _post_hooks(fn, outs, (), space, space)
            else:
                outs = run(self, fn, buf)
            buf = None
            if fn._saved:
                executed.append(fn)
            for (nxt, slot), g in zip(fn.next_functions, outs):
                if nxt is None:
                    continue
                d = deps[nxt] - 1
                deps[nxt] = d
                nb = buffers.get(nxt)
                if nb is None:
                    if needed is not None and not (needed.get(nxt) or (captures and nxt in captures)):
                        continue
                    m = nxt._out_meta
                    nb = buffers[nxt] = [None] if m is None else [None] * len(m)
                if g is not None:
                    old = nb[slot]
                    nb[slot] = g if old is None else add(old, g)
                if d == 0:
                    # NOTE: the order is the heap's (sequence number); a lone ready node with an empty
                    # heap is what the heap would return next anyway
                    if pending is None and not ready:
                        pending = nxt
                    else:
                        if pending is not None:
                            push(ready, (-pending._seq, counter, pending))
                            counter += 1
                            pending = None
                        push(ready, (-nxt._seq, counter, nxt))
                        counter += 1
            outs = g = old = None   # hold no gradient past its dispatch (AccumulateGrad may take it)


def run_backward(roots, grads, keep_graph, create_graph, inputs=None, accumulate=True):
    """roots: list of (node, slot) edges with seed grads (Tensors). Returns the captured grads as
    Tensors when ``accumulate`` is False (autograd.grad), one per ``inputs`` edge.

    Like PyTorch, the pass runs on a copy of the thread's saved-tensor hook stack: a context entered
    or exited by a hook during backward does not outlive it. Saved tensors are released only once
    the whole pass succeeded, so that after an error (say, a hook that raised) the graph is usable."""
    if _tls.depth >= _MAX_DEPTH_PER_THREAD:
        return _on_fresh_thread(run_backward, roots, grads, keep_graph, create_graph, inputs, accumulate)
    _tls.depth += 1
    try:
        return _run_backward(roots, grads, keep_graph, create_graph, inputs, accumulate)
    finally:
        _tls.depth -= 1


def _on_fresh_thread(fn, *args):
    """``fn(*args)`` on a new thread that carries this thread's autograd state (grad modes, the running
    passes, saved-tensor hooks); this thread waits for it and gets its result or its exception."""
    tasks = _tls.tasks
    modes = dict(_state.__dict__)
    hooks = dict(_hooks_tls.__dict__)
    box = {}

    def run():
        _tls.tasks = tasks          # the passes this one nests in (torch._C._current_graph_task_id & co.)
        _state.__dict__.update(modes)
        _hooks_tls.__dict__.update(hooks)
        try:
            box["out"] = fn(*args)
        except BaseException as e:  # noqa: B036 (re-raised on the waiting thread)
            box["err"] = e
    t = threading.Thread(target=run, name="hookgrad-reentrant-backward")
    t.start()
    t.join()
    if "err" in box:
        raise box["err"]
    return box["out"]


def _run_backward(roots, grads, keep_graph, create_graph, inputs, accumulate):
    if len(roots) == 1:
        first, root_slot = roots[0]
        m = first._out_meta
        first_buf = [None] if m is None else [None] * len(m)
    else:
        first = GraphRoot(roots, grads)
        first_buf = []
    task = _GraphTask(first, keep_graph, create_graph, inputs, accumulate)
    if len(roots) > 1:
        task.roots = [fn for fn, _ in roots]
    space = task.space
    if len(roots) == 1:
        first_buf[root_slot] = space.carry(grads[0])
    hs = _hooks_tls
    stack, disabled = hs.stack, hs.disabled
    hs.stack = stack[:]
    tasks = _tls.tasks
    tasks.append(task)
    prev = _state.enabled
    _state.enabled = create_graph
    try:
        task.execute(first, first_buf)
        first_buf = None
        if task.callbacks is not None:
            _run_callbacks(task)
    finally:
        _state.enabled = prev
        tasks.pop()
        hs.stack, hs.disabled = stack, disabled
    if not keep_graph:
        for fn in task.executed:
            fn._release()
    if task.captured is not None:
        return list(space.tensors(task.captured))
    return None


# --------------------------------------------------------------------------------------------
# what the graph task computes before the pass

def _collect(root):
    """Dependencies (number of incoming edges) of every node reachable from root, and the set of
    reachable nodes (a view over the same dict, plus the root)."""
    deps = {}
    stack = [root]
    pop = stack.pop
    push = stack.append
    get = deps.get
    while stack:
        for nxt, _ in pop().next_functions:
            if nxt is not None:
                c = get(nxt)
                if c is None:
                    deps[nxt] = 1
                    push(nxt)
                else:
                    deps[nxt] = c + 1
    return deps, _Reachable(deps, root)


class _Reachable:
    """``node in reachable``: the nodes of one backward pass (the dependency dict's keys + root)."""
    __slots__ = ("deps", "root")

    def __init__(self, deps, root):
        self.deps = deps        # counted down during the pass, but keys are never removed
        self.root = root

    def __contains__(self, node):
        return node is self.root or node in self.deps


def _needed(root, targets, accumulate):
    """Nodes that must run to reach the target edges."""
    target_nodes = {fn for fn, _ in targets}
    needed = {}
    # post-order over the graph (iterative DFS)
    order = []
    seen = set()
    stack = [(root, False)]
    while stack:
        fn, done = stack.pop()
        if done:
            order.append(fn)
            continue
        if fn in seen:
            continue
        seen.add(fn)
        stack.append((fn, True))
        for nxt, _ in fn.next_functions:
            if nxt is not None and nxt not in seen:
                stack.append((nxt, False))
    # a node runs if it is a target of backward(inputs=) or leads to a target
    leads = {}
    for fn in order:
        below = any(leads.get(nxt, False) for nxt, _ in fn.next_functions if nxt is not None)
        leads[fn] = fn in target_nodes or below
        needed[fn] = (accumulate and fn in target_nodes) or below
    # the root runs only if it leads to a target too: a node that cannot reach the requested inputs
    # never runs (a custom Function's backward under grad(out, unrelated, allow_unused=True))
    return needed


# --------------------------------------------------------------------------------------------
# what hooks and user code ask the engine during a pass

def _queue_callback(callback):
    """Variable._execution_engine.queue_callback: run ``callback`` at the end of the current backward
    pass (PyTorch's final callbacks; a callback may queue more)."""
    tasks = _tls.tasks
    if not tasks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    task = tasks[-1]
    if task.callbacks is None:
        task.callbacks = []
    task.callbacks.append(callback)


def _run_callbacks(task):
    cbs = task.callbacks
    i = 0
    while i < len(cbs):     # a callback may append more
        cbs[i]()
        i += 1
    task.callbacks = None


class _ExecutionEngine:
    """``torch.autograd.Variable._execution_engine`` (the part user code calls)."""
    queue_callback = staticmethod(_queue_callback)


def _get_current_graph_task_keep_graph():
    tasks = _tls.tasks
    return tasks[-1].keep_graph if tasks else True


def _current_graph_task_id():
    """Id of the backward pass running on this thread (-1 outside backward)."""
    tasks = _tls.tasks
    return tasks[-1].id if tasks else -1


def _current_autograd_node():
    """The node the engine is evaluating on this thread (its hooks, saved-tensor unpacking, a custom
    backward), or None outside backward (torch._C._current_autograd_node)."""
    tasks = _tls.tasks
    return tasks[-1].node if tasks else None


def _current_graph_task_execution_order():
    """The nodes of the running backward pass in the order the engine runs them (captured ones included),
    from its roots: the same ready queue replayed on a copy of the dependency counts
    (torch._C._current_graph_task_execution_order)."""
    tasks = _tls.tasks
    if not tasks:
        raise RuntimeError("_current_graph_task_execution_order should only be called during the backward pass")
    if _state.multithreading:
        raise RuntimeError("get_current_graph_task_execution_order expects the current backward to be executed "
                           "with multithreading disabled, e.g. by running:\n\n>>> with "
                           "torch.autograd.set_multithreading_enabled(False):\n...     torch.autograd.grad(...)\n")
    task = tasks[-1]
    deps, _ = _collect(task.first)
    needed, caps = task.needed, task.captures
    counter = itertools.count()
    roots = task.roots or [task.first]
    heap = [(-fn._seq, next(counter), fn) for fn in dict.fromkeys(roots)]
    heapq.heapify(heap)
    out = []
    while heap:
        fn = heapq.heappop(heap)[2]
        out.append(fn)
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            if needed is not None and not (needed.get(nxt) or (caps is not None and nxt in caps)):
                continue
            deps[nxt] -= 1
            if deps[nxt] == 0:
                heapq.heappush(heap, (-nxt._seq, next(counter), nxt))
    return out


def _will_engine_execute_node(node):
    """Whether the current backward pass will execute (or capture at) ``node`` (torch's rules)."""
    if not isinstance(node, _g.Node):
        raise RuntimeError(f"_will_engine_execute_node expects an grad_fn, but got {type(node).__name__}")
    tasks = _tls.tasks
    if not tasks:
        raise RuntimeError("_get_should_execute_nodes should only be called during the backward pass")
    task = tasks[-1]
    ret = node in task.seen
    if ret and task.needed is not None:
        caps = task.captures
        if not (task.needed.get(node) or (caps is not None and node in caps)):
            return False
        if caps is not None and node in caps and not any(n is not None for n, _ in node.next_functions):
            raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are currently running "
                               "autograd.grad(). This is currently not supported.")
    return ret
