"""Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly).

While enabled, every recorded node keeps the traceback of the forward call that created it (this
costs nothing while disabled: recording reads one flag of :data:`state`). During backward, a node that
fails (itself, a hook, or with check_nan a NaN in its grad_inputs) warns with that traceback;
NaN raises ``RuntimeError("Function 'DivBackward0' returned nan values in its 0th output.")``.

This module owns the mode's state: node recording and the engine read ``state``; nothing here
writes into another module. The engine asks :func:`wrap_step` once per backward pass.
"""
import functools
import sys
import warnings

import numpy as np
from .._dtype import is_floating as _is_floating

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]


class _State:          # process-wide, like torch's AnomalyMode
    __slots__ = ("enabled", "check_nan", "running")

    def __init__(self):
        self.enabled = False
        self.check_nan = True
        self.running = None     # the node whose step runs under anomaly mode: the parent of nodes made then


state = _State()
_st = state


def is_anomaly_enabled():
    return _st.enabled


def is_anomaly_check_nan_enabled():
    return _st.check_nan


def _warn(msg):
    """A UserWarning; when warnings are errors, printed to stderr instead (the error being raised wins),
    as PyTorch's warning handler does inside a failing backward."""
    try:
        warnings.warn(msg, UserWarning, stacklevel=4)
    except Warning as w:
        print(f"{type(w).__name__}: {w}", file=sys.stderr)


def _report(fn):
    """The warnings of a node that failed: its forward traceback, then each parent's (the node that was
    running when it was made, in a backward pass under create_graph), as PyTorch's AnomalyMetadata."""
    name, trace = fn.name(), fn._trace
    if trace is None:
        _warn(f"Error detected in {name}. No forward pass information available. Enable detect anomaly during "
              "forward pass for more information.")
    else:
        _warn(f"Error detected in {name}. Traceback of forward call that caused the error:\n" + "".join(trace))
    parent = getattr(fn, "_anomaly_parent", None)
    while parent is not None:
        name, trace = parent.name(), parent._trace
        if trace is None:
            _warn(f"Error detected in {name}. No forward pass information available. Enable detect anomaly "
                  "during forward pass for more information.")
        else:
            _warn(f"\n\nPrevious calculation was induced by {name}. Traceback of forward call that induced the "
                  "previous calculation:\n" + "".join(trace))
        parent = getattr(parent, "_anomaly_parent", None)


def wrap_step(step, space):
    """The engine's node step under anomaly mode: a failing node (itself or a hook), or with check_nan
    a NaN in what it returns, warns with the traceback of the forward call that made the node (and of
    its parents). Nodes made while it runs (create_graph) get it as their parent."""
    def run_anomaly(task, fn, buf):
        prev = _st.running
        _st.running = fn
        try:
            outs = step(task, fn, buf)
            if _st.check_nan:
                for i, g in enumerate(outs):
                    if g is not None:
                        a = space.tensor(g)._data
                        if _is_floating(a.dtype) and np.isnan(a).any():
                            raise RuntimeError(f"Function '{fn.name()}' returned nan values in its {i}th output.")
            return outs
        except Exception:
            _report(fn)
            raise
        finally:
            _st.running = prev
    return run_anomaly


def set_anomaly_enabled(enabled, check_nan=True):
    """torch.set_anomaly_enabled: switch anomaly mode on or off (no context)."""
    _set(bool(enabled), check_nan)


def _set(enabled, check_nan):
    _st.enabled = enabled
    _st.check_nan = check_nan


class detect_anomaly:
    """Context manager (and decorator) enabling anomaly detection for the autograd engine."""

    def __init__(self, check_nan=True):
        self.prev = _st.enabled
        self.check_nan = check_nan
        self.prev_check_nan = _st.check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self):
        _set(True, self.check_nan)

    def __exit__(self, *args):
        _set(self.prev, self.prev_check_nan)

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*a, **k):
            with self.__class__(self.check_nan):
                return func(*a, **k)
        return wrapper


class set_detect_anomaly:
    """Turns anomaly detection on or off (at construction, like torch); restores it on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = _st.enabled
        self.prev_check_nan = _st.check_nan
        _set(bool(mode), check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *args):
        _set(self.prev, self.prev_check_nan)
