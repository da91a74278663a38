"""DistributedDataParallel, as PyTorch's: the module's state broadcast from rank 0 at construction, the
gradients averaged over the process group during backward (the Reducer of hookgrad.distributed._reducer:
buckets, overlap, communication hooks), no_sync, find_unused_parameters, static_graph, broadcast_buffers,
Join for uneven inputs, and the logging data.

Example (2 processes: ``python -m hookgrad.distributed.run --nproc-per-node 2 train.py``)::

    import hookgrad as torch, hookgrad.distributed as dist
    dist.init_process_group("mpi")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    model(torch.randn(8, 4)).sum().backward()      # .grad: the mean over the ranks
"""
import contextlib
import inspect
import warnings
import weakref
from dataclasses import fields, is_dataclass

from ..modules.module import Module
from ...autograd.function import Function
from ...distributed.algorithms.join import Join, Joinable, JoinHook

__all__ = ["DistributedDataParallel"]

_DEFAULT_BUCKET_CAP_MB = 25
_MB_TO_BYTES = 1024 * 1024


# ------------------------------------------------------------------------------------------------
# outputs: the tensors in a (nested) forward result

def _find_tensors(obj):
    from ..._tensor import Tensor
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    if is_dataclass(obj) and not isinstance(obj, type):
        return [t for f in fields(obj) for t in _find_tensors(getattr(obj, f.name))]
    return []


def _flatten(obj, out):
    """The leaves of ``obj`` (tuples, lists, dicts) into ``out``; returns a function that rebuilds ``obj``
    from an iterator over new leaves."""
    if isinstance(obj, (list, tuple)):
        parts = [_flatten(o, out) for o in obj]
        if hasattr(obj, "_fields"):
            return lambda it: type(obj)(*(p(it) for p in parts))
        return lambda it: type(obj)(p(it) for p in parts)
    if isinstance(obj, dict):
        parts = [(k, _flatten(v, out)) for k, v in obj.items()]
        return lambda it: type(obj)((k, p(it)) for k, p in parts)
    out.append(obj)
    return lambda it: next(it)


class _DDPSink(Function):
    """Passes the outputs through (cloned, as PyTorch does); its backward, which runs first, queues the
    static graph's delayed all-reduce in iteration 1."""

    @staticmethod
    def forward(ctx, ddp_weakref, *inputs):
        from ..._tensor import Tensor
        ctx.set_materialize_grads(False)
        ctx.ddp_weakref = ddp_weakref
        if ddp_weakref()._ddp_sink_clone:
            return tuple(i.clone() if isinstance(i, Tensor) else i for i in inputs)
        return inputs

    @staticmethod
    def backward(ctx, *grad_outputs):
        ddp = ctx.ddp_weakref()
        if ddp.static_graph and not ddp._static_graph_delay_allreduce_enqueued:
            from ...autograd.engine import _queue_callback
            _queue_callback(ddp.reducer.delay_all_reduce)
            ddp._static_graph_delay_allreduce_enqueued = True
        return (None, *grad_outputs)


# ------------------------------------------------------------------------------------------------
# Join

class _DDPJoinHook(JoinHook):
    """DDP's join hook (torch's _DDPJoinHook, a JoinHook): on a rank that has run out of inputs, shadow the
    collectives of the others' forward and backward; at the end, take the model of the last rank to join."""

    def __init__(self, ddp, divide_by_initial_world_size):
        if not isinstance(ddp, DistributedDataParallel):
            raise AssertionError("DDP join hook requires passing in a DistributedDataParallel instance as the state, "
                                 f"got {type(ddp).__name__}")
        ddp.logger.set_uneven_input_join()
        self.ddp = ddp
        self.ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self):
        ddp = self.ddp
        ddp.reducer.rebuild_buckets()
        ddp._check_and_sync_module_buffers()
        should_sync_backwards = ddp._check_global_requires_backward_grad_sync(is_joined_rank=True)
        ddp.require_forward_param_sync = should_sync_backwards
        if not should_sync_backwards:
            return
        ddp._match_all_reduce_for_bwd_pass()
        if ddp.find_unused_parameters:
            ddp._match_unused_params_allreduce()
        ddp.reducer.push_all_rebuilt_params()

    def post_hook(self, is_last_joiner):
        self.ddp._sync_final_model(is_last_joiner)


# ------------------------------------------------------------------------------------------------

class DistributedDataParallel(Module, Joinable):
    """Data parallelism at module level: each rank runs the module on its own inputs; backward averages the
    gradients over ``process_group`` (the world by default), bucket by bucket while it goes on."""

    _active_ddp_module = None

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None, batched_grad_copy=False,
                 forward_sync_buffers=None):
        super().__init__()
        Joinable.__init__(self)
        from ... import distributed as dist
        from ...distributed import _reducer
        self.logger = None
        if (delay_all_reduce_named_params is not None) != (param_to_hook_all_reduce is not None):
            raise ValueError("delay_all_reduce_named_params and param_to_hook_all_reduce need to be set at the same "
                             "time.")
        if delay_all_reduce_named_params is not None:
            raise NotImplementedError("hookgrad: DistributedDataParallel(delay_all_reduce_named_params=...) is not "
                                      "supported")
        if mixed_precision is not None:
            raise NotImplementedError("hookgrad: DistributedDataParallel(mixed_precision=...) is not supported")
        if process_group and device_mesh is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        if device_mesh is not None:
            raise NotImplementedError("hookgrad: DistributedDataParallel(device_mesh=...) is not supported")
        self.process_group = dist.distributed_c10d._default() if process_group is None else process_group
        self.parameters_to_ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self._delay_all_reduce_params = []
        self._module_parameters = [p for n, p in module.named_parameters() if n not in self.parameters_to_ignore]
        if not any(p.requires_grad for p in self._module_parameters):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        if device_ids or output_device:
            devices = {p.device for p in self._module_parameters}
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
        from ..parameter import UninitializedParameter
        for p in self._module_parameters:
            if isinstance(p, UninitializedParameter):
                raise RuntimeError("Modules with uninitialized parameters can't be used with "
                                   "`DistributedDataParallel`. Run a dummy forward pass to correctly initialize the "
                                   "modules")
        self.is_multi_device_module = False
        self.device_type = "cpu"
        self.device_ids = None
        self.output_device = None
        self.static_graph = False
        self.dim = dim
        self.module = module
        self.device = self._module_parameters[0].device
        if broadcast_buffers is not None:
            if forward_sync_buffers is not None:
                warnings.warn("Both `broadcast_buffers` and `forward_sync_buffers` were specified. `broadcast_buffers` "
                              "is deprecated and its value is ignored when `forward_sync_buffers` is provided.",
                              FutureWarning, stacklevel=2)
            else:
                warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: "
                              "unlike `broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers at "
                              "init. If you rely on buffers NOT being synced at init (e.g. rank-local buffers), keep "
                              "using `broadcast_buffers=False` until `init_sync_buffers` is available.",
                              FutureWarning, stacklevel=2)
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = forward_sync_buffers
            init_sync_buffers = True
        else:
            self.forward_sync_buffers = init_sync_buffers = broadcast_buffers if broadcast_buffers is not None else True
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.batched_grad_copy = batched_grad_copy
        self.mixed_precision = None
        if check_reduction:
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module is deprecated. Please "
                          "avoid using it.", FutureWarning, stacklevel=2)
        self.broadcast_bucket_size = 250 * 1024 * 1024
        # bucket caps (torch's _BucketCapacityConfig)
        default_cap = bucket_cap_mb is None
        cap_mb = _DEFAULT_BUCKET_CAP_MB if default_cap else bucket_cap_mb
        per_bucket = ()
        if bucket_cap_mb_list:
            per_bucket = tuple(int(c * _MB_TO_BYTES) for c in bucket_cap_mb_list)
            cap_mb, default_cap = max(bucket_cap_mb_list), False
        self.bucket_bytes_cap = int(cap_mb * _MB_TO_BYTES)
        self.bucket_bytes_cap_list = list(per_bucket)
        self._first_bucket_bytes_cap = dist._DEFAULT_FIRST_BUCKET_BYTES if default_cap else self.bucket_bytes_cap
        self.bucket_bytes_cap_default = self._first_bucket_bytes_cap < self.bucket_bytes_cap
        self.skip_all_reduce_unused_params = skip_all_reduce_unused_params
        self._use_python_reducer = False

        parameters, expect_sparse_gradient = self._build_params_for_reducer()
        if init_sync:
            _reducer.verify_params_across_processes(self.process_group, parameters)
            self._sync_module_states(0, init_sync_buffers)
        param_to_name_mapping = self._build_debug_param_to_name_mapping(parameters)
        self._ddp_init_helper(parameters, expect_sparse_gradient, param_to_name_mapping, static_graph)
        self._comm_hooks = []
        self._has_rebuilt_buckets = False
        if static_graph:
            self._set_static_graph()
        self._lazy_init_ran = False
        self._accum_grad_hooks = []
        self._ddp_sink_clone = True

    @property
    def broadcast_buffers(self):
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value):
        self.forward_sync_buffers = value

    # ---- construction helpers
    def _compute_bucket_size_limits(self, static_graph):
        """(the initial limits, the limits of the rebuild): one bucket in iteration 1 unless
        find_unused_parameters is set without static_graph (PyTorch's compute_bucket_size_limits)."""
        if self.bucket_bytes_cap_list:
            return list(self.bucket_bytes_cap_list), list(self.bucket_bytes_cap_list)
        import sys
        if static_graph or not self.find_unused_parameters:
            return [sys.maxsize], []
        if self._first_bucket_bytes_cap < self.bucket_bytes_cap:
            return [self._first_bucket_bytes_cap, self.bucket_bytes_cap], []
        return [self.bucket_bytes_cap], []

    def _ddp_init_helper(self, parameters, expect_sparse_gradient, param_to_name_mapping, static_graph):
        from ... import distributed as dist
        from ...distributed import _reducer
        limits, rebuild_limits = self._compute_bucket_size_limits(static_graph)
        bucket_indices, per_bucket_limits = dist._compute_bucket_assignment_by_size(parameters, limits,
                                                                                    expect_sparse_gradient)
        self.reducer = _reducer.Reducer(
            parameters, list(reversed(bucket_indices)), list(reversed(per_bucket_limits)), self.process_group,
            expect_sparse_gradient, self.bucket_bytes_cap, self.find_unused_parameters, self.gradient_as_bucket_view,
            param_to_name_mapping, self._first_bucket_bytes_cap, self.skip_all_reduce_unused_params, False,
            rebuild_limits, self.batched_grad_copy)
        self.logger = _reducer.Logger(self.reducer)
        self.reducer.logger = self.logger
        from ..modules.batchnorm import SyncBatchNorm
        has_sync_bn = any(isinstance(m, SyncBatchNorm) for m in self.module.modules())
        self.logger.set_construction_data_and_log(type(self.module).__name__, [], -1, self.forward_sync_buffers,
                                                  has_sync_bn, static_graph)

    def _build_params_for_reducer(self):
        from ..modules.sparse import Embedding, EmbeddingBag
        pairs = [(m, p) for mname, m in self.module.named_modules()
                 for pname, p in m.named_parameters(recurse=False)
                 if p.requires_grad and f"{mname}.{pname}" not in self.parameters_to_ignore]
        memo = set()
        pairs = [(m, p) for m, p in pairs if id(p) not in memo and not memo.add(id(p))]
        parameters = [p for _, p in pairs]
        expect_sparse = [bool(isinstance(m, (Embedding, EmbeddingBag)) and m.sparse) for m, _ in pairs]
        self._assign_modules_buffers()
        return parameters, expect_sparse

    def _assign_modules_buffers(self):
        named = [(b, n) for n, b in self.module.named_buffers() if n not in self.parameters_to_ignore]
        self.modules_buffers = [b for b, _ in named]
        self.named_module_buffers = {n: b for b, n in named}

    def _build_debug_param_to_name_mapping(self, parameters):
        index = {id(p): i for i, p in enumerate(parameters)}
        mapping = {}
        for mname, m in self.module.named_modules():
            for pname, p in m.named_parameters(recurse=False):
                fqn = f"{mname}.{pname}"
                if fqn not in self.parameters_to_ignore and p.requires_grad:
                    mapping[index[id(p)]] = fqn
        return mapping

    def _sync_module_states(self, src, broadcast_buffers):
        """Parameters (and buffers) of group rank ``src`` into every rank's (torch's _sync_module_states)."""
        from ...distributed import _reducer
        states = [p.detach() for n, p in self.module.named_parameters() if n not in self.parameters_to_ignore]
        if broadcast_buffers:
            states += [b.detach() for n, b in self.module.named_buffers() if n not in self.parameters_to_ignore]
        if states:
            _reducer.broadcast_coalesced(self.process_group, states, self.broadcast_bucket_size, src)

    # ---- forward
    @contextlib.contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside (the forward must be inside too); the first forward-backward
        after it synchronises them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    @classmethod
    def _get_active_ddp_module(cls):
        return cls._active_ddp_module

    @contextlib.contextmanager
    def _inside_ddp_forward(self):
        old = DistributedDataParallel._active_ddp_module
        DistributedDataParallel._active_ddp_module = self
        try:
            yield
        finally:
            DistributedDataParallel._active_ddp_module = old

    def _run_ddp_forward(self, *inputs, **kwargs):
        with self._inside_ddp_forward():
            return self.module(*inputs, **kwargs)

    def _pre_forward(self, *inputs, **kwargs):
        from ...autograd.grad_mode import is_grad_enabled
        self._lazy_init_ran = True
        grad = is_grad_enabled()
        if grad and self.require_backward_grad_sync:
            self.logger.set_runtime_stats_and_log()
            self.reducer.prepare_for_forward()
        if self._join_config.enable:
            work = Join.notify_join_context(self)
            if work:
                self.reducer.forward_work = (work, self._divide_by_initial_world_size)
        if grad and self.reducer.rebuild_buckets():
            self._has_rebuilt_buckets = True
        if self._check_sync_bufs_pre_fwd():
            self._sync_buffers()
        if self._join_config.enable:
            self._check_global_requires_backward_grad_sync(is_joined_rank=False)
        return inputs, kwargs

    def _post_forward(self, output):
        from ...autograd.grad_mode import is_grad_enabled
        if self._check_sync_bufs_post_fwd():
            self._sync_buffers()
        if is_grad_enabled() and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            if self.find_unused_parameters and not self.static_graph:
                self.reducer.prepare_for_backward(_find_tensors(output))
            else:
                self.reducer.prepare_for_backward([])
        else:
            self.require_forward_param_sync = False
        if (self.find_unused_parameters and not self.static_graph) or \
                (self.static_graph and not self._static_graph_delay_allreduce_enqueued):
            from ..._tensor import Tensor
            leaves = []
            rebuild = _flatten(output, leaves)
            keep = [t if isinstance(t, Tensor) and t.grad_fn is None else None for t in leaves]
            passed = _DDPSink.apply(weakref.ref(self), *leaves)
            output = rebuild(iter([k if k is not None else q for k, q in zip(keep, passed)]))
        return output

    def forward(self, *inputs, **kwargs):
        inputs, kwargs = self._pre_forward(*inputs, **kwargs)
        return self._post_forward(self._run_ddp_forward(*inputs, **kwargs))

    def scatter(self, inputs, kwargs, device_ids):
        from .scatter_gather import scatter_kwargs
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def gather(self, outputs, output_device):
        from .scatter_gather import gather
        return gather(outputs, output_device, dim=self.dim)

    def train(self, mode=True):
        super().train(mode)
        return self

    # ---- buffers
    def will_sync_module_buffers(self):
        return self.require_forward_param_sync and self.forward_sync_buffers and len(self.modules_buffers) > 0

    def _check_sync_bufs_pre_fwd(self):
        return self.will_sync_module_buffers() and (
            not hasattr(self, "buffer_hook") or self.buffer_hook[2] == "pre_forward")

    def _check_sync_bufs_post_fwd(self):
        return self.will_sync_module_buffers() and hasattr(self, "buffer_hook") and \
            self.buffer_hook[2] == "post_forward"

    def _sync_buffers(self):
        from ...autograd.grad_mode import no_grad
        with no_grad():
            rank = self._find_common_rank(self._distributed_rank, True) if self._join_config.enable else 0
            self._assign_modules_buffers()
            self._sync_module_buffers(rank)

    def _sync_module_buffers(self, authoritative_rank):
        if not hasattr(self, "buffer_hook"):
            self._default_broadcast_coalesced(authoritative_rank=authoritative_rank)
        else:
            hook, state, _ = self.buffer_hook
            futs = hook(state, self.named_module_buffers)
            if futs is not None:
                self.reducer.installed_futures.extend(futs)

    def _default_broadcast_coalesced(self, bufs=None, bucket_size=None, authoritative_rank=0):
        from ...distributed import _reducer
        bufs = self.modules_buffers if bufs is None else bufs
        bucket_size = self.broadcast_bucket_size if bucket_size is None else bucket_size
        if bufs:
            _reducer.broadcast_coalesced(self.process_group, bufs, bucket_size, authoritative_rank)

    def _register_buffer_comm_hook(self, state, hook, comm_hook_location=None):
        """hook(state, {name: buffer}) syncs the buffers instead of the broadcast from rank 0 (after the forward
        by default); a list of Futures it returns is waited for at the end of backward."""
        if not callable(hook):
            raise AssertionError(f"hook must be callable, got {type(hook).__name__}")
        where = "post_forward" if comm_hook_location is None else str(getattr(comm_hook_location, "name",
                                                                              comm_hook_location)).lower()
        self.buffer_hook = (hook, state, where)

    # ---- Join
    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        """Context manager for uneven inputs: ranks that run out of inputs shadow the others' collectives."""
        return Join([self], enable, throw_on_early_termination,
                            divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def _check_global_requires_backward_grad_sync(self, is_joined_rank):
        from ... import distributed as dist
        from ..._creation import ones, zeros
        flag = ones(1) if not is_joined_rank and self.require_backward_grad_sync else zeros(1)
        work = dist.all_reduce(flag, group=self.process_group, async_op=True)
        if is_joined_rank:
            work.wait()
            return flag.item() != 0
        return None

    def _check_and_sync_module_buffers(self):
        if self._check_sync_bufs_pre_fwd():
            self._sync_module_buffers(self._find_common_rank(self._distributed_rank, False))

    def _sync_final_model(self, is_last_joiner):
        self._authoritative_rank = self._find_common_rank(self._distributed_rank, is_last_joiner)
        self._sync_module_states(self._authoritative_rank, self.forward_sync_buffers)

    def _match_all_reduce_for_bwd_pass(self):
        futs = [self.reducer.run_comm_hook(b) for b in self.reducer.get_grad_buckets()]
        from ...distributed._reducer import _wait_future
        for f in futs:
            _wait_future(f, self.process_group, "DDP join: a bucket's collective")

    def _match_unused_params_allreduce(self):
        from ... import distributed as dist
        from ..._tensor import Tensor
        import numpy as np
        dist.all_reduce(Tensor._make(np.zeros(len(self.reducer.params), np.int32)), group=self.process_group)

    def _find_common_rank(self, input_rank, rank_cond):
        from ... import distributed as dist
        from ..._creation import tensor
        r = tensor([input_rank if rank_cond else -1])
        dist.all_reduce(r, op=dist.ReduceOp.MAX, group=self.process_group)
        if r.item() == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process. This indicates a bug in "
                             "PyTorch, please report an issue.")
        return r.item()

    @property
    def _distributed_rank(self):
        return self.process_group.rank()

    # ---- communication hooks
    def register_comm_hook(self, state, hook):
        """Reduce each bucket with ``hook(state, bucket) -> Future[Tensor]`` instead of DDP's all-reduce (the
        hook divides by the world size itself). Once per DDP model."""
        self._check_comm_hook(hook)
        self.logger.set_comm_hook_name(hook.__qualname__)
        self._comm_hooks.append((hook, state))
        self.reducer.register_comm_hook(state, hook)

    def comm_hooks(self):
        """The communication hook in effect, as ``[(hook, state)]`` (empty before ``register_comm_hook``), for
        listings such as tools.registry (as ``Module.hooks()`` is; PyTorch has no public listing). PyTorch's
        ``_comm_hooks`` also keeps a hook whose registration was refused; this lists only the one that runs."""
        in_effect = self.reducer.comm_hook
        if in_effect is None or all(h is not in_effect[1] for h, _ in self._comm_hooks):
            return []           # none, or a built-in one (_register_builtin_comm_hook)
        return [(in_effect[1], in_effect[0])]

    def _register_builtin_comm_hook(self, comm_hook_type):
        self.logger.set_comm_hook_name(str(comm_hook_type))
        self.reducer.register_builtin_comm_hook(comm_hook_type)

    def _check_comm_hook(self, hook):
        from ... import distributed as dist
        from ..._tensor import Tensor
        from ...futures import Future
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        sig = inspect.signature(hook)
        if sig.parameters["bucket"].annotation != inspect._empty and \
                sig.parameters["bucket"].annotation != dist.GradBucket:
            raise ValueError("Communication hook: bucket annotation should be dist.GradBucket.")
        if sig.return_annotation != inspect._empty and sig.return_annotation != Future[Tensor]:
            raise ValueError("Communication hook: return annotation should be torch.futures.Future[torch.Tensor].")
        if hook.__name__ in ("bf16_compress_hook", "bf16_compress_wrapper_hook"):
            pass    # NOTE: PyTorch refuses bf16 hooks without CUDA/NCCL; hookgrad reduces bfloat16 on the CPU

    # ---- static graph, logging, misc
    def _set_static_graph(self):
        """Declare the graph the same every iteration (unused parameters found in iteration 1)."""
        if self.static_graph:
            warnings.warn("You've set static_graph to be True, no need to set it again.", stacklevel=2)
            return
        self.static_graph = True
        self._static_graph_delay_allreduce_enqueued = False
        self.reducer.set_static_graph()
        self.logger.set_static_graph()
        if self.find_unused_parameters:
            warnings.warn("You passed find_unused_parameters=true to DistributedDataParallel, `_set_static_graph` "
                          "will detect unused parameters automatically, so you do not need to set "
                          "find_unused_parameters=true, just be sure these unused parameters will not change during "
                          "training loop while calling `_set_static_graph`.", stacklevel=2)

    def _get_ddp_logging_data(self):
        """DDP's settings and its runtime statistics (times in ns: avg_forward_compute_time,
        avg_backward_compute_time, avg_backward_comm_time, avg_backward_compute_comm_overlap_time)."""
        return self.logger.get_ddp_logging_data()

    def _set_ddp_runtime_logging_sample_rate(self, sample_rate):
        if sample_rate < 1:
            raise ValueError("DDP runtime logging sample rate should be equal or greater than 1")
        self.reducer.sample_rate = sample_rate

    def _remove_autograd_hooks(self):
        self.reducer.remove_autograd_hooks()

    def _check_reducer_finalized(self):
        self.reducer.check_reducer_finalized()

    def _set_ddp_sink_clone(self, val):
        self._ddp_sink_clone = val

    @staticmethod
    def _get_data_parallel_params(module, named_params=False):
        for param in (module.parameters() if not named_params else module.named_parameters()):
            if not hasattr(param, "_ddp_ignored"):
                yield param

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module, params_and_buffers_to_ignore):
        module._ddp_params_and_buffers_to_ignore = params_and_buffers_to_ignore
        for name, param in module.named_parameters():
            if name in params_and_buffers_to_ignore:
                param._ddp_ignored = True
        for name, buffer in module.named_buffers():
            if name in params_and_buffers_to_ignore:
                buffer._ddp_ignored = True

    def __getstate__(self):
        raise RuntimeError("hookgrad: a DistributedDataParallel model cannot be pickled (its reducer holds MPI "
                           "state); pickle model.module")

