"""Full backward (pre-)hooks of a module: :class:`BackwardHook` and its identity node.

PyTorch keeps these in ``torch/utils/hooks.py`` (BackwardHook) and ``nn/modules/_functions.py``
(BackwardHookFunction). ``Module.__call__`` captures a module's full backward hooks at call time in a
:class:`BackwardHook` that wraps the module's tensor inputs and outputs in identity nodes
(``BackwardHookFunctionBackward``); the nodes run the hooks during backward.
"""
import warnings

from ... import _array
from ..._tensor import Tensor
from ..._dtype import _NP_TO_DT
from ...autograd import node as _node
from ...autograd.node import Node, check_tuple_result
from ...autograd.grad_mode import _state
from ...autograd.formulas import TENSORS
from ...primitives._inplace import _View
from ...autograd.views import as_custom_view

__all__ = ["BackwardHook", "BackwardHookFunctionBackward"]

_INPLACE_VIEW_ERROR = (
    "Output 0 of BackwardHookFunction is a view and is being modified inplace. This view was created "
    "inside a custom Function (or because an input was returned as-is) and the autograd logic to handle "
    "view+inplace would override the custom backward associated with the custom Function, leading to incorrect "
    "gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.")


def hook(*args):  # noqa: D401 - PyTorch's internal wrapper is called 'hook'; N2 checks report that name
    """Stand-in whose __name__ is what PyTorch reports for errors in a module full hook's result."""


class BackwardHookFunctionBackward(Node, name="BackwardHookFunctionBackward"):
    """Identity on the module's tensor inputs (or outputs); its outputs alias (are views of) its inputs.

    Built directly by :meth:`BackwardHook._apply_on_tensors` (the identity needs no forward). The module
    hook runs where PyTorch runs it, as the node's first post-hook (after any user pre-hook and before
    any user post-hook of this node), but without a per-call closure or handle. In-place ops on its
    outputs are forbidden through ``_forbid_inplace`` (checked by ``primitives._inplace.check_inplace``).
    """
    _bw_hook = None
    _repr_module = "torch.autograd.function"     # a custom Function's node in PyTorch
    _is_output = False
    _all_diff = True          # False when some wrapped tensor does not require grad (no edge)
    _nondiff_slots = True     # a custom Function: non-differentiable outputs keep their grad slot
    _forbid_inplace = _INPLACE_VIEW_ERROR

    def forward(self, *arrays):
        return arrays

    def backward(self, *grads):
        return grads

    def _materialize(self, grads):
        # a custom Function materialises missing grads as zeros before its (identity) backward
        for g in grads:
            if g is None:
                present = [g._data for g in grads if g is not None]
                xp = _array.module_of(*present) if present else _array.default_module()
                return tuple(g if g is not None else Tensor._make(xp.zeros(m[0], m[1].np))
                             for g, m in zip(grads, self._out_meta))
        return tuple(grads)

    def _run_backward(self, grads, space=TENSORS):
        """The module's hooks see Tensors whatever the pass carries."""
        res = self._hooked_identity([space.tensor(g) for g in grads])
        return [space.carry(g) for g in res]

    def _hooked_identity(self, grads):
        bh = self._bw_hook
        if self._is_output:
            # the output hook sees the incoming grads as they are (None stays None)
            out = bh._output_hook(tuple(grads)) if bh is not None else None
            res = tuple(grads) if out is None else check_tuple_result(hook, self._materialize(grads), out)
        else:
            res = self._materialize(grads)
            out = bh._input_hook(res) if bh is not None else None
            if out is not None:
                res = check_tuple_result(hook, res, out)
        if self._all_diff:
            return res
        return tuple(None if e[0] is None else g for e, g in zip(self.next_functions, res))


_new = object.__new__
_INDEX0 = (0,)
_gf_set = Tensor.__dict__["grad_fn"].__set__


class BackwardHook:
    """Runs a module's full backward (pre-)hooks for one call of the module (PyTorch's BackwardHook)."""
    __slots__ = ("module", "user_hooks", "user_pre_hooks", "grad_outputs", "n_outputs", "output_tensors_index",
                 "n_inputs", "input_tensors_index")

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        if indices is _INDEX0 and size == 1:       # one tensor argument/output (most layers)
            return (values[0],)
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    def _apply_on_tensors(self, args, is_output):
        """Wrap the tensors of ``args`` in one identity node (when grad mode is on and one of them
        requires grad); return the new args and the tensor positions (None when nothing was wrapped)."""
        if len(args) == 1:                         # fast path: one tensor (most layers)
            t = args[0]
            if isinstance(t, Tensor):
                if not (t.requires_grad and _state.enabled):
                    return args, None
                node = _new(BackwardHookFunctionBackward)
                node._bw_hook = self
                node._is_output = is_output
                if _node._anomaly.enabled:
                    out = node._record((t,), (t._data,))[0]
                else:   # Node._record for one tensor through an identity, inlined (hot path)
                    d = t._data
                    gf = t.grad_fn
                    node.next_functions = (((t._grad_accumulator(), 0) if gf is None else (gf, t._output_nr)),)
                    node._in_meta = ((d.shape, d.dtype),)
                    node._seq = next(_node._seq)
                    node._out_meta = [(d.shape, _NP_TO_DT[d.dtype])]
                    out = _new(_View)                  # Tensor._make(d, True, node, 0, t._vc), inlined
                    out._data = d
                    out._requires_grad = True
                    _gf_set(out, node)
                    out._output_nr = 0
                as_custom_view(out, t, "custom")
                return ((out,) if type(args) is tuple else type(args)(*(out,))), _INDEX0
        tensors_idx = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                if arg.requires_grad:
                    requires_grad = True
        if not (requires_grad and _state.enabled):
            return args, None
        # BackwardHookFunction.apply(*tensors): the identity needs no forward, only the graph record
        node = _new(BackwardHookFunctionBackward)
        node._bw_hook = self
        node._is_output = is_output
        tensors = [args[i] for i in tensors_idx]
        nd = tuple(j for j, t in enumerate(tensors) if not t.requires_grad)
        if nd:                                     # marked non-differentiable
            node.nondiff_outputs = nd
            node._all_diff = False
        outs = node._record(tensors, tuple(t._data for t in tensors))
        arg_list = list(args)
        creation = "custom" if len(tensors) == 1 else "multi"
        for i, t, out in zip(tensors_idx, tensors, outs):
            # the outputs are views of the inputs (a non-differentiable one: PyTorch's no-grad view of itself)
            as_custom_view(out, t, creation if out._requires_grad else "custom")
            arg_list[i] = out
        if type(args) is tuple:
            return tuple(arg_list), tensors_idx
        return type(args)(*arg_list), tensors_idx

    def setup_input_hook(self, args):
        res, input_idx = self._apply_on_tensors(args, False)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        is_tuple = True
        if not isinstance(args, tuple):
            args = (args,)
            is_tuple = False
        res, output_idx = self._apply_on_tensors(args, True)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        if not is_tuple:
            res = res[0]
        return res

    # ---- run from the identity nodes during backward ----
    def _input_hook(self, grad_input):
        """Full hooks with grads w.r.t. the module inputs; None when nothing was replaced."""
        if self.grad_outputs is None:
            # the gradient reached the module's inputs without passing through its outputs
            return None
        idx = self.input_tensors_index
        res = self._pack_with_none(idx, grad_input, self.n_inputs)
        replaced = False
        for user_hook in self.user_hooks:
            out = user_hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
            replaced = True
        self.grad_outputs = None
        if not replaced:
            return None
        return tuple(res[i] for i in idx)

    def _output_hook(self, grad_output):
        """Pre-hooks (and full hooks when no input was wrapped) with grads w.r.t. the module outputs;
        None when the grads are unchanged."""
        idx = self.output_tensors_index
        self.grad_outputs = self._pack_with_none(idx, grad_output, self.n_outputs)
        replaced = False
        if self.user_pre_hooks:
            expected_len = len(self.grad_outputs)
            for user_pre_hook in self.user_pre_hooks:
                hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
                if hook_grad_outputs is None:
                    continue
                actual_len = len(hook_grad_outputs)
                if actual_len != expected_len:
                    raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                       f"got {actual_len}, but expected {expected_len}")
                self.grad_outputs = hook_grad_outputs
                replaced = True
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            warnings.warn("Full backward hook is firing when gradients are computed with "
                          "respect to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.", stacklevel=5)
            grad_inputs = self._pack_with_none([], [], self.n_inputs)
            for user_hook in self.user_hooks:
                res = user_hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all gradients.")
            self.grad_outputs = None
        if not replaced:
            return None
        return tuple(local_grad_outputs[i] for i in idx)

