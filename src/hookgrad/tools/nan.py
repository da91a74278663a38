"""NaN/Inf localisation: the first op that produced a non-finite value, in forward or backward, with
its module path, the module's call index and the user's stack line.

    with detect_nonfinite(model):
        loss = model(x).sum()
        loss.backward()          # RuntimeError naming the op, module path, call and source line

Built on :class:`hookgrad.autograd.graph.OpHook` (and the global module hooks when a model is
given). Nothing is registered outside the context, so it costs nothing when off.
"""
import numpy as np

from .ophooks import WHERE, OpTool, flat, array_of, describe, format_frame, user_frame

__all__ = ["detect_nonfinite", "NonFiniteEvent"]


def _bad(a):
    """``(count, "nan" | "inf" | "nan and inf")`` for the non-finite entries of an array, or None."""
    if a.dtype.kind in "biu":          # integers and bools are always finite (bfloat16/float8 are kind "V")
        return None
    fin = np.isfinite(a)
    if fin.all():
        return None
    n = int(a.size - np.count_nonzero(fin))
    has_nan = bool(np.isnan(a).any())
    has_inf = n > int(np.count_nonzero(np.isnan(a)))
    return n, ("nan and inf" if has_nan and has_inf else "nan" if has_nan else "inf")


def _scan(xs):
    """``[(index, count, kind)]`` for the entries of ``xs`` holding non-finite values (tensors,
    arrays and Python floats)."""
    out = []
    for i, x in enumerate(xs):
        a = array_of(x)
        if a is None:
            if isinstance(x, float) and not np.isfinite(x):
                out.append((i, 1, "nan" if x != x else "inf"))
            continue
        b = _bad(a)
        if b is not None:
            out.append((i, b[0], b[1]))
    return out


# ---- tensors on a device (CUDA): the checks stay there, read once per step ----------------------------------------
def _on_device(xs):
    """Whether one of ``xs`` is a tensor on a device (CUDA) whose values must not be read op by op."""
    for x in xs:
        d = getattr(x, "device", None)
        if d is not None and getattr(d, "type", "cpu") not in ("cpu", "meta") and hasattr(x, "isfinite"):
            return True
    return False


def _device_count(x):
    """``("dev", non-finite count, NaN count)`` (device 0-d tensors) for a floating device tensor, else the host
    result ``("host", (count, kind) or None)`` of :func:`_scan` for one value."""
    if _on_device((x,)):
        if not x.is_floating_point():
            return ("host", None)
        return ("dev", (~x.isfinite()).sum(), x.isnan().sum())
    r = _scan([x])
    return ("host", r[0][1:] if r else None)


def _describe(x):
    """:func:`describe`, without reading a device tensor."""
    if _on_device((x,)):
        return f"{tuple(x.shape)} {str(x.dtype).split('.')[-1]}"
    return describe(x)


def _numel(x):
    return x.numel() if _on_device((x,)) else int(getattr(array_of(x), "size", 1))


def _ordinal(i):
    return f"{i}{'th' if 10 <= i % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(i % 10, 'th')}"


class NonFiniteEvent:
    """One place where non-finite values appeared.

    ``phase`` ("forward" or "backward"), ``op`` (forward op name, e.g. ``"Log"``), ``node`` (the
    backward node's name in backward, e.g. ``"SqrtBackward0"``, else the grad_fn name or None),
    ``module_path`` and ``call_index`` (None without a model or outside it), ``frame`` (a
    ``traceback.FrameSummary``: the innermost frame outside hookgrad when the forward op ran),
    ``output_index``, ``count`` and ``kind`` ("nan", "inf", "nan and inf") of the first bad output,
    ``input_shapes`` (forward: the op's inputs; backward: the incoming gradients), ``upstream``
    (True when the inputs / incoming gradients were already non-finite: the values came from
    outside what was checked, e.g. a NaN in the data or a parameter) and ``message``.
    """

    __slots__ = ("phase", "op", "node", "module_path", "call_index", "frame", "output_index", "count", "kind",
                 "input_shapes", "upstream", "message")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def stack_line(self):
        """``"file:line in function: `source`"`` of :attr:`frame`."""
        return format_frame(self.frame)

    def __repr__(self):
        return f"NonFiniteEvent({self.message!r})"

    __str__ = lambda self: self.message


class detect_nonfinite(OpTool):
    """Context manager locating the first op that produces NaN or Inf.

    Args:
        model: optional root Module; events then name the innermost running module's path
            (``"encoder.1.act"``, ``""`` for the root) and its call index (0 for the first call of
            that module inside the context, 1 for the second...).
        check: ``"both"`` (default), ``"forward"`` or ``"backward"``.
        raise_: raise ``RuntimeError`` at the first event (default), or collect the events in
            ``ctx.events`` and go on (ops whose inputs were already non-finite are then not reported
            again: only the ops where the values *appeared*).

    Forward: after every primitive, its outputs are checked; an op whose inputs were finite and whose
    output is not is the culprit. If the first non-finite output's inputs were already non-finite,
    the values came from outside the context's view (data, parameters, a scalar): the event says so
    (``upstream=True``). Backward: the first node whose produced gradients are non-finite while the
    gradients flowing into it were finite (as PyTorch's anomaly mode: "Function 'SqrtBackward0'
    returned nan values in its 0th output"), with the module path, call index and source line its
    forward op had (recorded in ``node.metadata`` at forward time, so run forward and backward inside
    the context).

    Tensors on a device (CUDA) are not read op by op: each op's non-finite and NaN counts are computed on the
    device and read together once per step (when the next step's first op has run, or at the context's exit),
    then judged in the order the ops ran, with the same events and messages. So on the device the error is
    raised at that point, after the step's backward (and optimizer step) ran.
    """

    def __init__(self, model=None, check="both", raise_=True, lib=None):
        if check not in ("both", "forward", "backward"):
            raise ValueError(f"detect_nonfinite(check=...) expects 'both', 'forward' or 'backward', got {check!r}")
        super().__init__(model, lib)
        self.check = check
        self.raise_ = raise_
        self._fwd = check in ("both", "forward")
        self._bwd = check in ("both", "backward")
        self.wants_frames = self._bwd      # on torch: the runner records the frame for the node
        self.events = []
        self._seen = {"forward": False, "backward": False}
        self._nodeless = None          # on torch: (output, event) whose grad_fn is not known yet
        self._queue = []               # device ops to check: (record, counts), read at the step's end (_flush)

    @property
    def first(self):
        """The first event, or None."""
        return self.events[0] if self.events else None

    def _report(self, ev):
        self.events.append(ev)
        if self.raise_:
            raise RuntimeError(ev.message)

    def _where_text(self, path, idx, frame):
        where = "" if path is None else f" in module '{path}' (call {idx})" if path else f" in the root module (call {idx})"
        return where + f" at {format_frame(frame)}"

    # ---- forward ----
    def forward_post(self, name, inputs, output, node):
        if self._bdepth():          # an op inside a backward node: backward_post judges the node
            return
        if self._queue and self._queue[-1][0][0] == "backward":
            self._flush()           # a new step's first op after a backward: the last step is judged now (one read)
        frame = None
        if self._bwd and node is not None:
            frame = user_frame()
            path, idx = self._where()
            node.metadata[WHERE] = (path, idx, frame)
        if not self._fwd:
            return
        outs, ins = flat(output), flat(inputs)
        if _on_device(outs):            # on the device: counted there, judged when the step ends (_flush)
            self._defer(("forward", name, node, self._where(), frame or user_frame(), outs, ins), outs + ins)
            return
        bad = _scan(outs)
        if not bad:
            return
        self._forward_event(name, node, outs, ins, bad, _scan(ins), frame, None)

    def _forward_event(self, name, node, outs, ins, bad, up, frame, where):
        if up and self._seen["forward"]:
            return                  # propagation of values already reported
        self._seen["forward"] = True
        if frame is None:
            frame = user_frame()
        path, idx = self._where() if where is None else where
        i, n, kind = bad[0]
        shapes = [_describe(x) for x in ins]
        total = _numel(outs[i])
        msg = (f"Function '{name}' returned {kind} values in its {_ordinal(i)} output during forward "
               f"({n} of {total} values)" + self._where_text(path, idx, frame) + f"; input shapes {shapes}; ")
        if up:
            j, _, k = up[0]
            msg += (f"its inputs were already non-finite ({k} in input {j}): the values come from outside the "
                    f"checked region (data, a parameter or a scalar argument)")
        else:
            msg += "its inputs were finite"
        ev = NonFiniteEvent(phase="forward", op=name, node=None if node is None else node.name(),
                            module_path=path, call_index=idx, frame=frame, output_index=i, count=n,
                            kind=kind, input_shapes=shapes, upstream=bool(up), message="detect_nonfinite: " + msg)
        if node is None and self.lib.is_torch:
            self._nodeless = (outs[i], ev)
        self._report(ev)

    def forward_node(self, output, node):
        if self._nodeless is not None and self._nodeless[0] is output:
            self._nodeless[1].node = node.name()
            self._nodeless = None

    # ---- backward ----
    def backward_pre(self, node, grad_outputs):
        self._enter_backward()

    def backward_post(self, node, grad_inputs, grad_outputs):
        self._leave_backward()
        if not self._bwd or not grad_inputs:
            return
        if _on_device(grad_inputs):     # on the device: counted there, judged when the step ends (_flush)
            gi, go = list(grad_inputs), list(grad_outputs)
            self._defer(("backward", node, gi, go), gi + go)
            return
        bad = _scan(grad_inputs)
        if not bad:
            return
        self._backward_event(node, grad_inputs, grad_outputs, bad, _scan(grad_outputs))

    def _backward_event(self, node, grad_inputs, grad_outputs, bad, up):
        if up and self._seen["backward"]:
            return
        self._seen["backward"] = True
        w = node.metadata.get(WHERE)
        path, idx, frame = w if w is not None else (None, None, None)
        i, n, kind = bad[0]
        from ..autograd.graph import op_name
        fwd = op_name(node)
        shapes = [_describe(g) for g in grad_outputs]
        msg = (f"Function '{node.name()}' returned {kind} values in its {_ordinal(i)} output "
               f"({n} of {_numel(grad_inputs[i])} values; the gradient for input {i} of {fwd}). "
               f"hookgrad: its forward op {fwd} ran")
        msg += (self._where_text(path, idx, frame) if w is not None
                else " outside detect_nonfinite (no forward record)")
        msg += f"; incoming gradient shapes {shapes}; "
        if up:
            j, _, k = up[0]
            msg += (f"its incoming gradients were already non-finite ({k} in grad_output {j}): they come from "
                    f"outside the checked region (the gradient passed to backward or a hook)")
        else:
            msg += "its incoming gradients were finite"
        self._report(NonFiniteEvent(phase="backward", op=fwd, node=node.name(), module_path=path, call_index=idx,
                                    frame=frame, output_index=i, count=n, kind=kind, input_shapes=shapes,
                                    upstream=bool(up), message="detect_nonfinite: " + msg))

    # ---- the device's queue: one host read per step ----
    def _defer(self, record, values):
        self._queue.append((record, [_device_count(x) if x is not None else ("host", None) for x in values]))

    def _flush(self):
        """Read the queued device counts to the host at once and judge the ops in order, as if run one by one."""
        q, self._queue = self._queue, []
        dev = [t for _, counts in q for c in counts if c[0] == "dev" for t in c[1:]]
        host = []
        if dev:
            buf = dev[0].new_zeros(len(dev), dtype=dev[0].dtype)
            for k, t in enumerate(dev):
                buf[k] = t
            host = buf.cpu().numpy().tolist()           # the step's one host read
        it = iter(host)

        def result(c):
            if c[0] == "host":
                return c[1]
            n, nan = int(next(it)), int(next(it))
            return (n, "nan and inf" if nan and n > nan else "nan" if nan else "inf") if n else None

        for record, counts in q:
            res = [result(c) for c in counts]
            if record[0] == "forward":
                _, name, node, where, frame, outs, ins = record
                bad = [(i,) + r for i, r in enumerate(res[:len(outs)]) if r]
                up = [(j,) + r for j, r in enumerate(res[len(outs):]) if r]
                if bad:
                    self._forward_event(name, node, outs, ins, bad, up, frame, where)
            else:
                _, node, gi, go = record
                bad = [(i,) + r for i, r in enumerate(res[:len(gi)]) if r]
                up = [(j,) + r for j, r in enumerate(res[len(gi):]) if r]
                if bad:
                    self._backward_event(node, gi, go, bad, up)

    def _stop(self):
        super()._stop()
        if self._queue:
            self._flush()           # (the hooks are off: the reading ops are not checked)

    def __exit__(self, *exc):
        if exc[0] is not None:
            self._queue = []        # an error already: nothing more to judge
        return super().__exit__(*exc)
