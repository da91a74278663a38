"""hookgrad.nn.functional: the functional forms of every layer, activation and loss (as torch.nn.functional)."""
import math
import numbers
import warnings

import numpy as np

from .. import _array
from .._tensor import Tensor
from .. import _creation as C
from .._dtype import has_float_kernels as _float_kernels
from ..primitives import elementwise as E, join as J, nn as N
from ..primitives.attention import SdpaFlash as _SdpaFlash
from .attention import _enabled as _sdpa_enabled, SDPBackend as _SDPBackend
from ..primitives.index import Where
from ..primitives import sampling as S
from ..primitives.linalg import addmm, matmul, mm as _mm
from ..primitives.shape import t as _t
from .._errors import float_kernel, no_bf16_kernel, not_implemented_for, scalar_name
from ..autograd.grad_mode import no_grad
from ..autograd.op_hooks import _input_cast, cast_composite as _cast_composite, _op_hooks, composite_open, run_composite
from .._dtype import is_floating as _is_floating, is_reduced as _is_reduced

_int = (int, np.integer)


def _T(a):
    return Tensor._make(a)


def _tup(v, n, name="kernel_size"):
    if isinstance(v, _int):
        return (int(v),) * n
    v = tuple(int(x) for x in v)
    if len(v) == 1 and n > 1:
        v = v * n
    if len(v) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {name}={list(v)}")
    return v


# ------------------------------------------------------------- conv / pool geometry arguments
# One parser for stride/padding/dilation/kernel_size/output_padding/output_size of every conv, pool,
# unfold and fold: PyTorch's TypeError for a non-int, then its length and value errors, which differ
# by family (each family's texts below are PyTorch's own).
def _geo_ints(v, fname, arg, pos=None, conv=False, pair=False):
    """v (int or sequence of ints) as a tuple of ints; PyTorch's argument-parser TypeError otherwise.
    conv: conv1d/conv2d's overloaded signature; pair: the caller wraps a scalar in _pair (unfold/fold)."""
    seq = isinstance(v, (tuple, list))
    if conv and (not seq and C._as_int(v, True) is None or seq and any(isinstance(x, bool) or C._as_int(x, False)
                                                                        is None for x in v)):
        raise TypeError(f"{fname}() received an invalid combination of arguments - got (Tensor, Tensor, "
                        f"{arg}={C._tname(v)}), but expected one of:")
    if pair and not seq:
        v = (v, v)
    return C.int_list(v, fname, arg, pos, varargs=False)


def _geo_len(v, n, fname, arg, family):
    """Expand a parsed tuple to n values (an int, or for conv/pool a single value, is repeated)."""
    if len(v) == n:
        return v
    if len(v) == 1 and family in ("conv", "pool"):
        return v * n
    if family == "adaptive":
        return v                    # the caller raises the function's own message
    if family == "conv":
        raise RuntimeError(f"expected {arg} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {arg}={list(v)}")
    if family == "pool":
        what = {"kernel_size": "kernel_size must either be a single int", "stride": "stride must either be omitted, a "
                "single int", "dilation": "dilation must be either a single int"}.get(arg, f"{arg} must either be a "
                                                                                    "single int")
        if fname == "avg_pool3d":
            what = what.replace("must either be", "must be").replace("must be either", "must be")
        raise RuntimeError(f"{fname}: {what}, or a tuple of {('one', 'two', 'three')[n - 1]} ints")
    if family == "max_pool1d":
        kind = {"stride": "be None, an int, list of ints, or tuple of ints", "padding": "be an int, list of ints, or "
                "tuple of ints"}.get(arg, "be an int, list of ints or tuple of ints")
        raise RuntimeError(f"max_pool1d() {arg} must {kind} of size 1 but got size {len(v)}")
    if family == "pool1d":
        raise RuntimeError(f"{fname}() argument '{arg}' should contain one int (got {len(v)})")
    raise RuntimeError(f"It is expected {arg} equals to {n}, but got size {len(v)}")       # unfold / fold


def _ints(v, n, fname, arg, family, pos=None):
    if isinstance(v, _int) and not isinstance(v, bool) and family not in ("unfold",):
        return (int(v),) * n
    return _geo_len(_geo_ints(v, fname, arg, pos, conv=family == "conv" and fname in ("conv1d", "conv2d"),
                              pair=family == "unfold"), n, fname, arg, family)


def _hw(name, v):
    """PyTorch's ``kH: 2 kW: 3`` (``kT: 1 kH: 2 kW: 3`` in 3-d)."""
    return " ".join(f"{name}{c}: {x}" for c, x in zip("THW"[-len(v):] if len(v) > 1 else "HW", v if len(v) > 1 else
                                                       (v[0], v[-1])))


def where(cond, a, b):
    """where() for float tensors/scalars of one dtype (cond: bool Tensor or array)."""
    like = a if isinstance(a, Tensor) else b
    dt = like._data.dtype
    xp = like._xp
    c = cond if isinstance(cond, Tensor) else _T(xp.asarray(cond))
    a = a if isinstance(a, Tensor) else _T(xp.asarray(a, dt))
    b = b if isinstance(b, Tensor) else _T(xp.asarray(b, dt))
    return Where.apply(c, a, b)


def _inplace(input, fn):
    from ..primitives import _via
    return _via(fn)(input)


# ---------------------------------------------------------------------------------- activations
def relu(input, inplace=False):
    return E.relu(input, inplace=inplace)


def relu_(input):
    return E.relu(input, inplace=True)


def relu6(input, inplace=False):
    return E.relu6(input, inplace=inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return E.leaky_relu(input, negative_slope, inplace=inplace)


def elu(input, alpha=1.0, inplace=False):
    return E.elu(input, alpha, inplace=inplace)


def selu(input, inplace=False):
    return E.selu(input, inplace=inplace)


def celu(input, alpha=1.0, inplace=False):
    return E.celu(input, alpha, inplace=inplace)


def elu_(input, alpha=1.0, scale=1.0, input_scale=1.0):
    """In-place ELU (ATen's elu_: ``scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1))``)."""
    if scale == 1 and input_scale == 1:
        return E.elu(input, alpha, inplace=True)
    out = where(input > 0, input * scale, ((input * input_scale).exp() - 1) * (alpha * scale))
    return input.copy_(out)


def celu_(input, alpha=1.0):
    return E.celu(input, alpha, inplace=True)


def selu_(input):
    return E.selu(input, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return E.leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return E.hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    return E.threshold(input, threshold, value, inplace=True)


def gelu(input, approximate="none"):
    return E.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return _inplace(input, E.silu) if inplace else E.silu(input)


def mish(input, inplace=False):
    return _inplace(input, E.mish) if inplace else E.mish(input)


def hardswish(input, inplace=False):
    return _inplace(input, E.hardswish) if inplace else E.hardswish(input)


def hardsigmoid(input, inplace=False):
    return _inplace(input, E.hardsigmoid) if inplace else E.hardsigmoid(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return E.hardtanh(input, min_val, max_val, inplace=inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return E.softplus(input, beta, threshold)


def tanh(input):
    return E.tanh(input)


def sigmoid(input):
    return E.sigmoid(input)


def logsigmoid(input):
    return E.logsigmoid(input)


def softsign(input):
    return E.softsign(input)


def tanhshrink(input):
    return E.tanhshrink(input)


def threshold(input, threshold, value, inplace=False):
    return E.threshold(input, threshold, value, inplace=inplace)


from ..primitives.special import prelu  # noqa: E402  one primitive (PreluKernelBackward0); F.prelu is torch.prelu


def glu(input, dim=-1):
    d = dim % input.dim()
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    return N.Glu.apply(input, dim=d, odim=dim)


def _method_of(input, name):
    """F.softmax & co. call ``input.<name>(...)``: a non-Tensor fails as that attribute lookup fails."""
    if not isinstance(input, Tensor):
        raise AttributeError(f"'{type(input).__name__}' object has no attribute '{name}'")


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    _method_of(input, "softmax")
    return N.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    _method_of(input, "log_softmax")
    return N.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return N.softmax(-input, dim, dtype=dtype)


# ----------------------------------------------------------------------------------- linear
def linear(input, weight, bias=None):
    if not (isinstance(input, Tensor) and isinstance(weight, Tensor) and (bias is None or isinstance(bias, Tensor))):
        _tensor_arg(input, "linear", "input", 1)
        _tensor_arg(weight, "linear", "weight", 2)
        _tensor_arg(bias, "linear", "bias", 3)
    if _op_hooks and composite_open("linear"):      # the profiler's aten::linear range
        return run_composite("linear", linear, (input, weight, bias))
    if _input_cast[0] is not None:      # autocast casts aten::linear's arguments
        input, weight, bias = _cast_composite("linear", (input, weight, bias))
    nd = input._data.ndim
    wt = _t(weight)         # the primitives themselves: internal calls skip the public wrappers
    if nd == 2:
        return addmm(bias, input, wt) if bias is not None else _mm(input, wt)
    # PyTorch's aten::linear: a contiguous input with a bias of one row (1-D, or (1, .., out)) is flattened
    # into one addmm; anything else is matmul (its folding: mm and _unsafe_view) and then an in-place add
    # of the bias. Graph tools (torchviz) and dispatch counters (ptflops' aten backend) see which.
    if bias is not None and nd and input._data.flags.c_contiguous and (
            bias._data.ndim == 1 or (bias._data.ndim and bias._data.size == bias.shape[-1] == weight.shape[0])):
        x2 = input.reshape(math.prod(input.shape[:-1]), input.shape[-1])
        return addmm(bias, x2, wt).view(*input.shape[:-1], weight.shape[0])
    out = matmul(input, wt)
    return out.add_(bias) if bias is not None else out


def bilinear(input1, input2, weight, bias=None):
    o, i1, i2 = weight.shape
    lead = input1.shape[:-1]
    x1, x2 = input1.reshape(-1, i1), input2.reshape(-1, i2)
    t = x1.mm(weight.permute(1, 0, 2).reshape(i1, o * i2)).reshape(-1, o, i2)
    out = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, o)


# ------------------------------------------------------------------------------ convolution
def _conv_checks(input, weight, bias, n, s, p, d, groups, op, transposed):
    """PyTorch's convolution argument checks, in its order (before any shape arithmetic)."""
    if not isinstance(groups, _int) or isinstance(groups, bool):
        raise TypeError(f"argument 'groups' must be int, not {C._tname(groups)}")
    if weight.dim() - 2 != n:         # PyTorch compares the geometry's length with the weight's rank first
        raise RuntimeError(f"expected stride to be a single integer value or a list of {weight.dim() - 2} values to "
                           f"match the convolution dimensions, but got stride={list(s)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(x < 0 for x in p):
        raise RuntimeError("negative padding is not supported")
    if any(x < 0 for x in op):
        raise RuntimeError("negative output_padding is not supported")
    if any(x <= 0 for x in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(x < 0 for x in d):
        raise RuntimeError("dilation should be greater than zero")
    if any(x == 0 for x in d):
        if input.dtype.name == "float32" and input.dim() > 0 and input.shape[0] > 1:    # PyTorch's oneDNN path
            raise RuntimeError("could not create a primitive descriptor for the deconvolution forward propagation "
                               "primitive. Run workload with environment variable ONEDNN_VERBOSE=all to get additional "
                               "diagnostic information." if transposed else "non-positive dilation is not supported")
        if transposed:
            raise RuntimeError("dilation should be greater than zero, but got " + _dhw("dilation", d, ", "))
        raise RuntimeError(f"dilation should be greater than zero, but got {[1] * (2 - n) + list(d)}")
    if weight.shape[0] == 0 and not transposed:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least 1 at dimension 0, but got weight of "
                           f"size {list(weight.shape)} instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got "
                           f"weight of size {[list(weight.shape)]} instead")
    if bias is not None:
        if not isinstance(bias, Tensor):
            raise TypeError(f"conv{n}d() received an invalid combination of arguments - got (Tensor, Tensor, "
                            f"{C._tname(bias)}), but expected one of:")
        nout = weight.shape[1] * groups if transposed else weight.shape[0]
        if bias.dim() != 1 or bias.shape[0] != nout:
            raise RuntimeError(f"Given {'transposed=1, ' if transposed else ''}weight of size {list(weight.shape)}, "
                               f"expected bias to be 1-dimensional with {nout} elements, but got bias of size "
                               f"{list(bias.shape)} instead")
        if bias.dtype is not input.dtype:
            raise RuntimeError(f"Input type ({_sname(input).lower()}) and bias type ({_sname(bias).lower()}) should "
                               "be the same")


def _dhw(name, v, sep=" ", fill=1):
    """PyTorch's per-dim listing ``name_depth: a name_height: b name_width: c`` (1-d as 2-d: height = fill)."""
    v = (fill,) * (2 - len(v)) + tuple(v)
    return sep.join(f"{name}_{dim}: {x}" for dim, x in zip(("depth", "height", "width")[3 - len(v):], v))


def _conv_padding(padding, n, k, d, stride, name="conv2d"):
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * (2 * n)
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        out = []
        for ki, di in zip(k, d):
            tot = di * (ki - 1)
            out += [tot // 2, tot - tot // 2]
        return tuple(out)
    p = _ints(padding, n, name, "padding", "conv")
    return tuple(x for v in p for x in (v, v))


def _conv(name, n, input, weight, bias, stride, padding, dilation, groups):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({C._tname(input)}, "
                        f"{C._tname(weight)}), but expected one of:")
    nd = input.dim()
    if nd not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    if not isinstance(weight, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, {C._tname(weight)}), "
                        "but expected one of:")
    if _op_hooks and composite_open(name):          # the profiler's aten::conv<n>d range
        return run_composite(name, _conv, (name, n, input, weight, bias, stride, padding, dilation, groups),
                             inputs=(input, weight, bias, stride, padding, dilation, groups))
    if _input_cast[0] is not None:      # autocast casts aten::conv<n>d's arguments
        input, weight, bias = _cast_composite(name, (input, weight, bias))
    if nd == n + 1:
        return _conv(name, n, input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    k = tuple(weight.shape[2:])
    s, d = _ints(stride, n, name, "stride", "conv"), _ints(dilation, n, name, "dilation", "conv")
    p = _conv_padding(padding, n, k, d, s, name)
    _conv_checks(input, weight, bias, n, s, p[::2], d, groups, (), False)
    cin = weight.shape[1] * groups
    if input.shape[1] != cin:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {cin} channels, but got {input.shape[1]} channels instead")
    if input.dtype is not weight.dtype:
        if weight._data.dtype.kind != "f" or input._data.dtype.kind != "f":
            raise RuntimeError(f"Input type (torch.{input.dtype._legacy}) and weight type (torch.{weight.dtype._legacy}) "
                               "should be the same or input should be a MKLDNN tensor and weight is a dense tensor")
        raise RuntimeError(f"expected scalar type {_sname(input)} but found {_sname(weight)}")
    padded = [input.shape[2 + i] + p[2 * i] + p[2 * i + 1] for i in range(n)]
    eff = [d[i] * (k[i] - 1) + 1 for i in range(n)]
    if any(a < b for a, b in zip(padded, eff)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, eff))}). Kernel size can't be greater than actual input size")
    args = (input, weight) if bias is None else (input, weight, bias)
    return N.Conv.apply(*args, stride=s, padding=p, dilation=d, groups=groups)


def _sname(t):
    """PyTorch's scalar type name (Float, Long, Bool ...)."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "bfloat16": "BFloat16"}.get(
        t.dtype.name, t.dtype.name)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(name, n, input, weight, bias, stride, padding, output_padding, groups, dilation):
    for arg, v, pos in (("input", input, 1), ("weight", weight, 2)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {C._tname(v)}")
    if _input_cast[0] is not None:      # autocast casts aten::conv_transpose<n>d's arguments
        input, weight, bias = _cast_composite(name, (input, weight, bias))
    nd = input.dim()
    if nd not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    if nd == n + 1:
        return _conv_transpose(name, n, input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                               dilation).squeeze(0)
    s, p = _ints(stride, n, name, "stride", "conv"), _ints(padding, n, name, "padding", "conv")
    op, d = _ints(output_padding, n, name, "output_padding", "conv"), _ints(dilation, n, name, "dilation", "conv")
    _conv_checks(input, weight, bias, n, s, p, d, groups, op, True)
    if input.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(input.shape)} "
                           f"to have {weight.shape[0]} channels, but got {input.shape[1]} channels instead")
    k = tuple(weight.shape[2:])
    for i in range(n):
        if op[i] >= s[i] and op[i] >= d[i]:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"{_dhw('output_padding', op, ' ', 0)} {_dhw('stride', s)} {_dhw('dilation', d)}")
    out = tuple((input.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(n))
    if min(out) <= 0:
        lead = (1,) * (2 - n)           # PyTorch reports 1-d as 2-d with height 1
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, lead + tuple(input.shape[2:])))}). "
                           f"Calculated output size per channel: ({' x '.join(map(str, lead + out))}). "
                           "Output size is too small")
    pp = tuple(x for v in p for x in (v, v))
    args = (input, weight) if bias is None else (input, weight, bias)
    return N.ConvTr.apply(*args, out_hw=out, stride=s, padding=pp, dilation=d, groups=groups, output_padding=op)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def _fold_geo(fname, kernel_size, dilation, padding, stride, pos):
    """im2col/col2im geometry: lengths, then values in PyTorch's order (kernel, dilation, padding, stride)."""
    k = _ints(kernel_size, 2, fname, "kernel_size", "unfold", pos)
    d = _ints(dilation, 2, fname, "dilation", "unfold", pos + 1)
    p = _ints(padding, 2, fname, "padding", "unfold", pos + 2)
    s = _ints(stride, 2, fname, "stride", "unfold", pos + 3)
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {k[0]} kernel_width: {k[1]}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {d[0]} dilation_width: "
                           f"{d[1]}")
    if min(p) < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} pad_width: {p[1]}")
    if min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {s[0]} stride_width: {s[1]}")
    return k, d, p, s


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    if input.dim() != 4:
        if input.dim() == 3:
            return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0)
        if input.dim() < 3:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(input.dim(), 1)}, "
                             f"{max(input.dim(), 1) - 1}], but got 2)")
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    k, d, p, s = _fold_geo("im2col", kernel_size, dilation, padding, stride, 2)
    h, w = input.shape[2:]
    bh, bw = ((h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1, (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1)
    if bh < 1 or bw < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, "
                           f"{d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of sliding blocks as "
                           f"({bh}, {bw}), but its components must be at least one.")
    return N.Im2col.apply(input, kernel=k, stride=s, padding=(p[0], p[0], p[1], p[1]), dilation=d)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    if input.dim() == 2 and 0 not in input.shape:
        return fold(input.unsqueeze(0), output_size, kernel_size, dilation, padding, stride).squeeze(0)
    if input.dim() not in (2, 3) or 0 in input.shape[1:]:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    o = _ints(output_size, 2, "col2im", "output_size", "unfold", 2)
    k, d, p, s = _fold_geo("col2im", kernel_size, dilation, padding, stride, 3)
    oh = (o[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (o[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    n, ck, l = input.shape
    if ck % (k[0] * k[1]) or l != oh * ow:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={ck} and kernel_size={k}." if ck % (k[0] * k[1]) else
                           f"Given output_size={o}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, expected "
                           f"size of input's dimension 2 to match the calculated number of sliding blocks {oh} * {ow} "
                           f"= {oh * ow}, but got input.size(2)={l}.")
    return N.Col2im.apply(input, out_shape=(n, ck // (k[0] * k[1])) + o, kernel=k, oh=oh, ow=ow, stride=s,
                          padding=(p[0], p[0], p[1], p[1]), dilation=d)


# ---------------------------------------------------------------------------------- pooling
def _pool_out(size, k, s, p, d, ceil):
    num = size + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= size + p:
        o -= 1
    return o


def _pool_geo(name, x, kernel_size, stride, padding, dilation, ceil_mode, n=2):
    """The geometry of a max/avg pool over the last n (2 or 3) dims, with PyTorch's checks in its order."""
    fname = f"{name}_pool{n}d"
    pos = (2, 3, 4, 5) if name == "max" else (None,) * 4     # F.max_pool2d passes them on by position
    k = _ints(kernel_size, n, fname, "kernel_size", "pool", pos[0])
    s = _ints(stride, n, fname, "stride", "pool", pos[1]) if stride is not None and stride != [] and stride != () else k
    p = _ints(padding, n, fname, "padding", "pool", pos[2])
    d = _ints(dilation, n, fname, "dilation", "pool", pos[3])
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not {C._tname(x)}")
    if name == "avg" and n == 2 and x.dim() < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(x.dim(), 1)}, "
                         f"{max(x.dim(), 1) - 1}], but got -3)")
    for i in range(n):      # pooling_output_shape, outer dim first: stride, padding, padding vs. kernel
        if s[i] == 0:
            raise RuntimeError("stride should not be zero")
        if p[i] < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p[i]}")
        if p[i] > int(((k[i] - 1) * d[i] + 1) / 2):      # C++ division truncates
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, kernel_size="
                               f"{k[i]} and dilation={d[i]}")
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got {_hw('k', k)}")
    if min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got {_hw('d', s)}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got {_hw('dilation', d)}")
    if n == 3:
        if x.dim() not in (4, 5):
            raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
        if 0 in x.shape[-4:]:       # (PyTorch's text names dimension 0 whichever is empty)
            where = "max_pool3d_with_indices_out_cpu_template" if name == "max" else "avg_pool3d"
            raise RuntimeError(f"{where}(): Expected input's non-batch dimensions to have positive length, but input "
                               f"has a shape of {list(x.shape)} and non-batch dimension 0 has length zero!")
        if name == "avg" and any(x.shape[2 + i - (5 - x.dim())] < k[i] for i in range(3)):
            sz = x.shape[-3:]
            raise RuntimeError(f"input image (T: {sz[0]} H: {sz[1]} W: {sz[2]}) smaller than kernel size "
                               f"({_hw('k', k)})")
    else:
        if x.dim() not in (3, 4) and name == "max":
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
        if x.dim() not in (3, 4) or 0 in x.shape[-3:]:
            raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                               f"got:{list(x.shape)}")
    sz = tuple(x.shape[-n:])
    o = tuple(_pool_out(sz[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n))
    if min(o) < 1:
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[-n - 1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, (x.shape[-n - 1],) + o))}). Output size is too small")
    pads = []
    for i in range(n):
        pads += [p[i], p[i] + max(0, (o[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (sz[i] + 2 * p[i]))]
    return dict(kernel=k, stride=s, dilation=d, pads=tuple(pads), osz=o, in_sz=sz)


def _max_pool(n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    geo = _pool_geo("max", input, kernel_size, stride, padding, dilation, ceil_mode, n)
    out, idx = (N.MaxPool if n == 2 else N.MaxPool3D).apply(input, want_indices=return_indices, **geo)
    return (out, idx) if return_indices else out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


# The 1-D pools and the *_with_indices forms run the private helpers, never another public F function: tools
# (ptflops) patch F.max_pool2d & co. and would count the 1-D call twice, where PyTorch's go straight to the kernel.
def _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    if input.dim() not in (2, 3) or 0 in input.shape[1:]:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, "
                           f"but got:{list(input.shape)}")
    (k,) = _ints(kernel_size, 1, "max_pool1d", "kernel_size", "max_pool1d", 2)
    (s,) = _ints(stride, 1, "max_pool1d", "stride", "max_pool1d", 3) if stride is not None and stride != [] else (k,)
    (p,) = _ints(padding, 1, "max_pool1d", "padding", "max_pool1d", 4)
    (d,) = _ints(dilation, 1, "max_pool1d", "dilation", "max_pool1d", 5)
    for arg, v in (("kernel_size", k), ("stride", s)):
        if v <= 0:
            raise RuntimeError(f"max_pool1d() {arg} must be greater than zero, but got {v}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    if _pool_out(input.shape[-1], k, s, p, d, ceil_mode) < 1:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {_pool_out(input.shape[-1], k, s, p, d, ceil_mode)}")
    r = _max_pool(2, input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    return (r[0].squeeze(-2), r[1].squeeze(-2)) if return_indices else r.squeeze(-2)


def _avg_pool(n, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    geo = _pool_geo("avg", input, kernel_size, stride, padding, 1, ceil_mode, n)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    dk = input._data.dtype
    if not _float_kernels(dk):      # PyTorch's kernel takes int64 too: the mean truncated toward zero
        if dk != np.int64:
            raise not_implemented_for(f"avg_pool{n}d" if n == 2 else "avg_pool3d_out_frame", dk)
        return _avg_pool(n, input.double(), kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override).trunc().long()
    if n == 3:
        no_bf16_kernel(input, "avg_pool3d_out_frame")
    if divisor_override:
        div = input._xp.asarray(divisor_override, dk)
    else:
        div = None
        for i, (o, size) in enumerate(zip(geo["osz"], geo["in_sz"])):
            k, s, p = geo["kernel"][i], geo["stride"][i], geo["pads"][2 * i]
            st = np.arange(o) * s - p
            en = np.minimum(st + k, size + p)
            c = en - st
            if not count_include_pad:
                c = np.minimum(en, size) - np.maximum(st, 0)
            div = c if div is None else np.multiply.outer(div, c)
        div = input._xp.asarray(div.astype(dk))     # host: once
    return (N.AvgPool if n == 2 else N.AvgPool3D).apply(input, div=div, **geo)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    (k,) = _ints(kernel_size, 1, "avg_pool1d", "kernel_size", "pool1d")
    s = (1,) + _ints(stride, 1, "avg_pool1d", "stride", "pool1d") if stride is not None and stride != [] else None
    (p,) = _ints(padding, 1, "avg_pool1d", "padding", "pool1d")
    _dims_1d(input, "avg_pool1d")
    return _avg_pool(2, input.unsqueeze(-2), (1, k), s, (0, p), ceil_mode, count_include_pad, None).squeeze(-2)


def _dims_1d(input, fname):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 'self' "
                           f"(while checking arguments for {fname})")


def _adaptive_sizes(input, output_size, n, kind="avg"):
    """output_size as F.adaptive_{avg,max}_pool{1,2,3}d read it (None = the input's size), PyTorch's errors."""
    fname = f"adaptive_{kind}_pool{n}d"
    if n == 1:
        out = _ints(output_size, 1, fname, "output_size", "pool1d", 2)
        _dims_1d(input, fname)
    else:
        if not isinstance(output_size, _int) or isinstance(output_size, bool):      # F's _list_with_default
            if not hasattr(output_size, "__len__"):
                raise TypeError(f"object of type '{C._tname(output_size)}' has no len()")
            if len(output_size) >= input.dim():
                raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
            output_size = [input.shape[i - len(output_size)] if v is None else v for i, v in enumerate(output_size)]
        out = _ints(output_size, n, fname, "output_size", "adaptive", 2) if not isinstance(output_size, _int) \
            else (int(output_size),) * n
        if len(out) != n:
            raise RuntimeError(f"adaptive_avg_pool{n}d: output_size must be {n}" if kind == "avg" else
                               f"adaptive_max_pool{n}d(): internal error: output_size.size() must be {n}")
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"adaptive_{kind}_pool{n}d(): Expected {n + 1}D or {n + 2}D tensor, but got"
                               f"{':' if kind == 'max' else ''} {list(input.shape)}")
        for i in range(input.dim() - n, input.dim()):
            if input.shape[i] == 0:
                raise RuntimeError(f"adaptive_{kind}_pool{n}d(): Expected input to have non-zero size for non-batch "
                                   f"dimensions, but input has sizes {list(input.shape)} with dimension {i} being empty")
    if min(out) < 0:
        full = (list(input.shape[:-1]) + [1] if n == 1 else list(input.shape[:-n])) + list(out)
        if kind == "avg":
            shown = (1,) + out if n == 1 else out
            body = ", ".join(map(str, shown[:-1])) + ("," if n == 3 else ", ") + str(shown[-1])
            raise RuntimeError(f"adaptive_avg_pool{max(n, 2)}d: elements of output_size must be greater than or equal "
                               f"to 0 but received {{{body}}}")
        neg = next(v for v in out if v < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {full}")
    return out


def _adaptive_avg(n, input, output_size):
    osz = _adaptive_sizes(input, output_size, n)
    float_kernel(input, f"adaptive_avg_pool{n}d" if n == 2 else "adaptive_avg_pool3d_cpu")
    if all(o == 1 for o in osz):
        return input.mean(tuple(range(-n, 0)), keepdim=True)
    return (N.AdaptiveAvgPool if n == 2 else N.AdaptiveAvgPool3D).apply(input, osz=osz)


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(3, input, output_size)


def adaptive_avg_pool1d(input, output_size):
    (o,) = _adaptive_sizes(input, output_size, 1)
    return _adaptive_avg(2, input.unsqueeze(-2), (1, o)).squeeze(-2)


def _adaptive_max(n, input, output_size, return_indices):
    osz = _adaptive_sizes(input, output_size, n, "max")
    float_kernel(input, f"adaptive_max_pool{n}d" if n == 2 else "adaptive_max_pool3d_cpu")
    out, idx = (N.AdaptiveMaxPool if n == 2 else N.AdaptiveMaxPool3D).apply(input, osz=osz)
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max(2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max(3, input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(3, input, output_size, True)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max1d(input, output_size, return_indices)


def _adaptive_max1d(input, output_size, return_indices):
    (o,) = _adaptive_sizes(input, output_size, 1, "max")
    r = _adaptive_max(2, input.unsqueeze(-2), (1, o), return_indices)
    return (r[0].squeeze(-2), r[1].squeeze(-2)) if return_indices else r.squeeze(-2)


def _lp_pool(n, input, norm_type, kernel_size, stride, ceil_mode):
    """PyTorch's power-average pool, composed as it is: avg_pool of x**p, times the window size, to 1/p."""
    k = (kernel_size,) if n == 1 else _ints(kernel_size, n, f"lp_pool{n}d", "kernel_size", "pool")
    maxp, avgp = {1: (max_pool1d, avg_pool1d), 2: (max_pool2d, avg_pool2d), 3: (max_pool3d, avg_pool3d)}[n]
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return maxp(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -maxp(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avgp(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avgp(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * relu(out.abs())).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _fractional(n, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    fname = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fname} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if n == 2 and len(output_ratio) > 2:       # (PyTorch takes len() of a number too: a TypeError)
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * n
        output_size = [int(input.size(i - n) * ratio[i]) for i in range(n)]
    if _random_samples is None:
        nb = 1 if input.dim() == n + 1 else input.size(0)
        _random_samples = C.rand(nb, input.size(-n - 1), n, dtype=input.dtype)
    k = _ints(kernel_size, n, fname, "kernel_size", "pool")
    o = _ints(output_size, n, fname, "output_size", "pool")
    if input.dim() not in (n + 1, n + 2) or input.numel() == 0:
        raise RuntimeError(f"non-empty {n + 1}D or {n + 2}D (batch mode) tensor expected for input, but got: "
                           f"{input.dim()}" if n == 2 else
                           f"fractional_max_pool3d_out(): non-empty 4D or 5D (batch mode) tensor expected for input, "
                           f"but got: {input.dim()}")
    u = _random_samples
    if u.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    float_kernel(input, fname)
    if u.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {u.dim()}")
    nb = 1 if input.dim() == n + 1 else input.size(0)
    if u.size(0) != nb:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if u.size(1) != input.size(-n - 1):
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if u.size(2) != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got {u.size(2)}.")
    for i in range(n):
        if o[i] + k[i] - 1 > input.size(i - n):
            what, where = _DIM_NAMES[n][i], "fractional_max_pool2d()" if n == 2 else "fractional_max_pool3d_out()"
            raise RuntimeError(f"{where}: pool {what} {k[i]} too large relative to input {what} {input.size(i - n)}")
    # PyTorch's kernels read the samples per dim as (W, H) in 2-d and (T, H, W) in 3-d
    samples = u._data[..., ::-1] if n == 2 else u._data
    out, idx = (N.FractionalMaxPool if n == 2 else N.FractionalMaxPool3D).apply(
        input, kernel=k, osz=o, samples=input._xp.ascontiguousarray(samples))
    return (out, idx) if return_indices else out


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(2, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(3, input, kernel_size, output_size, output_ratio, True, _random_samples)


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """PyTorch's output size of max_unpool: the pool's input size, or output_size checked against it."""
    n = len(kernel_size)
    default = [(input.size(d - n) - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        ret = default
    else:
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                             f"length of '{len(output_size)}'")
        for d in range(n):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < output_size[d] < hi:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
        ret = output_size
    for d in range(n):
        if ret[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={ret[d]}")
    return ret


def _max_unpool(n, input, indices, kernel_size, stride, padding, output_size):
    k = _tup(kernel_size, n)
    s = _tup(stride, n) if stride is not None else k
    osz = tuple(int(v) for v in _unpool_output_size(input, k, s, _tup(padding, n), output_size))
    if n == 1:
        return _max_unpool_nd(2, input.unsqueeze(-1), indices.unsqueeze(-1), osz + (1,)).squeeze(-1)
    return _max_unpool_nd(n, input, indices, osz)


def _max_unpool_nd(n, input, indices, osz):
    if indices.dtype.name != "int64":
        raise RuntimeError(f"elements in indices should be type int64 but got: {_sname(indices)}")
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"Input to max_unpooling{n}d should be a {n + 1}d or {n + 2}d Tensor, but got a tensor with "
                           f"{input.dim()} dimensions.")
    if indices.shape != input.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    idx = indices._data
    size = math.prod(osz)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
        bad = idx[(idx < 0) | (idx >= size)].ravel()[0]
        raise RuntimeError(f"Found an invalid max index: {int(bad)} (output volumes are of size "
                           f"{'x'.join(map(str, osz))})")
    return (N.MaxUnpool if n == 2 else N.MaxUnpool3D).apply(input, idx=idx, osz=osz)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


# ---------------------------------------------------------------------------- normalization
def _norm_params(fname, kernel, input, params):
    """PyTorch's checks of a normalisation's input and per-channel/feature tensors: a Tensor input, float
    dtype (kernel: the name in PyTorch's NotImplementedError), and each (name, tensor, numel) of the right size."""
    _tensor_arg(input, fname, "input", 1)
    for name, t, n in params:
        if t is not None and t.numel() != n:
            raise RuntimeError(f"{name} should contain {n} elements not {t.numel()}")
    float_kernel(input, kernel)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    _tensor_arg(input, "batch_norm", "input", 1)
    if input.dim() < 2:          # PyTorch reads the channel count as 0 (or fails to read size(1))
        if running_mean is not None:
            raise RuntimeError(f"running_mean should contain 0 elements not {running_mean.numel()}")
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    x = input._data
    c = x.shape[1]
    _norm_params("batch_norm", "batch_norm", input, (("running_mean", running_mean, c), ("running_var", running_var, c),
                                                     ("weight", weight, c), ("bias", bias, c)))
    axes = (0,) + tuple(range(2, x.ndim))
    pshape = (1, c) + (1,) * (x.ndim - 2)
    if training:
        n = x.size // c if c else 0
        if math.prod((x.shape[0],) + x.shape[2:]) == 1:        # PyTorch's _verify_batch_size
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
        mean, invstd, var = N.norm_stats(x, axes, eps)
        if _is_reduced(x.dtype) and (weight is None or weight._data.dtype == x.dtype):
            # PyTorch's bf16/f16 save_mean and save_invstd, the latter from the variance rounded to that dtype
            mean = mean.astype(x.dtype)
            invstd = (1 / np.sqrt(var.astype(x.dtype).astype(np.float32) + np.float32(eps))).astype(x.dtype)
        if running_mean is not None and x.size:
            m = momentum
            rm, rv = running_mean._data, running_var._data
            rm *= 1 - m
            rm += (m * mean.reshape(c)).astype(rm.dtype)
            rv *= 1 - m
            rv += (m * var.reshape(c) * (n / (n - 1))).astype(rv.dtype)
            running_mean._vc[0] += 1
            running_var._vc[0] += 1
    else:
        sdt = np.float32 if _is_reduced(x.dtype) else x.dtype       # bf16/f16: float32 statistics (opmath)
        mean = running_mean._data.reshape(pshape).astype(sdt)
        invstd = (1.0 / np.sqrt(running_var._data.astype(np.float64) + eps)).astype(sdt).reshape(pshape)
    args = (input, weight, bias)
    return N.Norm.apply(*args, sshape=x.shape, axes=axes, pshape=pshape, mean=mean, invstd=invstd,
                        batch_stats=bool(training), eps=eps, wshape=(c,), running=(running_mean, running_var))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    _tensor_arg(input, "layer_norm", "input", 1)
    ns = C.int_list(normalized_shape, "layer_norm", "normalized_shape", 2, varargs=False) \
        if not isinstance(normalized_shape, _int) or isinstance(normalized_shape, bool) else None
    if ns is None:
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{C._tname(normalized_shape)}")
    x = input._data
    k = len(ns)
    for name, t in (("weight", weight), ("bias", bias)):     # (the compiled kernels index them by position)
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(ns)}")
    if tuple(x.shape[x.ndim - k:]) != ns or x.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(x.shape)}")
    if any(t is not None and t._data.dtype != x.dtype for t in (weight, bias)):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    float_kernel(input, "LayerNormKernelImpl")
    axes = tuple(range(x.ndim - k, x.ndim))
    mean, invstd, _ = N.norm_stats(x, axes, eps)
    args = (input, weight, bias)
    return N.LayerNormNode.apply(*args, sshape=x.shape, axes=axes, pshape=(1,) * (x.ndim - k) + ns, mean=mean,
                                 invstd=invstd, batch_stats=True, eps=eps, wshape=ns)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    _tensor_arg(input, "group_norm", "input", 1)
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    x = input._data
    n, c = x.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(x.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):     # (the compiled kernels index them by position)
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {list(t.shape)} and input of shape {list(x.shape)}")
    float_kernel(input, "GroupNormKernelImpl")
    sshape = (n, num_groups, -1)
    mean, invstd, _ = N.norm_stats(x.reshape(sshape), (2,), eps)
    args = (input, weight, bias)
    return N.GroupNormNode.apply(*args, sshape=(n, num_groups, x.size // (n * num_groups) if n else 0), axes=(2,),
                                 pshape=(1, c) + (1,) * (x.ndim - 2), mean=mean, invstd=invstd, batch_stats=True,
                                 eps=eps, wshape=(c,))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Instance norm as PyTorch computes it: batch norm over a (1, N*C, ...) view, the parameters and running
    statistics repeated N times; the running statistics then take the mean over the batch."""
    _tensor_arg(input, "instance_norm", "input", 1)
    if use_input_stats and input.dim() >= 2 and math.prod(input.shape[2:]) == 1:   # _verify_spatial_size
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    b, c = input.shape[0], (input.shape[1] if input.dim() > 1 else 0)
    rep = (lambda t: None if t is None else t.repeat(b))
    rm, rv = rep(running_mean), rep(running_var)
    out = batch_norm(input.contiguous().view((1, b * c) + tuple(input.shape[2:])), rm, rv, rep(weight), rep(bias),
                     use_input_stats, momentum, eps)
    if use_input_stats:
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.view(b, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.view(b, c).mean(0))
    return out.view(input.shape)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the normalized dims) + eps) (* weight), composed as PyTorch's rms_norm: computed in
    float32 for half inputs; eps None: the epsilon of that computation type."""
    _tensor_arg(input, "rms_norm", "input", 1)
    shape = (int(normalized_shape),) if isinstance(normalized_shape, _int) else tuple(int(v) for v in normalized_shape)
    n = len(shape)
    if input.dim() < n or tuple(input.shape[input.dim() - n:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*"
                           f"{', '.join(str(v) for v in shape)}], but got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(shape)}")
    float_kernel(input, "rms_norm")
    dt = input._data.dtype
    up = input if dt.itemsize >= 4 else input.float()
    if eps is None:
        eps = float(np.finfo(up._data.dtype).eps)
    dims = tuple(range(input.dim() - n, input.dim()))
    out = up * (up.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    if up is not input:
        out = out.type_as(input)
    return out * weight if weight is not None else out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalisation across channels (dim 1), composed as PyTorch's (pad, average, pow)."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps), as PyTorch composes it (a zero vector gets a zero gradient)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    return out.copy_(input / denom)


# ------------------------------------------------------------------------ channel and pixel shuffles
def channel_shuffle(input, groups):
    """Interleave the channels of ``groups`` groups: (N, g*k, ...) viewed (N, g, k, ...), transposed, flattened."""
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    return S.ChannelShuffle.apply(input, groups=int(groups))


native_channel_shuffle = channel_shuffle


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *b, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    return S.PixelShuffle.apply(input, upscale_factor=r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *b, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={h}"
                           f" is not divisible by {r}" if h % r else
                           f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)={w}"
                           f" is not divisible by {r}")
    return S.PixelUnshuffle.apply(input, downscale_factor=r)


# ------------------------------------------------------------------------ dropout, embedding
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input, p, training, inplace, mshape):
    _check_p(p)
    if not training or p == 0:
        return input
    dt = input._data.dtype
    if not _is_floating(dt) and p < 1:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {scalar_name(dt)}")
    # PyTorch's CPU kernel: mask.bernoulli_(1 - p), i.e. one 53-bit uniform per element, kept if < 1 - p
    n = 1
    for d in mshape:
        n *= d
    gen = C.default_generator if type(input._data) is np.ndarray else C._gen(None, input.device)   # cuda: its own
    keep = gen._uniform01(n, np.float64).reshape(mshape) < (1.0 - p)
    mask = input._xp.asarray((keep * (1.0 / (1.0 - p)) if p < 1 else np.zeros(mshape)).astype(dt))   # drawn on the host
    if inplace:
        from ..primitives._inplace import inplace_apply
        return inplace_apply(input, N.Dropout, (), {"mask": mask})
    return N.Dropout.apply(input, mask=mask)


def dropout(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace, input._data.shape)


def dropout1d(input, p=0.5, training=True, inplace=False):
    s = input._data.shape
    return _dropout(input, p, training, inplace, s[:-1] + (1,))


def dropout2d(input, p=0.5, training=True, inplace=False):
    s = input._data.shape
    if len(s) == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.")
    return _dropout(input, p, training, inplace, s[:2] + (1,) * (len(s) - 2))


def dropout3d(input, p=0.5, training=True, inplace=False):
    s = input._data.shape
    return _dropout(input, p, training, inplace, s[:2] + (1,) * (len(s) - 2))


def _alpha_dropout(input, p, training, inplace, feature):
    """PyTorch's _dropout_impl for alpha dropout: noise = bernoulli(1 - p) per element (per channel: dims 0 and 1,
    with ``feature``), drawn as dropout's; out = input * noise * a + (noise - 1) * alpha * a + alpha * a * p."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0.0) if inplace else input * 0.0
    s = input._data.shape
    if feature and len(s) < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    mshape = s[:2] + (1,) * (len(s) - 2) if feature else s
    keep = C.default_generator._uniform01(int(np.prod(mshape)), np.float64).reshape(mshape) < (1.0 - p)
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    dt = input._data.dtype
    noise = _T(input._xp.asarray((keep * a).astype(dt)))                           # drawn on the host
    b = _T(input._xp.asarray(((keep - 1.0) * (alpha * a) + alpha * a * p).astype(dt)))
    return input.mul_(noise).add_(b) if inplace else input * noise + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels: PyTorch's feature_alpha_dropout, with its draws."""
    return _alpha_dropout(input, p, training, inplace, True)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    _tensor_arg(input, "embedding", "indices", 2)
    _tensor_arg(weight, "embedding", "weight", 1)
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    idx = input._data
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
                           f"Int; but got torch.{input.dtype._legacy} instead (while checking arguments for embedding)")
    num = weight.shape[0]
    if idx.size and (idx.min() < -0 or idx.max() >= num):
        raise IndexError("index out of range in self")
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += num
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    if sparse:          # the weight's gradient is a sparse COO tensor (primitives/sparse.py)
        from ..primitives.sparse import embedding as _sparse_embedding
        return _sparse_embedding(weight, input, padding_idx)
    return N.Embedding.apply(weight, input, padding_idx=padding_idx)


def _embedding_renorm(weight, idx, max_norm, norm_type):
    """torch.embedding_renorm_ under no_grad: the rows of ``weight`` that ``idx`` names, scaled in place to a
    ``norm_type``-norm of at most ``max_norm``."""
    w = weight._data
    rows = _array.array_module(w).asarray(np.unique(_array.to_host(idx)))
    nrm = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = nrm > max_norm
    w[rows[big]] *= (max_norm / (nrm[big] + 1e-7))[:, None].astype(w.dtype)
    weight._vc[0] += 1


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution over (time, batch, channels) input with a (kernel width, in, out) weight: conv1d on the
    permuted operands (a composite, so its grad_fn is PermuteBackward0 where PyTorch shows ConvTbcBackward0)."""
    _tensor_arg(input, "conv_tbc", "input", 1)
    _tensor_arg(weight, "conv_tbc", "weight", 2)
    _tensor_arg(bias, "conv_tbc", "bias", 3)
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    t_out = input.shape[0] + 2 * pad - weight.shape[0] + 1
    if t_out < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {t_out}: "
                           f"[{t_out}, {input.shape[1]}, {weight.shape[2]}]")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def one_hot(input, num_classes=-1):
    a = input._data
    if a.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if a.size and a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(a.max()) + 1 if a.size else 0
    elif a.size and a.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = input._xp.zeros(a.shape + (num_classes,), np.int64)
    np.put_along_axis(out, a[..., None].astype(np.int64), 1, -1)
    return _T(out)


# ------------------------------------------------------------------------------- padding
_PAD_MODES = ("reflect", "replicate", "circular")


def pad(input, pad, mode="constant", value=None):
    _tensor_arg(input, "pad", "input", 1)
    pad = C.int_list(pad, "pad", "pad", 2, varargs=False)
    if value is not None and not isinstance(value, (numbers.Number, np.generic)):
        raise TypeError(f"pad(): argument 'value' (position 4) must be float, not {C._tname(value)}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    nd = input.dim()
    if len(pad) // 2 > nd:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {nd}")
    pairs = [(0, 0)] * nd
    for i in range(len(pad) // 2):
        pairs[nd - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if mode == "constant":
        if any(input.shape[d] + a + b < 0 for d, (a, b) in enumerate(pairs)):
            raise RuntimeError("narrow(): length must be non-negative.")
        return N.ConstantPad.apply(input, pads=tuple(pairs), value=0 if value is None else value)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pad) // 2
    if not (k <= 3 and k + 1 <= nd <= k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {nd}D input tensor.\n"
                                  "Supported combinations for non-constant padding:\n"
                                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for j, d in enumerate(range(nd - 1, nd - 1 - k, -1)):      # the last dim first, as PyTorch checks
        a, b = pairs[d]
        n = input.shape[d]
        if mode == "reflect" and (a >= n or b >= n):
            raise RuntimeError(f"Argument #{4 + 2 * j}: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({a}, {b}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (a > n or b > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    dims = range(nd - k, nd)
    outs = [input.shape[d] + pairs[d][0] + pairs[d][1] for d in dims]
    if min(outs) < 1:
        if mode == "circular":
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        names = "DHW"[3 - k:]
        ins = [f"{c}: {input.shape[d]}" for c, d in zip(names, dims)]
        sep = " " if mode == "replicate" and k == 2 else ""
        if all(o < 1 for o in outs):
            raise RuntimeError(f"input ({' '.join(ins[:-1]) + ', ' if k > 1 else ''}{ins[-1]}{sep}) is too small. "
                               f"Calculated output {' '.join(f'{c}: {o}' for c, o in zip(names, outs))}")
        shape = list(input.shape[:nd - k]) + outs
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(outs)}: {shape}")
    return J.index_pad(input, pairs[nd - k:], mode)


# ---------------------------------------------------------------------------- interpolation
# (mode, spatial dims) -> the name in PyTorch's NotImplementedError for an integer input
_INTERP_KERNEL = {("nearest", 2): "upsample_nearest2d_channels_last", ("nearest-exact", 2):
                  "upsample_nearest2d_channels_last", ("bilinear", 2): "upsample_bilinear2d_channels_last",
                  ("linear", 1): "compute_indices_weights_linear", ("trilinear", 3): "compute_indices_weights_linear",
                  ("bicubic", 2): "compute_indices_weights_cubic", ("area", 1): "adaptive_avg_pool2d",
                  ("area", 2): "adaptive_avg_pool2d", ("area", 3): "adaptive_avg_pool3d_cpu"}
_INTERP_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "lanczos": 2, "trilinear": 3}


def _interp_sizes(input, size, scale_factor, recompute_scale_factor, mode):
    """F.interpolate's output size and the scales the kernel uses (None: from the sizes)."""
    n = input.dim() - 2
    in_sz = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != n:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {in_sz} and output size of {size}. Please provide input "
                                 "tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            if not all(isinstance(v, _int) and not isinstance(v, bool) for v in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, "
                                f"int], but got size with types {[type(v) for v in size]}")
            out_sz, scales = [int(v) for v in size], None
        else:
            out_sz, scales = [int(size)] * n, None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != n:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {in_sz} and scale_factor of shape {scale_factor}. "
                                 "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                                 "(s1, s2, ...,sK) format.")
            scales = [float(f) for f in scale_factor]
        else:
            scales = [float(scale_factor)] * n
        # NOTE: the kernel then uses 1 / scale (not in / out) for the source coordinates, unless recomputed
        out_sz = [int(math.floor(i * f)) for i, f in zip(in_sz, scales)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor or mode == "area":
        scales = None
    return out_sz, scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize ``input`` (N, C, *spatial) by ``size`` or ``scale_factor`` in PyTorch's every mode, with its
    kernels' source coordinates (the given scale is used when not recomputed) and grad_fn names."""
    _tensor_arg(input, "interpolate", "input", 1)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    n = input.dim() - 2
    out_sz, scales = _interp_sizes(input, size, scale_factor, recompute_scale_factor, mode)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    known = mode in ("nearest", "nearest-exact", "area") or _INTERP_DIMS.get(mode) == n
    if not 1 <= n <= 3 or mode not in _INTERP_DIMS and mode not in ("nearest", "nearest-exact", "area"):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if not known:
        need = _INTERP_DIMS[mode]
        if mode in ("bicubic", "lanczos"):
            raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                      "for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | "
                                      f"area | nearest-exact (got {mode})")
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need + 2}D input")
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    dk = input._data.dtype
    if not _float_kernels(dk) and not (dk == np.uint8 and mode in ("nearest", "nearest-exact", "bilinear", "bicubic")):
        raise not_implemented_for(_INTERP_KERNEL.get((mode, n), "compute_indices_weights_nearest"), dk)
    if mode == "area":
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[n - 1]
        return pool(input, out_sz)
    in_sz = list(input.shape[2:])
    if min(out_sz) <= 0 or min(in_sz) <= 0:
        names = "DHW"[3 - n:]
        fmt = lambda v: ", ".join(f"{a}: {b}" for a, b in zip(names, v))     # noqa: E731
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({fmt(in_sz)})"
                           f"{' and' if n == 1 else ''} output ({fmt(out_sz)})")
    if input.numel() == 0 and input.shape[0] != 0:
        raise RuntimeError(f"Non-empty {n + 2}D data tensor expected but got a tensor with sizes {list(input.shape)}")
    return S.resample(input, mode, out_sz, scales, align_corners, antialias)


GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
                  "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
                  "details.")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, [D,] H, W) at ``grid`` (N, [D',] H', W', 2 or 3; x first, in [-1, 1])."""
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
                         f"but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return _grid_sampler(input, grid, GRID_SAMPLE_INTERPOLATION_MODES[mode], GRID_SAMPLE_PADDING_MODES[padding_mode],
                        align_corners)


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler: ATen's checks, then the 2-d or 3-d sampler (modes as integers)."""
    _tensor_arg(input, "grid_sampler", "input", 1)
    _tensor_arg(grid, "grid_sampler", "grid", 2)
    if input._data.dtype != grid._data.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(input._data.dtype)} but found "
                           f"{scalar_name(grid._data.dtype)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    n = input.dim() - 2
    if grid.shape[-1] != n:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {n} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")
    if input.dim() not in (4, 5) or input.dim() != grid.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if n == 3 and interpolation_mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    float_kernel(input, "grid_sampler_2d_cpu_kernel_impl" if n == 2 else "grid_sampler3d_cpu")
    mode = {v: k for k, v in GRID_SAMPLE_INTERPOLATION_MODES.items()}[interpolation_mode]
    pad = {v: k for k, v in GRID_SAMPLE_PADDING_MODES.items()}[padding_mode]
    return (S.GridSampler2D if n == 2 else S.GridSampler3D).apply(
        input, grid, mode=mode, padding=pad, align_corners=bool(align_corners), mode_enum=interpolation_mode,
        padding_enum=padding_mode)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, [D,] H, W, 2 or 3) of the affine maps ``theta`` (N, 2, 3) or (N, 3, 4)."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation of "
                      "affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return _affine_grid_generator(theta, size, align_corners)


def _affine_grid_generator(theta, size, align_corners):
    """torch.affine_grid_generator: base grid @ theta^T (AffineGridGeneratorBackward0)."""
    n = len(size) - 2
    if theta.shape[0] != size[0] or tuple(theta.shape[1:]) != (n, n + 1):
        raise RuntimeError(f"Expected theta to have shape [{size[0]}, {n}, {n + 1}], but got {list(theta.shape)}")
    return S.AffineGridGenerator.apply(theta, size=tuple(int(v) for v in size), align_corners=bool(align_corners))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


# ------------------------------------------------------------------------------------ losses
def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _size_warn(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", stacklevel=3)


def _loss_kernel(input, target, kernel):
    """A pointwise loss kernel (mse_cpu, ...) runs at the promoted dtype of input and target, float only."""
    if not _float_kernels(input._data.dtype) and not _float_kernels(target._data.dtype):
        from .. import _dtype as D
        raise not_implemented_for(kernel, D.result_type_of([input, target]))


def _same_float(input, target):
    """The one-node loss path: two tensors of one floating dtype."""
    return isinstance(input, Tensor) and isinstance(target, Tensor) and _float_kernels(input._data.dtype) and \
        input._data.dtype == target._data.dtype


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _size_warn(input, target)
    _loss_kernel(input, target, "mse_cpu")
    red = _reduction(size_average, reduce, reduction)
    if weight is None and red in N._REDUCTIONS and _same_float(input, target):
        return N.MseLoss.apply(input, target, reduction=red)
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _size_warn(input, target)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _size_warn(input, target)
    _loss_kernel(input, target, "smooth_l1_cpu")
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    red = _reduction(size_average, reduce, reduction)
    if beta != 0 and red in N._REDUCTIONS and _same_float(input, target):
        return N.SmoothL1Loss.apply(input, target, reduction=red, beta=beta)
    z = (input - target).abs()
    loss = z if beta == 0 else where(z < beta, (z * z) * (0.5 / beta), z - 0.5 * beta)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _size_warn(input, target)
    _loss_kernel(input, target, "huber_cpu")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is None and reduction in N._REDUCTIONS and _same_float(input, target):
        return N.HuberLoss.apply(input, target, reduction=reduction, delta=delta)
    z = (input - target).abs()
    loss = where(z < delta, (z * z) * 0.5, (z - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _tensor_arg(x, fname, argname, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not {C._tname(x)}")


def _weight_check(weight, c):
    if weight is not None and (weight.dim() != 1 or weight.numel() != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got weight "
                           f"tensor of shape: {list(weight.shape)}")


def _class_target(input, target, weight):
    """PyTorch's checks of a class-index target (nll_loss_nd, then the nll_loss / nll_loss2d kernels), in
    PyTorch's order: rank, batch size, spatial sizes, weight, dtype. The class range is checked in NllLoss."""
    _tensor_arg(input, "nll_loss_nd", "input", 1)
    _tensor_arg(target, "nll_loss_nd", "target", 2)
    nd, td = input.dim(), target.dim()
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd != 1 and input.shape[0] != (target.shape[0] if td else None):
        if not td:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({target.shape[0]}).")
    c = input.shape[1] if nd > 1 else input.shape[0]
    if nd <= 2:
        if td > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if not (nd == 1 and td == 0) and input.shape[0] != (target.shape[0] if td else None):
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)}, target: {list(target.shape)})")
    elif nd == 4:
        if td != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: {td}")
        _weight_check(weight, c)
        if tuple(target.shape[1:]) != tuple(input.shape[2:]):
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: {list(target.shape)}")
    elif tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, got {list(target.shape)}")
    _weight_check(weight, c)
    if target._data.dtype not in (np.int64, np.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_sname(target)}")
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_sname(input)} but found {_sname(weight)}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _class_target(input, target, weight)
    nd = input.dim()
    _no_grad_arg(weight, "nll_loss2d_forward" if nd > 2 else "nll_loss_forward", "weight")
    node, shape = (N.NllLoss2d, target.shape) if nd > 2 else (N.NllLoss, None)
    if nd > 2 and nd != 4:          # PyTorch's nll_loss_nd: K-d inputs are viewed as (N, C, 1, -1)
        input, target = input.reshape(input.shape[0], input.shape[1], 1, -1), target.reshape(target.shape[0], 1, -1)
    args = (input, target) if weight is None else (input, target, weight)
    out = node.apply(*args, ignore_index=ignore_index, reduction=reduction)
    return out.reshape(shape) if reduction == "none" and nd > 2 and nd != 4 else out


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...), PyTorch 2.13's fused loss. hookgrad
    always computes this reference path: ``options`` (chunking) changes PyTorch's memory use, not the result."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    num_batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), "
                           f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not num_batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires"
                           f" batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*num_batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = ignore_index if ignore_index is not None else -100
    if options is not None and (out_features or reduction not in {"mean", "sum", "none"} or label_smoothing != 0.0
                                or target._data.dtype != np.int64):
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
                      "label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}, tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
    if out_features:
        k = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape((k, in_features))
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(k)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    reduction = _reduction(size_average, reduce, reduction)
    _tensor_arg(input, "cross_entropy_loss", "input", 1)
    _tensor_arg(target, "cross_entropy_loss", "target", 2)
    if input.dim() < 1:
        if tuple(target.shape) == () and not _is_floating(target._data.dtype):
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got {_sname(target)}")
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    cdim = 1 if input.dim() >= 2 else 0
    c = input.shape[cdim]
    probs = tuple(target.shape) == tuple(input.shape)    # PyTorch: same shape means class probabilities
    if probs and not _is_floating(target._data.dtype):
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got {_sname(target)}")
    if probs:
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if weight is not None and (weight.dim() != 1 or weight.numel() != c):
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {c} classes or no classes "
                               f"but got weight tensor of shape: {list(weight.shape)}")
    else:
        _class_target(input, target, weight)
    if (probs or label_smoothing > 0) and not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")
    if _input_cast[0] is not None:      # autocast: PyTorch casts cross_entropy_loss as a whole (float32)
        input, weight = _cast_composite("cross_entropy_loss", (input, weight))
    logp = N.log_softmax(input, cdim)
    wshape = [1] * input.dim()
    wshape[cdim] = c
    if probs:                                       # class probabilities
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        if reduction == "mean":
            return -prod.sum() / (input.numel() // c if input.numel() else 1)
        if reduction == "sum":
            return -prod.sum()
        if reduction == "none":
            return -prod.sum(cdim)
        raise ValueError(f"{reduction} is not a valid value for reduction")
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    ignore = target._data == ignore_index
    smooth = -(logp * weight.reshape(wshape)).sum(cdim) if weight is not None else -logp.sum(cdim)
    smooth = where(_T(ignore), 0.0, smooth)
    if reduction == "mean":
        if weight is not None:
            ret = smooth.sum() / float(weight._data[target._data[~ignore]].sum())
        else:
            ret = smooth.sum() / float((~ignore).sum())
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return nll * (1 - label_smoothing) + ret * (label_smoothing / c)


def _broadcast_weight(weight, target):
    """F.binary_cross_entropy's weight.expand(_infer_size(target, weight)), with PyTorch's errors."""
    ts, ws = tuple(target.shape), tuple(weight.shape)
    for i in range(1, min(len(ts), len(ws)) + 1):
        if ts[-i] != ws[-i] and 1 not in (ts[-i], ws[-i]):
            raise RuntimeError(f"Attempting to broadcast a dimension of length {ws[-i]} at {-i}! Mismatching argument at "
                               f"index 1 had torch.Size({list(ws)}); but expected shape should be broadcastable to "
                               f"{list(ts)}")
    shape = tuple(np.broadcast_shapes(ts, ws))
    if shape != ts:
        raise RuntimeError(f"output with shape {list(ts)} doesn't match the broadcast shape {list(shape)}")
    return weight


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}) "
                         "is deprecated. Please ensure they have the same size.")
    if weight is not None:
        weight = _broadcast_weight(weight, target)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    x, y = input._data, target._data
    if not _float_kernels(x.dtype):
        raise NotImplementedError(f'"binary_cross_entropy" not implemented for \'{_sname(input)}\'')
    if y.dtype != x.dtype:
        raise RuntimeError(f"Found dtype {_sname(target)} but expected {_sname(input)}")
    # NOTE: written as not (0 <= v <= 1) so that NaN fails the check too, as in PyTorch
    if x.size and not ((x >= 0) & (x <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    if y.size and not ((y >= 0) & (y <= 1)).all():
        raise RuntimeError("all elements of target should be between 0 and 1")
    if weight is None or isinstance(weight, Tensor):
        return N.BinaryCrossEntropy.apply(input, target, reduction=reduction,
                                          w=None if weight is None else np.broadcast_to(weight._data, x.shape))
    loss = -(target * input.log().clamp_min(-100.0) + (1 - target) * (1 - input).log().clamp_min(-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    if _input_cast[0] is not None:      # autocast: PyTorch casts this loss as a whole (float32)
        input, target = _cast_composite("binary_cross_entropy_with_logits", (input, target))
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not _float_kernels(target._data.dtype) and _float_kernels(input._data.dtype):
        raise RuntimeError(f"result type {_sname(input)} can't be cast to the desired output type {_sname(target)}")
    if _same_float(input, target) and all(v is None or isinstance(v, Tensor) and _float_kernels(v._data.dtype)
                                          for v in (weight, pos_weight)):
        return N.BinaryCrossEntropyWithLogits.apply(
            input, target, reduction=reduction, w=None if weight is None else weight._data,
            pw=None if pos_weight is None else pos_weight._data)
    ls = E.logsigmoid(input)
    if pos_weight is not None:
        ls = ls * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - ls
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = _reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = _T(target._data > 0)
        loss = target * where(pos, target, 1.0).log() - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    d = target.dim()
    if d > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.dim() != d + 1 or input2.dim() != d + 1:
        raise RuntimeError(f"{d}D target tensor expects {d + 1}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + eps
    m2 = (input2 * input2).sum(d) + eps
    cos = prod / (m1 * m2).sqrt()
    t = target._data
    pos = where(_T(t == 1), 1 - cos, 0.0)
    neg = where(_T(t == -1), (cos - margin).clamp_min(0.0), 0.0)
    return _reduce(pos + neg, reduction)


# ------------------------------------------------------------------- the other losses (margins, NLLs, CTC)
def _no_grad_arg(t, fname, arg):
    """PyTorch's check of an argument its derivative formula leaves out (while grad mode is on)."""
    from ..autograd.grad_mode import is_grad_enabled
    if isinstance(t, Tensor) and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to argument '{arg}'. "
                           "This input cannot have requires_grad True.")


def _valid_reduction(reduction, text="is not a valid value for reduction"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} {text}")
    return reduction


def _long_target(target):
    if target._data.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {_sname(target)}")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * C.ones_like(input)
    elif not isinstance(var, Tensor):
        raise TypeError(f"gaussian_nll_loss(): var must be a Tensor or a float, not {type(var).__name__}")
    elif bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim() and
                  sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    _valid_reduction(reduction, "is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss += 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    reduction = _valid_reduction(_reduction(size_average, reduce, reduction))
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss += stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _valid_reduction(_reduction(size_average, reduce, reduction))
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    if _input_cast[0] is not None:      # autocast: PyTorch casts this loss as a whole (float32)
        input, target = _cast_composite("hinge_embedding_loss", (input, target))
    reduction = _valid_reduction(_reduction(size_average, reduce, reduction))
    zeros = C.zeros_like(input)
    out_margin = where(target != 1, (margin - input).clamp_min(0), zeros)
    return _reduce(out_margin + where(target != -1, input, zeros), reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    from ..primitives.losses import SoftMarginLoss
    if _input_cast[0] is not None:      # autocast: PyTorch casts this loss as a whole (float32)
        input, target = _cast_composite("soft_margin_loss", (input, target))
    reduction = _valid_reduction(_reduction(size_average, reduce, reduction))
    _no_grad_arg(target, "soft_margin_loss", "target")
    if not _is_floating(input._data.dtype):
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_sname(input)}")
    shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(target.shape)))
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape {list(shape)}")
    return SoftMarginLoss.apply(input, target.to(input.dtype).expand(input.shape), reduction=reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    return _reduce(loss, _valid_reduction(reduction, "is not valid"))


def _margin_shapes(input, target, fname):
    """(samples, classes) of a margin loss's input: a non-empty vector or matrix (0-dim batch allowed)."""
    nd = input.dim()
    if not ((input.numel() > 0 and nd <= 2) or (nd == 2 and input.shape[1] > 0)):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    return (1, input.shape[0] if nd else 1) if nd <= 1 else tuple(input.shape)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    from ..primitives.losses import MultiMarginLoss
    reduction = _valid_reduction(_reduction(size_average, reduce, reduction))
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    n, c = _margin_shapes(input, target, "multi_margin_loss")
    no_bf16_kernel(input, "multi_margin_loss_cpu_kernel")
    if target.dim() > 1 or target.numel() != n:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. Input "
                           f"has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    _no_grad_arg(weight, "multi_margin_loss", "weight")
    _long_target(target)
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_sname(input)} but found {_sname(weight)}")
    out_shape = (n,) if input.dim() == 2 or target.dim() == 1 else ()
    args = (input, target) if weight is None else (input, target, weight)
    return MultiMarginLoss.apply(*args, p=p, margin=margin, reduction=reduction, out_shape=out_shape)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    from ..primitives.losses import MultilabelMarginLoss
    reduction = _valid_reduction(_reduction(size_average, reduce, reduction))
    n, c = _margin_shapes(input, target, "multilabel_margin_loss")
    if (target.dim() > 1 or target.numel() != c) if input.dim() <= 1 else \
            (target.dim() != 2 or tuple(target.shape) != (n, c)):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    _long_target(target)
    out_shape = (n,) if input.dim() == 2 else ()
    return MultilabelMarginLoss.apply(input, target, reduction=reduction, out_shape=out_shape)


def _triplet_dims(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    if _input_cast[0] is not None:      # autocast: PyTorch casts this loss as a whole (float32)
        anchor, positive, negative = _cast_composite("triplet_margin_loss", (anchor, positive, negative))
    reduction = _valid_reduction(_reduction(size_average, reduce, reduction))
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _triplet_dims(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = E.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    _valid_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _triplet_dims(anchor, positive, negative)
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = E.minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def _lengths(v, name, n):
    """CTC lengths (a tensor or a sequence of ints) as a list of n ints, with PyTorch's checks."""
    if isinstance(v, Tensor):
        if v._data.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
        vals = [int(a) for a in _array.to_host(v._data).reshape(-1)]
    else:
        vals = [int(a) for a in v]
    if len(vals) != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return vals


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    from ..primitives.losses import CtcLoss
    _valid_reduction(reduction)
    if isinstance(input_lengths, Tensor) != isinstance(target_lengths, Tensor):
        raise TypeError("ctc_loss(): input_lengths and target_lengths must both be Tensors or both be tuples of ints")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    tg = targets if batched else targets.unsqueeze(0)
    if lp.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.dim()}-dimensional tensor for argument "
                           "#1 'log_probs' (while checking arguments for ctc_loss_allocate_outputs)")
    no_bf16_kernel(lp, "ctc_loss_cpu")
    t_max, n, c = lp.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    il = _lengths(input_lengths, "input_lengths", n)
    tl = _lengths(target_lengths, "target_lengths", n)
    where_ = "(while checking arguments for ctc_loss_allocate_outputs)"
    for v in tl:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {v} {where_}")
    for v in il:
        if v > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {v} {where_}")
    td = _array.to_host(tg._data).astype(np.int64)
    if td.ndim == 1:        # the targets of all batch entries, concatenated
        if td.shape[0] != sum(tl):
            raise RuntimeError(f"Expected tensor to have size {sum(tl)} at dimension 0, but got size {td.shape[0]} "
                               f"for argument #2 'targets' {where_}")
        off = np.cumsum([0] + tl)
        rows = [td[off[b]:off[b + 1]] for b in range(n)]
    else:
        if td.shape[1] < max(tl, default=0):
            raise RuntimeError(f"Expected tensor to have size at least {max(tl)} at dimension 1, but got size "
                               f"{td.shape[1]} for argument #2 'targets' {where_}")
        rows = [td[b, :tl[b]] for b in range(n)]
    for r in rows:
        if r.size and (r.min() < 0 or r.max() >= c):
            raise RuntimeError(f"ctc_loss: target {int(r[(r < 0) | (r >= c)][0])} is out of range for {c} classes")
    res = CtcLoss.apply(lp, blank=blank, input_lengths=il, target_lengths=tl, targets=rows,
                        zero_infinity=zero_infinity)[0]
    if zero_infinity:
        res = where(res == math.inf, C.zeros_like(res), res)
    if reduction == "mean":
        lens = C.tensor([max(v, 1) for v in tl], dtype=res.dtype)
        res = (res / lens).mean()
    elif reduction == "sum":
        res = res.sum()
    return res if batched else res.squeeze(0)


# ------------------------------------------------------------------------------------------ embedding_bag
def _bag_ids(idx, offsets, include_last_offset, padding_idx):
    """The bag of each index (-1: padding, or past the last bag) and the number of bags, with PyTorch's checks."""
    n = idx.shape[0]
    off = _array.to_host(offsets).astype(np.int64)
    if include_last_offset and off.size == 0:
        raise RuntimeError("include_last_offset: number of offsets should be at least 1")
    if off.size:
        if off[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                               f"position 0. However, got {off[0]}")
        if off[-1] > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                               f"{off[-1]}")
        if (np.diff(off) < 0).any():
            raise RuntimeError("embedding_bag: offsets must be non-decreasing")
    nb = off.size - 1 if include_last_offset else off.size
    ends = np.append(off[1:], n) if not include_last_offset else off[1:]
    bag = np.full(n, -1, np.int64)
    for b in range(nb):
        bag[off[b]:ends[b]] = b
    if padding_idx is not None:
        bag[np.asarray(idx) == padding_idx] = -1
    return bag, nb


def _embedding_bag(weight, input, offsets, scale_grad_by_freq, mode, per_sample_weights, include_last_offset,
                   padding_idx, sparse=False):
    """torch.embedding_bag's kernel on 1-D indices: (output, offset2bag, bag_size, max_indices)."""
    from ..primitives.embedding_bag import EmbeddingBag, WeightedEmbeddingBag
    for name, t in (("indices", input), ("offsets", offsets)):
        if t._data.dtype.kind not in "iu":
            raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar types: "
                               f"Long, Int; but got torch.{t.dtype._legacy} instead (while checking arguments for "
                               "embedding_bag)")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num} through {num - 1}, but "
                               f"got {padding_idx}")
        padding_idx %= num
    idx = _array.to_host(input._data).astype(np.int64)
    bad = (idx < 0) | (idx >= num)
    if bad.any():
        raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be "
                           f"{idx[bad][0]}")
    bag, nb = _bag_ids(idx, offsets._data, include_last_offset, padding_idx)
    params = dict(idx=idx, bag=bag, nbags=nb, mode=("sum", "mean", "max")[mode], padding_idx=padding_idx,
                  scale_grad_by_freq=scale_grad_by_freq, sparse=bool(sparse))
    if per_sample_weights is not None:
        if mode != 0:
            raise NotImplementedError("embedding_bag: per_sample_weights only supported with mode='sum'")
        if per_sample_weights.dtype is not weight.dtype:
            raise RuntimeError(f"expected scalar type {_sname(weight)} but found {_sname(per_sample_weights)}")
        return WeightedEmbeddingBag.apply(weight, per_sample_weights, **params)
    return EmbeddingBag.apply(weight, **params)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    if weight._data.dtype == np.int64 and input._data.dtype.kind == "f":
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, input, "
                      "...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it must "
                         f"have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed "
                             f"length sequences. However, found offsets of type {type(offsets)}")
        offsets = C.arange(0, input.numel(), input.size(1), dtype=input.dtype)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _embedding_renorm(weight, input._data, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only supported "
                                  f"for mode='sum' (got mode='{mode}'). Please open a feature request on GitHub.")
    return _embedding_bag(weight, input, offsets, scale_grad_by_freq, ("sum", "mean", "max").index(mode),
                          per_sample_weights, include_last_offset, padding_idx, sparse)[0]


# --------------------------------------------------------------------------------- attention
_MASK_DTYPE_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                     "uint8": "unsigned char", "float64": "double", "float32": "float", "float16": "c10::Half",
                     "bool": "bool"}


def _dt_name(dt):
    return _MASK_DTYPE_NAMES.get(str(dt), str(dt))


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """PyTorch's mask canonicalisation: a bool mask becomes an additive float mask (-inf where True) of
    ``target_type``; a float mask stays as it is; other dtypes are an error."""
    if mask is None:
        return None
    k = mask._data.dtype.kind
    if k != "b" and k != "f":
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.", stacklevel=3)
    if k == "b":
        return _T(np.where(mask._data, -np.inf, 0).astype(target_type.np))
    return mask


def _sdpa_mask(mask, dt, xp):
    """attn_mask of F.scaled_dot_product_attention (True: attend) as an additive array of dtype dt."""
    a = mask._data
    if a.dtype == np.bool_:
        return np.where(a, 0, -np.inf).astype(dt)
    return a


def _sdpa_check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' (position "
                            f"{('query', 'key', 'value').index(name) + 1}) must be Tensor, not {type(t).__name__}")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_dt_name(query._data.dtype)} key.dtype: {_dt_name(key._data.dtype)} and value.dtype: "
                           f"{_dt_name(value._data.dtype)} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if not _float_kernels(query._data.dtype):
        raise RuntimeError(f"\"baddbmm_with_gemm\" not implemented for '{scalar_name(query._data.dtype)}'")
    if attn_mask is not None:
        md = attn_mask._data.dtype
        if md != np.bool_ and md != query._data.dtype:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {_dt_name(md)} and  query.dtype: {_dt_name(query._data.dtype)} "
                               "instead.")
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa and query.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")


def _sdpa_flash_ok(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Would PyTorch's CPU dispatcher pick its flash kernel (use_flash_attention_cpp)?"""
    if _SDPBackend.FLASH_ATTENTION not in _sdpa_enabled():
        return False
    if dropout_p > 0 or query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        return False
    if attn_mask is not None and (attn_mask.requires_grad or attn_mask.dim() not in (2, 4)):
        return False
    qs, ks, vs = query.shape, key.shape, value.shape
    if not (qs[-1] == ks[-1] == vs[-1]) or qs[0] != ks[0] or qs[0] != vs[0] or ks[-2] != vs[-2] or ks[1] != vs[1]:
        return False
    if qs[1] != ks[1] and not (enable_gqa and qs[1] % ks[1] == 0):
        return False
    return min(qs[-2], ks[-2], qs[-1]) > 0


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, PyTorch's CPU kernels: the flash kernel
    (``ScaledDotProductFlashAttentionForCpuBackward0``) where PyTorch picks it, else its math path (ops)."""
    _sdpa_check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    L, S, Eq = query.shape[-2], key.shape[-2], query.shape[-1]
    dt = query._data.dtype
    xp = query._xp
    sc = 1.0 / math.sqrt(Eq) if scale is None else float(scale)
    if _sdpa_flash_ok(query, key, value, attn_mask, dropout_p, enable_gqa):
        mask = None if attn_mask is None else _sdpa_mask(attn_mask, dt, xp)
        if is_causal:
            mask = np.where(np.tril(xp.ones((L, S), dtype=bool)), 0, -np.inf).astype(dt)
        return _SdpaFlash.apply(query, key, value, mask=mask, rep=query.shape[1] // key.shape[1], sc=sc,
                                scale=scale, is_causal=bool(is_causal), dropout_p=float(dropout_p))
    if _SDPBackend.MATH not in _sdpa_enabled():
        warnings.warn("Memory efficient kernel not used because: ... Flash attention kernel not used because: ... "
                      "(hookgrad: only the flash and math kernels exist on the CPU)")
        raise RuntimeError("No available kernel. Aborting execution.")
    # PyTorch's math path: q and k each scaled by sqrt(scale), a safe softmax (a row with every key masked
    # gives zeros), dropout drawn as at::dropout draws it
    f = math.sqrt(abs(sc))
    q = query * (-f if sc < 0 else f)
    if enable_gqa:
        r = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(r, -3), value.repeat_interleave(query.shape[-3] // value.shape[-3], -3)
    attn = matmul(q, key.transpose(-2, -1) * f)
    if is_causal:
        attn = attn + _T(np.where(np.tril(xp.ones((L, S), dtype=bool)), 0, -np.inf).astype(dt))
    elif attn_mask is not None:
        attn = attn + (_T(_sdpa_mask(attn_mask, dt, xp)) if attn_mask._data.dtype == np.bool_ else attn_mask)
    dead = np.all(attn._data == -np.inf, axis=-1, keepdims=True)
    if dead.any():
        attn = where(_T(dead), 0.0, attn)
        attn = where(_T(dead), 0.0, N.softmax(attn, -1))
    else:
        attn = N.softmax(attn, -1)
    if dropout_p > 0:
        attn = dropout(attn, dropout_p, True)
    return matmul(attn, value)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         "tensor")


def _in_projection_packed(q, k, v, w, b=None):
    E = q.size(-1)
    if k is v:
        if q is k:      # self-attention: one projection, split in (3, E)
            proj = linear(q, w, b).unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    for what, t, shape in (("query weights", w_q, (Eq, Eq)), ("key weights", w_k, (Eq, Ek)),
                           ("value weights", w_v, (Eq, Ev)), ("query bias", b_q, (Eq,)),
                           ("key bias", b_k, (Eq,)), ("value bias", b_v, (Eq,))):
        if t is not None and tuple(t.shape) != shape:
            raise AssertionError(f"expecting {what} shape of {shape}, but got {t.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Inputs (L, N, E) / (S, N, E), or unbatched (L, E); PyTorch's code path, step for step."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None        # the hint goes to SDPA as is_causal
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for n, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {n}_proj_weight is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = J.cat([k, bias_k.repeat(1, bsz, 1)])
        v = J.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.size(0) != bsz * num_heads:
            raise AssertionError(f"expecting static_k.size(0) of {bsz * num_heads}, but got {static_k.size(0)}")
        if static_k.size(2) != head_dim:
            raise AssertionError(f"expecting static_k.size(2) of {head_dim}, but got {static_k.size(2)}")
        k = static_k
    if static_v is None:
        v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.size(0) != bsz * num_heads:
            raise AssertionError(f"expecting static_v.size(0) of {bsz * num_heads}, but got {static_v.size(0)}")
        if static_v.size(2) != head_dim:
            raise AssertionError(f"expecting static_v.size(2) of {head_dim}, but got {static_v.size(2)}")
        v = static_v
    if add_zero_attn:
        xp = k._xp
        z = (bsz * num_heads, 1, head_dim)
        k = J.cat([k, _T(xp.zeros(z, dtype=k._data.dtype))], dim=1)
        v = J.cat([v, _T(xp.zeros(z, dtype=v._data.dtype))], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
            bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        E = q.shape[-1]
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        if attn_mask is not None:
            w = attn_mask.baddbmm(q_scaled, k.transpose(-2, -1))
        else:
            w = q_scaled.bmm(k.transpose(-2, -1))
        w = softmax(w, dim=-1)
        if dropout_p > 0.0:
            w = dropout(w, p=dropout_p)
        out = w.bmm(v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.size(1))
        w = w.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(dim=1)
        if not is_batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _layer_error(e, module, *inputs):
    """Re-raise a layer's error with PyTorch's type and text first, then the layer and the input shapes."""
    shapes = " and ".join(str(list(x.shape)) for x in inputs if isinstance(x, Tensor))
    try:
        new = type(e)(f"{e} (hookgrad: in {module._get_name()}({module.extra_repr()}), input of shape {shapes})")
    except Exception:  # pragma: no cover - exotic exception constructors
        return e
    return new


# ---------------------------------------------------------------- typing and documentation helpers PyTorch's
# functional module exports (torch._jit_internal's BroadcastingList / boolean_dispatch, torch._torch_docs' notes)
class _BroadcastingListCls:
    """``BroadcastingListN[int]``: an int or a list of N ints, for TorchScript; subscripting gives None, as in
    PyTorch (it is only read as an annotation)."""

    def __getitem__(self, types):
        return None


BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = _BroadcastingListCls()

boolean_dispatched = {}     # the dispatching functions made by boolean_dispatch, with their two branches


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function that calls ``if_true`` or ``if_false`` by a boolean argument (``arg_name`` by keyword, else
    the positional ``arg_index``, else ``default``), as PyTorch's ``max_pool2d`` with ``return_indices``.
    The one of the two functions with a docstring lends it to the other and to the result."""
    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else args[arg_index] if arg_index < len(args) else default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if if_true.__doc__ is None and if_false.__doc__ is not None:
        if_true.__doc__ = if_false.__doc__
    elif if_false.__doc__ is None and if_true.__doc__ is not None:
        if_false.__doc__ = if_true.__doc__
    elif if_false.__doc__ is not None and if_true.__doc__ is not None:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = if_true.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    boolean_dispatched[fn] = {"if_true": if_true, "if_false": if_false, "index": arg_index, "default": default,
                              "arg_name": arg_name}
    return fn


def assert_int_or_pair(arg, arg_name, message):
    """AssertionError(message.format(arg_name)) unless ``arg`` is an int or has two entries."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


# the shared notes PyTorch formats into its docstrings (same keys; hookgrad's own short text)
reproducibility_notes = {
    "forward_reproducibility_note": "This operation may behave nondeterministically on some devices; hookgrad "
                                    "computes it deterministically on the CPU.",
    "backward_reproducibility_note": "The backward of this operation may be nondeterministic on some devices; "
                                     "hookgrad computes it deterministically on the CPU.",
    "cudnn_reproducibility_note": "cuDNN may pick nondeterministic algorithms for this operation; hookgrad uses "
                                  "no cuDNN.",
}
tf32_notes = {"tf32_note": "On devices with TensorFloat-32 this operator may compute in reduced precision; "
                           "hookgrad computes in the tensors' dtype."}
sparse_support_notes = {"sparse_beta_warning": "Sparse support is a beta feature in PyTorch; hookgrad's tensors "
                                               "are dense."}


# a torch name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, 'torch.nn.functional')


from ..primitives.stats import cosine_similarity, pairwise_distance, pdist  # noqa: E402  (F.x is torch.x)


from ..overrides import (has_torch_function, has_torch_function_unary, has_torch_function_variadic,  # noqa: E402
                         handle_torch_function)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(2, input, output_size, True)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(input, size, scale_factor, mode="nearest")``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution (straight-through one-hot with ``hard=True``)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    from .._creation import empty_like, zeros_like
    gumbels = -empty_like(logits).exponential_().log()  # ~Gumbel(0,1)
    gumbels = (logits + gumbels) / tau
    y_soft = gumbels.softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft


# the last activations: F.hardshrink is torch.hardshrink, F.softshrink torch._C._nn.softshrink,
# F.rrelu_ torch.rrelu_; F.rrelu is PyTorch's Python wrapper (adds ``inplace``)
from ..primitives.special import hardshrink, softshrink, rrelu_  # noqa: E402


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU (see :class:`~torch.nn.RReLU`): torch.rrelu, or torch.rrelu_ with ``inplace``."""
    import hookgrad as torch
    if inplace:
        return torch.rrelu_(input, lower, upper, training)
    return torch.rrelu(input, lower, upper, training)
# PyTorch's argument-parser errors for wrong argument types (error path only; last in the module)
from ..primitives._dispatch import install_checks as _r_install  # noqa: E402
_r_install(globals(), python_level=True, names=_missing.torch_names("torch.nn.functional"))
del _r_install
