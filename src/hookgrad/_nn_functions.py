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


def conv_tbc(input, weight, bias, pad=0):
    return F.conv_tbc(input, weight, bias, pad)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """torch.embedding_renorm_: the rows of ``input`` (an embedding weight) that ``indices`` names, scaled in
    place to a ``norm_type``-norm of at most ``max_norm`` (PyTorch's in-place checks first)."""
    from .primitives._inplace import check_inplace
    if indices._data.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, "
                           f"Int; but got torch.{indices.dtype._legacy} instead (while checking arguments for "
                           "embedding_renorm_)")
    if input.dim() != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {input.dim()}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for embedding_renorm_)")
    check_inplace(input)
    idx = indices._data
    n = input.shape[0]
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise IndexError(f"select(): index {int(bad.reshape(-1)[0])} out of range for tensor of size "
                         f"{list(input.shape)} at dimension 0")
    F._embedding_renorm(input, idx % n, max_norm, norm_type)
    return input


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return F.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return F.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """ATen's generic convolution: 1-D, 2-D or 3-D, plain or transposed."""
    nd = weight.dim() - 2
    if nd not in (1, 2, 3):
        raise NotImplementedError(f"hookgrad: convolution over {nd} spatial dims is not implemented (1-D to 3-D are)")
    if transposed:
        f = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return f(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding), groups, tuple(dilation))
    f = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return f(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return F.avg_pool1d(input, kernel_size, stride or None, padding, ceil_mode, count_include_pad)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


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
    return F.rms_norm(input, normalized_shape, weight, eps)


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


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction, "margin_ranking_loss"))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction, "hinge_embedding_loss"))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction, "poisson_nll_loss"))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction, "triplet_margin_loss"))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction, "ctc_loss"),
                      zero_infinity)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """ATen's embedding_bag: (output, offset2bag, bag_size, max_indices) for 1-D indices with offsets."""
    return F._embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, per_sample_weights,
                            include_last_offset, padding_idx, sparse)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def constant_pad_nd(input, pad, value=0):
    return F.pad(input, list(pad), "constant", value)


# defined in nn.functional (F.x is torch.x, as in PyTorch)
channel_shuffle, native_channel_shuffle = F.channel_shuffle, F.native_channel_shuffle
pixel_shuffle, pixel_unshuffle = F.pixel_shuffle, F.pixel_unshuffle




# the sampling ops of nn.functional (torch.grid_sampler takes the modes as integers)
grid_sampler, affine_grid_generator = F._grid_sampler, F._affine_grid_generator


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return F._grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return F._grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)
