"""PowerSGD gradient compression (Vogels et al., 2019, https://arxiv.org/abs/1905.13727) as PyTorch's DDP
communication hooks: ``powerSGD_hook`` compresses each matrix-shaped gradient of a bucket to rank-r factors P, Q;
``batched_powerSGD_hook`` compresses the whole bucket viewed as one square matrix. Error feedback and warm start
live in ``PowerSGDState``; its random initial Q draws PyTorch's numbers (the state's NumPy RandomState gives a
seed; ``manual_seed`` + ``randn`` under ``fork_rng``), so a run follows PyTorch's trajectory."""
import logging
import math
from collections import defaultdict

import numpy as np

from ... import distributed_c10d as dist
from .... import _dtype as D
from ...._creation import empty, manual_seed, randn, tensor as _tensor, zeros
from ....primitives.decomp import qr
from ....primitives.join import cat, stack
from ....random import fork_rng
from . import default_hooks as default

__all__ = ["PowerSGDState", "powerSGD_hook", "batched_powerSGD_hook"]

logger = logging.getLogger(__name__)


def _orthogonalize(matrices, epsilon=0):
    """Orthonormalise the columns of each matrix of the batch ``matrices`` (b, n, r) in place: Gram-Schmidt
    for rank <= 2 or half precision (PyTorch's choice: QR needs float32+), else QR."""
    if not (len(matrices.shape) == 3 and matrices.shape[2] <= matrices.shape[1]):
        raise AssertionError
    rank = matrices.shape[2]
    if rank <= 2 or matrices.dtype in (D.float16, D.bfloat16):
        _orthogonalize_gram_schmidt(matrices, epsilon=epsilon)
    else:
        matrices.copy_(qr(matrices)[0])


def _orthogonalize_gram_schmidt(matrices, epsilon=0):
    """Gram-Schmidt on the columns of each matrix, in place; ``epsilon`` guards a column of zeros."""
    num_cols = matrices.shape[2]
    for i in range(num_cols):
        col = matrices[:, :, i:i + 1]
        # NOTE: a column of zeros gives NaNs with epsilon 0 (PyTorch's ZeroDivisionError branch never runs
        # for tensors); set orthogonalization_epsilon (1e-8) where that can happen
        if epsilon == 0:
            col /= col.norm(dim=1, keepdim=True)
        else:
            col /= col.norm(dim=1, keepdim=True) + epsilon
        if i + 1 < num_cols:
            rest = matrices[:, :, i + 1:]
            rest -= (col * rest).sum(dim=1, keepdim=True) * col


def _should_compress(num_rows, num_cols, matrix_approximation_rank, min_compression_rate):
    """(worth compressing, elements before, elements after): worth it when ``min_compression_rate`` times the
    compressed size, ``(num_rows + num_cols) * rank``, is below ``num_rows * num_cols``."""
    uncompressed_size = num_rows * num_cols
    compressed_size = (num_rows + num_cols) * matrix_approximation_rank
    return compressed_size * min_compression_rate < uncompressed_size, uncompressed_size, compressed_size


def _report_compression_stats(bucket, state):
    if bucket.is_last() and state.iter >= state.next_stats_report:
        stats = state.compression_stats()
        logger.info("Compression stats: iter %s, total before compression %s, total after compression %s, "
                    "rate %s", state.iter, stats[1], stats[2], stats[0])
        state.next_stats_report = state.iter + state.compression_stats_logging_frequency


class PowerSGDState:
    r"""The hyperparameters and the state (error feedback, warm-start factors, iteration count) of PowerSGD.

    ``matrix_approximation_rank`` (r) sets the compression; ``start_powerSGD_iter`` runs plain allreduce for
    that many iterations first (at least 2 with error feedback or warm start: DDP rebuilds its buckets after the
    first iteration); a matrix is compressed only when ``(rows + cols) * r * min_compression_rate < rows * cols``;
    ``orthogonalization_epsilon`` guards columns of zeros; ``batch_tensors_with_same_shape`` compresses
    same-shaped gradients of a bucket in one batched product.

    Example::
        >>> state = PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=10)
        >>> ddp_model.register_comm_hook(state, powerSGD_hook)
    """

    __slots__ = ["process_group", "matrix_approximation_rank", "start_powerSGD_iter", "min_compression_rate",
                 "orthogonalization_epsilon", "use_error_feedback", "warm_start", "batch_tensors_with_same_shape",
                 "rng", "error_dict", "p_memory_dict", "q_memory_dict", "iter", "total_numel_before_compression",
                 "total_numel_after_compression", "compression_stats_logging_frequency", "next_stats_report"]

    def __init__(self, process_group, matrix_approximation_rank=1, start_powerSGD_iter=1_000,
                 min_compression_rate=2, use_error_feedback=True, warm_start=True, orthogonalization_epsilon=0,
                 random_seed=0, compression_stats_logging_frequency=10_000, batch_tensors_with_same_shape=False):
        logger.info(
            "PowerSGD config: matrix_approximation_rank = %s; start_powerSGD_iter = %s; "
            "min_compression_rate = %s; orthogonalization_epsilon = %s; use_error_feedback = %s; warm_start = %s; "
            "random_seed = %s; compression_stats_logging_frequency = %s; batch_tensors_with_same_shape = %s",
            matrix_approximation_rank, start_powerSGD_iter, min_compression_rate, orthogonalization_epsilon,
            use_error_feedback, warm_start, random_seed, compression_stats_logging_frequency,
            batch_tensors_with_same_shape)
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled, "
                             "because PowerSGD can only be applied after the first two iterations in DDP.")
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        # PyTorch's generator of the seeds of the random initial Qs (one draw per initialisation)
        self.rng = np.random.RandomState(random_seed)
        self.error_dict = {}
        self.p_memory_dict = {}
        self.q_memory_dict = {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape

    def __getstate__(self):
        """The state to pickle: every slot but ``process_group`` (not serialisable)."""
        logger.warning("NOTE: Process group is not serializable and excluded from a saved state.")
        return {slot: getattr(self, slot) for slot in self.__slots__ if slot != "process_group"}

    def __setstate__(self, state):
        """Restore a pickled state; ``process_group`` becomes the default group."""
        self.process_group = _default_group()
        logger.warning("NOTE: Process group will be set to a default group (i.e. the world size).\
                If a different group is desired, please set `self.process_group` after PowerSGD state is loaded.")
        for slot, value in state.items():
            setattr(self, slot, value)

    def maybe_increase_iter(self, bucket):
        """Count an iteration at its last bucket; log when compression starts."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_powerSGD_iter:
            logger.info("Start to apply PowerSGD after %s iterations.", self.iter)

    def compression_stats(self):
        """(compression rate, elements before compression, elements after compression), totals so far."""
        compress_rate = (self.total_numel_before_compression / self.total_numel_after_compression
                         if self.total_numel_after_compression > 0 else 0)
        return compress_rate, self.total_numel_before_compression, self.total_numel_after_compression


def _default_group():
    g = dist.group.WORLD
    if g is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return g


def _random_qs(state, qs, dtype):
    """Fill each Q with PyTorch's numbers: ``manual_seed(rng.randint(1e9))`` then ``randn`` per Q, under
    fork_rng so that the global generator is left as it was."""
    with fork_rng(devices=[]):
        manual_seed(state.rng.randint(1_000_000_000))
        for q in qs:
            q.copy_(randn(*q.shape, device="cpu", dtype=dtype))
            _orthogonalize(q, state.orthogonalization_epsilon)


def powerSGD_hook(state, bucket):
    r"""PowerSGD: each gradient of the bucket viewed as a matrix M (rows: its first dim) is replaced by the
    rank-r product P Q^T averaged over the ranks, where P = M Q (allreduced, orthogonalised) and
    Q = M^T P (allreduced); vectors and matrices that do not compress well are allreduced as they are.
    Plain allreduce runs for the first ``state.start_powerSGD_iter`` iterations.

    Example::
        >>> state = PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=10,
        ...                       min_compression_rate=0.5)
        >>> ddp_model.register_comm_hook(state, powerSGD_hook)
    """
    group_to_use = state.process_group if state.process_group is not None else dist.group.WORLD
    world_size = group_to_use.size()
    input_tensor = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default._allreduce_fut(group_to_use, input_tensor)

    dtype = input_tensor.dtype
    bucket_index = bucket.index()
    input_tensor_cp = None
    total_length = input_tensor.shape[0]
    if state.use_error_feedback:          # add the error of the last compression before compressing again
        if bucket_index in state.error_dict:
            input_tensor.add_(state.error_dict[bucket_index])
        else:
            logger.info("A zero tensor of length %s that represents local error is created.", total_length)
            state.error_dict[bucket_index] = zeros(total_length, dtype=dtype)
        input_tensor_cp = input_tensor.detach().clone()

    tensors = bucket.gradients()
    tensors_to_compress, uncompressed_tensors = [], []
    total_Ps_size = total_Qs_size = 0
    for t in tensors:
        matrix = t.view(t.shape[0], -1)
        n, m = matrix.shape
        r = min(n, m, state.matrix_approximation_rank)
        compress, before, after = _should_compress(n, m, r, state.min_compression_rate)
        state.total_numel_before_compression += before
        if compress:
            tensors_to_compress.append(matrix)
            total_Ps_size += n * r
            total_Qs_size += m * r
            state.total_numel_after_compression += after
        else:
            uncompressed_tensors.append(t)
            state.total_numel_after_compression += before
    _report_compression_stats(bucket, state)

    uncompressed_tensors_memory = (cat([t.view(-1) for t in uncompressed_tensors]) if uncompressed_tensors
                                   else _tensor([], dtype=dtype))

    need_randomize_qs = False
    if not state.warm_start or bucket_index not in state.p_memory_dict:
        need_randomize_qs = True
        if state.warm_start:
            logger.info("Allocating contiguous memory of length %s for Ps, and of length %s for Qs, respectively.",
                        total_Ps_size, total_Qs_size)
        state.p_memory_dict[bucket_index] = empty(total_Ps_size, dtype=dtype)
        state.q_memory_dict[bucket_index] = empty(total_Qs_size, dtype=dtype)

    shape_to_tensors = defaultdict(list)
    for t in tensors_to_compress:
        shape_to_tensors[t.shape].append(t)

    def maybe_batched_tensors_to_compress():
        for same in shape_to_tensors.values():
            if state.batch_tensors_with_same_shape:
                yield same[0].unsqueeze(0) if len(same) == 1 else stack(same)
            else:
                for t in same:
                    yield t.unsqueeze(0)

    tensors_to_compress, ps, qs = [], [], []
    p_idx = q_idx = 0
    for t in maybe_batched_tensors_to_compress():
        batch_size, n, m = t.shape
        r = min(n, m, state.matrix_approximation_rank)
        tensors_to_compress.append(t)
        ps.append(state.p_memory_dict[bucket_index][p_idx:p_idx + batch_size * n * r].view(batch_size, n, r))
        qs.append(state.q_memory_dict[bucket_index][q_idx:q_idx + batch_size * m * r].view(batch_size, m, r))
        p_idx += batch_size * n * r
        q_idx += batch_size * m * r

    if not need_randomize_qs:             # warm start: last iteration's Qs, orthogonalised again
        for q in qs:
            _orthogonalize(q, state.orthogonalization_epsilon)
    else:
        _random_qs(state, qs, dtype)

    for t, q, p in zip(tensors_to_compress, qs, ps):
        p.copy_(t.bmm(q))                 # P = M Q

    allreduce_uncompressed_fut = dist.all_reduce(uncompressed_tensors_memory, group=group_to_use,
                                                 async_op=True).get_future()

    def unpack_uncompressed_tensors_and_allreduce_ps(fut):
        memory = fut.value()[0].div_(world_size)
        idx = 0
        for t in uncompressed_tensors:
            t.copy_(memory[idx:idx + t.numel()].view_as(t))
            idx += t.numel()
        return dist.all_reduce(state.p_memory_dict[bucket_index], group=group_to_use,
                               async_op=True).get_future().wait()[0]

    def compute_qs(fut):
        state.p_memory_dict[bucket_index] = fut.value()
        for p in ps:
            _orthogonalize(p, state.orthogonalization_epsilon)
        for t, p, q in zip(tensors_to_compress, ps, qs):
            q.copy_(t.transpose(1, 2).bmm(p))        # Q = M^T P
        return dist.all_reduce(state.q_memory_dict[bucket_index], group=group_to_use,
                               async_op=True).get_future().wait()[0]

    def decompress(fut):
        state.q_memory_dict[bucket_index] = fut.value().div_(world_size)
        for p, q, t in zip(ps, qs, tensors_to_compress):
            t.copy_(p.bmm(q.transpose(1, 2)))        # M ~ P Q^T, written into the bucket
        if state.batch_tensors_with_same_shape:
            for t in tensors_to_compress:
                if t.shape[0] == 1:
                    continue                         # a batch of one is a view of the bucket already
                for i, original in enumerate(shape_to_tensors[t.shape[1:]]):
                    original.copy_(t[i])
        if state.use_error_feedback:
            state.error_dict[bucket_index] = input_tensor_cp - input_tensor
        if not state.warm_start:
            state.p_memory_dict.clear()
            state.q_memory_dict.clear()
        state.maybe_increase_iter(bucket)
        return input_tensor

    return (allreduce_uncompressed_fut.then(unpack_uncompressed_tensors_and_allreduce_ps)
            .then(compute_qs).then(decompress))


def batched_powerSGD_hook(state, bucket):
    r"""Simplified PowerSGD: the whole bucket, zero-padded to a square matrix, is compressed at once (faster,
    usually much less accurate than powerSGD_hook unless the rank is 1).

    Example::
        >>> state = PowerSGDState(process_group=None, matrix_approximation_rank=1)
        >>> ddp_model.register_comm_hook(state, batched_powerSGD_hook)
    """
    group_to_use = state.process_group if state.process_group is not None else dist.group.WORLD
    world_size = group_to_use.size()
    input_tensor = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default._allreduce_fut(group_to_use, input_tensor)

    total_length = input_tensor.shape[0]
    state.total_numel_before_compression += total_length
    square_side_length = math.ceil(math.sqrt(total_length))
    state.total_numel_after_compression += square_side_length * state.matrix_approximation_rank * 2
    padded_total_length = square_side_length ** 2
    input_tensor.resize_(padded_total_length)
    input_tensor[total_length:padded_total_length].fill_(0)
    _report_compression_stats(bucket, state)

    bucket_index = bucket.index()
    input_tensor_cp = None
    if state.use_error_feedback:
        if bucket_index in state.error_dict:
            input_tensor.add_(state.error_dict[bucket_index])
        else:
            logger.info("A zero tensor of length %s that represents local error is created.", padded_total_length)
            state.error_dict[bucket_index] = zeros(padded_total_length, dtype=input_tensor.dtype)
        input_tensor_cp = input_tensor.detach().clone()
    matrix = input_tensor.view(square_side_length, square_side_length)

    if not state.warm_start or bucket_index not in state.p_memory_dict:
        if state.warm_start:
            logger.info("Initializing low-rank tensors P and Q, each of which has a shape of %s x %s.",
                        square_side_length, state.matrix_approximation_rank)
        state.p_memory_dict[bucket_index] = empty(square_side_length, state.matrix_approximation_rank,
                                                  dtype=input_tensor.dtype)
        with fork_rng(devices=[]):
            manual_seed(state.rng.randint(1_000_000_000))
            state.q_memory_dict[bucket_index] = randn(square_side_length, state.matrix_approximation_rank,
                                                      device="cpu", dtype=input_tensor.dtype)

    # NOTE: PyTorch 2.13 passes the 2-D Q to _orthogonalize, which asserts a 3-D batch (AssertionError at the
    # first compressed iteration); here it is orthogonalised as a batch of one (docs/differences.md)
    _orthogonalize(state.q_memory_dict[bucket_index].unsqueeze(0))
    state.p_memory_dict[bucket_index].copy_(matrix.matmul(state.q_memory_dict[bucket_index]))
    allreduce_p_fut = dist.all_reduce(state.p_memory_dict[bucket_index], group=group_to_use,
                                      async_op=True).get_future()

    def compute_q(fut):
        state.p_memory_dict[bucket_index] = fut.value()[0]
        _orthogonalize(state.p_memory_dict[bucket_index].unsqueeze(0))
        state.q_memory_dict[bucket_index].copy_(matrix.t().matmul(state.p_memory_dict[bucket_index]))
        return dist.all_reduce(state.q_memory_dict[bucket_index], group=group_to_use,
                               async_op=True).get_future().wait()[0]

    def decompress(fut):
        state.q_memory_dict[bucket_index] = fut.value().div_(world_size)
        matrix.copy_(state.p_memory_dict[bucket_index].matmul(state.q_memory_dict[bucket_index].t()))
        if state.use_error_feedback:
            state.error_dict[bucket_index] = input_tensor_cp - input_tensor
        if not state.warm_start:
            state.p_memory_dict.clear()
            state.q_memory_dict.clear()
        ret = input_tensor.resize_(total_length)
        state.maybe_increase_iter(bucket)
        return ret

    return allreduce_p_fut.then(compute_q).then(decompress)
