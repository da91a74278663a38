"""hookgrad: a define-by-run autograd and nn library over NumPy whose hooks behave exactly like PyTorch's.

``import hookgrad as torch`` runs PyTorch code unchanged where hookgrad covers the API.
"""
import numpy as _np

# PyTorch computes inf/nan silently; NumPy would warn from inside every op. NOTE: this sets NumPy's
# error state for the importing thread (documented in docs/differences.md).
_np.seterr(divide="ignore", invalid="ignore", over="ignore", under="ignore")

# Keep freed activations in the heap between training steps instead of page-faulting them back in
# every step (glibc only; HOOKGRAD_MALLOC_TUNING=0 opts out; see _malloc.py and docs/differences.md).
from . import _malloc
_malloc.tune()

from ._dtype import (dtype, bool_ as bool, uint8, int8, int16, int32, int64, float16, float32, float64,
                     get_default_dtype, set_default_dtype, promote_types, finfo, iinfo)
from ._dtype import float16 as half, float32 as float, float64 as double, int64 as long, int32 as int, \
    int16 as short, uint8 as byte, int8 as char
from ._dtype import complex64, complex128, complex64 as cfloat, complex128 as cdouble
from ._dtype import bfloat16
from ._dtype import (uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,  # noqa: F401
                     float8_e8m0fnu, float4_e2m1fn_x2)
globals().update((_d.name, _d) for _d in __import__("hookgrad._dtype", fromlist=["NO_KERNELS"]).NO_KERNELS)
chalf = complex32  # noqa: F821  (set just above)
from ._tensor import Tensor, Size, device
from ._printing import set_printoptions
from .autograd.grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, \
    is_inference_mode_enabled
from . import primitives as _ops
from ._creation import (tensor, as_tensor, asarray, from_numpy, zeros, ones, empty, full, zeros_like, ones_like,
                        empty_like, full_like, arange, linspace, logspace, eye, rand, randn, randint, randperm,
                        rand_like, randn_like, randint_like, bernoulli, multinomial, normal, manual_seed, seed,
                        initial_seed, get_rng_state, set_rng_state, Generator, default_generator)
from .primitives.elementwise import (add, sub, subtract, mul, multiply, div, divide, true_divide, pow, neg, negative, abs,
                              absolute, exp, expm1, log, log2, log10, log1p, sqrt, rsqrt, sin, cos, tan, tanh,
                              sigmoid, erf, reciprocal, relu, sign, floor, ceil, round, trunc, fix, frac, clamp,
                              clip, clamp_min, clamp_max, minimum, maximum, fmax, fmin, floor_divide, remainder,
                              fmod, square, atan2, arctan2, lerp, rsub)
from .primitives.reduce import (sum, mean, prod, var, std, var_mean, std_mean, max, min, amax, amin, argmax, argmin, aminmax,
                         logsumexp, cumsum, cumprod, norm, sort, argsort, topk, msort, median, nanmedian, kthvalue,
                         mode, cummax, cummin)
from .primitives.linalg import matmul, mm, bmm, mv, dot, inner, addmm, outer, ger, einsum
from .primitives.shape import (reshape, flatten, unflatten, permute, transpose, swapaxes, swapdims, t, squeeze, unsqueeze,
                        clone, flip, fliplr, flipud, roll, tile, movedim, moveaxis, broadcast_to, narrow, tril, triu,
                        diagonal, diag, diag_embed, trace)
from .primitives.join import (cat, concat, concatenate, stack, hstack, vstack, dstack, row_stack, column_stack, split, chunk,
                       tensor_split, hsplit, vsplit, dsplit, unbind, atleast_1d, atleast_2d)
from .primitives.index import (gather, scatter, scatter_add, index_select, select, index_add, masked_fill, masked_select, take,
                        index_copy, masked_scatter)
from .primitives.elementwise import selu, celu, relu6, hardtanh
from .primitives import linalg_ns as linalg, return_types
from .primitives import fft
from .primitives import special_ns as special   # torch.special
from .primitives.signal import stft, istft, signal, windows   # torch.stft / istft, torch.signal (torch.windows too)
from .primitives.special import igamma, igammac   # torch.igamma / igammac: special.gammainc / gammaincc
from ._sample_fns import poisson, binomial   # samples drawn with the distributions' samplers
from .primitives.index import (where, eq, ne, lt, le, gt, ge, not_equal, less, less_equal, greater, greater_equal,
                        logical_and, logical_or, logical_xor, logical_not, bitwise_and, bitwise_or, bitwise_xor,
                        bitwise_not, isnan, isinf, isfinite, isposinf, isneginf, equal, allclose, isclose, nonzero,
                        argwhere, any, all, index_put)
from . import autograd
from . import _C
from .autograd.anomaly_mode import is_anomaly_enabled, is_anomaly_check_nan_enabled, set_anomaly_enabled
from .autograd import Node as _Node
from . import utils
from . import cuda, backends
from ._misc import (is_tensor, is_floating_point, numel, set_num_threads, get_num_threads,
                    use_deterministic_algorithms, are_deterministic_algorithms_enabled, compile)
from . import nn
from . import optim
from . import models
from . import tools
from .serialization import save, load
from ._warnings import set_warn_always, is_warn_always_enabled


# elementwise maths
from .primitives.special import (asin, arcsin, acos, arccos, atan, arctan, asinh, arcsinh, acosh, arccosh, atanh,
                                 arctanh, sinh, cosh, exp2, erfc, erfinv, lgamma, digamma, polygamma, mvlgamma, i0,
                                 sinc, deg2rad, rad2deg, logit, nan_to_num, signbit, isreal, frexp,
                                 positive, conj_physical_, resolve_neg, is_neg, hypot, logaddexp, logaddexp2, xlogy, copysign, ldexp, heaviside,
                                 nextafter, gcd, lcm, bitwise_left_shift, bitwise_right_shift, float_power, addcmul,
                                 addcdiv, hardshrink, rrelu, rrelu_, prelu, softmax, log_softmax, threshold,
                                 threshold_, relu_, selu_, celu_)
from .primitives.complex import (real, imag, conj, conj_physical, resolve_conj, is_conj, sgn, angle, complex,
                                 polar, view_as_real, view_as_complex)
from .primitives.special import _neg_view  # noqa: E402
from .primitives.special import INPLACE_FUNCS as _C_INPLACE
globals().update(_C_INPLACE)
from math import pi, inf, nan, e
newaxis = None
# reductions, indexing, sets, distances
from .primitives.stats import (nansum, nanmean, logcumsumexp, quantile, nanquantile, cov, corrcoef, unique,
                               unique_consecutive, isin, count_nonzero, nonzero_static, bincount, histc, histogram,
                               searchsorted, bucketize, take_along_dim, index_fill, index_reduce, scatter_reduce, put,
                               renorm, dist, cdist, pdist, cosine_similarity, pairwise_distance)
# shape, products, creation
from .primitives.shape import (ravel, rot90, as_strided, select_scatter, slice_scatter, diagonal_scatter,
                               as_strided_scatter, view_copy, permute_copy, t_copy, transpose_copy, expand_copy,
                               squeeze_copy, unsqueeze_copy, select_copy, slice_copy, diagonal_copy, detach_copy,
                               alias_copy, unfold_copy, narrow_copy, diagflat, broadcast_shapes, broadcast_tensors,
                               meshgrid, repeat_interleave, diff, trapezoid, trapz, cumulative_trapezoid, vander,
                               unravel_index, as_strided_)
from .primitives.join import (atleast_3d, block_diag, unsafe_split, unsafe_split_with_sizes, unsafe_chunk)
from .primitives.shape import cartesian_prod, split_copy, split_with_sizes_copy, unbind_copy
from .primitives.index import combinations
from .primitives.rnn import (lstm, gru, rnn_tanh, rnn_relu, lstm_cell, gru_cell, rnn_tanh_cell,
                             rnn_relu_cell)
from .primitives.linalg import (addmv, addr, baddbmm, addbmm, vdot, chain_matmul, tensordot, kron, cross)
from .primitives.linalg_legacy import (det, inverse, slogdet, logdet, matrix_exp, matrix_power, pinverse, svd, qr,
                                       cholesky, cholesky_solve, cholesky_inverse, lu, lu_unpack, lu_solve,
                                       triangular_solve, geqrf, orgqr, ormqr, frobenius_norm, nuclear_norm, solve,
                                       lstsq, eig, symeig, matrix_rank, svd_lowrank, pca_lowrank)
from .primitives.lobpcg import lobpcg
from ._creation import (hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window,
                        range_deprecated as range, scalar_tensor, empty_strided, empty_permuted, frombuffer,
                        tril_indices, triu_indices, fill, get_default_device, set_default_device, result_type,
                        can_cast, is_nonzero, is_same_size, is_signed, is_inference,
                        is_distributed)
from ._nn_functions import conv_tbc, embedding_renorm_  # noqa: E402
from ._nn_functions import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, convolution,
                            avg_pool1d, max_pool1d, max_pool3d,
                            max_pool2d, max_pool1d_with_indices, adaptive_avg_pool1d, adaptive_max_pool1d, batch_norm,
                            instance_norm, layer_norm, group_norm, rms_norm, embedding, dropout, dropout_,
                            alpha_dropout, alpha_dropout_, feature_dropout, feature_dropout_, bilinear,
                            binary_cross_entropy_with_logits, kl_div, cosine_embedding_loss, constant_pad_nd,
                            channel_shuffle, native_channel_shuffle, pixel_shuffle, pixel_unshuffle,
                            margin_ranking_loss, hinge_embedding_loss, poisson_nll_loss, triplet_margin_loss, ctc_loss,
                            embedding_bag, feature_alpha_dropout, feature_alpha_dropout_)
from ._nn_functions import grid_sampler, grid_sampler_2d, grid_sampler_3d, affine_grid_generator  # sampling


def fill_(input, value):
    return input.fill_(value)


def zero_(input):
    return input.zero_()


def index_put_(input, indices, values, accumulate=False):
    return input.index_put_(indices, values, accumulate)


def resize_as_(input, the_template, *, memory_format=None):
    return input.resize_as_(the_template)


def detach(input):
    return input.detach()


def detach_(input):
    return input.detach_()


def is_complex(input):
    return input.is_complex()


def addmv_(input, mat, vec, *, beta=1, alpha=1):
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


# legacy tensor API
from ._tensor import (FloatTensor, DoubleTensor, HalfTensor, LongTensor, IntTensor, ShortTensor, CharTensor,
                      ByteTensor, BoolTensor, UntypedStorage, TypedStorage, is_storage, typename,
                      set_default_tensor_type)
# load-time modules
from . import futures, jit, multiprocessing, hub, __future__, distributed
from . import fx  # torch.fx (imported with torch, as in PyTorch)
from .fx._symbolic_trace import _assert  # noqa: E402
from . import func, _functorch, _vmap_internals  # noqa: E402,F401  (torch.func: function transforms)
from .func import vmap  # noqa: E402
from .futures import _CFuture as Future
# torch.ops, missing names, checkpoint
from . import ops  # PyTorch's operator namespace (torch.ops.aten); hookgrad's own ops are .primitives
from . import _missing
from .utils import checkpoint as _checkpoint  # torch.utils.checkpoint (imported with torch, as in PyTorch)
__getattr__ = _missing.module_getattr(__name__, "torch")  # torch names hookgrad lacks: NotImplementedName
# alias
from . import version, torch_version   # torch.version, torch.torch_version (the release hookgrad mirrors)
# the last everyday names
from ._layout import (layout, memory_format, strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc,
                      jagged, contiguous_format, preserve_format, channels_last, channels_last_3d,
                      legacy_contiguous_format)
from ._misc import (get_deterministic_debug_mode, set_deterministic_debug_mode,
                    is_deterministic_algorithms_warn_only_enabled, get_float32_matmul_precision,
                    set_float32_matmul_precision, get_num_interop_threads, set_num_interop_threads,
                    set_flush_denormal, get_device, FatalError, classproperty)
from . import random, testing, overrides, functional, types, cpu
from .random import thread_safe_generator
# torch.amp (autocast, GradScaler), torch.profiler and DLPack (issue 22)
from . import amp, profiler
from .amp import autocast, GradScaler  # noqa: F401
from .amp.autocast_mode import (is_autocast_enabled, set_autocast_enabled, get_autocast_dtype,  # noqa: F401
                                set_autocast_dtype, is_autocast_cache_enabled, set_autocast_cache_enabled,
                                autocast_increment_nesting, autocast_decrement_nesting, clear_autocast_cache,
                                is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype,
                                set_autocast_cpu_dtype, get_autocast_gpu_dtype, set_autocast_gpu_dtype)
from .amp.grad_scaler import _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_  # noqa: F401
from .utils.dlpack import from_dlpack  # noqa: F401
from . import storage
# sparse tensors (issue 27): the ops and Tensor methods (primitives/sparse.py), torch.sparse
from .primitives.sparse import (sparse_coo_tensor, sparse_csr_tensor, sparse_csc_tensor, sparse_bsr_tensor,  # noqa: E402
                                sparse_bsc_tensor, sparse_compressed_tensor, _sparse_coo_tensor_unsafe,
                                _convert_indices_from_coo_to_csr, _convert_indices_from_csr_to_coo)
from . import sparse  # noqa: E402
from .storage import (StorageBase, FloatStorage, DoubleStorage, HalfStorage, LongStorage, IntStorage, ShortStorage,
                      CharStorage, ByteStorage, BoolStorage, FloatStorage as Storage)
from .primitives.everyday import adjoint, slice_inverse, as_strided_copy, split_with_sizes
from .primitives.weight_norm import _weight_norm, norm_except_dim  # noqa: F401
from .primitives.foreach import *  # noqa: F401,F403  (torch._foreach_*, issue 27)
from .primitives.stats import _unique, _unique2  # noqa: F401
from .autograd._test_ops import (_test_autograd_multiple_dispatch, _test_autograd_multiple_dispatch_view,  # noqa: F401
                                 _test_autograd_multiple_dispatch_view_copy)
# out= (after every block that defines functions): PyTorch's out= semantics for each function that has it in
# PyTorch, one wrapper (primitives/_out.py); nn.functional's names that are torch's functions get the same object
from .primitives import _out
_out.install(globals())
_out.install(linalg.__dict__, "linalg", "linalg_")
del _out
__version__ = "0.1.0"
torch = __import__("sys").modules[__name__]     # torch.torch: the module itself, as in PyTorch
from . import __config__  # noqa: E402  (torch.__config__: how this library is built)
from ._C import PyTorchFileReader  # noqa: E402,F401  (torch.PyTorchFileReader: a checkpoint's records)
from .jit import ScriptModule, ScriptFunction  # noqa: E402,F401  (torch.ScriptModule, as PyTorch exports them)
# PyTorch's argument-parser errors (after every block that defines or wraps functions)
from .primitives._dispatch import install_checks as _r_install
from ._missing import torch_names as _missing_names
_r_install(globals(), names=_missing_names("torch"))
_r_install(linalg.__dict__, names=_missing_names("torch.linalg"))
_r_install(fft.__dict__, names=_missing_names("torch.fft"))
_r_install(special.__dict__, names=_missing_names("torch.special"))
del _r_install, _missing_names
# nn.functional's names that are torch's functions: the same (wrapped) objects as torch's, as in PyTorch
from .primitives._out import share as _share
_share(globals(), nn.functional.__dict__, _missing.torch_names("torch.nn.functional"))
del _share
# symbolic sizes exist only under compilation, which hookgrad does not do: the types for isinstance, the
# sym_* functions on concrete numbers
from ._symbolic import (SymInt, SymFloat, SymBool, sym_float, sym_int, sym_max, sym_min, sym_not,  # noqa: E402,F401
                        sym_ite, sym_sqrt, sym_sum, sym_fresh_size, sym_constrain_range,
                        sym_constrain_range_for_size)
