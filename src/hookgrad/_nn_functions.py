"""torch.<nn op>: PyTorch's top-level forms of nn.functional operations (``torch.conv2d``, ``torch.batch_norm``,
``torch.dropout``, ...). Their signatures are ATen's (positional ``training``, integer ``reduction``, weight
before running stats), not nn.functional's; each one calls the nn.functional implementation."""
from .nn import functional as F

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _reduction(r, fname):
    if isinstance(r, str) or r not in _REDUCTION:
        raise TypeError(f"{fname}(): argument 'reduction' must be int, not {type(r).__name__}")
    return _REDUCTION[r]


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return F.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """ATen's generic convolution: 1-D or 2-D, plain or transposed."""
    nd = weight.dim() - 2
    if nd not in (1, 2):
        raise NotImplementedError(f"hookgrad: convolution over {nd} spatial dims is not implemented (1-D and 2-D are)")
    if transposed:
        f = F.conv_transpose1d if nd == 1 else F.conv_transpose2d
        return f(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding), groups, tuple(dilation))
    f = F.conv1d if nd == 1 else F.conv2d
    return f(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return F.avg_pool1d(input, kernel_size, stride or None, padding, ceil_mode, count_include_pad)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def adaptive_avg_pool1d(input, output_size):
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the normalized dims) + eps) (* weight); eps defaults to the dtype's epsilon."""
    from ._dtype import finfo
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if tuple(input.shape[input.dim() - n:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, "
                           f"{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}")
    if eps is None:
        eps = finfo(input.dtype).eps
    dims = tuple(range(input.dim() - n, input.dim()))
    out = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """ATen's embedding(weight, indices, ...): the weight first (nn.functional's takes the indices first)."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def dropout(input, p, train):
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, train, inplace=True)


def _feature_shape_dropout(input, p, train, inplace):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return F.dropout2d(input, p, train, inplace) if input.dim() != 3 else F.dropout1d(input, p, train, inplace)


def feature_dropout(input, p, train):
    """Dropout of whole channels (dim 1) of an input with at least 2 dims."""
    return _feature_shape_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    return _feature_shape_dropout(input, p, train, True)


def bilinear(input1, input2, weight, bias=None):
    return F.bilinear(input1, input2, weight, bias)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction, "binary_cross_entropy_with_logits"),
                                              pos_weight=pos_weight)


def kl_div(input, target, reduction=0, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction(reduction, "kl_div"), log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction, "cosine_embedding_loss"))


def constant_pad_nd(input, pad, value=0):
    return F.pad(input, list(pad), "constant", value)


# defined in nn.functional (F.x is torch.x, as in PyTorch)
channel_shuffle, native_channel_shuffle = F.channel_shuffle, F.native_channel_shuffle
pixel_shuffle, pixel_unshuffle = F.pixel_shuffle, F.pixel_unshuffle


