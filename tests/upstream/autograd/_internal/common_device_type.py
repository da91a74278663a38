"""Stand-in for torch.testing._internal.common_device_type, CPU only: instantiate_device_type_tests makes
``<Class>CPU`` whose tests get ``device="cpu"`` (``devices=["cpu"]`` under deviceCountAtLeast(1)), one test per
dtype of @dtypes, named as PyTorch names them (``test_x_cpu``, ``test_x_cpu_float64``)."""
import functools
import inspect
import unittest

from .common_utils import _expand, _identity


def dtypes(*args):
    def deco(fn):
        fn._hg_dtypes = args
        return fn
    return deco


def dtypesIfCUDA(*args):
    return _identity


def dtypesIfMPS(*args):
    return _identity


def deviceCountAtLeast(n):
    def deco(fn):
        fn._hg_devices_at_least = n
        return fn
    return deco


def onlyCPU(fn):
    return fn


def onlyCUDA(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        raise unittest.SkipTest("onlyCUDA: this runner tests the CPU")
    return wrapper


def skipMeta(fn):
    return fn


def expectedFailureMPS(fn):
    return fn


def _dtype_suffix(dtype):
    return str(dtype).rpartition(".")[2]


def _device_test(fn, dtype, kwargs):
    needs = getattr(fn, "_hg_devices_at_least", None)
    takes_device = len(inspect.signature(fn).parameters) - len(kwargs) > 1

    @functools.wraps(fn)
    def test(self):
        args = []
        if not takes_device:
            pass
        elif needs is not None:
            if needs > 1:
                raise unittest.SkipTest(f"needs {needs} devices")
            args.append(["cpu"])
        else:
            args.append("cpu")
        if dtype is not None:
            args.append(dtype)
        return fn(self, *args, **kwargs)
    return test


def instantiate_device_type_tests(generic_test_class, scope, except_for=None, only_for=None, **kwargs):
    if only_for is not None and "cpu" not in only_for or except_for is not None and "cpu" in except_for:
        scope.pop(generic_test_class.__name__, None)
        return
    name = generic_test_class.__name__ + "CPU"
    attrs = {"device_type": "cpu", "__module__": generic_test_class.__module__, "__qualname__": name}
    for attr in list(vars(generic_test_class)):
        fn = getattr(generic_test_class, attr)
        if not attr.startswith("test") or not callable(fn):
            continue
        attrs[attr] = None                      # the generic test itself is not collected
        for suffix, pkwargs in _expand(fn):
            base = f"{attr}_{suffix}" if suffix else attr
            for dtype in getattr(fn, "_hg_dtypes", None) or (None,):
                test_name = f"{base}_cpu" + (f"_{_dtype_suffix(dtype)}" if dtype is not None else "")
                attrs[test_name] = _device_test(fn, dtype, pkwargs)
    scope[name] = type(name, (generic_test_class,), attrs)
    scope.pop(generic_test_class.__name__, None)
