"""Optimizer base class: param groups, per-parameter state, state_dict and the six optimizer hooks.

The arithmetic of every algorithm runs on the NumPy arrays (``p._data``) in place, in the same order of
operations as PyTorch's single-tensor (for-loop) implementations; each in-place update bumps the
tensor's version counter exactly as many times as PyTorch does (``_inplace`` helpers below), so a
parameter saved for backward and then stepped raises the usual "modified by an inplace operation" error.
"""
import functools
import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Dict, Iterable, Tuple, Union

import numpy as np

from .. import _cuda_kernels, _jit, _parallel
from .._array import array_module, default_module
from .._errors import broadcast_error, from_numpy, not_implemented_for, NUMPY_ERRORS
from .._tensor import Tensor, _zero_grad
from .. import _dtype as D
from ..autograd.grad_mode import set_grad_enabled, is_grad_enabled, enable_grad
from ..utils.hooks import add_hook, HookDict

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]

_global_optimizer_pre_hooks = HookDict()
_global_optimizer_post_hooks = HookDict()


class _RequiredParameter:
    """Singleton for a required hyper-parameter of an optimizer."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def register_optimizer_step_pre_hook(hook):
    """Register ``hook(optimizer, args, kwargs) -> None | (new_args, new_kwargs)`` for every optimizer;
    global pre-hooks run before the instance's own."""
    return add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """Register ``hook(optimizer, args, kwargs)`` for every optimizer; runs after the instance's own."""
    return add_hook(_global_optimizer_post_hooks, hook)


def _typename(obj):
    if isinstance(obj, Tensor):
        return "torch." + obj.dtype._legacy
    module = type(obj).__module__
    return type(obj).__qualname__ if module in ("builtins", None) else f"{module}.{type(obj).__qualname__}"


def _use_grad_for_differentiable(func):
    """Run ``step`` with grad mode set to ``defaults['differentiable']`` (False: no graph is recorded)."""
    def _use_grad(self, *args, **kwargs):
        prev = is_grad_enabled()
        try:
            set_grad_enabled(self.defaults["differentiable"])
            return func(self, *args, **kwargs)
        finally:
            set_grad_enabled(prev)
    functools.update_wrapper(_use_grad, func)
    return _use_grad


def _check_lr(lr):
    """PyTorch's learning-rate checks (every optimizer but SGD, whose test is ``lr < 0.0``)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_nonneg(**values):
    """PyTorch's ``Invalid <name> value: <v>`` for the first value (in the order given, PyTorch's) that is
    not >= 0 (``rho``: not in [0, 1]); ``eps`` is named "epsilon"."""
    for name, v in values.items():
        if not (0.0 <= v <= 1.0 if name == "rho" else 0.0 <= v):
            raise ValueError(f"Invalid {'epsilon' if name == 'eps' else name} value: {v}")


def _check_adam_args(lr, eps, betas, weight_decay):
    """The Adam family's constructor checks (Adam, Adamax, NAdam, RAdam), in PyTorch's order and words."""
    _check_lr(lr)
    _check_nonneg(eps=eps)
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
    _check_nonneg(weight_decay=weight_decay)


def _get_scalar_dtype():
    return D.float64 if D.get_default_dtype() is D.float64 else D.float32


def _to_float(x):
    return x.item() if isinstance(x, Tensor) else x


def _zeros_like(p, value=0):
    return Tensor._make(array_module(p._data).full(p._data.shape, value, dtype=p._data.dtype))


def _step_tensor():
    return Tensor._make(default_module().zeros((), dtype=_get_scalar_dtype().np))     # made from nothing, as PyTorch's


def _decay(p, g, lr, wd, decoupled=False):
    """PyTorch's weight decay on the gradient array ``g``: decoupled (``p *= 1 - lr * wd``, AdamW) or L2
    (``g + wd * p``); returns the gradient to use."""
    if wd == 0:
        return g
    if decoupled:
        _mul_(p, 1 - lr * wd)
        return g
    return _add_scalar(g, p._data, wd)


def _zero_buffers(*keys):
    """An ``init`` for :meth:`Optimizer._each_grad`: a zero buffer shaped like the parameter per key."""
    def init(p, state):
        for k in keys:
            state[k] = _zeros_like(p)
    return init


# ---- in-place kernels on arrays; each bumps the version once, like the PyTorch in-place op -------------
def _bump(t):
    t._vc[0] += 1


def _low(a, *others):
    """bf16/f16 state: the arrays widened to float32 (PyTorch's kernels compute such updates in float32 and round
    once, _dtype.opmath), else None."""
    if not D.is_reduced(a.dtype):
        return None
    return [x.astype(np.float32) if isinstance(x, np.ndarray) and D.is_reduced(x.dtype) else x for x in (a,) + others]


def _add_(t, other, alpha=1.0):          # t.add_(other, alpha=alpha): t + alpha * other
    a = t._data
    w = _low(a, other)
    if w is not None:
        # alpha is rounded to the tensor's dtype (PyTorch's add kernel takes it as scalar_t)
        a[...] = (w[0] + (w[1] if alpha == 1 else np.float32(a.dtype.type(alpha)) * w[1])).astype(a.dtype)
    else:
        a += other if alpha == 1 else a.dtype.type(alpha) * other
    _bump(t)


def _mul_(t, s):
    a = t._data
    if D.is_reduced(a.dtype):
        a[...] = (a.astype(np.float32) * np.float32(s)).astype(a.dtype)
    else:
        a *= a.dtype.type(s)
    _bump(t)


def _addcmul_(t, t1, t2, value=1.0):     # t + value * t1 * t2
    a = t._data
    w = _low(a, t1, t2)
    if w is not None:
        a[...] = (w[0] + np.float32(value) * w[1] * w[2]).astype(a.dtype)
    else:
        a += (a.dtype.type(value) * t1) * t2 if value != 1 else t1 * t2
    _bump(t)


def _addcdiv_(t, t1, t2, value=1.0):     # t + value * t1 / t2
    a = t._data
    w = _low(a, t1, t2)
    if w is not None:
        a[...] = (w[0] + np.float32(value) * w[1] / w[2]).astype(a.dtype)
    else:
        a += (a.dtype.type(value) * t1) / t2 if value != 1 else t1 / t2
    _bump(t)


_CTYPES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
           "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
           "bool": "bool"}


def _lerp_(t, end, weight):              # PyTorch's two-branch lerp formula
    a = t._data
    if end.dtype != a.dtype:            # PyTorch's lerp_ takes no other dtype (a gradient assigned through .data)
        raise RuntimeError(f"expected dtype {_CTYPES.get(a.dtype.name, a.dtype.name)} for `end` but got dtype "
                           f"{_CTYPES.get(end.dtype.name, end.dtype.name)}")
    if not D.is_floating(a.dtype) and a.dtype.kind != "c":
        raise not_implemented_for("lerp_kernel_scalar", a.dtype)
    w = a.dtype.type(weight)
    if abs(w) < 0.5:
        a += w * (end - a)
    else:
        a[...] = end - (end - a) * (a.dtype.type(1) - w)
    _bump(t)


def _add_scalar(arr, other, alpha):      # out-of-place grad.add(other, alpha=alpha)
    w = _low(arr, other)
    if w is not None:
        return (w[0] + np.float32(arr.dtype.type(alpha)) * w[1]).astype(arr.dtype)
    return arr + arr.dtype.type(alpha) * other


# ---- shapes: checked before a parameter is touched, on every path -------------------------------------
def _fits(a, b, what, pshape, first_is_b=False):
    """PyTorch's RuntimeError for an in-place update of an array of shape ``a`` by one of shape ``b`` (``a op= b``)
    that cannot run: shapes that do not broadcast, or a result larger than ``a``. ``first_is_b``: PyTorch's op
    reads ``b`` first (``grad.add(param)``), so its message names ``b`` as tensor a."""
    try:
        out = np.broadcast_shapes(a, b)
    except ValueError:
        err = broadcast_error(*((b, a) if first_is_b else (a, b)), detail=False)
        return RuntimeError(f"{err} (hookgrad: {what}, for a parameter of shape {list(pshape)})")
    if out != a:
        return RuntimeError(f"output with shape {list(a)} doesn't match the broadcast shape {list(out)} "
                            f"(hookgrad: {what}, for a parameter of shape {list(pshape)})")
    return None


def _check_shapes(p, g, state=None, grad_first=False, grad_shaped=False):
    """Raise PyTorch's RuntimeError where the gradient ``g`` (an array) or a state buffer of ``p`` (a tensor of
    ``state`` with dims: not ``step`` & co.) cannot update ``p`` in place; a gradient that broadcasts to ``p``
    is PyTorch's too, unless ``grad_shaped`` (the step writes into a gradient-shaped tensor). Runs before the
    step touches anything: the compiled kernels index flat arrays and would read or write past a smaller one,
    and a NumPy error must not reach the user."""
    ps = p._data.shape
    if g.shape != ps:
        what = f"its gradient has shape {list(g.shape)}"
        err = (_fits(g.shape, ps, what, ps) or _fits(ps, g.shape, what, ps)) if grad_shaped else \
            _fits(ps, g.shape, what, ps, grad_first)
        if err is not None:
            raise err
    for k, v in (state or {}).items():
        if type(v) is Tensor and v._data.ndim and v._data.shape != ps:
            bs = v._data.shape
            what = f"its state {k!r} has shape {list(bs)}"
            err = _fits(bs, g.shape, what, ps, grad_shaped) or _fits(ps, bs, what, ps)
            if err is not None:
                raise err


def _numpy_errors_as_torch(name, step_fn, *args):
    """``step_fn(*args)`` with an error NumPy raises (a state loaded with a dtype or shape no step can use) turned
    into PyTorch's exception type, naming the optimizer."""
    try:
        return step_fn(*args)
    except NUMPY_ERRORS as e:
        err = from_numpy(f"{name}.step", e)
        if err is None:
            raise
        raise err from None


# ---- fused steps: one compiled pass over a parameter's elements ----------------------------------------
def _fused(k, outs, ins, *scalars, grain=1 << 18):
    """Run the compiled step kernel ``k(*outs, *ins, *scalars)`` of an algorithm (``outs``: the arrays it
    updates in place, the parameter first; ``ins``: arrays it reads; all flat views) over chunks of the
    parameter's elements on the pool. Applies when the compiled path does (float32 NumPy arrays of the
    parameter's shape: a broadcast gradient takes the NumPy path) and every updated array is C-contiguous and
    writeable; returns whether it ran (else the caller's NumPy path runs). The caller bumps the versions as
    PyTorch's in-place ops would. On the CUDA device (CuPy arrays) the step is one fused kernel (_cuda_kernels)."""
    if not _jit.fast(*outs, *ins):
        ck = None if type(outs[0]) is np.ndarray else _cuda_kernels.kernels(outs[0])
        return ck is not None and ck.step(k.__name__, outs, ins, scalars)
    shape = outs[0].shape
    for a in ins + outs:
        if a.shape != shape:        # NOTE: the kernels index by flat position; never past an array's end
            return False
    for a in outs:
        flags = a.flags
        if not (flags.c_contiguous and flags.writeable):
            return False
    flat = [a.reshape(-1) for a in outs] + [np.ascontiguousarray(a).reshape(-1) for a in ins]
    n = flat[0].size
    if n < 2 * grain:               # memory-bound: small parameters are not worth the pool's ~35 us
        k(*flat, *scalars)
    else:
        _parallel.parallel_for(n, lambda lo, hi: k(*[f[lo:hi] for f in flat], *scalars), grain)
    return True


# what an optimizer's ``params`` argument may be (PyTorch's annotation, which packages import)
ParamsT = Union[Iterable[Tensor], Iterable[Dict[str, Any]], Iterable[Tuple[str, Tensor]]]


def _default_to_fused_or_foreach(params, differentiable, use_fused=False):
    """PyTorch's choice of implementation when the user names none: (fused, foreach). Its fused and foreach
    kernels are for accelerators; on the CPU both are False, as PyTorch answers there."""
    return False, False


class Optimizer:
    """Base class for all optimizers (same API as ``torch.optim.Optimizer``).

    >>> import hookgrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2)); w.grad = torch.ones(2)
    >>> opt = torch.optim.SGD([w], lr=0.5); opt.step(); w.data
    tensor([0.5000, 0.5000])
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = HookDict()
        self._optimizer_step_post_hooks = HookDict()
        self._optimizer_state_dict_pre_hooks = HookDict()
        self._optimizer_state_dict_post_hooks = HookDict()
        self._optimizer_load_state_dict_pre_hooks = HookDict()
        self._optimizer_load_state_dict_post_hooks = HookDict()
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, HookDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:     # PyTorch's: Python numbers from old checkpoints become 0-dim tensors
            for p in group["params"]:
                p_state = self.state.get(p)
                for k in ("step", "eta", "mu", "mu_product") if p_state else ():
                    v = p_state.get(k)
                    if v is not None and not isinstance(v, Tensor):
                        p_state[k] = Tensor._make(default_module().asarray(float(v), dtype=_get_scalar_dtype().np))

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # ---- step hooks: a class-level wrapper, installed once per class --------------------------------------
    @staticmethod
    def profile_hook_step(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self = args[0]
            for pre_hook in tuple(chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values())):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
            out = func(*args, **kwargs)
            for post_hook in tuple(chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values())):
                post_hook(self, args, kwargs)
            return out
        return wrapper

    def _patch_step_function(self):
        self._zero_grad_profile_name = f"Optimizer.zero_grad#{self.__class__.__name__}.zero_grad"
        if not getattr(self.__class__.step, "hooked", None):
            self.__class__.step = self.profile_hook_step(self.__class__.step)
            self.__class__.step.hooked = True

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None | (new_args, new_kwargs)``, before ``step``."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)``, after ``step``."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    @staticmethod
    def _register(hooks, hook, prepend):
        return add_hook(hooks, hook, prepend=prepend)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)``, at the start of ``state_dict()``."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict) -> None | new_state_dict``, at the end of ``state_dict()``."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict) -> None | state_dict_to_load`` (a shallow copy is passed)."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)``, at the end of ``load_state_dict()``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- state dict ----------------------------------------------------------------------------------------
    def state_dict(self):
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}`` as in PyTorch.
        State tensors are returned by reference, not copied."""
        for pre_hook in tuple(self._optimizer_state_dict_pre_hooks.values()):
            pre_hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in tuple(self._optimizer_state_dict_post_hooks.values()):
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        if key == "step":
            return value
        if param.is_floating_point() and value._data.dtype != param._data.dtype:
            return Tensor._make(value._data.astype(param._data.dtype))
        return value

    def load_state_dict(self, state_dict):
        """Load a dict produced by :meth:`state_dict` (state tensors are cast to each parameter's dtype)."""
        state_dict = state_dict.copy()
        for pre_hook in tuple(self._optimizer_load_state_dict_pre_hooks.values()):
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple, set)):
                return type(value)(_cast(param, v, param_id=param_id, param_groups=param_groups) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in tuple(self._optimizer_load_state_dict_post_hooks.values()):
            post_hook(self)

    # ---- grads and groups ----------------------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized tensors (to None by default)."""
        if not hasattr(self, "_zero_grad_profile_name"):
            self._patch_step_function()
        for group in self.param_groups:
            for p in group["params"]:
                _zero_grad(p, set_to_none)

    def step(self, closure=None):
        raise NotImplementedError

    def add_param_group(self, param_group):
        """Add a param group (a dict with ``'params'`` and optional per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    @staticmethod
    def _check_not_differentiable(differentiable):
        if differentiable:
            raise NotImplementedError("hookgrad optimizers do not support differentiable=True")

    def _each_grad(self, group, init=None):
        """PyTorch's per-parameter preamble of the stateful for-loop algorithms: ``(p, g, state)`` for each
        parameter of ``group`` that has a gradient. A parameter's first step makes ``state["step"]`` (a
        0-dim tensor) and then calls ``init(p, state)`` (its buffers, in PyTorch's state order); ``g`` is the
        gradient's array, negated under ``maximize``; ``state["step"]`` is incremented (its version bumped)
        before the pair is yielded."""
        all_state, maximize = self.state, group["maximize"]
        for p in group["params"]:
            grad = p._grad
            if grad is None:
                continue
            if type(grad._data) is not np.ndarray and getattr(grad._data, "_layout", None) is not None:
                raise RuntimeError(_sparse_grad_error(self))
            state = all_state[p]
            if len(state) == 0:
                state["step"] = _step_tensor()
                if init is not None:
                    init(p, state)
            step_t = state["step"]
            step_t._data += 1
            _bump(step_t)
            _check_shapes(p, grad._data, state, self._grad_first(group), self._GRAD_FIRST)
            yield p, (-grad._data if maximize else grad._data), state

    _GRAD_FIRST = False         # whether PyTorch's step starts from the gradient and keeps its shape (Rprop)

    def _grad_first(self, group):
        """Whether PyTorch's first op on a gradient names it first: L2 weight decay's ``grad.add(param)``."""
        return self._GRAD_FIRST or (group.get("weight_decay", 0) != 0 and not group.get("decoupled_weight_decay"))

    @staticmethod
    def _run_closure(closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()


def _sparse_grad_error(opt):
    """PyTorch's error of the algorithms that take no sparse gradient (Adam's names SparseAdam)."""
    if any(c.__name__ == "Adam" for c in type(opt).__mro__):
        return "Adam does not support sparse gradients, please consider SparseAdam instead"
    return f"{type(opt).__name__} does not support sparse gradients"


class _GroupLoop(Optimizer):
    """Base of the algorithms written as PyTorch's single-tensor for-loop: ``step`` runs the closure, then
    ``_step_group(group)`` for each param group (with grad mode set as ``differentiable`` asks)."""

    def __init__(self, params, defaults):
        self._check_not_differentiable(defaults["differentiable"])
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; returns ``closure()``'s loss if a closure is given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            _numpy_errors_as_torch(type(self).__name__, self._step_group, group)
        return loss

    def _step_group(self, group):
        raise NotImplementedError
