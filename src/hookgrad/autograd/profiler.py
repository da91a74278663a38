"""torch.autograd.profiler: the profiler's recorder, built on the op hooks (``op_hooks.OpHook``): every
primitive in forward is an event named after its aten operator (``aten::addmm``), every node the engine
runs in backward is ``autograd::engine::evaluate_function: AddmmBackward0`` around ``AddmmBackward0``, and
``record_function("label")`` is a user range around what runs inside it. Events nest by time on each thread.
``torch.profiler.profile`` (hookgrad/profiler) records through the same ``profile`` class.

The composite ops ``aten::linear``, ``aten::matmul`` and ``aten::conv<n>d`` are ranges around their primitives
(``op_hooks.run_composite``, with aten's input shapes under ``record_shapes``); a factory is one event with the
parts PyTorch's kernel runs inside it (``aten::randn`` around ``aten::empty`` and ``aten::normal_``). Events of
ops have sequence number -1 unless they recorded a node; a backward node's two events carry its forward op's
sequence number and thread (``fwd_thread``), AccumulateGrad's -1 and 0.

NOTE: a gradient formula runs on arrays in a plain backward, so a backward node has no aten children (PyTorch
shows the mm/t/sum it calls); under create_graph the formula's Tensor ops are recorded inside it. Other composite
ops show their primitives only.
"""
import contextlib
import os
import sys
import threading
import time

from .._tensor import Tensor
from .op_hooks import OpHook, register_op_hook, aten_name
from .node import _MAX_SEQ      # the sequence number of nodes outside the forward's numbering (AccumulateGrad)
from .profiler_util import (EventList, FunctionEvent, FunctionEventAvg, DeviceType, _ids,  # noqa: F401
                            _format_time, _format_memory)

__all__ = ["profile", "record_function", "emit_itt", "emit_nvtx", "load_nvprof", "EnforceUnique",
           "parse_nvprof_trace", "KinetoStepTracker", "EventList", "FunctionEvent", "FunctionEventAvg"]

_is_profiler_enabled = False
_active = []                        # the recording sessions (profilers may nest: each records what runs inside)
_lock = threading.Lock()
_now = time.perf_counter_ns
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _profiler_enabled():
    """``torch.autograd._profiler_enabled()``: whether a profiler is recording."""
    return bool(_active)


def _set_is_profiler_enabled(enable):
    global _is_profiler_enabled
    _is_profiler_enabled = enable


def _shapes(xs):
    out = []
    for x in xs:
        if isinstance(x, Tensor):
            out.append(list(x.shape))
        elif isinstance(x, (list, tuple)) and x and all(isinstance(v, Tensor) for v in x):
            out.append([list(v.shape) for v in x])
        else:
            out.append([])
    return out


def _nbytes(outs, srcs):
    """Bytes of the new arrays among ``outs`` (an output viewing an input allocates nothing)."""
    import numpy as np
    arrays = [s._data for s in srcs if isinstance(s, Tensor)]
    n = 0
    for o in (outs if isinstance(outs, (tuple, list)) else (outs,)):
        if isinstance(o, Tensor):
            a = o._data
            if not any(a is s or np.may_share_memory(a, s) for s in arrays):
                n += a.nbytes
    return n


def _user_stack():
    """The user's frames, innermost first, as PyTorch's ``file(line): function`` entries."""
    out = []
    f = sys._getframe(2)
    while f is not None:
        if not f.f_code.co_filename.startswith(_PKG_DIR):
            out.append(f"{f.f_code.co_filename}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


class _Session(OpHook):
    """One recording: the op hook that opens and closes events, and the events, by start."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False, with_flops=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.events = []
        self._tls = threading.local()
        self._handle = None
        self._t0 = _now()

    # ---- the event stack of a thread ----
    def _stack(self):
        st = getattr(self._tls, "stack", None)
        if st is None:
            st = self._tls.stack = []
        return st

    def open(self, name, inputs=None, user=False, seq=-1, fwd_thread=0):
        t = (_now() - self._t0) / 1000.0
        trace_name = name       # the steps share one name in the tables, as PyTorch's ("ProfilerStep*")
        if user and name.startswith("ProfilerStep#"):
            name = "ProfilerStep*"
        ev = FunctionEvent(next(_ids), name, threading.get_ident(), t, t, trace_name=trace_name,
                           input_shapes=_shapes(inputs)
                           if self.record_shapes and inputs is not None else [],
                           stack=_user_stack() if self.with_stack and not user else [], sequence_nr=seq,
                           is_user_annotation=user, fwd_thread=fwd_thread)
        st = self._stack()
        if st:
            ev.set_cpu_parent(st[-1])
            st[-1].append_cpu_child(ev)
        st.append(ev)
        self.events.append(ev)
        return ev

    def close(self, ev, mem=0):
        """Close ``ev`` and anything left open inside it (an op that raised)."""
        t = (_now() - self._t0) / 1000.0
        st = self._stack()
        while st:
            top = st.pop()
            top.time_range.end = t
            top.cpu_memory_usage += sum(c.cpu_memory_usage for c in top.cpu_children)
            if top is ev:
                break
        ev.cpu_memory_usage += mem

    # ---- OpHook ----
    def forward_pre(self, name, inputs):
        self.open("aten::" + aten_name(name), inputs)

    def forward_post(self, name, inputs, output, node):
        st = self._stack()
        if st:
            ev = st[-1]
            if node is not None:
                ev.sequence_nr = node._seq
                node.__dict__["_fwd_thread"] = ev.thread     # its backward events name the forward's thread
            self.close(ev, _nbytes(output, inputs) if self.profile_memory else 0)

    def backward_pre(self, node, grad_outputs):
        name = node.name()
        seq = node._seq
        if seq >= _MAX_SEQ:         # AccumulateGrad and other nodes outside the forward's numbering
            seq, fwd = -1, 0
        else:
            fwd = node.__dict__.get("_fwd_thread") or threading.get_ident()
        self.open("autograd::engine::evaluate_function: " + name, seq=seq, fwd_thread=fwd)
        self.open(name, grad_outputs, seq=seq, fwd_thread=fwd)

    def backward_post(self, node, grad_inputs, grad_outputs):
        st = self._stack()
        if len(st) >= 2:
            self.close(st[-1], _nbytes(grad_inputs, grad_outputs) if self.profile_memory else 0)
            self.close(st[-1])

    def composite_pre(self, name, inputs, parts=()):
        ev = self.open("aten::" + name, inputs)
        for p in parts[:-1]:                # a factory: aten::empty, then the fill around the work
            self.close(self.open("aten::" + p))
        if parts:
            self.open("aten::" + parts[-1])
        comp = getattr(self._tls, "composite", None)
        if comp is None:
            comp = self._tls.composite = []
        comp.append(ev)

    def composite_post(self, name):
        comp = getattr(self._tls, "composite", None)
        if comp:
            ev = comp.pop()
            if any(e is ev for e in self._stack()):
                self.close(ev)

    def start(self):
        with _lock:
            _active.append(self)
        self._handle = register_op_hook(self)
        _set_is_profiler_enabled(True)

    def stop(self):
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        with _lock:
            if self in _active:
                _active.remove(self)
        _set_is_profiler_enabled(bool(_active))
        for st in [getattr(self._tls, "stack", [])]:
            while st:
                self.close(st[-1])


class record_function(contextlib.ContextDecorator):
    """A user range in the profiler's events and table: ``with record_function("label"):`` or
    ``@record_function("label")``; records nothing while no profiler runs."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self.record = None

    def __enter__(self):
        self.record = [(s, s.open(self.name, user=True)) for s in tuple(_active)] or None
        return self

    def _close(self, records):
        for s, ev in records or ():
            if s in _active:
                s.close(ev)

    def __exit__(self, exc_type, exc_value, traceback):
        if self.run_callbacks_on_exit:
            self._close(self.record)
            self.record = None
        return False

    def _call_end_callbacks_on_future(self, fut):
        """Close the range when ``fut`` completes (hookgrad's futures complete before they are returned)."""
        self.run_callbacks_on_exit = False
        records = self.record

        def end(f):
            self._close(records)
            return f.wait() if hasattr(f, "wait") else f
        return fut.then(end) if hasattr(fut, "then") else fut



def _record_function_enter(name, args=None):
    """torch.ops.profiler._record_function_enter: open a ``record_function`` range; the handle closes it."""
    handle = record_function(name, args)
    handle.__enter__()
    return handle


def _record_function_exit(handle):
    """torch.ops.profiler._record_function_exit: close the range opened by _record_function_enter."""
    handle.__exit__(None, None, None)


class profile:
    """``torch.autograd.profiler.profile``: record the ops, backward nodes and ``record_function`` ranges run
    inside; then ``key_averages().table(...)``, ``function_events``, ``export_chrome_trace(path)``.

    >>> with hookgrad.autograd.profiler.profile() as prof:
    ...     y = (hookgrad.ones(2, 2) * 3).sum()
    >>> [e.key for e in prof.key_averages()]
    ['aten::mul', 'aten::sum']
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        if not enabled:
            return
        self.use_device = None if use_device is None or use_device == "cpu" else use_device
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.record_shapes |= with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.entered = False
        self.function_events = None
        self._session = None
        self._old_events = []

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start_trace()
        return self

    def _start_trace(self):
        self._session = _Session(self.record_shapes, self.profile_memory, self.with_stack, self.with_flops)
        self._session.start()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        s = self._session
        if s is not None:
            s.stop()
            events = (self._old_events if self.acc_events else []) + s.events
            if self.with_flops:
                _add_flops(events)
            self.function_events = EventList(sorted(events, key=lambda e: e.time_range.start),
                                             use_device=self.use_device, profile_memory=self.profile_memory,
                                             with_flops=self.with_flops)
            self._old_events = events
            self._session = None
        return False

    def __repr__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        self._check_finish()
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only, time_unit=time_unit)
    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path):
        self._check_finish()
        return self.function_events.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        self._check_finish()
        return self.function_events.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self.function_events.self_cpu_time_total


_event_flops = [None]    # fn(FunctionEvent) -> flops or None: set by torch.utils.flop_counter (its formulas)


def _add_flops(events):
    """``with_flops``: the flop formulas of torch.utils.flop_counter for the events that have one."""
    fn = _event_flops[0]
    if fn is not None:
        for e in events:
            e.flops = fn(e)


class emit_nvtx:
    """No NVTX ranges without CUDA: a context manager that does nothing (as PyTorch's when disabled)."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if self.enabled:
            if self.entered:
                raise RuntimeError("NVTX annotation context manager is not reentrant")
            self.entered = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.entered = False
        return False


class emit_itt(emit_nvtx):
    """No ITT (VTune) ranges in hookgrad: a context manager that does nothing."""


def load_nvprof(path):
    raise NotImplementedError("hookgrad records no nvprof traces: load_nvprof has nothing to read")


parse_nvprof_trace = load_nvprof


class EnforceUnique:
    """Raises an error if a key is seen more than once."""

    def __init__(self):
        self.seen = set()

    def see(self, *key):
        if key in self.seen:
            raise RuntimeError("duplicate key: " + str(key))
        self.seen.add(key)


class KinetoStepTracker:
    """The global step count profilers share (``torch.autograd.profiler.KinetoStepTracker``)."""
    _current_step = 0
    _step_dict = {}

    @classmethod
    def init_step_count(cls, requester):
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester):
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester):
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        new_step = max(cls._step_dict.values())
        if new_step > cls._current_step:
            cls._current_step = new_step
        return cls._current_step

    @classmethod
    def current_step(cls):
        return cls._current_step


def record_function_enter(name, args=None):
    rf = record_function(name, args)
    rf.__enter__()
    return rf


def record_function_exit(rf):
    rf.__exit__(None, None, None)





