"""autograd's entry points: ``backward()`` and ``grad()`` (every argument checked before anything runs, then one
call of the engine), ``Tensor.backward`` (installed on Tensor here: _tensor sits below autograd and does not import
it) and the legacy ``Variable``. hookgrad.autograd re-exports them."""
import threading
import warnings

from . import engine as _engine
from .._array import array_module
from .._warnings import warn_once
from .._tensor import Tensor as _Tensor
from ..primitives import _dispatch
from .graph import GradientEdge
from .op_hooks import unseen as _op_hooks_unseen


_CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
    "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid "
    "this. If you have to use this function, make sure to reset the .grad fields of your parameters to None after "
    "use to break the cycle and avoid the leak.")


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _tensor_cls())


class Variable(metaclass=_VariableMeta):
    """torch.autograd.Variable: ``Variable(t, requires_grad=...)`` is a new leaf sharing ``t``'s data;
    ``isinstance(x, Variable)`` holds for every Tensor; ``_execution_engine.queue_callback``."""
    _execution_engine = _engine._ExecutionEngine()

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        Tensor = _tensor_cls()
        if data is None:
            from .._creation import tensor
            data = tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out


def _tensor_cls():
    return _Tensor


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,)


def _grads_tuple(grads, n):
    """PyTorch's _tensor_or_tensors_to_tuple: None -> n Nones, a Tensor -> (t,), else tuple(...)."""
    if grads is None:
        return (None,) * n
    if isinstance(grads, _tensor_cls()):
        return (grads,)
    return tuple(grads)


def _edge_meta(edge):
    """(shape, dtype) of the gradient flowing into a GradientEdge's node slot."""
    if edge._meta is not None:
        return edge._meta
    m = edge.node._out_meta
    if m is not None:
        return tuple(m[edge.output_nr][0]), m[edge.output_nr][1]
    raise RuntimeError(f"hookgrad: the shape of the gradient for {edge} is unknown (make the edge with "
                       "torch.autograd.graph.get_gradient_edge, or pass grad_outputs)")


def _make_edge_grad(i, edge, g):
    from .._creation import ones
    if g is None:
        shape, dtype = _edge_meta(edge)
        if not all(d == 1 for d in shape):
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if not dtype.is_floating_point:
            raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {dtype}")
        return ones(shape, dtype=dtype)
    if not isinstance(g, _tensor_cls()):
        raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    if edge._meta is not None or edge.node._out_meta is not None:
        shape, dtype = _edge_meta(edge)
        if tuple(g.shape) != shape:
            from .._tensor import Size
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a "
                               f"shape of {Size(shape)}.")
        _check_complex(i, g.dtype, dtype)
        if g.dtype != dtype:
            g = g.to(dtype)
    return g


def _check_complex(i, gdtype, odtype):
    if gdtype.is_complex != odtype.is_complex:
        raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same dtype. "
                           f"Mismatch in dtype: grad_output[{i}] has a dtype of {gdtype} and output[{i}] has a dtype of "
                           f"{odtype}.")


def _make_grads(outputs, grad_outputs, is_grads_batched=False):
    """The seed gradient of each output (PyTorch's _make_grads, then the engine's count and dtype checks):
    implicit ones for scalar outputs, shape checks, and casts to the output's dtype. An output may be a
    GradientEdge (the gradient flowing into that node slot)."""
    Tensor = _tensor_cls()
    res = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if isinstance(out, GradientEdge):
            res.append(_make_edge_grad(i, out, g))
            continue
        if not isinstance(out, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")
        if g is None:
            if out.requires_grad:
                if out._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs "
                                       f"(hookgrad: output {i} has shape {tuple(out.shape)}; pass a gradient of that shape)")
                if out._data.dtype.kind not in "fV":      # V: bfloat16
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
                if _engine._op_hooks:     # dispatch modes and the profiler see PyTorch's seed, aten::ones_like
                    from .._creation import ones_like
                    from .._layout import preserve_format
                    g = ones_like(out, memory_format=preserve_format)
                else:
                    g = Tensor._make(array_module(out._data).ones(out._data.shape, out._data.dtype))
            res.append(g)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        shape = g._data.shape[1:] if is_grads_batched else g._data.shape
        if shape != out._data.shape or (is_grads_batched and g._data.ndim == 0):
            if is_grads_batched:
                first = g[0].shape if g._data.ndim else g.shape
                raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                                   "the batch dimension. The sizes of the remaining dimensions are expected to match the "
                                   "shape of corresponding output, but a mismatch was detected: "
                                   f"grad_output[{i}] has a shape of {first} and output[{i}] has a shape of {out.shape}. "
                                   "If you only want some tensors in `grad_output` to be considered batched, consider using vmap.")
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a "
                               f"shape of {out.shape}.")
        if g._data.dtype != out._data.dtype:
            _check_complex(i, g.dtype, out.dtype)      # the engine casts a seed to its output's dtype
            g = g.to(out.dtype)
        res.append(g)
    if len(res) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(res)} gradients")
    return res


def _root_edges(outputs):
    edges = []
    for i, t in enumerate(outputs):
        if isinstance(t, GradientEdge):
            edges.append((t.node, t.output_nr))
            continue
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append((t.grad_fn, t._output_nr) if t.grad_fn is not None else (t._grad_accumulator(), 0))
    return edges


def _input_edges(inputs, accumulate):
    """Where the gradient of each of ``inputs`` is captured (PyTorch's checks, in its order)."""
    Tensor = _tensor_cls()
    targets = []
    for t in inputs:
        if isinstance(t, GradientEdge):
            targets.append((t.node, t.output_nr))
            continue
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")
        if accumulate:
            t.retain_grad()
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        targets.append((t.grad_fn, t._output_nr) if t.grad_fn is not None else (t._grad_accumulator(), 0))
    return targets


def _subclass_overloads(tensors):
    """The tensors among ``tensors`` whose class (a Tensor subclass) overrides ``__torch_function__``, one per class,
    a subclass before its parent (PyTorch's order for autograd.backward / autograd.grad)."""
    found = []
    if _tf_tls.active:      # inside a subclass's __torch_function__ for these: the call runs as it is
        return found
    for t in tensors:
        c = type(t)
        if c is _Tensor:
            continue
        f = getattr(c, "__torch_function__", None)      # (torch._C._disabled_torch_function_impl: opted out)
        if f is None or type(f).__name__ == "_DisabledTorchFunctionImpl" or any(type(o) is c for o in found):
            continue
        k = next((i for i, o in enumerate(found) if issubclass(c, type(o))), len(found))
        found.insert(k, t)
    return found


class _TorchFunctionTLS(threading.local):
    active = False


_tf_tls = _TorchFunctionTLS()


def _call_overloads(found, public, args, kwargs):
    types = tuple(type(t) for t in found)
    for t in found:
        _tf_tls.active = True       # (PyTorch's DisableTorchFunctionSubclass while the subclass calls ``public``)
        try:
            out = type(t).__torch_function__(public, types, args, kwargs)
        finally:
            _tf_tls.active = False
        if out is not NotImplemented:
            return out
    raise TypeError(f"no implementation found for 'torch.autograd.{public.__name__}' on types that implement "
                    f"__torch_function__: {list(types)}")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Compute the sum of gradients of tensors w.r.t. graph leaves (or ``inputs``), into ``.grad``.
    Every argument is checked before anything runs."""
    Tensor = _tensor_cls()
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to `backward()`. "
                               "Please only use `grad_tensors`.")
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, (Tensor, GradientEdge)) else tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = (tensors,) if isinstance(tensors, (Tensor, GradientEdge)) else tuple(tensors)
    overloaded = _subclass_overloads(tensors + (inputs or ()))
    if overloaded:      # a Tensor subclass's __torch_function__ answers, as PyTorch
        return _call_overloads(overloaded, backward, (tensors,), dict(
            grad_tensors=grad_tensors, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs))
    grads = _make_grads(tensors, _grads_tuple(grad_tensors, len(tensors)))
    if retain_graph is None:
        retain_graph = create_graph
    edges = _root_edges(tensors)
    targets = None if inputs is None else _input_edges(inputs, True)
    if create_graph:
        warn_once(_CREATE_GRAPH_WARNING)
    _engine.run_backward(edges, grads, retain_graph, create_graph, inputs=targets, accumulate=True)


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


# Tensor's autograd entry point, installed here (_tensor sits below autograd and does not import it)
_tensor_backward.__name__ = "backward"
_tensor_backward.__qualname__ = "Tensor.backward"
_tensor_backward.__module__ = _Tensor.__module__
_Tensor.backward = _tensor_backward


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Compute and return the gradients of outputs w.r.t. inputs (nothing is accumulated into .grad).
    Every argument is checked before anything runs, so a rejected call leaves the graph usable."""
    Tensor = _tensor_cls()
    if _dispatch.torch_function_objects:    # vmap's BatchedTensors (hookgrad.func) among the arguments
        out = _dispatch.torch_function(grad, (outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs,
                                              allow_unused, is_grads_batched, materialize_grads), {})
        if out is not NotImplemented:
            return out
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    t_outputs = (outputs,) if isinstance(outputs, (Tensor, GradientEdge)) else tuple(outputs)
    t_inputs = (inputs,) if isinstance(inputs, (Tensor, GradientEdge)) else tuple(inputs)
    overloaded = _subclass_overloads(t_outputs + t_inputs)
    if overloaded:      # a Tensor subclass's __torch_function__ answers, as PyTorch
        res = _call_overloads(overloaded, grad, (t_outputs, t_inputs), dict(
            grad_outputs=grad_outputs, retain_graph=retain_graph, create_graph=create_graph, only_inputs=only_inputs,
            allow_unused=allow_unused, is_grads_batched=is_grads_batched, materialize_grads=materialize_grads))
        return dict(zip(inputs.keys(), res)) if type(inputs) is dict else res
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=2)
    grads = _make_grads(t_outputs, _grads_tuple(grad_outputs, len(t_outputs)), is_grads_batched)
    if retain_graph is None:
        retain_graph = create_graph
    edges = _root_edges(t_outputs)
    if not t_inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    targets = _input_edges(t_inputs, False)
    if is_grads_batched:
        captured = _batched(edges, grads, retain_graph, create_graph, targets, t_inputs)
    else:
        captured = _engine.run_backward(edges, grads, retain_graph, create_graph, inputs=targets, accumulate=False)
    result = []
    for i, (t, g) in enumerate(zip(t_inputs, captured)):
        if g is None:
            if materialize_grads and isinstance(t, GradientEdge):
                raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
            if materialize_grads:
                from .._creation import zeros_like
                g = zeros_like(t, requires_grad=create_graph)   # (PyTorch: a graph leaf under create_graph)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            g = g.detach() if not _engine._op_hooks else _op_hooks_unseen(g.detach)    # (no op of PyTorch's)
        result.append(g)
    return tuple(result)


def _batched(edges, grads, retain_graph, create_graph, targets, inputs):
    """is_grads_batched: one backward per row of the grad_outputs, stacked (PyTorch vmaps one backward)."""
    from .._creation import zeros_like
    from ..primitives.join import stack
    n = next((g.shape[0] for g in grads if g is not None), 1)
    rows = []
    for b in range(n):
        seeds = [None if g is None else g[b] for g in grads]
        keep = retain_graph or b < n - 1
        rows.append(_engine.run_backward(edges, seeds, keep, create_graph, inputs=targets, accumulate=False))
    out = []
    for i, t in enumerate(inputs):
        col = [r[i] for r in rows]
        out.append(None if all(c is None for c in col) else
                   stack([zeros_like(t) if c is None else c for c in col]))
    return out
