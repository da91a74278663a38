"""hookgrad.autograd: backward, grad, grad modes, Function, graph hooks (mirrors torch.autograd)."""
from .grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, \
    is_inference_mode_enabled
from . import graph
from .graph import Node
from . import engine as _engine
from . import function
from .function import Function, once_differentiable
from . import functional
from . import anomaly_mode
from .anomaly_mode import detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled
from .gradcheck import gradcheck, gradgradcheck, GradcheckError

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "graph", "Node",
           "Function", "functional", "gradcheck", "gradgradcheck", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "once_differentiable"]


def _tensor_cls():
    from .._tensor import Tensor
    return Tensor


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,)


def _make_grads(outputs, grad_outputs, is_grads_batched=False):
    import numpy as np
    Tensor = _tensor_cls()
    res = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out.requires_grad:
                if out._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs "
                                       f"(hookgrad: output {i} has shape {tuple(out.shape)}; pass a gradient of that shape)")
                if out._data.dtype.kind != "f":
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
                g = Tensor._make(np.ones(out._data.shape, out._data.dtype))
            res.append(g)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if g._data.shape != out._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a "
                               f"shape of {out.shape}.")
        if g.dtype.is_floating_point != out.dtype.is_floating_point:
            raise TypeError(f"For complex Tensors, both grad_output and output are required to have the same dtype. "
                            f"Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and output[{i}] has a dtype of {out.dtype}.")
        res.append(g)
    return res


def _root_edges(outputs):
    edges = []
    for i, t in enumerate(outputs):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append((t.grad_fn, t._output_nr) if t.grad_fn is not None else (t._grad_accumulator(), 0))
    return edges


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Compute the sum of gradients of tensors w.r.t. graph leaves (or ``inputs``), into ``.grad``."""
    Tensor = _tensor_cls()
    tensors = _as_tuple(tensors)
    if grad_tensors is None and grad_variables is not None:
        grad_tensors = grad_variables
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if isinstance(grad_tensors, Tensor):
        grads = (grad_tensors,)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} gradients for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    targets = None
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        targets = []
        for t in inputs:
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            if t.grad_fn is not None:
                t.retain_grad()
                targets.append((t.grad_fn, t._output_nr))
            else:
                targets.append((t._grad_accumulator(), 0))
    grads = _make_grads(tensors, grads)
    edges = _root_edges(tensors)
    _engine.run_backward(edges, grads, retain_graph, create_graph, inputs=targets, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Compute and return the gradients of outputs w.r.t. inputs (nothing is accumulated into .grad)."""
    Tensor = _tensor_cls()
    t_outputs = _as_tuple(outputs)
    single_input = isinstance(inputs, Tensor)
    t_inputs = (inputs,) if single_input else tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if grad_outputs is None:
        g_outs = (None,) * len(t_outputs)
    else:
        g_outs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    if len(g_outs) != len(t_outputs):
        raise RuntimeError(f"grad requires one grad_output per output; got {len(g_outs)} for {len(t_outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    targets = []
    for i, t in enumerate(t_inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, got {type(t).__name__} at position {i}")
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        targets.append((t.grad_fn, t._output_nr) if t.grad_fn is not None else (t._grad_accumulator(), 0))
    # outputs that do not require grad are skipped like PyTorch (error if none does)
    pairs = [(o, g) for o, g in zip(t_outputs, g_outs) if o.requires_grad]
    if not pairs:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    outs = [o for o, _ in pairs]
    grads = _make_grads(outs, [g for _, g in pairs])
    captured = _engine.run_backward(_root_edges(outs), grads, retain_graph, create_graph, inputs=targets,
                                    accumulate=False)
    result = []
    for i, (t, g) in enumerate(zip(t_inputs, captured)):
        if g is None:
            if materialize_grads:
                from .. import zeros_like
                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)
