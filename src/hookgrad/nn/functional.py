"""hookgrad.nn.functional: the functional forms of every layer, activation and loss (as torch.nn.functional)."""
import math
import numbers
import warnings

import numpy as np

from .._tensor import Tensor
from .. import _creation as C
from ..primitives import elementwise as E, join as J, nn as N
from ..primitives.index import Where
from ..primitives.linalg import addmm, matmul, mm as _mm
from ..primitives.shape import t as _t
from .._errors import float_kernel, not_implemented_for, scalar_name
from ..autograd.grad_mode import no_grad

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
        raise RuntimeError(f"{fname}: {what}, or a tuple of two ints")
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
    return f"{name}H: {v[0]} {name}W: {v[-1]}"


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
    nd = input._data.ndim
    wt = _t(weight)         # the primitives themselves: internal calls skip the public wrappers
    if nd == 2:
        return addmm(bias, input, wt) if bias is not None else _mm(input, wt)
    if nd > 2:
        x2 = input.reshape(-1, input.shape[-1])
        out = addmm(bias, x2, wt) if bias is not None else _mm(x2, wt)
        return out.view(*input.shape[:-1], weight.shape[0])
    out = matmul(input, wt)
    return out + bias if bias is not None else out


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
        raise RuntimeError("could not create a primitive descriptor for the deconvolution forward propagation "
                           "primitive. Run workload with environment variable ONEDNN_VERBOSE=all to get additional "
                           "diagnostic information." if transposed else "non-positive dilation is not supported")
    if weight.shape[0] == 0 and not transposed:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least 1 at dimension 0, but got weight of "
                           f"size {list(weight.shape)} instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got "
                           f"weight of size {[list(weight.shape)] if transposed else list(weight.shape)} instead")
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


def _as2d(n, v, one):
    """1-d geometry as 2-d: H gets (stride 1, no pad, dilation 1)."""
    return ((one,) + v) if n == 1 else v


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
    geo = dict(stride=_as2d(n, s, 1), padding=((0, 0) + p) if n == 1 else p, dilation=_as2d(n, d, 1), groups=groups)
    args = (input, weight) if bias is None else (input, weight, bias)
    return N.Conv.apply(*args, **geo)


def _sname(t):
    """PyTorch's scalar type name (Float, Long, Bool ...)."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "bfloat16": "BFloat16"}.get(
        t.dtype.name, t.dtype.name)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(name, n, input, weight, bias, stride, padding, output_padding, groups, dilation):
    for arg, v, pos in (("input", input, 1), ("weight", weight, 2)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {C._tname(v)}")
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
                               f"output_padding_height: {op[0]} output_padding_width: {op[-1]} stride_height: {s[0]} "
                               f"stride_width: {s[-1]} dilation_height: {d[0]} dilation_width: {d[-1]}")
    out = tuple((input.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(n))
    if min(out) <= 0:
        lead = (1,) * (2 - n)           # PyTorch reports 1-d as 2-d with height 1
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, lead + tuple(input.shape[2:])))}). "
                           f"Calculated output size per channel: ({' x '.join(map(str, lead + out))}). "
                           "Output size is too small")
    pp = tuple(x for v in p for x in (v, v))
    geo = dict(stride=_as2d(n, s, 1), padding=((0, 0) + pp) if n == 1 else pp, dilation=_as2d(n, d, 1),
               groups=groups)
    args = (input, weight) if bias is None else (input, weight, bias)
    return N.ConvTr.apply(*args, out_hw=out, **geo)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
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
                           f"got input.size(1)={ck} and kernel_size={k}" if ck % (k[0] * k[1]) else
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


def _pool_geo(name, x, kernel_size, stride, padding, dilation, ceil_mode):
    fname = f"{name}_pool2d"
    pos = (2, 3, 4, 5) if name == "max" else (None,) * 4     # F.max_pool2d passes them on by position
    k = _ints(kernel_size, 2, fname, "kernel_size", "pool", pos[0])
    s = _ints(stride, 2, fname, "stride", "pool", pos[1]) if stride is not None and stride != [] and stride != () else k
    p = _ints(padding, 2, fname, "padding", "pool", pos[2])
    d = _ints(dilation, 2, fname, "dilation", "pool", pos[3])
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not {C._tname(x)}")
    if name == "avg" and x.dim() < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(x.dim(), 1)}, "
                         f"{max(x.dim(), 1) - 1}], but got -3)")
    for i in range(2):      # pooling_output_shape, height first: stride, padding, padding vs. kernel
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
    if x.dim() not in (3, 4) and name == "max":
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if x.dim() not in (3, 4) or 0 in x.shape[-3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:"
                           f"{list(x.shape)}")
    h, w = x.shape[-2:]
    oh, ow = _pool_out(h, k[0], s[0], p[0], d[0], ceil_mode), _pool_out(w, k[1], s[1], p[1], d[1], ceil_mode)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[-3:]))}). Calculated output size: "
                           f"({x.shape[-3]}x{oh}x{ow}). Output size is too small")
    eh = max(0, (oh - 1) * s[0] + d[0] * (k[0] - 1) + 1 - (h + 2 * p[0]))
    ew = max(0, (ow - 1) * s[1] + d[1] * (k[1] - 1) + 1 - (w + 2 * p[1]))
    return dict(kernel=k, stride=s, dilation=d, pads=(p[0], p[0] + eh, p[1], p[1] + ew), oh=oh, ow=ow, in_hw=(h, w))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    geo = _pool_geo("max", input, kernel_size, stride, padding, dilation, ceil_mode)
    out, idx = N.MaxPool.apply(input, want_indices=return_indices, **geo)
    return (out, idx) if return_indices else out


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _one(v):
    return v[0] if isinstance(v, (tuple, list)) else v


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
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
    r = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    return (r[0].squeeze(-2), r[1].squeeze(-2)) if return_indices else r.squeeze(-2)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    geo = _pool_geo("avg", input, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    dk = input._data.dtype
    if dk.kind != "f":              # PyTorch's kernel takes int64 too: the mean truncated toward zero
        if dk != np.int64:
            raise not_implemented_for("avg_pool2d", dk)
        return avg_pool2d(input.double(), kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override).trunc().long()
    if divisor_override:
        div = input._xp.asarray(divisor_override, input._data.dtype)
    else:
        sizes = []
        for i, (o, size) in enumerate(zip((geo["oh"], geo["ow"]), geo["in_hw"])):
            k, s, p = geo["kernel"][i], geo["stride"][i], geo["pads"][2 * i]
            st = np.arange(o) * s - p
            en = np.minimum(st + k, size + p)
            n = en - st
            if not count_include_pad:
                n = np.minimum(en, size) - np.maximum(st, 0)
            sizes.append(n)
        div = input._xp.asarray((sizes[0][:, None] * sizes[1][None, :]).astype(input._data.dtype))  # host: once
    return N.AvgPool.apply(input, div=div, **geo)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    (k,) = _ints(kernel_size, 1, "avg_pool1d", "kernel_size", "pool1d")
    s = (1,) + _ints(stride, 1, "avg_pool1d", "stride", "pool1d") if stride is not None and stride != [] else None
    (p,) = _ints(padding, 1, "avg_pool1d", "padding", "pool1d")
    _dims_1d(input, "avg_pool1d")
    return avg_pool2d(input.unsqueeze(-2), (1, k), s, (0, p), ceil_mode,
                      count_include_pad).squeeze(-2)


def _dims_1d(input, fname):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 'self' "
                           f"(while checking arguments for {fname})")


def _adaptive_sizes(input, output_size, n, kind="avg"):
    """output_size as F.adaptive_{avg,max}_pool{1,2}d read it (None = the input's size), PyTorch's errors."""
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
        out = _ints(output_size, 2, fname, "output_size", "adaptive", 2) if not isinstance(output_size, _int) \
            else (int(output_size),) * 2
        if len(out) != 2:
            raise RuntimeError("adaptive_avg_pool2d: output_size must be 2" if kind == "avg" else
                               "adaptive_max_pool2d(): internal error: output_size.size() must be 2")
        if input.dim() not in (3, 4):
            raise RuntimeError(f"adaptive_{kind}_pool2d(): Expected 3D or 4D tensor, but got"
                               f"{':' if kind == 'max' else ''} {list(input.shape)}")
        for i in range(input.dim() - 2, input.dim()):
            if input.shape[i] == 0:
                raise RuntimeError(f"adaptive_{kind}_pool2d(): Expected input to have non-zero size for non-batch "
                                   f"dimensions, but input has sizes {list(input.shape)} with dimension {i} being empty")
    if min(out) < 0:
        full = (list(input.shape[:-1]) + [1] if n == 1 else list(input.shape[:-2])) + list(out)
        if kind == "avg":
            raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                               f"received {{{(1,) + out if n == 1 else out}}}".replace("(", "").replace(")", ""))
        neg = next(v for v in out if v < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {neg}: {full}")
    return out


def adaptive_avg_pool2d(input, output_size):
    oh, ow = _adaptive_sizes(input, output_size, 2)
    float_kernel(input, "adaptive_avg_pool2d")
    if (oh, ow) == (1, 1):
        return input.mean((-2, -1), keepdim=True)
    return N.AdaptiveAvgPool.apply(input, out_hw=(oh, ow))


def adaptive_avg_pool1d(input, output_size):
    (o,) = _adaptive_sizes(input, output_size, 1)
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, o)).squeeze(-2)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out_hw = _adaptive_sizes(input, output_size, 2, "max")
    out, idx = N.AdaptiveMaxPool.apply(input, out_hw=out_hw)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    (o,) = _adaptive_sizes(input, output_size, 1, "max")
    r = adaptive_max_pool2d(input.unsqueeze(-2), (1, o), return_indices)
    return (r[0].squeeze(-2), r[1].squeeze(-2)) if return_indices else r.squeeze(-2)


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
        mean = running_mean._data.reshape(pshape).astype(x.dtype)
        invstd = (1.0 / np.sqrt(running_var._data.astype(np.float64) + eps)).astype(x.dtype).reshape(pshape)
    args = (input, weight, bias)
    return N.Norm.apply(*args, sshape=x.shape, axes=axes, pshape=pshape, mean=mean, invstd=invstd,
                        batch_stats=bool(training), eps=eps, wshape=(c,))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    _tensor_arg(input, "layer_norm", "input", 1)
    ns = C.int_list(normalized_shape, "layer_norm", "normalized_shape", 2, varargs=False) \
        if not isinstance(normalized_shape, _int) or isinstance(normalized_shape, bool) else None
    if ns is None:
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{C._tname(normalized_shape)}")
    x = input._data
    k = len(ns)
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
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"sizes {list(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape((n, c) + rest)


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
    nb = len(b)
    x = input.reshape(tuple(b) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(nb)) + (nb, nb + 3, nb + 1, nb + 4, nb + 2))
    return x.reshape(tuple(b) + (c // (r * r), h * r, w * r))


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
    nb = len(b)
    x = input.reshape(tuple(b) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(nb)) + (nb, nb + 2, nb + 4, nb + 1, nb + 3))
    return x.reshape(tuple(b) + (c * r * r, h // r, w // r))


# ------------------------------------------------------------------------ dropout, embedding
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input, p, training, inplace, mshape):
    _check_p(p)
    if not training or p == 0:
        return input
    dt = input._data.dtype
    if dt.kind != "f" and p < 1:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {scalar_name(dt)}")
    # PyTorch's CPU kernel: mask.bernoulli_(1 - p), i.e. one 53-bit uniform per element, kept if < 1 - p
    n = 1
    for d in mshape:
        n *= d
    keep = C.default_generator._uniform01(n, np.float64).reshape(mshape) < (1.0 - p)
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


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if not training or p == 0:
        return input
    alpha = -1.7580993408473766
    keep = C._rng(None).random(input._data.shape) >= p
    a = (1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p)))
    b = -a * alpha * p
    kt = _T(input._xp.asarray(keep.astype(input._data.dtype)))     # drawn on the host: converted once
    return (input * kt + alpha * (1 - kt)) * a + b


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
        rows = np.unique(idx)
        w = weight._data
        nrm = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
        big = nrm > max_norm
        w[rows[big]] *= (max_norm / (nrm[big] + 1e-7))[:, None].astype(w.dtype)
        weight._vc[0] += 1
    return N.Embedding.apply(weight, input, padding_idx=padding_idx)


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
    for d, (a, b) in enumerate(pairs):
        n = input.shape[d]
        if mode == "reflect" and (a >= n or b >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({a}, {b}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (a > n or b > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + a + b < 1 and (a or b):
            name = "WHD"[nd - 1 - d]
            raise RuntimeError(f"input ({name}: {n}) is too small. Calculated output {name}: {n + a + b}")
    return J.index_pad(input, pairs[nd - k:], mode)


# ---------------------------------------------------------------------------- interpolation
def _interp_matrix(n_in, n_out, scale, align_corners, dtype, xp):
    """The (n_out, n_in) linear-interpolation matrix, computed on the host, as a tensor of array module xp."""
    m = np.zeros((n_out, n_in), np.float64)
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    r = np.arange(n_out)
    m[r, i0] += 1 - lam
    m[r, i1] += lam
    return _T(xp.asarray(m.astype(dtype)))


_INTERP_MODES = {"nearest": "compute_indices_weights_nearest", "nearest-exact": "compute_indices_weights_nearest",
                 "linear": "compute_indices_weights_linear", "bilinear": "upsample_bilinear2d_channels_last",
                 "bicubic": "compute_indices_weights_cubic", "trilinear": "compute_indices_weights_linear",
                 "area": "adaptive_avg_pool2d", "lanczos": "lanczos"}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    _tensor_arg(input, "interpolate", "input", 1)
    n = input.dim() - 2
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    in_sz = input.shape[2:]
    if n < 1 or n > 3 or mode not in _INTERP_MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if size is not None:
        if isinstance(size, (list, tuple)) and len(size) != n:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(in_sz)} and output size of {size}. Please provide input "
                             "tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        out_sz = _tup(size, n, "size")
    else:
        if isinstance(scale_factor, (list, tuple)) and len(scale_factor) != n:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(in_sz)} and scale_factor of shape {scale_factor}. "
                             "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                             "(s1, s2, ...,sK) format.")
        sf = [float(scale_factor)] * n if isinstance(scale_factor, numbers.Number) else [float(f) for f in scale_factor]
        out_sz = tuple(int(math.floor(i * f)) for i, f in zip(in_sz, sf))
    if min(out_sz) <= 0 or min(in_sz) <= 0:
        names = "DHW"[3 - n:]
        fmt = lambda v: ", ".join(f"{a}: {b}" for a, b in zip(names, v))     # noqa: E731
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({fmt(in_sz)})"
                           f"{' and' if n == 1 else ''} output ({fmt(out_sz)})")
    dk = input._data.dtype
    if dk.kind != "f" and not (dk == np.uint8 and mode in ("nearest", "nearest-exact", "bilinear")):
        raise not_implemented_for(_INTERP_MODES[mode], dk)
    if size is not None:
        scales = [i / o for i, o in zip(in_sz, out_sz)]
    else:
        scales = [i / o for i, o in zip(in_sz, out_sz)] if recompute_scale_factor else [1.0 / f for f in sf]
    if mode == "area":
        return adaptive_avg_pool2d(input, out_sz) if n == 2 else adaptive_avg_pool1d(input, out_sz)
    need = {"linear": 1, "bilinear": 2, "trilinear": 3}
    if mode in need and need[mode] != n:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need[mode] + 2}D input")
    out = input
    dt = input._data.dtype
    for i in range(n):
        d = 2 + i
        if in_sz[i] == out_sz[i] and mode.startswith("nearest"):
            continue
        if mode in ("nearest", "nearest-exact"):
            dst = np.arange(out_sz[i], dtype=np.float64)
            src = np.floor((dst + 0.5) * scales[i]) if mode == "nearest-exact" else np.floor(dst * np.float32(scales[i]))
            idx = np.minimum(src.astype(np.int64), in_sz[i] - 1)
            out = out[(slice(None),) * d + (_T(input._xp.asarray(idx)),)]
        elif mode in need:
            m = _interp_matrix(in_sz[i], out_sz[i], scales[i], bool(align_corners), dt, input._xp)
            out = matmul(out.transpose(d, -1), m.t()).transpose(d, -1) if d != input.dim() - 1 else matmul(out, m.t())
        else:
            raise NotImplementedError(f"hookgrad: interpolate mode '{mode}' is not supported")
    return out


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
    if input._data.dtype.kind != "f" and target._data.dtype.kind != "f":
        from .. import _dtype as D
        raise not_implemented_for(kernel, D.result_type_of([input, target]))


def _same_float(input, target):
    """The one-node loss path: two tensors of one floating dtype."""
    return isinstance(input, Tensor) and isinstance(target, Tensor) and input._data.dtype.kind == "f" and \
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
    args = (input, target) if weight is None else (input, target, weight)
    return N.NllLoss.apply(*args, ignore_index=ignore_index, reduction=reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    reduction = _reduction(size_average, reduce, reduction)
    _tensor_arg(input, "cross_entropy_loss", "input", 1)
    _tensor_arg(target, "cross_entropy_loss", "target", 2)
    if input.dim() < 1:
        if tuple(target.shape) == () and target._data.dtype.kind != "f":
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got {_sname(target)}")
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    cdim = 1 if input.dim() >= 2 else 0
    c = input.shape[cdim]
    probs = tuple(target.shape) == tuple(input.shape)    # PyTorch: same shape means class probabilities
    if probs and target._data.dtype.kind != "f":
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
    if x.dtype.kind != "f":
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
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if target._data.dtype.kind != "f" and input._data.dtype.kind == "f":
        raise RuntimeError(f"result type {_sname(input)} can't be cast to the desired output type {_sname(target)}")
    if _same_float(input, target) and all(v is None or isinstance(v, Tensor) and v._data.dtype.kind == "f"
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
    if input1.dim() != input2.dim() or input1.dim() not in (1, 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    d = input1.dim() - 1
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + eps
    m2 = (input2 * input2).sum(d) + eps
    cos = prod / (m1 * m2).sqrt()
    t = target._data
    pos = where(_T(t == 1), 1 - cos, 0.0)
    neg = where(_T(t == -1), (cos - margin).clamp_min(0.0), 0.0)
    return _reduce(pos + neg, reduction)


# --------------------------------------------------------------------------------- attention
def _float_mask(mask, dtype, true_means_masked, xp):
    """A boolean mask as an additive float mask (0 / -inf) of array module xp; a float mask as it is."""
    a = mask._data if isinstance(mask, Tensor) else xp.asarray(mask)
    if a.dtype == np.bool_:
        blocked = a if true_means_masked else ~a
        return _T(np.where(blocked, -np.inf, 0.0).astype(dtype))
    return mask


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    L, S = query.shape[-2], key.shape[-2]
    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    w = matmul(query, key.transpose(-2, -1)) * sc
    dt = query._data.dtype
    if is_causal:
        w = w + _float_mask(_T(np.tril(query._xp.ones((L, S), bool))), dt, False, query._xp)
    if attn_mask is not None:
        w = w + _float_mask(attn_mask, dt, False, query._xp)
    w = N.softmax(w, -1)
    if dropout_p > 0:
        w = dropout(w, dropout_p, True)
    return matmul(w, value)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Inputs (L, N, E) / (S, N, E), or unbatched (L, E); PyTorch's math path."""
    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, B, E_ = query.shape
    S = key.shape[0]
    if E_ != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {E_}")
    H = num_heads
    hd = E_ // H
    if use_separate_proj_weight:
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = in_proj_bias[0:E_], in_proj_bias[E_:2 * E_], in_proj_bias[2 * E_:]
        q, k, v = linear(query, q_proj_weight, bq), linear(key, k_proj_weight, bk), linear(value, v_proj_weight, bv)
    else:
        w, b = in_proj_weight, in_proj_bias
        if query is key and key is value:
            qkv = linear(query, w, b)
            q, k, v = qkv[..., 0:E_], qkv[..., E_:2 * E_], qkv[..., 2 * E_:]
        else:
            q = linear(query, w[0:E_], None if b is None else b[0:E_])
            k = linear(key, w[E_:2 * E_], None if b is None else b[E_:2 * E_])
            v = linear(value, w[2 * E_:], None if b is None else b[2 * E_:])
    dt = query._data.dtype
    mask = None
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if attn_mask is not None:
        mask = _float_mask(attn_mask, dt, True, query._xp)
        if mask.dim() == 2:
            mask = mask.unsqueeze(0)
    if key_padding_mask is not None:
        kpm = _float_mask(key_padding_mask, dt, True, query._xp).reshape(B, 1, 1, S).expand(B, H, 1, S).reshape(B * H, 1, S)
        mask = kpm if mask is None else mask + kpm
    q = q.reshape(L, B * H, hd).transpose(0, 1)
    k = k.reshape(S, B * H, hd).transpose(0, 1)
    v = v.reshape(S, B * H, hd).transpose(0, 1)
    if not training:
        dropout_p = 0.0
    if need_weights:
        w = matmul(q * math.sqrt(1.0 / hd), k.transpose(-2, -1))
        if mask is not None:
            w = w + mask
        w = N.softmax(w, -1)
        if dropout_p > 0:
            w = dropout(w, dropout_p)
        out = matmul(w, v)
    else:
        if mask is not None:
            mask = mask.reshape(B, H, -1, S) if mask.shape[0] == B * H else mask.unsqueeze(0)
        out = scaled_dot_product_attention(q.reshape(B, H, L, hd), k.reshape(B, H, S, hd), v.reshape(B, H, S, hd),
                                           mask, dropout_p).permute(2, 0, 1, 3)
        w = None
    out = out.transpose(0, 1).reshape(L * B, E_) if need_weights else out.reshape(L * B, E_)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(L, B, E_)
    if w is not None:
        w = w.reshape(B, H, L, S)
        if average_attn_weights:
            w = w.mean(1)
        if not batched:
            w = w.squeeze(0)
    if not batched:
        out = out.squeeze(1)
    return out, w


def _layer_error(e, module, *inputs):
    """Re-raise a layer's error with PyTorch's type and text first, then the layer and the input shapes."""
    shapes = " and ".join(str(list(x.shape)) for x in inputs if isinstance(x, Tensor))
    try:
        new = type(e)(f"{e} (hookgrad: in {module._get_name()}({module.extra_repr()}), input of shape {shapes})")
    except Exception:  # pragma: no cover - exotic exception constructors
        return e
    return new


# a torch name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, 'torch.nn.functional')


from ..primitives.stats import cosine_similarity, pairwise_distance, pdist  # noqa: E402  (F.x is torch.x)


from ..overrides import (has_torch_function, has_torch_function_unary, has_torch_function_variadic,  # noqa: E402
                         handle_torch_function)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, True)


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
