"""Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly).

While enabled, every recorded node keeps the traceback of the forward call that created it (this
costs nothing while disabled: ``Node._record`` checks one module flag). During backward, a node that
fails (itself, a hook, or with check_nan a NaN in its grad_inputs) warns with that traceback;
NaN raises ``RuntimeError("Function 'DivBackward0' returned nan values in its 0th output.")``.
"""
import functools
import warnings

import numpy as np

from . import graph as _g
from . import engine as _engine

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]


class _State:          # process-wide, like torch's AnomalyMode
    enabled = False
    check_nan = True


_st = _State()


def is_anomaly_enabled():
    return _st.enabled


def is_anomaly_check_nan_enabled():
    return _st.check_nan


class _Anomaly:
    """What the engine calls instead of the plain node step while anomaly mode is on."""

    @staticmethod
    def run(fn, buf, task=None):
        try:
            outs = _engine._run_node(fn, buf, task)
            if _st.check_nan:
                for i, g in enumerate(outs):
                    if g is not None and g._data.dtype.kind == "f" and np.isnan(g._data).any():
                        raise RuntimeError(f"Function '{fn.name()}' returned nan values in its {i}th output.")
            return outs
        except Exception:
            trace = fn._trace
            if trace is not None:
                warnings.warn(f"Error detected in {fn.name()}. Traceback of forward call that caused the error:\n"
                              + "".join(trace), UserWarning, stacklevel=2)
            else:
                warnings.warn(f"Error detected in {fn.name()}. No forward pass information available. Enable "
                              "detect anomaly during forward pass for more information.", UserWarning, stacklevel=2)
            raise


def set_anomaly_enabled(enabled, check_nan=True):
    """torch.set_anomaly_enabled: switch anomaly mode on or off (no context)."""
    _set(bool(enabled), check_nan)


def _set(enabled, check_nan):
    _st.enabled = enabled
    _st.check_nan = check_nan
    _g._anomaly_enabled = enabled
    _engine._anomaly = _Anomaly if enabled else None


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
