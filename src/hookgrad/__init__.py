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


# ---- issue 10 breadth: each part adds its exports in its own block (keeps concurrent edits apart)
# [part C: elementwise maths]
# [end C]
# [part D1: reductions, indexing, sets, distances]
# [end D1]
# [part D2: shape, products, creation]
# [end D2]
# [part E: legacy tensor API]
FloatTensor = DoubleTensor = LongTensor = Tensor  # isinstance() checks in old code
# [end E]
# [part B: load-time modules]
# [end B]
# [part A: torch.ops, missing names, checkpoint]
# [end A]
# [part H: alias]
# [end H]
strided = "torch.strided"
contiguous_format = preserve_format = channels_last = None
__version__ = "0.1.0"
