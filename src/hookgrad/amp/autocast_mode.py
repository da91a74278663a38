"""torch.amp.autocast: mixed precision by op (PyTorch's autocast_mode.py and the CPU policy tables of
ATen's autocast_mode.cpp).

Inside ``with torch.autocast("cpu", dtype=torch.bfloat16):`` the ops of PyTorch's CPU lower-precision list
(mm, addmm, bmm, convolution, ...) run in the autocast dtype, those of its fp32 list (losses, pooling in 3-D,
linear algebra, FFTs) run in float32, and the promote ops (cat, stack, index_copy) run in their widest input
type. The cast happens at one place, an op's entry (``autograd.op_hooks._apply_with_op_hooks``, which every
primitive reaches while the autocast entry is registered among the op hooks), so it costs nothing while
autocast is off. A cast is a differentiable ``_to_copy`` (``ToCopyBackward0``): gradients flow back in the
input's dtype. The cast of a leaf that requires grad (a parameter) is cached until the outermost autocast
region exits, as in PyTorch.

NOTE: PyTorch casts at its composite ops too (``linear``, ``matmul``, ``cross_entropy_loss``, ``l1_loss``);
hookgrad casts at the primitives they are made of, which gives the same dtypes; a composite whose
first primitive is outside the lists (cross_entropy's log_softmax) runs that primitive in its input dtype.
"""
import collections
import functools
import threading
import warnings

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd import op_hooks as _G

__all__ = ["autocast_decorator", "autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

# PyTorch's device types (torch.device's parser), and those with an autocast backend
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_AUTOCAST_DEVICES = ("cpu", "cuda", "ipu", "xpu", "xla", "hpu", "mps", "mtia", "maia", "privateuseone")

# ATen's AutocastCPU tables (aten names; hookgrad's primitives are named after their aten op)
LOWER_PRECISION_FP = frozenset("""conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm _addmm_activation addbmm
    linear _convolution convolution matmul conv_tbc mkldnn_rnn_layer conv_transpose1d conv_transpose2d
    conv_transpose3d prelu _prelu_kernel scaled_dot_product_attention _scaled_dot_product_flash_attention_for_cpu
    _native_multi_head_attention""".split())
FP32 = frozenset("""avg_pool3d binary_cross_entropy grid_sampler grid_sampler_2d _grid_sampler_2d_cpu_fallback
    grid_sampler_3d polar prod quantile nanquantile stft cdist trace view_as_complex cholesky cholesky_inverse
    cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d max_pool3d_with_indices max_unpool2d
    max_unpool3d adaptive_avg_pool3d reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d
    replication_pad3d mse_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss
    smooth_l1_loss cross_entropy_loss l1_loss huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss
    multi_margin_loss ctc_loss _ctc_loss kl_div multilabel_margin_loss binary_cross_entropy_with_logits fft_fft
    fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn
    fft_hfft fft_ihfft _fft_r2c _fft_c2r _fft_c2c linalg_cond linalg_matrix_rank linalg_solve linalg_solve_ex
    linalg_cholesky linalg_svdvals linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product
    linalg_tensorinv linalg_tensorsolve fake_quantize_per_tensor_affine geqrf _lu_with_info qr svd
    triangular_solve fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d
    multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex linalg_svd linalg_eig linalg_eigh linalg_lstsq
    linalg_inv_ex""".split())
PROMOTE = frozenset(("stack", "cat", "index_copy"))


class _State(threading.local):
    """Per thread, as PyTorch: enabled and dtype per device type, the cache flag, the nesting depth."""

    def __init__(self):
        self.enabled = {}
        self.dtype = {}
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}         # (id(leaf), np dtype) -> (leaf, its cast)


_state = _State()
_DEFAULT_DTYPE = {"cuda": "float16", "mps": "float16", "mtia": "float16", "maia": "float16"}
_lock = threading.Lock()
_active = [0, None]             # threads with CPU autocast on, the op-hook entry held while there are some


def _device(device_type):
    if not isinstance(device_type, str) or device_type.split(":")[0] not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    return device_type.split(":")[0]


def is_autocast_available(device_type):
    """Whether autocast can run on ``device_type`` (hookgrad computes on the CPU only)."""
    return _device(device_type) in _AUTOCAST_DEVICES


def is_autocast_enabled(device_type=None):
    """``torch.is_autocast_enabled(device_type)``; without an argument, CUDA's flag (PyTorch's legacy form)."""
    return _state.enabled.get("cuda" if device_type is None else _device(device_type), False)


class _Entry(_G.OpHook):
    """The autocast entry among the op hooks: it observes nothing; being registered routes every op through
    the input cast."""


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:                 # the legacy set_autocast_enabled(enabled): CUDA
        device_type, enabled = "cuda", device_type
    dev = _device(device_type)
    old = _state.enabled.get(dev, False)
    enabled = bool(enabled)
    _state.enabled[dev] = enabled
    if dev == "cpu" and old != enabled:
        with _lock:
            _active[0] += 1 if enabled else -1
            if _active[0] and _active[1] is None:
                _G._input_cast[0] = _cast_inputs
                _active[1] = _G.register_op_hook(_Entry())
            elif not _active[0] and _active[1] is not None:
                _active[1].remove()
                _active[1] = None
                _G._input_cast[0] = None


def get_autocast_dtype(device_type):
    dev = _device(device_type)
    dt = _state.dtype.get(dev)
    return dt if dt is not None else getattr(D, _DEFAULT_DTYPE.get(dev, "bfloat16"))


def set_autocast_dtype(device_type, dtype):
    _state.dtype[_device(device_type)] = dtype


def is_autocast_cache_enabled():
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled):
    _state.cache_enabled = bool(enabled)


def autocast_increment_nesting():
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting():
    _state.nesting -= 1
    return _state.nesting


def clear_autocast_cache():
    _state.cache.clear()


# the legacy per-device names (PyTorch keeps them, deprecated)
def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    set_autocast_dtype("cuda", dtype)


# ---- the cast at an op's entry

_POLICY = {}            # primitive class -> "lower" | "fp32" | "promote" | None


def _policy(cls):
    name = cls if isinstance(cls, str) else _G.aten_name(cls)
    return ("lower" if name in LOWER_PRECISION_FP else "fp32" if name in FP32 else
            "promote" if name in PROMOTE else None)


def _eligible(t):
    """A floating tensor other than float64 (PyTorch's ``is_eligible``)."""
    return isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not D.float64


def _cached_cast(t, dt):
    if not _eligible(t) or t.dtype is dt:
        return t
    st = _state
    if st.cache_enabled and t.grad_fn is None and t._requires_grad:      # a leaf that requires grad
        key = (id(t), dt)
        hit = st.cache.get(key)
        if hit is not None and hit[0] is t:
            return hit[1]
        out = t.to(dt)
        st.cache[key] = (t, out)
        return out
    return t.to(dt)


def _map(args, fn):
    return tuple(fn(a) if isinstance(a, Tensor) else type(a)(fn(x) for x in a) if isinstance(a, (list, tuple))
                 else a for a in args)


def _result_dtype(dt, widen):
    """The fix for an op's result, converting its floating arrays in place before anything holds them:
    lower-precision ops round to ``dt`` (NumPy and ml_dtypes compute a bfloat16 product in float32, PyTorch
    rounds it to bfloat16); float32 ops widen a lower-precision result (an op whose output dtype was fixed
    before the cast, as prod's) to float32.
    NOTE: a node that saved its output keeps the array it computed (the fix replaces the result's array only);
    the lower-precision ops save no output, and a float32 op's ``dt`` is set before it runs."""
    npdt = dt.np

    def fix(out):
        for t in (out if type(out) is tuple else (out,)):
            if isinstance(t, Tensor) and t._data.dtype != npdt and t.dtype.is_floating_point and (
                    not widen or t._data.dtype.itemsize < 4):
                t._data = t._data.astype(npdt)
        return out
    return fix


def _cast_inputs(cls, args, params):
    """The input cast of autocast's CPU policy for primitive ``cls`` (or a composite's aten name), installed in
    op_hooks while CPU autocast is on in some thread: (the cast args, the fix of the result or None). A float32
    op's ``dt`` parameter (the output dtype its public function chose) becomes float32."""
    if not _state.enabled.get("cpu"):
        return args, None
    pol = _POLICY.get(cls, False)
    if pol is False:
        pol = _POLICY[cls] = _policy(cls)
    if pol is None:
        return args, None
    if pol == "lower":
        dt = get_autocast_dtype("cpu")
        return _map(args, lambda t: _cached_cast(t, dt)), _result_dtype(dt, False)
    if pol == "fp32":
        dt = D.float32
        odt = params.get("dt") if params else None
        if odt is not None and getattr(odt, "kind", "") in "fV" and getattr(odt, "itemsize", 8) < 4:
            params["dt"] = D.float32.np
        return _map(args, lambda t: _cached_cast(t, dt)), _result_dtype(dt, True)
    else:
        dts = {x.dtype for a in args for x in (a if isinstance(a, (list, tuple)) else (a,)) if _eligible(x)}
        if len(dts) < 2:
            return args, None
        dt = functools.reduce(D.promote_types, dts)
    return _map(args, lambda t: _cached_cast(t, dt)), None


# ---- the context manager

def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    decorate_autocast.__script_unsupported = "@autocast() decorator is not supported in script mode"
    return decorate_autocast


class autocast:
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context manager
    and decorator that runs the ops of PyTorch's autocast lists in mixed precision (see the module
    docstring). On "cpu" the dtype may be bfloat16 (the default) or float16.

    >>> with hookgrad.autocast("cpu"):
    ...     y = hookgrad.mm(hookgrad.ones(2, 2), hookgrad.ones(2, 2))
    >>> y.dtype
    torch.bfloat16
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{self.device}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        name = self.device.upper()
        if enabled:
            if self.device == "cuda":
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in (D.bfloat16, D.float16):
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                              stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            f"Did you mean to use autocast as a context manager? For example:\n"
                            f"    with torch.autocast(device_type=...):\n"
                            f"        output = model(input)")
        return autocast_decorator(self, func)


class _UnmanagedAutocast(autocast):
    pass


def _enter_autocast(*vals):
    mode = _UnmanagedAutocast(*vals)
    mode.__enter__()
    return mode


def _exit_autocast(mode):
    mode.__exit__(None, None, None)


def _cast(value, device_type, dtype):
    """Cast the eligible floating tensors in ``value`` (nested containers too) to ``dtype``."""
    if isinstance(value, Tensor):
        return value.to(dtype) if value.is_floating_point() and value.dtype is not D.float64 else value
    if isinstance(value, (str, bytes)) or type(value).__module__ == "numpy":
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        it = (_cast(v, device_type, dtype) for v in value)
        return type(value)(it) if isinstance(value, (list, tuple)) else it
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom Function's ``forward``: with ``cast_inputs``, inside an autocast region its
    floating inputs are cast to that dtype and it runs with autocast off."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        on = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if on:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom Function's ``backward``: it runs with the autocast state of its forward."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
