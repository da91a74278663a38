"""torch.autograd.profiler for code that annotates itself: ``record_function`` is a no-op context manager
and decorator (hookgrad records no trace), and ``profile`` can wrap a region, but asking it for results
raises NotImplementedError, because nothing was recorded."""
import contextlib

__all__ = ["profile", "record_function"]

_NO_PROFILER = ("hookgrad has no profiler: torch.autograd.profiler.profile records nothing, so {} is not "
                "available. Time the region yourself (e.g. time.perf_counter()).")


class record_function(contextlib.ContextDecorator):
    """Label a region (``with record_function("name"):`` or ``@record_function("name")``); records nothing."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return False


class profile:
    """A context manager with PyTorch's signature that records nothing; its result methods raise."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.entered = False

    def __enter__(self):
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return False

    def _unavailable(self, what):
        raise NotImplementedError(_NO_PROFILER.format(what))

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._unavailable("key_averages()")

    def table(self, *args, **kwargs):
        self._unavailable("table()")

    def events(self):
        self._unavailable("events()")

    def export_chrome_trace(self, path):
        self._unavailable("export_chrome_trace()")

    def total_average(self):
        self._unavailable("total_average()")

    @property
    def self_cpu_time_total(self):
        return self._unavailable("self_cpu_time_total")

    @property
    def function_events(self):
        return self._unavailable("function_events")
