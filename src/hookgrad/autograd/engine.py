"""The autograd engine: the only graph traversal in hookgrad. It knows no op by name.

It follows PyTorch's engine: count dependencies over the reachable graph, then run nodes from a
ready queue ordered by sequence number (latest-created first; AccumulateGrad before anything else).
At each node (PyTorch's verified order, spec section 2.1):

1. tensor hooks of each output slot, chained;  2. retain_grad;  3. node pre-hooks;
4. the node itself (AccumulateGrad writes ``.grad`` and runs post-accumulate hooks);
5. node post-hooks;  6. gradients summed into the next nodes' input buffers.

Every backward call is a *graph task* (an id, and which nodes it will execute), visible to hooks
through ``_current_graph_task_id`` / ``_will_engine_execute_node`` (register_multi_grad_hook).
"""
import heapq
import itertools
import threading

from .grad_mode import _state
from . import graph as _g
from .graph import check_tuple_result, run_tensor_hooks, GraphRoot

_anomaly = None  # set by autograd.anomaly while detect_anomaly is active: wraps node calls


class _TLS(threading.local):
    def __init__(self):
        self.tasks = []


_tls = _TLS()
_task_ids = itertools.count()


class _GraphTask:
    __slots__ = ("id", "seen", "needed", "captures", "node", "keep_graph", "callbacks")

    def __init__(self, seen, needed, captures, keep_graph=False):
        self.id = next(_task_ids)
        self.seen = seen
        self.needed = needed
        self.captures = captures
        self.node = None        # the node being evaluated (torch._C._current_autograd_node)
        self.keep_graph = keep_graph
        self.callbacks = None   # queue_callback: run once the pass succeeded, while it is still current


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
    needed[root] = True
    return needed


def run_backward(roots, grads, keep_graph, create_graph, inputs=None, accumulate=True):
    """roots: list of (node, slot) edges with seed grads. Returns the captured grads when
    ``accumulate`` is False (autograd.grad), one per ``inputs`` edge.

    Like PyTorch, the pass runs on a copy of the thread's saved-tensor hook stack: a context entered
    or exited by a hook during backward does not outlive it."""
    hs = _g._hooks_tls
    stack, disabled = hs.stack, hs.disabled
    hs.stack = stack[:]
    try:
        return _run_task(roots, grads, keep_graph, create_graph, inputs, accumulate)
    finally:
        hs.stack, hs.disabled = stack, disabled


def _run_task(roots, grads, keep_graph, create_graph, inputs, accumulate):
    if len(roots) == 1:
        first, root_slot = roots[0]
        nout = _num_outputs(first)
        first_buf = [None] * nout
        first_buf[root_slot] = grads[0]
    else:
        first = GraphRoot(roots, grads)
        first_buf = []
    deps, seen = _collect(first)
    exec_needed = None
    captures = None
    captured = None
    if inputs is not None:
        exec_needed = _needed(first, inputs, accumulate)
        if not accumulate:
            captures = {}
            for i, (fn, slot) in enumerate(inputs):
                captures.setdefault(fn, []).append((slot, i))
            captured = [None] * len(inputs)
    task = _GraphTask(seen, exec_needed, captures, keep_graph)

    tasks = _tls.tasks
    tasks.append(task)
    prev = _state.enabled
    _state.enabled = create_graph
    buffers = {first: first_buf}
    ready = [(-first._seq, 0, first)]
    counter = 1
    executed = []
    pop = heapq.heappop
    push = heapq.heappush
    anomaly = _anomaly
    _make = _g.Tensor._make
    op_hooks = bool(_g._op_hooks)
    if exec_needed is None and anomaly is None and not create_graph:
        try:
            executed = _run_arrays(first, first_buf, deps, task, op_hooks)
            if task.callbacks is not None:
                _run_callbacks(task)
        finally:
            _state.enabled = prev
            tasks.pop()
        if not keep_graph:
            for fn in executed:
                fn._release()
        return captured
    if op_hooks:
        anomaly = _OpHookRunner(anomaly)
    try:
        while ready:
            fn = pop(ready)[2]
            task.node = fn
            buf = buffers.pop(fn)
            if exec_needed is not None:
                need = exec_needed.get(fn, False)
                if not need and fn._hooked:
                    buf = _tensor_pre_hooks(fn, buf)
                if captures is not None:
                    caps = captures.get(fn)
                    if caps:
                        for slot, i in caps:
                            captured[i] = buf[slot]
                if not need:
                    continue
            # -- the node, with its hooks (spec 2.1); same steps as _run_node, inlined --
            if anomaly is not None or exec_needed is not None:
                outs = (anomaly or _Plain).run(fn, buf, task)
            else:
                if fn._hooked:
                    buf = _tensor_pre_hooks(fn, buf)
                pre = fn._pre_hooks
                if pre:
                    buf = _run_pre_hooks(pre, buf, fn)
                had = not not fn._post_hooks
                outs = fn._run_backward(buf)
                post = fn._post_hooks
                if post:
                    outs = _run_post_hooks(post, outs, buf if had else (), fn)
            if fn._saved:
                executed.append(fn)
            # -- dispatch --
            for (nxt, slot), g in zip(fn.next_functions, outs):
                if nxt is None:
                    continue
                d = deps[nxt] - 1
                deps[nxt] = d
                nb = buffers.get(nxt)
                if nb is None:
                    if exec_needed is not None and not (exec_needed.get(nxt) or (captures and nxt in captures)):
                        continue
                    m = nxt._out_meta
                    nb = buffers[nxt] = [None] if m is None else [None] * len(m)
                if g is not None:
                    old = nb[slot]
                    if old is None:
                        nb[slot] = g
                    elif create_graph:
                        nb[slot] = old + g
                    else:       # plain sum of two gradients of the same shape and dtype
                        nb[slot] = _make(old._data + g._data)
                if d == 0:
                    push(ready, (-nxt._seq, counter, nxt))
                    counter += 1
            outs = g = old = None   # hold no gradient past its dispatch (AccumulateGrad may take it)
        if task.callbacks is not None:
            _run_callbacks(task)
    finally:
        _state.enabled = prev
        tasks.pop()
    # Saved tensors are released only once the whole pass succeeded, so that after an error
    # (say, a hook that raised) the graph is still usable.
    if not keep_graph:
        for fn in executed:
            fn._release()
    return captured


def _run_arrays(first, first_buf, deps, task, op_hooks=False):
    """The plain ``backward()`` loop (no create_graph, no inputs=, no anomaly mode): input buffers
    hold NumPy arrays, and Tensors are built only where a hook or a Tensor-level backward needs
    them. Same order and hook steps as the general loop. Returns the executed nodes."""
    _make = _g.Tensor._make
    buffers = {first: [None if g is None else g._data for g in first_buf]}
    ready = [(-first._seq, 0, first)]
    counter = 1
    executed = []
    pop = heapq.heappop
    push = heapq.heappush
    pending = None          # a node ready to run next without a trip through the heap (chains)
    while ready or pending is not None:
        if pending is not None:
            fn = pending
            pending = None
        else:
            fn = pop(ready)[2]
        task.node = fn
        buf = buffers.pop(fn)
        if op_hooks:
            outs = _run_op_hooked_arrays(fn, buf, _make)
        elif fn._np and not fn._hooked:
            outs = fn._np_run(buf)
            if fn._post_hooks:      # registered while the node ran (by an unpack hook)
                outs = _late_post_hooks(fn, outs, _make)
        else:
            outs = _run_hooked_arrays(fn, buf, _make)
        if fn._saved:
            executed.append(fn)
        for (nxt, slot), g in zip(fn.next_functions, outs):
            if nxt is None:
                continue
            d = deps[nxt] - 1
            deps[nxt] = d
            nb = buffers.get(nxt)
            if nb is None:
                m = nxt._out_meta
                nb = buffers[nxt] = [None] if m is None else [None] * len(m)
            if g is not None:
                old = nb[slot]
                nb[slot] = g if old is None else old + g
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
        outs = g = None     # hold no gradient past its dispatch (AccumulateGrad may take the buffer)
    return executed


def _run_op_hooked_arrays(fn, buf, make):
    """A node of the array loop between the op hooks' backward_pre and backward_post (Tensors)."""
    go = tuple([None if a is None else make(a) for a in buf])
    _g.run_backward_op_hooks(fn, go)
    outs = fn._np_run(buf) if fn._np and not fn._hooked else _run_hooked_arrays(fn, buf, make)
    _g.run_backward_op_hooks(fn, go, tuple([None if o is None else make(o) for o in outs]), post=True)
    return outs


def _run_hooked_arrays(fn, buf, make):
    """_run_node for the array loop: hooks see Tensors; an array-level node then runs on arrays."""
    tph = fn._tensor_pre_hooks
    if fn._np and tph is not None and len(tph) == 1 and fn._pre_hooks is None and fn._post_hooks is None \
            and fn._retains_grad is None and type(fn) is not _g.AccumulateGrad:
        # the common hooked node: tensor hooks on one output, nothing else (same steps, fewer objects)
        slot, hooks = tph[0]
        a = buf[slot]
        if a is not None:
            if hooks:
                buf[slot] = run_tensor_hooks(hooks, make(a))._data
            if fn._pre_hooks is None and fn._post_hooks is None:
                outs = fn._np_run(buf)
                if fn._post_hooks:      # registered while the node ran (by an unpack hook)
                    outs = _late_post_hooks(fn, outs, make)
                return outs
            # a tensor hook registered node hooks: they run now, as in PyTorch
            return _node_steps(fn, [None if a is None else make(a) for a in buf], make, False)
    tbuf = [None if a is None else make(a) for a in buf]
    acc = type(fn) is _g.AccumulateGrad
    if acc:
        buf[0] = None   # the Tensor alone holds the gradient now: AccumulateGrad may take it as .grad
    if fn._hooked:
        tbuf = _tensor_pre_hooks(fn, tbuf)
    return _node_steps(fn, tbuf, make, acc)


def _node_steps(fn, tbuf, make, acc):
    """Steps 3-5 of the array loop on Tensors: pre-hooks, the node, post-hooks; arrays out."""
    pre = fn._pre_hooks
    if pre:
        tbuf = _run_pre_hooks(pre, tbuf, fn)
    post = fn._post_hooks
    if fn._np and not post and not acc:
        outs = fn._np_run([None if t is None else t._data for t in tbuf])
        if fn._post_hooks:
            outs = _late_post_hooks(fn, outs, make)
        return outs
    had = not not post
    outs = fn._run_backward(tbuf)
    post = fn._post_hooks
    if post:
        outs = _run_post_hooks(post, outs, tbuf if had else (), fn)
    return [None if o is None else o._data for o in outs]


def _late_post_hooks(fn, outs, make):
    """Post-hooks registered while their node ran (e.g. by an unpack hook through
    _current_autograd_node): PyTorch runs them, with an empty grad_outputs (it kept no inputs)."""
    outs = _run_post_hooks(fn._post_hooks, [None if o is None else make(o) for o in outs], (), fn)
    return [None if o is None else o._data for o in outs]


def _run_node(fn, buf, task=None):
    """Steps 1-5 at one node: tensor hooks, retain_grad, pre-hooks, the node, post-hooks.

    Under backward(inputs=) / autograd.grad, grads towards nodes that will not run are dropped
    before the post-hooks, as PyTorch's built-in nodes never compute them (custom Functions do)."""
    if fn._hooked:
        buf = _tensor_pre_hooks(fn, buf)
    pre = fn._pre_hooks
    if pre:
        buf = _run_pre_hooks(pre, buf, fn)
    had = not not fn._post_hooks
    outs = fn._run_backward(buf)
    if task is not None and task.needed is not None and fn._masks_unneeded:
        needed, caps = task.needed, task.captures
        outs = [None if nxt is None or not (needed.get(nxt) or (caps is not None and nxt in caps)) else g
                for (nxt, _), g in zip(fn.next_functions, outs)]
    post = fn._post_hooks
    if post:
        outs = _run_post_hooks(post, outs, buf if had else (), fn)
    return outs


class _Plain:
    run = staticmethod(_run_node)


class _OpHookRunner:
    """Runs op-level hooks (autograd.graph.OpHook) before and after each node."""

    def __init__(self, inner):
        self.inner = inner or _Plain

    def run(self, fn, buf, task=None):
        go = tuple(buf)
        _g.run_backward_op_hooks(fn, go)
        outs = self.inner.run(fn, buf, task)
        _g.run_backward_op_hooks(fn, go, tuple(outs), post=True)
        return outs


def _run_pre_hooks(pre, buf, fn=None):
    go = tuple(buf)
    for hook in tuple(pre.values()):
        go = check_tuple_result(hook, go, hook(go), fn, "grad_outputs")
    return list(go)


def _run_post_hooks(post, outs, buf, fn=None):
    go = tuple(buf)
    outs = tuple(outs)
    for hook in tuple(post.values()):
        outs = check_tuple_result(hook, outs, hook(outs, go), fn)
    return outs


def _num_outputs(fn):
    m = fn._out_meta
    return 1 if m is None else len(m)


def _tensor_pre_hooks(fn, buf):
    """Steps 1-2 at a node: tensor hooks per output slot (chained), then retain_grad."""
    tph = fn._tensor_pre_hooks
    if tph:
        buf = list(buf)
        for slot, hooks in tuple(tph):
            if hooks:
                buf[slot] = run_tensor_hooks(hooks, buf[slot])
    if type(fn) is _g.AccumulateGrad:
        hooks = fn.variable._backward_hooks
        if hooks:
            buf = [run_tensor_hooks(hooks, buf[0])]
    rg = fn._retains_grad
    if rg:
        for slot, ref in tuple(rg.items()):
            t = ref()
            g = buf[slot]
            if t is not None and g is not None:
                if t._grad is None:
                    t._grad = g.clone() if _state.enabled else g.detach().clone()
                elif _state.enabled:
                    t._grad = t._grad + g
                else:
                    t._grad = t._grad + g.detach()
    return buf
