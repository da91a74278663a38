"""torch._dynamo.config: PyTorch's settings with PyTorch's defaults; read, set and patched, they change nothing
(hookgrad has no graph capture). ``patch`` works as in PyTorch: ``patch("name", value)``, ``patch({...})`` or
``patch(name=value)``, as a ``with`` block or a decorator; an unknown name raises AttributeError."""
import contextlib

cache_size_limit = recompile_limit = 8
accumulated_cache_size_limit = accumulated_recompile_limit = 256
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
suppress_errors = False
verbose = False
optimize_ddp = True
skip_fwd_side_effects_in_bwd_under_checkpoint = False
automatic_dynamic_shapes = True
assume_static_by_default = True
force_parameter_static_shapes = True
inline_inbuilt_nn_modules = True
guard_nn_modules = True
error_on_recompile = False
allow_unspec_int_on_nn_module = False
specialize_int = False
specialize_float = False
use_lazy_graph_module = True
raise_on_ctx_manager_usage = True
allow_rnn = False
disable = False
cprofile = False
replay_record_enabled = False
rewrite_assert_with_torch_assert = True
trace_numpy = True
numpy_default_float = "float64"
traceable_tensor_subclasses = set()
nontraceable_tensor_subclasses = set()
reorderable_logging_functions = set()
dynamic_shapes = True
prefer_deferred_runtime_asserts_over_guards = False
enable_cpp_guard_manager = True
compiled_autograd = False
do_not_emit_runtime_asserts = False
log_compilation_metrics = True
force_unspec_int_unbacked_size_like_on_torchrec_kjt = False

_NAMES = frozenset(k for k in globals() if not k.startswith("_") and k != "contextlib")


class _ConfigPatch(contextlib.ContextDecorator):
    def __init__(self, changes):
        for k in changes:
            if k not in _NAMES:
                raise AttributeError(f"torch._dynamo.config.{k} does not exist")
        self.changes, self.prior = changes, {}

    def __enter__(self):
        g = globals()
        self.prior = {k: g[k] for k in self.changes}
        g.update(self.changes)
        return self

    def __exit__(self, *exc):
        globals().update(self.prior)
        return False


def patch(arg1=None, arg2=None, **kwargs):
    """Set settings for a block or a decorated function, restoring them after."""
    if isinstance(arg1, str):
        changes = {arg1: arg2}
    elif isinstance(arg1, dict):
        changes = dict(arg1)
    else:
        changes = {}
    changes.update(kwargs)
    return _ConfigPatch(changes)


def get_config_copy():
    g = globals()
    return {k: g[k] for k in _NAMES}
