"""The autograd engine: the only graph traversal in hookgrad. It knows no op by name.

It follows PyTorch's engine: count dependencies over the reachable graph, then run nodes from a
ready queue ordered by sequence number (latest-created first; AccumulateGrad before anything else).
At each node (PyTorch's verified order, spec section 2.1):

1. tensor hooks of each output slot, chained;  2. retain_grad;  3. node pre-hooks;
4. the node itself (AccumulateGrad writes ``.grad`` and runs post-accumulate hooks);
5. node post-hooks;  6. gradients summed into the next nodes' input buffers.
"""
import heapq

from .grad_mode import _state
from . import graph as _g
from .graph import check_tuple_result, run_tensor_hooks, GraphRoot

_anomaly = None  # set by autograd.anomaly when detect_anomaly is active


def _collect(roots):
    """Dependencies (number of incoming edges) of every node reachable from roots."""
    deps = {}
    seen = set()
    stack = list(roots)
    for r in roots:
        seen.add(r)
    while stack:
        fn = stack.pop()
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, seen


def _needed(roots, targets, accumulate):
    """Nodes that must run to reach the target edges; and where gradients are captured."""
    target_nodes = {fn for fn, _ in targets}
    needed = {}

    # iterative post-order DFS
    order = []
    seen = set()
    stack = [(r, False) for r in roots]
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
    # a node runs if it is a target (backward(inputs=)) or leads to a target or a capture
    leads = {}
    for fn in order:
        lead = fn in target_nodes or any(leads.get(nxt, False) for nxt, _ in fn.next_functions if nxt is not None)
        leads[fn] = lead
        needed[fn] = (accumulate and fn in target_nodes) or \
            any(leads.get(nxt, False) for nxt, _ in fn.next_functions if nxt is not None)
    for r in roots:
        needed[r] = True
    return needed, target_nodes


def run_backward(roots, grads, keep_graph, create_graph, inputs=None, accumulate=True, allow_unused=False):
    """roots: list of (node, slot) edges with seed grads. Returns captured grads when accumulate=False."""
    if len(roots) == 1:
        root_fn, root_slot = roots[0]
        first = root_fn
        first_buf = [None] * _num_outputs(root_fn)
        first_buf[root_slot] = grads[0]
    else:
        first = GraphRoot(roots, grads)
        first_buf = []
    deps, _ = _collect([first])
    exec_needed = None
    captures = None
    if inputs is not None:
        exec_needed, target_nodes = _needed([first], inputs, accumulate)
        if not accumulate:
            captures = {}
            for i, (fn, slot) in enumerate(inputs):
                captures.setdefault(fn, []).append((slot, i))
    captured = [None] * len(inputs) if inputs is not None else None

    prev = _state.enabled
    _state.enabled = create_graph
    buffers = {first: first_buf}
    ready = [(-first._seq, 0, first)]
    counter = 1
    executed = []
    try:
        while ready:
            fn = heapq.heappop(ready)[2]
            buf = buffers.pop(fn)
            need = True
            if exec_needed is not None:
                need = exec_needed.get(fn, False)
                caps = captures.get(fn) if captures is not None else None
                if not need:
                    buf = _tensor_pre_hooks(fn, buf)
                if caps:
                    for slot, i in caps:
                        captured[i] = buf[slot]
                if not need:
                    continue
            outs = _call(fn, buf)
            executed.append(fn)
            for (nxt, slot), g in zip(fn.next_functions, outs):
                if nxt is None:
                    continue
                d = deps[nxt] - 1
                deps[nxt] = d
                nb = buffers.get(nxt)
                if nb is None:
                    if exec_needed is not None and not (exec_needed.get(nxt) or (captures and nxt in captures)):
                        continue
                    nb = buffers[nxt] = [None] * _num_outputs(nxt)
                if g is not None:
                    old = nb[slot]
                    nb[slot] = g if old is None else old + g
                if d == 0:
                    heapq.heappush(ready, (-nxt._seq, counter, nxt))
                    counter += 1
    finally:
        _state.enabled = prev
    # Saved tensors are released only once the whole pass succeeded, so that after an error
    # (say, a hook that raised) the graph is still usable.
    if not keep_graph:
        for fn in executed:
            fn._release()
    return captured


def _num_outputs(fn):
    if fn._out_meta is not None:
        return len(fn._out_meta)
    return 1


def _tensor_pre_hooks(fn, buf):
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
                    t._grad = g.detach().clone() if not _state.enabled else g.clone()
                else:
                    t._grad = t._grad + g if _state.enabled else t._grad.add_(g.detach())
    return buf


def _call(fn, buf):
    if fn._tensor_pre_hooks or fn._retains_grad or (type(fn) is _g.AccumulateGrad and fn.variable._backward_hooks):
        buf = _tensor_pre_hooks(fn, buf)
    pre = fn._pre_hooks
    if pre:
        grads = tuple(buf)
        for hook in tuple(pre.values()):
            grads = check_tuple_result(hook, grads, hook(grads))
        buf = list(grads)
    if _anomaly is not None:
        outs = _anomaly.call(fn, buf)
    else:
        outs = fn._run_backward(buf)
    post = fn._post_hooks
    if post:
        go = tuple(buf)
        for hook in tuple(post.values()):
            outs = check_tuple_result(hook, outs, hook(outs, go))
    return outs
