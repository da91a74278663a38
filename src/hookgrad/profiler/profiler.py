"""torch.profiler.profiler: ``profile`` with activities, a ``schedule`` of steps (wait, warmup, active, repeat),
``on_trace_ready`` (e.g. ``tensorboard_trace_handler``), ``step()`` and ``ProfilerStep#N`` ranges; it records
through ``torch.autograd.profiler.profile`` (hookgrad/autograd/profiler.py), the one recorder."""
import enum
import gzip
import json
import os
import socket
import time
from functools import partial
from warnings import warn

from ..autograd import profiler as prof
from ..autograd.profiler_util import DeviceType  # noqa: F401

__all__ = ["supported_activities", "ProfilerAction", "schedule", "tensorboard_trace_handler", "profile",
           "ExecutionTraceObserver", "_KinetoProfile", "ProfilerActivity", "_ExperimentalConfig"]

PROFILER_STEP_NAME = "ProfilerStep"


class ProfilerActivity(enum.Enum):
    """torch.profiler.ProfilerActivity: the kinds of activity a profile can record (hookgrad records CPU)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __str__(self):
        return f"ProfilerActivity.{self.name}"

    __repr__ = lambda self: f"<ProfilerActivity.{self.name}: {self.value}>"   # noqa: E731


class _ExperimentalConfig:
    """torch._C._profiler._ExperimentalConfig: accepted, and ignored (no Kineto backend)."""

    def __init__(self, profiler_metrics=(), profiler_measure_per_kernel=False, verbose=False, performance_events=(),
                 enable_cuda_sync_events=False, adjust_profiler_step=False, disable_external_correlation=False,
                 profile_all_threads=False, capture_overload_names=False, record_python_gc_info=False,
                 expose_kineto_event_metadata=False, custom_profiler_config="", adjust_timestamps=False):
        self.profiler_metrics = list(profiler_metrics)
        self.verbose = verbose
        self.capture_overload_names = capture_overload_names


def supported_activities():
    """The activities this build can record: the CPU."""
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    """What the profiler does at a step: NONE, WARMUP, RECORD, RECORD_AND_SAVE."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The step -> ProfilerAction function of PyTorch: skip ``skip_first`` steps, then cycles of ``wait``,
    ``warmup`` and ``active`` steps (the last active one RECORD_AND_SAVE), ``repeat`` times (0: forever)."""
    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """An ``on_trace_ready`` that writes each saved trace as ``<dir>/<worker>.<ns>.pt.trace.json[.gz]``."""
    def handler_fn(p):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        p.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn


class _KinetoProfile:
    """The recording half of ``profile`` (no schedule): ``start()``, ``stop()``, the results."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, custom_trace_id_callback=None, post_processing_timeout_s=None):
        self.activities = set(activities) if activities else supported_activities()
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.profiler = None
        self.use_device = None
        self.preset_metadata = {}

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        if self.profiler is None or not self.acc_events:
            self.profiler = prof.profile(use_cpu=ProfilerActivity.CPU in self.activities,
                                         record_shapes=self.record_shapes, with_flops=self.with_flops,
                                         profile_memory=self.profile_memory, with_stack=self.with_stack,
                                         with_modules=self.with_modules, use_kineto=True,
                                         experimental_config=self.experimental_config, acc_events=self.acc_events)

    def start_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler.entered = False
        self.profiler.__enter__()

    def stop_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler.__exit__(None, None, None)

    def export_chrome_trace(self, path):
        """Write the recorded events as a Chrome trace (``.gz``: gzip-compressed)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        if path.endswith(".gz"):
            tmp = path[:-3]
            self.profiler.export_chrome_trace(tmp)
            with open(tmp, "rb") as fin, gzip.open(path, "wb") as fout:
                fout.writelines(fin)
            os.remove(tmp)
            return None
        return self.profiler.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting stacks")
        return self.profiler.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """The events averaged by name (``EventList`` of ``FunctionEventAvg``; ``.table(...)`` prints them)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def events(self):
        """The recorded events (``EventList`` of ``FunctionEvent``)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before accessing events")
        return self.profiler.function_events

    def add_metadata(self, key, value):
        self.preset_metadata[key] = value

    def add_metadata_json(self, key, value):
        self.preset_metadata[key] = json.loads(value) if isinstance(value, str) else value

    def preset_metadata_json(self, key, value):
        self.preset_metadata[key] = value

    def export_memory_timeline(self, path, device=None):
        raise NotImplementedError("hookgrad's profiler keeps no memory timeline (profile_memory attributes the bytes "
                                  "of each op's outputs to its event)")


class profile(_KinetoProfile):
    """torch.profiler.profile: records the ops (aten names), backward nodes and ``record_function`` ranges run
    inside; with a ``schedule``, only the active steps of each cycle, calling ``on_trace_ready`` at the end of
    each (``prof.step()`` marks a step; each step is a ``ProfilerStep#N`` range).

    >>> with hookgrad.profiler.profile() as p:
    ...     y = hookgrad.ones(2, 2).relu().sum()
    >>> print(p.key_averages().table(sort_by="cpu_time_total", row_limit=5))   # doctest: +SKIP
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        activities_set = set(activities) if activities else supported_activities()
        if use_cuda is not None:
            warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning, stacklevel=2)
            if use_cuda:
                activities_set.add(ProfilerActivity.CUDA)
            elif ProfilerActivity.CUDA in activities_set:
                activities_set.remove(ProfilerActivity.CUDA)
        if len(activities_set) == 0:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=activities_set, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config, execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events, custom_trace_id_callback=custom_trace_id_callback)
        if schedule:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._prev_schedule_action = self.current_action
        self.step_rec_fn = None
        A = ProfilerAction
        self.action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [partial(warn, "Incorrect schedule: WARMUP followed by NONE"), self.start_trace,
                                 self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [partial(warn, "Incorrect schedule: RECORD followed by NONE"), self.stop_trace],
            (A.RECORD, A.WARMUP): [partial(warn, "Incorrect schedule: RECORD followed by WARMUP"), self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                            self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                                     self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }
        prof.KinetoStepTracker.init_step_count(PROFILER_STEP_NAME)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        prof.KinetoStepTracker.erase_step_count(PROFILER_STEP_NAME)
        return False

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)
        self.current_action = self._prev_schedule_action

    def step(self):
        """Signals the profiler that the next profiling step has started."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self._prev_schedule_action = self.schedule(self.step_num)
        if self.current_action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def set_custom_trace_id_callback(self, callback):
        self.custom_trace_id_callback = callback

    def get_trace_id(self):
        return None

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action)) or ():
            action()


class ExecutionTraceObserver:
    """torch.profiler.ExecutionTraceObserver: hookgrad writes no execution traces; registering one raises."""

    def __init__(self):
        self._registered = False

    def register_callback(self, output_file_path):
        raise NotImplementedError("hookgrad's profiler records no execution trace (use export_chrome_trace)")

    def is_registered(self):
        return self._registered

    def unregister_callback(self):
        self._registered = False

    def cleanup(self):
        pass

    def get_output_file_path(self):
        return None
