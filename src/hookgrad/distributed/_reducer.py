"""DDP's reducer, as PyTorch's C++ one (reducer.cpp, logger.cpp) does it: the bucket assignment, the
Reducer (gradient buckets filled by post-accumulate-grad hooks, each full bucket launched in index order as
a non-blocking collective or through a communication hook, an end-of-backward callback that waits and writes
the results back into ``.grad``), the bucket rebuild from the observed gradient-ready order, the checks that
the ranks hold the same parameters, and the logging data (``_get_ddp_logging_data``).

Per step the reducer works on arrays laid out once per bucket layout (offsets, views): a hook call, one copy
into the bucket per parameter, one collective per bucket, one copy back per parameter.
"""
import os
import time
import weakref

import numpy as np

from .._array import array_module, writeable
from . import _mpi
from ._grad_bucket import GradBucket

__all__ = ["Reducer", "Logger", "BuiltinCommHookType", "compute_bucket_assignment_by_size",
           "DEFAULT_FIRST_BUCKET_BYTES", "verify_params_across_processes", "broadcast_coalesced"]

DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024    # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
_UNSET_DIV_FACTOR = -1
_RUNTIME_LOGGING_SAMPLE_RATE = 100          # kDDPRuntimeLoggingSampleRate


class BuiltinCommHookType:
    """torch.distributed.BuiltinCommHookType: the C++ communication hooks (``_register_builtin_comm_hook``)."""
    __slots__ = ("name", "value")

    def __init__(self, name, value):
        self.name, self.value = name, value

    def __repr__(self):
        return f"<BuiltinCommHookType.{self.name}: {self.value}>"

    def __str__(self):
        return f"BuiltinCommHookType.{self.name}"

    def __int__(self):
        return self.value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        return isinstance(other, BuiltinCommHookType) and other.value == self.value


BuiltinCommHookType.ALLREDUCE = BuiltinCommHookType("ALLREDUCE", 1)
BuiltinCommHookType.FP16_COMPRESS = BuiltinCommHookType("FP16_COMPRESS", 2)
BuiltinCommHookType.__members__ = {"ALLREDUCE": BuiltinCommHookType.ALLREDUCE,
                                   "FP16_COMPRESS": BuiltinCommHookType.FP16_COMPRESS}


# ------------------------------------------------------------------------------------------------
# bucket assignment

def compute_bucket_assignment_by_size(tensors, bucket_size_limits, expect_sparse_gradient=(), tensor_indices=(),
                                      logger=None):
    """torch.distributed._compute_bucket_assignment_by_size: group ``tensors`` into buckets, one running
    bucket per dtype, closed once it holds ``bucket_size_limits[k]`` bytes (the k-th limit for the k-th bucket
    of that dtype, the last limit from then on). Tensors expecting a sparse gradient get a bucket each.
    Without ``tensor_indices`` the buckets are sorted by their smallest index; with them (the gradient-ready
    order of a rebuild), ``tensors[i]`` has index ``tensor_indices[i]`` and the order is kept.
    Returns (bucket indices, the size limit of each bucket)."""
    if len(tensors) == 0:
        raise RuntimeError("!tensors.empty() INTERNAL ASSERT FAILED (hookgrad: _compute_bucket_assignment_by_size "
                           "needs at least one tensor)")
    expect_sparse_gradient = list(expect_sparse_gradient)
    tensor_indices = [int(i) for i in tensor_indices]
    limits = [int(b) for b in bucket_size_limits]
    result = []
    open_ = {}          # dtype -> [indices, bytes, limit]; the key stays once made (C++'s map keeps it)
    position = {}       # dtype -> index into limits
    for i, t in enumerate(tensors):
        if getattr(t, "is_sparse", False):
            raise RuntimeError("No support for sparse tensors.")
        index = tensor_indices[i] if tensor_indices else i
        if expect_sparse_gradient and expect_sparse_gradient[index]:
            result.append(([index], 0))
            continue
        key = t._data.dtype
        bucket = open_.get(key)
        if bucket is None:
            bucket = open_[key] = [[], 0, 0]
            position[key] = 0
        bucket[0].append(index)
        bucket[1] += t._data.size * t._data.itemsize
        bucket[2] = limits[position[key]]
        if bucket[1] >= bucket[2]:
            result.append((bucket[0], bucket[2]))
            open_[key] = [[], 0, 0]
            if position[key] + 1 < len(limits):
                position[key] += 1
    # NOTE: the partly filled buckets follow in the order PyTorch's unordered_map (libstdc++) yields them:
    # the dtypes in reverse order of first appearance. Without tensor_indices the sort below decides anyway.
    for key in reversed(list(open_)):
        if open_[key][0]:
            result.append((open_[key][0], open_[key][2]))
    if not tensor_indices:
        result.sort(key=lambda r: min(r[0]))
    return [r[0] for r in result], [r[1] for r in result]


# ------------------------------------------------------------------------------------------------
# checks and broadcasts across ranks

def _sizes(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def verify_params_across_processes(process_group, params, logger=None):
    """torch.distributed._verify_params_across_processes: every rank holds as many parameters as the others,
    shaped as on rank 0; otherwise PyTorch's error, naming the first parameter that differs."""
    from . import distributed_c10d as c10d
    from .._creation import tensor as _tensor_of
    rank = process_group.rank()
    counts = [_tensor_of([0]) for _ in range(process_group.size())]
    c10d.all_gather(counts, _tensor_of([len(params)]), group=process_group)
    for i, c in enumerate(counts):
        n = int(c._data[0])
        if n != len(params):
            _fail(logger, RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has {len(params)} "
                                       f"params, while rank {i} has inconsistent {n} params."))
    meta = [[tuple(p.shape), tuple(p.stride())] for p in params]
    control = [meta]
    c10d.broadcast_object_list(control, src=process_group._global(0), group=process_group)
    for i, (p, (shape, strides)) in enumerate(zip(params, control[0])):
        if tuple(p.shape) != tuple(shape):
            _fail(logger, RuntimeError(f"[{rank}]: params[{i}] in this process with sizes {_sizes(p.shape)} "
                                       f"appears not to match sizes of the same param in process 0."))
        if tuple(p.stride()) != tuple(strides):
            _fail(logger, RuntimeError(f"params[{i}] in this process with sizes {_sizes(p.shape)} appears not to match "
                                       f"strides of the same param in process 0."))


def broadcast_coalesced(process_group, tensors, buffer_size, src=0):
    """torch.distributed._broadcast_coalesced: ``tensors`` of rank ``src`` (a group rank) copied into every
    rank's, one flat broadcast per dtype and ``buffer_size`` bytes."""
    from . import distributed_c10d as c10d
    from .._tensor import Tensor
    groups = {}
    for t in tensors:
        groups.setdefault(t._data.dtype, []).append(t)
    root = process_group._global(src)
    for dtype, ts in groups.items():
        chunk, size = [], 0
        for t in ts + [None]:
            if t is not None:
                chunk.append(t)
                size += t._data.nbytes
            if chunk and (t is None or size >= buffer_size):
                xp = array_module(chunk[0]._data)
                flat = xp.concatenate([c._data.reshape(-1) for c in chunk]) if len(chunk) > 1 \
                    else xp.ascontiguousarray(chunk[0]._data).reshape(-1).copy()
                c10d.broadcast(Tensor._make(flat), src=root, group=process_group)
                o = 0
                for c in chunk:
                    n = c._data.size
                    if writeable(c._data):
                        c._data[...] = flat[o:o + n].reshape(c._data.shape)
                    o += n
                    c._vc[0] += 1
                chunk, size = [], 0


def _fail(logger, error):
    if logger is not None:
        logger.set_error_and_log(f"{type(error)}: {error}")
    raise error


# ------------------------------------------------------------------------------------------------
# the reducer

class _Bucket:
    """One bucket: its parameters (indices into the reducer's), the flat buffer and one view per parameter,
    made once per layout; per step ``pending`` and the collective (``work``) or the hook's Future."""
    __slots__ = ("index", "variable_indices", "params", "offsets", "lengths", "sizes", "buffer", "buf", "views",
                 "grad_views", "pending", "work", "future", "sparse")

    def __init__(self, index, variable_indices, params, sparse):
        self.index = index
        self.variable_indices = list(variable_indices)
        self.params = params
        self.sparse = sparse
        self.offsets, self.lengths, self.sizes = [], [], []
        o = 0
        for p in params:
            n = p._data.size
            self.offsets.append(o)
            self.lengths.append(n)
            self.sizes.append(tuple(p._data.shape))
            o += n
        from .._tensor import Tensor
        xp = array_module(params[0]._data)
        self.buf = xp.zeros(o, params[0]._data.dtype)
        self.buffer = Tensor._make(self.buf)
        self.views = [self.buf[o:o + n].reshape(s) for o, n, s in zip(self.offsets, self.lengths, self.sizes)]
        self.grad_views = None
        self.pending = len(params)
        self.work = self.future = None

    def grad_view(self, j):
        """The j-th parameter's gradient as a Tensor view of ``buffer`` (gradient_as_bucket_view)."""
        if self.grad_views is None:
            from ..autograd.grad_mode import no_grad
            with no_grad():
                self.grad_views = [self.buffer[o:o + n].view(s)
                                   for o, n, s in zip(self.offsets, self.lengths, self.sizes)]
        return self.grad_views[j]

    def nbytes(self):
        return int(self.buf.nbytes)


def _now():
    return time.perf_counter_ns()


class Reducer:
    """torch.distributed.Reducer: see the module docstring. ``params`` are the module's parameters that
    require grad (deduplicated), ``bucket_indices`` the initial buckets (bucket 0 reduced first)."""

    def __init__(self, params, bucket_indices, per_bucket_size_limits, process_group, expect_sparse_gradients=(),
                 bucket_bytes_cap=25 * 1024 * 1024, find_unused_parameters=False, gradient_as_bucket_view=False,
                 param_to_name_mapping=None, first_bucket_bytes_cap=DEFAULT_FIRST_BUCKET_BYTES,
                 skip_all_reduce_unused_params=False, use_python_reducer=False, bucket_size_limits_for_rebuilding=(),
                 batched_grad_copy=False):
        if not params:
            raise RuntimeError("Expected at least one parameter.")
        self.params = list(params)
        self.process_group = process_group
        self.expect_sparse = list(expect_sparse_gradients) or [False] * len(self.params)
        self.bucket_bytes_cap = int(bucket_bytes_cap)
        self.first_bucket_bytes_cap = int(first_bucket_bytes_cap)
        self.rebuild_limits = [int(b) for b in bucket_size_limits_for_rebuilding]
        self.find_unused = bool(find_unused_parameters)
        self.grad_as_view = bool(gradient_as_bucket_view)
        self.param_names = dict(param_to_name_mapping or {})
        self.static_graph = False
        self.comm_hook = None           # (state, hook) or None: allreduce of the pre-divided bucket
        self.logger = None
        self.num_iterations = 0
        self.expect_hooks = False
        self.require_finalize = False
        self.first_hook_called = False
        self.num_bwd_calls = 0
        self.next_bucket = 0
        self.num_buckets_ready = 0
        self.num_buckets_reduced = 0
        self.div_factor = _UNSET_DIV_FACTOR
        self.forward_work = None        # (Work, use_static_world_size) from Join
        self.has_marked_unused = False
        self.unused = []
        self.ready = bytearray(len(self.params))     # 1: the parameter's gradient is in its bucket this iteration
        self.plain = False              # this backward: no find_unused, no static graph (the fast path)
        self.rebuilding = False         # this backward records the gradient-ready order for the rebuild
        self.ready_order = []
        self.rebuilt = []               # parameter indices in gradient-ready order (iteration 1)
        self.has_rebuilt = False
        self.hooks_triggered = [0] * len(self.params)       # static graph: hook calls in iteration 1
        self.hooks_left = []
        self.local_used = None
        self.local_used_work = None
        self.local_used_reduced = False
        self.installed_futures = []
        self.sample_rate = _RUNTIME_LOGGING_SAMPLE_RATE
        self.times = dict.fromkeys(("forward_start", "backward_compute_start", "backward_compute_end",
                                    "backward_comm_start", "backward_comm_end"), -1)
        self.buckets = []
        self.locators = []
        self.initialize_buckets(bucket_indices)
        ref = weakref.ref(self)
        self.handles = [p.register_post_accumulate_grad_hook(_AutogradHook(ref, i)) for i, p in enumerate(self.params)]
        if self.find_unused:
            self.initialize_local_used_map()

    # ---- modes
    def dynamic_graph_find_unused(self):
        return not self.static_graph and self.find_unused

    def static_graph_first_iteration(self):
        return self.static_graph and self.num_iterations == 1

    def static_graph_after_first_iteration(self):
        return self.static_graph and self.num_iterations > 1

    def should_rebuild_buckets(self):
        return (self.static_graph or not self.find_unused) and not self.has_rebuilt

    def should_collect_runtime_stats(self):
        n = self.num_iterations
        return n > 0 and (n <= 10 or n % self.sample_rate == 0)

    def _check(self, cond, message):
        if not cond:
            _fail(self.logger, RuntimeError(message))

    # ---- buckets
    def initialize_buckets(self, bucket_indices):
        self._check(not self.expect_hooks, "`initialize_buckets` must NOT be called during autograd execution.")
        buckets = []
        locators = [None] * len(self.params)
        for b, indices in enumerate(bucket_indices):
            indices = [int(i) for i in indices]
            self._check(len(indices) > 0, "Empty bucket specified.")
            sparse = len(indices) == 1 and self.expect_sparse[indices[0]]
            if len(indices) > 1:
                for i in indices:
                    self._check(not self.expect_sparse[i], "Buckets with more than one variable cannot include "
                                                           "variables that expect a sparse gradient.")
            params = [self.params[i] for i in indices]
            for p in params[1:]:
                self._check(p._data.dtype == params[0]._data.dtype,
                            "All parameters in a bucket must have the same dtype.")
            bucket = _Bucket(b, indices, params, sparse)
            for j, i in enumerate(indices):
                locators[i] = (bucket, j)
            if self.grad_as_view:
                for j, p in enumerate(params):
                    g = p._grad
                    if g is not None and not np.may_share_memory(g._data, bucket.buf):
                        bucket.views[j][...] = g._data
                        p._grad = bucket.grad_view(j)
            buckets.append(bucket)
        self.buckets = buckets
        self.locators = locators

    def initialize_local_used_map(self):
        self.local_used = np.zeros(len(self.params), np.int32)

    def rebuild_buckets(self):
        """At the start of a forward: check the last backward finished, and once (iteration 2) lay the buckets
        out again in the order the gradients became ready, as rank 0 saw it. True when rebuilt."""
        self.ensure_prior_reduction_finished()
        if not self.should_rebuild_buckets() or not self.rebuilt:
            return False
        self._check(len(self.rebuilt) == len(self.params),
                    f"rebuilt parameter indices size is not same as original model parameters size.Original model "
                    f"param size is: {len(self.params)} versus rebuilt params size of: {len(self.rebuilt)}")
        limits = self.rebuild_limits or [self.first_bucket_bytes_cap, self.bucket_bytes_cap]
        order = list(self.rebuilt)
        small_last = os.environ.get("DDP_SET_LAST_BUCKET_CAP", os.environ.get("TORCH_DDP_SET_LAST_BUCKET_CAP")) == "1"
        if small_last:
            order.reverse()
        indices, _ = compute_bucket_assignment_by_size([self.params[i] for i in order], limits, self.expect_sparse,
                                                      order)
        if small_last:
            indices.reverse()
        indices = self.sync_bucket_indices(indices)
        self.has_rebuilt = True
        self.rebuilt = []
        self.initialize_buckets(indices)
        return True

    def sync_bucket_indices(self, indices):
        """Every rank takes rank 0's bucket layout."""
        from . import distributed_c10d as c10d
        box = [indices]
        c10d.broadcast_object_list(box, src=self.process_group._global(0), group=self.process_group)
        return box[0]

    def push_all_rebuilt_params(self):
        if not self.should_rebuild_buckets() or self.rebuilt:
            return
        self.rebuilt = list(range(len(self.params)))

    # ---- forward
    def prepare_for_forward(self):
        self.num_iterations += 1
        if self.should_collect_runtime_stats():
            self.times["forward_start"] = _now()

    def prepare_for_backward(self, outputs):
        if self.should_collect_runtime_stats():
            self.times["backward_compute_start"] = _now()
        self.expect_hooks = True
        self.ready_order = []
        self.next_bucket = 0
        self.num_buckets_ready = 0
        for b in self.buckets:
            b.pending = len(b.params)
            b.work = b.future = None
        if self.static_graph:
            self.hooks_left = list(self.hooks_triggered)
        self.has_marked_unused = False
        self.ready = bytearray(len(self.params))
        self.plain = not self.static_graph and not self.find_unused
        self.rebuilding = self.should_rebuild_buckets()
        if self.dynamic_graph_find_unused():
            self.unused = []
            self.search_unused_parameters(outputs)

    def search_unused_parameters(self, outputs):
        """The parameters no output's graph reaches: marked ready when the first gradient arrives."""
        seen, reached = set(), set()
        stack = [o.grad_fn for o in outputs if getattr(o, "grad_fn", None) is not None]
        while stack:
            fn = stack.pop()
            for nxt, _ in fn.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    seen.add(id(nxt))
                    stack.append(nxt)
                    var = getattr(nxt, "variable", None)
                    if var is not None:
                        reached.add(id(var))
        self.unused = [i for i, p in enumerate(self.params) if id(p) not in reached]
        if not self.unused and not getattr(Reducer, "_warned_no_unused", False):
            Reducer._warned_no_unused = True
            import warnings
            warnings.warn("find_unused_parameters=True was specified in DDP constructor, but did not find any unused "
                          "parameters in the forward pass. This flag results in an extra traversal of the autograd "
                          "graph every iteration,  which can adversely affect performance. If your model indeed never "
                          "has any unused parameters in the forward pass, consider turning this flag off. Note that "
                          "this warning may be a false positive if your model has flow control causing later "
                          "iterations to have unused parameters.", UserWarning, stacklevel=2)

    # ---- backward: a parameter's gradient is ready
    def autograd_hook(self, index):
        if not self.first_hook_called:
            self.first_hook_called = True
            self.num_bwd_calls += 1
        if self.plain:
            # the common case, without the branches of find_unused and static_graph below
            if not self.expect_hooks:
                return
            self.ready_order.append(index)
            if self.rebuilding:
                self.rebuilt.append(index)
            self.mark_variable_ready(index)
            return
        if self.dynamic_graph_find_unused() or self.static_graph_first_iteration():
            if self.params[index]._grad is not None:
                self.local_used[index] = 1
        if self.static_graph_first_iteration():
            self.hooks_triggered[index] += 1
            return
        if not self.expect_hooks:
            return          # no_sync, or a backward without a DDP forward: gradients accumulate locally
        self.ready_order.append(index)
        if not self.has_marked_unused:
            self.has_marked_unused = True
            for u in self.unused:
                self.mark_variable_ready(u)
        if self.static_graph_after_first_iteration():
            self._check(self.hooks_left[index] > 0,
                        "Your training graph has changed in this iteration, e.g., one parameter is unused in first "
                        "iteration, but then got used in the second iteration. this is not compatible with "
                        "static_graph set to True.")
            self.hooks_left[index] -= 1
            if self.hooks_left[index] != 0:
                return
        if self.should_rebuild_buckets():
            self.rebuilt.append(index)
        self.mark_variable_ready(index)

    def mark_variable_ready(self, index):
        ready = self.ready
        if ready[index]:
            self._marked_twice(index)
        ready[index] = 1
        self.require_finalize = True
        bucket, j = self.locators[index]
        if self.div_factor == _UNSET_DIV_FACTOR:
            self.set_divide_factor()
        self.mark_variable_ready_dense(bucket, j)
        bucket.pending -= 1
        if bucket.pending == 0:
            self.mark_bucket_ready(bucket.index)
        if self.next_bucket == len(self.buckets):
            if self.dynamic_graph_find_unused():
                self.all_reduce_local_used_map()
            from ..autograd.engine import _queue_callback
            _queue_callback(self._final_callback)

    def mark_variable_ready_dense(self, bucket, j):
        p = bucket.params[j]
        view = bucket.views[j]
        grad = p._grad
        if grad is None:
            view.fill(0)
            return
        g = grad._data
        if g.dtype != view.dtype:
            _fail(self.logger, RuntimeError(f"Expected {bucket.buffer.type()}, got {grad.type()}"))
        if self.grad_as_view:
            if np.may_share_memory(g, bucket.buf):
                if self.comm_hook is None:
                    np.divide(view, self.div_factor, out=view)
                return
            if self.comm_hook is None:
                np.multiply(g, 1.0 / self.div_factor, out=view)
            else:
                np.copyto(view, g)
            p._grad = bucket.grad_view(j)
            return
        # NOTE: PyTorch multiplies each gradient by 1 / world size as it copies it into the bucket (without a comm
        # hook); here the multiplication is done once per bucket when it is launched (all_reduce_bucket): the
        # same products, one NumPy call per bucket instead of one per parameter
        np.copyto(view, g)

    def mark_bucket_ready(self, index):
        if index > self.next_bucket:
            return          # buckets are launched in index order
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            self.num_buckets_ready += 1
            if self.num_buckets_ready == 1 and self.should_collect_runtime_stats():
                self.times["backward_comm_start"] = _now()
            self.all_reduce_bucket(self.buckets[self.next_bucket])
            self.next_bucket += 1

    def all_reduce_bucket(self, bucket):
        """Launch the bucket's reduction: the all_reduce of the pre-divided buffer, or the comm hook."""
        with _mpi.label(f"DDP bucket {bucket.index} of iteration {self.num_iterations}"):
            if self.comm_hook is None:
                from . import distributed_c10d as c10d
                if not self.grad_as_view:
                    np.multiply(bucket.buf, 1.0 / self.div_factor, out=bucket.buf)
                bucket.work = c10d.all_reduce(bucket.buffer, group=self.process_group, async_op=True)
            else:
                state, hook = self.comm_hook
                bucket.future = hook(state, self.grad_bucket(bucket))
        self.num_buckets_reduced += 1

    def grad_bucket(self, bucket, zeros=False):
        from .._tensor import Tensor
        tensor = Tensor._make(array_module(bucket.buf).zeros_like(bucket.buf)) if zeros else bucket.buffer
        return GradBucket(bucket.index, len(self.buckets), tensor, bucket.offsets, bucket.lengths, bucket.sizes,
                          bucket.params)

    def get_grad_buckets(self, return_zero_tensors=True):
        return [self.grad_bucket(b, return_zero_tensors) for b in self.buckets]

    def run_comm_hook(self, grad_bucket):
        """Join: the collective of one bucket, on a rank that has run out of inputs (a Future)."""
        if self.comm_hook is None:
            from . import distributed_c10d as c10d
            return c10d.all_reduce(grad_bucket.buffer(), group=self.process_group, async_op=True).get_future()
        state, hook = self.comm_hook
        return hook(state, grad_bucket)

    def set_divide_factor(self):
        if self.div_factor == _UNSET_DIV_FACTOR:
            self.div_factor = self.process_group.size()
            if self.forward_work is not None and not self.forward_work[1]:
                work = self.forward_work[0]
                work.wait()
                self.div_factor = int(work.result()[0]._data.reshape(-1)[0])

    def all_reduce_local_used_map(self):
        from . import distributed_c10d as c10d
        from .._tensor import Tensor
        self.local_used_dev = Tensor._make(self.local_used.copy())
        self.local_used_work = c10d.all_reduce(self.local_used_dev, group=self.process_group, async_op=True)

    def delay_all_reduce(self):
        """static_graph, iteration 1: after the whole backward, every gradient into its bucket, then every bucket's
        collective (the unused parameters are those whose hook never fired)."""
        if self.should_collect_runtime_stats():
            self.times["backward_compute_end"] = self.times["backward_comm_start"] = _now()
        self.all_reduce_local_used_map()
        self.unused = [i for i, n in enumerate(self.hooks_triggered) if n == 0]
        self.require_finalize = True
        for i in range(len(self.params)):
            self.set_divide_factor()
            bucket, j = self.locators[i]
            self.mark_variable_ready_dense(bucket, j)
        for bucket in self.buckets:
            self.all_reduce_bucket(bucket)
        self.next_bucket = len(self.buckets)
        self.finalize_backward()

    def _final_callback(self):
        if self.should_collect_runtime_stats():
            self.times["backward_compute_end"] = _now()
        if self.static_graph_after_first_iteration() and self.should_rebuild_buckets():
            self.rebuilt.extend(self.unused)
        self.finalize_backward()

    # ---- end of backward: wait, write back
    def finalize_backward(self):
        self.expect_hooks = False
        self.first_hook_called = False
        self.require_finalize = False
        for bucket in self.buckets:
            out = self._bucket_result(bucket)
            self.div_factor = _UNSET_DIV_FACTOR
            self.finalize_bucket_dense(bucket, out)
        if self.installed_futures:
            futs, self.installed_futures = self.installed_futures, []
            for f in futs:
                _wait_future(f, self.process_group, "a future installed by a DDP buffer hook")
        if self.dynamic_graph_find_unused() or self.static_graph_first_iteration():
            if not self.local_used_reduced and self.local_used_work is not None:
                self.local_used_work.wait()
        if self.dynamic_graph_find_unused():
            self.local_used.fill(0)
            self.local_used_reduced = False
        if self.should_collect_runtime_stats():
            self.times["backward_comm_end"] = _now()

    def _bucket_result(self, bucket):
        """The reduced bucket as a flat array: the buffer itself, or the value of the hook's Future."""
        if self.comm_hook is None:
            if bucket.work is None:
                raise RuntimeError("Expected bucket.future_work not to be null. This may indicate that communication "
                                   "hook was not properly installed.")
            bucket.work.wait()
            return bucket.buf
        fut = bucket.future
        if not hasattr(fut, "wait") or not hasattr(fut, "value"):
            raise RuntimeError(f"DDP communication hook's callback must return a torch.futures.Future object, but got "
                               f"{_type_name(fut)}")
        _wait_future(fut, self.process_group, f"DDP bucket {bucket.index} of iteration {self.num_iterations}")
        value = fut.value()
        from .._tensor import Tensor
        if not isinstance(value, Tensor):
            raise RuntimeError(f"Unable to cast {value!r} to Tensor")
        if value._data.size != bucket.buf.size:
            # NOTE: PyTorch reads past a smaller tensor (as_strided without a check); hookgrad refuses it.
            raise RuntimeError(f"hookgrad: the Future of the DDP communication hook {_hook_name(self.comm_hook[1])} "
                               f"holds a tensor of shape {tuple(value.shape)}, but bucket {bucket.index} has "
                               f"{bucket.buf.size} elements: a hook's Future must hold one tensor of the bucket's "
                               f"shape")
        out = value._data.reshape(-1)
        return out

    def finalize_bucket_dense(self, bucket, out):
        same = out is bucket.buf
        for j, p in enumerate(bucket.params):
            global_unused = False
            if self.static_graph or self.find_unused:
                i = bucket.variable_indices[j]
                global_unused = self.local_used[i] == 0
                if global_unused and not self.local_used_reduced:
                    self.local_used_work.wait()
                    self.local_used[...] = self.local_used_dev._data
                    global_unused = self.local_used[i] == 0
                    self.local_used_reduced = True
            view_out = bucket.views[j] if same else out[bucket.offsets[j]:bucket.offsets[j] + bucket.lengths[j]] \
                .reshape(bucket.sizes[j])
            if not self.grad_as_view:
                if global_unused:
                    continue
                grad = p._grad
                if grad is None:
                    from .._tensor import Tensor
                    p._grad = Tensor._make(view_out.astype(p._data.dtype, copy=True))
                else:
                    np.copyto(grad._data, view_out, casting="unsafe")
                    grad._vc[0] += 1
            else:
                if not same:
                    np.copyto(bucket.views[j], view_out, casting="unsafe")
                if global_unused:
                    continue
                grad = p._grad
                if grad is None:
                    p._grad = bucket.grad_view(j)
                elif not np.may_share_memory(grad._data, bucket.buf):
                    _fail(self.logger, RuntimeError(
                        "Detected at least one parameter gradient is not the expected DDP bucket view with "
                        "gradient_as_bucket_view=True. This may happen (for example) if multiple allreduce hooks were "
                        "registered onto the same parameter. If you hit this error, please file an issue with a "
                        "minimal repro."))
                else:
                    grad._vc[0] += 1

    # ---- errors
    def _marked_twice(self, index):
        name = self.param_names.get(index)
        info = (f"Parameter at index {index}" + (f" with name {name}" if name is not None else "") +
                " has been marked as ready twice. This means that multiple autograd engine  hooks have fired for this "
                "particular parameter during this iteration.")
        if name is None:
            info += (" You can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print "
                     "parameter names for further debugging.")
        common = ("Expected to mark a variable ready only once. This error is caused by one of the following reasons: "
                  "1) Use of a module parameter outside the `forward` function. Please make sure model parameters are "
                  "not shared across multiple concurrent forward-backward passes. or try to use _set_static_graph() as "
                  "a workaround if this module graph does not change during training loop.2) Reused parameters in "
                  "multiple reentrant backward passes. For example, if you use multiple `checkpoint` functions to wrap "
                  "the same part of your model, it would result in the same set of parameters been used by different "
                  "reentrant backward passes multiple times, and hence marking a variable ready multiple times. DDP "
                  "does not support such use cases in default. You can try to use _set_static_graph() as a workaround "
                  "if your module graph does not change over iterations.\n" + info)
        if self.has_marked_unused:
            common += ("3) Incorrect unused parameter detection. The return value of the `forward` function is "
                       "inspected by the distributed data parallel wrapper to figure out if any of the module's "
                       "parameters went unused. For unused parameters, DDP would not expect gradients from then. "
                       "However, if an unused parameter becomes part of the autograd graph at a later point in time "
                       "(e.g., in a reentrant backward when using `checkpoint`), the gradient will show up "
                       "unexpectedly. If all parameters in the model participate in the backward pass, you can "
                       "disable unused parameter detection by passing the keyword argument "
                       "`find_unused_parameters=False` to `torch.nn.parallel.DistributedDataParallel`. If unused "
                       "parameters in the model do not change over iterations, You can try to use _set_static_graph() "
                       "as a workaround if this module graph does not change during training loop.")
        _fail(self.logger, RuntimeError(common))

    def ensure_prior_reduction_finished(self):
        if not self.require_finalize:
            return
        unmarked = [i for i in range(len(self.params)) if not self.ready[i]]
        base = ("Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. ")
        outputs = "making sure all `forward` function outputs participate in calculating loss. "
        bug = ("\nIf you already have done the above, then the distributed data parallel module wasn't able to locate "
               "the output tensors in the return value of your module's `forward` function. Please include the loss "
               "function and the structure of the return value of `forward` of your module when reporting this issue "
               "(e.g. list, dict, iterable).")
        if self.static_graph:
            base = ("Expected to have finished reduction in the prior iteration before starting a new one. This error "
                    "indicates that your training graph has changed in this iteration, e.g., one parameter is used in "
                    "first iteration, but then got unused in the second iteration. this is not compatible with "
                    "static_graph set to True.")
        elif not self.find_unused:
            base += ("You can enable unused parameter detection by passing the keyword argument "
                     "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
                     + outputs + bug)
        else:
            base += ("Since `find_unused_parameters=True` is enabled, this likely  means that not all `forward` "
                     "outputs participate in computing loss. You can fix this by " + outputs + bug)
        indices = " ".join(map(str, unmarked))
        info = f"\nParameter indices which did not receive grad for rank {self.process_group.rank()}: {indices}"
        from .distributed_c10d import get_debug_level, DebugLevel
        if get_debug_level() in (DebugLevel.INFO, DebugLevel.DETAIL):
            names = ", ".join(self.param_names[i] for i in unmarked if i in self.param_names)
            base += f"\nParameters which did not receive grad for rank {self.process_group.rank()}: {names}" + info
        else:
            base += info + ("\n In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either "
                            "INFO or DETAIL to print out information about which particular parameters did not "
                            "receive gradient on this rank as part of this error")
        _fail(self.logger, RuntimeError(base))

    def check_reducer_finalized(self):
        self._check(not self.require_finalize,
                    "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                    "indicates that your module has parameters that were not used in producing loss. ")

    # ---- settings
    def register_comm_hook(self, state, hook):
        self._check(self.comm_hook is None,
                    "register_comm_hook or register_builtin_comm_hook can only be called once.")
        self.comm_hook = (state, hook)

    def register_builtin_comm_hook(self, kind):
        self._check(self.comm_hook is None,
                    "register_builtin_comm_hook or register_comm_hook can only be called once.")
        if kind == BuiltinCommHookType.ALLREDUCE:
            self.comm_hook = (self.process_group, _builtin_allreduce)
        elif kind == BuiltinCommHookType.FP16_COMPRESS:
            self.comm_hook = (self.process_group, _builtin_fp16_compress)
        else:
            import warnings
            warnings.warn("Unknown built-in DDP comm hook type is provided. No comm hook will be used.", stacklevel=3)

    def set_static_graph(self):
        self._check(self.num_iterations == 0, "set_static_graph() should be called before training loop starts and "
                                              "after DistributedDataParallel is constructed.")
        self.static_graph = True
        self.initialize_local_used_map()

    def remove_autograd_hooks(self):
        for h in self.handles:
            h.remove()
        self.handles = []


class _AutogradHook:
    """DistributedDataParallel's post-accumulate-grad hook on parameter ``index``: its reducer marks the
    parameter's gradient ready (holds the reducer weakly: DDP owns it). It reads as the bound method
    ``reducer.autograd_hook``: ``__self__`` is the Reducer (``ddp.reducer``) and ``__name__`` its method's
    name, so listings of a parameter's hooks (``Tensor.hooks()``, tools.registry) can tell it is DDP's."""
    __slots__ = ("reducer", "index")

    def __init__(self, reducer, index):
        self.reducer, self.index = reducer, index

    @property
    def __self__(self):
        return self.reducer()

    @property
    def __name__(self):
        return "autograd_hook"

    def __call__(self, param):
        r = self.reducer()
        if r is not None:
            r.autograd_hook(self.index)


def _type_name(obj):
    t = type(obj)
    return "torch.Tensor" if t.__name__ == "Tensor" else f"{t.__module__}.{t.__qualname__}"


def _hook_name(hook):
    return getattr(hook, "__qualname__", type(hook).__name__)


def _wait_future(fut, group, what):
    """Wait for ``fut`` while advancing the outstanding collectives, within the group's deadline."""
    if not fut.done():
        _mpi.wait_for(fut.done, group, f"[rank {group._global(group.rank())}] {what}")


def _builtin_allreduce(process_group, bucket):
    """BuiltinCommHookType.ALLREDUCE: the mean of the bucket over the group."""
    from . import distributed_c10d as c10d
    t = bucket.buffer()
    np.divide(t._data, process_group.size(), out=t._data)
    return c10d.all_reduce(t, group=process_group, async_op=True).get_future().then(lambda f: f.value()[0])


def _builtin_fp16_compress(process_group, bucket):
    """BuiltinCommHookType.FP16_COMPRESS: the mean of the bucket, reduced in float16."""
    from . import distributed_c10d as c10d
    from .._tensor import Tensor
    buf = bucket.buffer()
    half = Tensor._make((buf._data / process_group.size()).astype(np.float16))

    def decompress(f):
        np.copyto(buf._data, f.value()[0]._data, casting="unsafe")
        return buf
    return c10d.all_reduce(half, group=process_group, async_op=True).get_future().then(decompress)


# ------------------------------------------------------------------------------------------------
# logging data (DDPLoggingData)

_DTYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                "complex64": "c10::complex<float>", "complex128": "c10::complex<double>", "int64": "long int",
                "int32": "int"}


class Logger:
    """torch.distributed.Logger: DDP's construction settings and runtime statistics (``strs_map`` and
    ``ints_map``, as DDPLoggingData). Times in nanoseconds, from time.perf_counter_ns."""

    def __init__(self, reducer):
        self.reducer = reducer
        self.strs = {}
        self.ints = {}
        self.recorded = 0
        self.error = None

    def set_construction_data_and_log(self, module_name, device_ids, output_device, broadcast_buffers, has_sync_bn,
                                      static_graph):
        r = self.reducer
        env = os.environ
        self.strs.update(
            backend_name=r.process_group.name(),
            bucket_sizes=", ".join(str(b.nbytes()) for b in r.buckets),
            cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES", "N/A"),
            device_ids=", ".join(map(str, device_ids)),
            dtypes=", ".join(sorted({_DTYPE_NAMES.get(p._data.dtype.name, p._data.dtype.name) for p in r.params})),
            master_addr=env.get("MASTER_ADDR", "N/A"), master_port=env.get("MASTER_PORT", "N/A"),
            module_name=module_name,
            torch_distributed_debug=env.get("TORCH_DISTRIBUTED_DEBUG", "N/A"))
        self.ints.update(
            broadcast_buffers=int(bool(broadcast_buffers)), bucket_cap_bytes=r.bucket_bytes_cap,
            find_unused_parameters=int(r.find_unused), gradient_as_bucket_view=int(r.grad_as_view),
            has_sync_bn=int(bool(has_sync_bn)), is_multi_device_module=0, iteration=0,
            num_parameter_tensors=len(r.params), output_device=output_device, rank=r.process_group.rank(),
            total_parameter_size_bytes=sum(p._data.nbytes for p in r.params),
            world_size=r.process_group.size())
        if static_graph:
            self.ints["static_graph"] = 1

    def set_runtime_stats_and_log(self):
        """Called at each forward: the statistics of the previous iteration (on the sampled iterations)."""
        r = self.reducer
        if not r.should_collect_runtime_stats():
            return
        self.recorded += 1
        self.ints["iteration"] = r.num_iterations
        self.ints["unused_parameter_size"] = sum(r.params[i]._data.nbytes for i in r.unused)
        if self.ints.get("has_rebuilt_buckets") != int(r.has_rebuilt):
            self.ints["has_rebuilt_buckets"] = int(r.has_rebuilt)
            self.strs["rebuilt_bucket_sizes"] = ", ".join(str(b.nbytes()) for b in r.buckets)
            self.strs["rebuilt_per_bucket_param_indices"] = ", ".join(
                " ".join(map(str, b.variable_indices)) for b in r.buckets)
        if r.ready_order:
            self.strs["prev_iteration_grad_ready_order_indices"] = ", ".join(map(str, r.ready_order))
        self.ints["num_buckets_reduced"] = r.num_buckets_reduced
        r.num_buckets_reduced = 0
        t = r.times
        for key, event in (("forward_compute_time_start", "forward_start"),
                           ("backward_compute_time_start", "backward_compute_start"),
                           ("backward_compute_time_end", "backward_compute_end"),
                           ("backward_comm_time_start", "backward_comm_start"),
                           ("backward_comm_time_end", "backward_comm_end")):
            if t[event] >= 0:
                self.ints[key] = t[event]
        for name, start, end in (("forward_compute_time", "forward_start", "backward_compute_start"),
                                 ("backward_compute_time", "backward_compute_start", "backward_compute_end"),
                                 ("backward_comm_time", "backward_comm_start", "backward_comm_end"),
                                 ("backward_compute_comm_overlap_time", "backward_comm_start",
                                  "backward_compute_end")):
            if t[start] < 0 or t[end] < t[start]:
                continue        # not measured in that iteration (no_sync, or no backward)
            d = t[end] - t[start]
            self.ints[name] = d
            avg = "avg_" + name
            self.ints[avg] = (d + self.ints.get(avg, 0) * (self.recorded - 1)) // self.recorded

    def set_comm_hook_name(self, name):
        self.strs["comm_hook"] = name

    def set_static_graph(self):
        self.ints["static_graph"] = 1

    def set_uneven_input_join(self):
        self.ints["join_uneven_inputs"] = 1

    def set_error_and_log(self, message):
        self.ints["has_error"] = 1
        self.strs["error"] = message

    def get_ddp_logging_data(self):
        return {**dict(sorted(self.strs.items())), **dict(sorted(self.ints.items()))}
