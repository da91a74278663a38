"""torch.testing: ``assert_close``, the deprecated ``assert_allclose`` and ``make_tensor``.

A port of PyTorch 2.13's ``torch/testing/_comparison.py`` and ``_creation.py`` (BSD licence) restricted to
what hookgrad has (strided CPU tensors, real dtypes): same pairing of inputs (None, bool, number, tensor-like,
sequences, mappings), same default tolerances per dtype and the same error messages.
"""
import cmath
import collections.abc
import contextlib
import functools
import math
import warnings

import numpy as np

import hookgrad as torch
from ._dtype import is_floating as _is_floating

__all__ = ["assert_close", "assert_allclose", "make_tensor"]


class ErrorMeta(Exception):
    """An error found by a pair: raised as ``type(msg)`` once the item id is appended."""

    def __init__(self, type, msg, *, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated_msg = self.msg
            if self.id:
                generated_msg += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated_msg) if callable(msg) else generated_msg
        return self.type(msg)


# {dtype: (rtol, atol)}
_DTYPE_PRECISIONS = {torch.float16: (0.001, 1e-5), torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7)}


def default_tolerances(*inputs, dtype_precisions=None):
    """The loosest (rtol, atol) of the inputs' dtypes (0, 0 for integer and bool dtypes)."""
    dtypes = []
    for input in inputs:
        if isinstance(input, torch.Tensor):
            dtypes.append(input.dtype)
        elif isinstance(input, torch.dtype):
            dtypes.append(input)
        else:
            raise TypeError(f"Expected a torch.Tensor or a torch.dtype, but got {type(input)} instead.")
    dtype_precisions = dtype_precisions or _DTYPE_PRECISIONS
    rtols, atols = zip(*[dtype_precisions.get(dtype, (0.0, 0.0)) for dtype in dtypes])
    return max(rtols), max(atols)


def get_tolerances(*inputs, rtol, atol, id=()):
    if (rtol is None) ^ (atol is None):
        raise ErrorMeta(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, "
                                    f"but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None and atol is not None:
        return rtol, atol
    return default_tolerances(*inputs)


def _make_mismatch_msg(*, default_identifier, identifier=None, extra=None, abs_diff, abs_diff_idx=None, atol,
                       rel_diff, rel_diff_idx=None, rtol):
    equality = rtol == 0 and atol == 0

    def make_diff_msg(*, type, diff, idx, tol):
        msg = f"{type.title()} difference: {diff}" if idx is None else \
            f"Greatest {type} difference: {diff} at index {idx}"
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    if identifier is None:
        identifier = default_identifier
    elif callable(identifier):
        identifier = identifier(default_identifier)
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += make_diff_msg(type="absolute", diff=abs_diff, idx=abs_diff_idx, tol=atol)
    msg += make_diff_msg(type="relative", diff=rel_diff, idx=rel_diff_idx, tol=rtol)
    return msg.strip()


def make_scalar_mismatch_msg(actual, expected, *, rtol, atol, identifier=None):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _make_mismatch_msg(default_identifier="Scalars", identifier=identifier,
                              extra=f"Expected {expected} but got {actual}.", abs_diff=abs_diff, atol=atol,
                              rel_diff=rel_diff, rtol=rtol)


def make_tensor_mismatch_msg(actual, expected, matches, *, rtol, atol, identifier=None):
    m = matches._data
    number_of_elements = m.size
    total_mismatches = number_of_elements - int(m.sum())
    extra = (f"Mismatched elements: {total_mismatches} / {number_of_elements} "
             f"({total_mismatches / number_of_elements:.1%})")
    a, e = actual._data.reshape(-1), expected._data.reshape(-1)
    if not actual.dtype.is_floating_point:
        a, e = a.astype(np.int64), e.astype(np.int64)
    mf = m.reshape(-1)
    abs_diff = np.abs(a - e)
    abs_diff[mf] = 0
    rel_diff = abs_diff / np.abs(e)
    rel_diff[mf] = 0

    def argmax(v):  # torch.max(v, 0): a NaN wins, first occurrence
        nan = np.isnan(v) if _is_floating(v.dtype) else None
        i = int(np.argmax(nan)) if nan is not None and nan.any() else int(np.argmax(v))
        return v[i].item(), tuple(int(k) for k in np.unravel_index(i, m.shape)) if m.shape else ()

    abs_v, abs_i = argmax(abs_diff)
    rel_v, rel_i = argmax(rel_diff)
    return _make_mismatch_msg(default_identifier="Tensor-likes", identifier=identifier, extra=extra,
                              abs_diff=abs_v, abs_diff_idx=abs_i, atol=atol, rel_diff=rel_v, rel_diff_idx=rel_i,
                              rtol=rtol)


class UnsupportedInputs(Exception):
    """A pair type that cannot handle the inputs raises this; the next pair type is tried."""


class Pair:
    def __init__(self, actual, expected, *, id=(), **unknown_parameters):
        self.actual, self.expected, self.id = actual, expected, id
        self._unknown_parameters = unknown_parameters

    @staticmethod
    def _inputs_not_supported():
        raise UnsupportedInputs

    @staticmethod
    def _check_inputs_isinstance(*inputs, cls):
        if not all(isinstance(input, cls) for input in inputs):
            Pair._inputs_not_supported()

    def _fail(self, type, msg, *, id=()):
        raise ErrorMeta(type, msg, id=self.id if not id and hasattr(self, "id") else id)

    def compare(self):
        raise NotImplementedError


class ObjectPair(Pair):
    def compare(self):
        try:
            equal = self.actual == self.expected
        except Exception as error:
            raise ErrorMeta(ValueError, f"{self.actual} == {self.expected} failed with:\n{error}.",
                            id=self.id) from error
        if not equal:
            self._fail(AssertionError, f"{self.actual} != {self.expected}")


class NonePair(Pair):
    def __init__(self, actual, expected, **other_parameters):
        if not (actual is None or expected is None):
            self._inputs_not_supported()
        super().__init__(actual, expected, **other_parameters)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            self._fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class BooleanPair(Pair):
    def __init__(self, actual, expected, *, id, **other_parameters):
        self._check_inputs_isinstance(actual, expected, cls=(bool, np.bool_))
        actual, expected = (bool(x) for x in (actual, expected))
        super().__init__(actual, expected, **other_parameters)

    def compare(self):
        if self.actual is not self.expected:
            self._fail(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


class NumberPair(Pair):
    _TYPE_TO_DTYPE = {int: torch.int64, float: torch.float64, complex: torch.float64}
    _NUMBER_TYPES = tuple(_TYPE_TO_DTYPE)

    def __init__(self, actual, expected, *, id=(), rtol=None, atol=None, equal_nan=False, check_dtype=False,
                 **other_parameters):
        self._check_inputs_isinstance(actual, expected, cls=(*self._NUMBER_TYPES, np.number))
        actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        super().__init__(actual, expected, id=id, **other_parameters)
        self.rtol, self.atol = get_tolerances(*[self._TYPE_TO_DTYPE[type(x)] for x in (actual, expected)],
                                              rtol=rtol, atol=atol, id=id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        if self.check_dtype and type(self.actual) is not type(self.expected):
            self._fail(AssertionError,
                       f"The (d)types do not match: {type(self.actual)} != {type(self.expected)}.")
        if self.actual == self.expected:
            return
        if self.equal_nan and cmath.isnan(self.actual) and cmath.isnan(self.expected):
            return
        abs_diff = abs(self.actual - self.expected)
        tolerance = self.atol + self.rtol * abs(self.expected)
        if cmath.isfinite(abs_diff) and abs_diff <= tolerance:
            return
        self._fail(AssertionError, make_scalar_mismatch_msg(self.actual, self.expected, rtol=self.rtol,
                                                            atol=self.atol))


class TensorLikePair(Pair):
    def __init__(self, actual, expected, *, id=(), allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, **other_parameters):
        directly_related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not directly_related:
            self._inputs_not_supported()
        if not allow_subclasses and type(actual) is not type(expected):
            self._inputs_not_supported()
        actual, expected = (self._to_tensor(x) for x in (actual, expected))
        super().__init__(actual, expected, id=id, **other_parameters)
        self.rtol, self.atol = get_tolerances(actual, expected, rtol=rtol, atol=atol, id=self.id)
        self.equal_nan, self.check_device, self.check_dtype = equal_nan, check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    def _to_tensor(self, tensor_like):
        if isinstance(tensor_like, torch.Tensor):
            return tensor_like
        try:
            return torch.as_tensor(tensor_like)
        except Exception:
            self._inputs_not_supported()

    def compare(self):
        actual, expected = self.actual, self.expected
        self._compare_attributes(actual, expected)
        if actual.dtype != expected.dtype:
            dtype = torch.promote_types(actual.dtype, expected.dtype)
            actual, expected = actual.to(dtype), expected.to(dtype)
        self._compare_regular_values_close(actual, expected, rtol=self.rtol, atol=self.atol,
                                           equal_nan=self.equal_nan)

    def _compare_attributes(self, actual, expected):
        def raise_mismatch_error(attribute_name, actual_value, expected_value):
            self._fail(AssertionError, f"The values for attribute '{attribute_name}' do not match: "
                                       f"{actual_value} != {expected_value}.")

        if actual.shape != expected.shape:
            raise_mismatch_error("shape", actual.shape, expected.shape)
        if self.check_stride and actual.stride() != expected.stride():
            raise_mismatch_error("stride()", actual.stride(), expected.stride())
        if self.check_dtype and actual.dtype != expected.dtype:
            raise_mismatch_error("dtype", actual.dtype, expected.dtype)

    def _compare_regular_values_close(self, actual, expected, *, rtol, atol, equal_nan, identifier=None):
        with torch.no_grad():
            matches = torch.isclose(actual.detach(), expected.detach(), rtol=rtol, atol=atol, equal_nan=equal_nan)
        if bool(matches._data.all()):
            return
        if actual.shape == torch.Size([]):
            msg = make_scalar_mismatch_msg(actual.item(), expected.item(), rtol=rtol, atol=atol,
                                           identifier=identifier)
        else:
            msg = make_tensor_mismatch_msg(actual, expected, matches, rtol=rtol, atol=atol, identifier=identifier)
        self._fail(AssertionError, msg)


def originate_pairs(actual, expected, *, pair_types, sequence_types=(collections.abc.Sequence,),
                    mapping_types=(collections.abc.Mapping,), id=(), **options):
    if (isinstance(actual, sequence_types) and not isinstance(actual, str)
            and isinstance(expected, sequence_types) and not isinstance(expected, str)):
        actual_len, expected_len = len(actual), len(expected)
        if actual_len != expected_len:
            raise ErrorMeta(AssertionError, f"The length of the sequences mismatch: {actual_len} != {expected_len}",
                            id=id)
        pairs = []
        for idx in range(actual_len):
            pairs.extend(originate_pairs(actual[idx], expected[idx], pair_types=pair_types,
                                         sequence_types=sequence_types, mapping_types=mapping_types,
                                         id=(*id, idx), **options))
        return pairs
    if isinstance(actual, mapping_types) and isinstance(expected, mapping_types):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise ErrorMeta(AssertionError, (
                f"The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}"), id=id)
        keys = actual_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(originate_pairs(actual[key], expected[key], pair_types=pair_types,
                                         sequence_types=sequence_types, mapping_types=mapping_types,
                                         id=(*id, key), **options))
        return pairs
    for pair_type in pair_types:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except UnsupportedInputs:
            continue
    raise ErrorMeta(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} "
                               f"and {type(expected)}.", id=id)


def not_close_error_metas(actual, expected, *, pair_types=(ObjectPair,), sequence_types=(collections.abc.Sequence,),
                          mapping_types=(collections.abc.Mapping,), **options):
    __tracebackhide__ = True
    try:
        pairs = originate_pairs(actual, expected, pair_types=pair_types, sequence_types=sequence_types,
                                mapping_types=mapping_types, **options)
    except ErrorMeta as error_meta:
        raise error_meta.to_error() from None
    error_metas = []
    for pair in pairs:
        try:
            pair.compare()
        except ErrorMeta as error_meta:
            error_metas.append(error_meta)
    return error_metas


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Asserts that ``actual`` and ``expected`` are close (PyTorch's ``torch.testing.assert_close``).

    >>> assert_close(hookgrad.tensor([1.0, 2.0]), hookgrad.tensor([1.0, 2.0 + 1e-7]))
    """
    __tracebackhide__ = True
    error_metas = not_close_error_metas(
        actual, expected, pair_types=(NonePair, BooleanPair, NumberPair, TensorLikePair),
        allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
        check_dtype=check_dtype, check_layout=check_layout, check_stride=check_stride, msg=msg)
    if error_metas:
        raise error_metas[0].to_error(msg)


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated since PyTorch 1.12: use :func:`assert_close`."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, torch.Tensor):
        actual = torch.tensor(actual)
    if not isinstance(expected, torch.Tensor):
        expected = torch.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = default_tolerances(actual, expected, dtype_precisions={
            torch.float16: (1e-3, 1e-3), torch.float32: (1e-4, 1e-5), torch.float64: (1e-5, 1e-8)})
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)


_INTEGRAL_TYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
_FLOATING_TYPES = [torch.float16, torch.float32, torch.float64]
_BOOLEAN_OR_INTEGRAL_TYPES = [torch.bool, *_INTEGRAL_TYPES]


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` filled with values uniformly drawn from ``[low, high)`` (PyTorch's defaults:
    ``[-9, 9)`` for floating dtypes, ``[-9, 10)`` for integers, ``[0, 2)`` for bool)."""

    def modify_low_high(low, high, *, lowest_inclusive, highest_exclusive, default_low, default_high):
        def clamp(a, l, h):
            return min(max(a, l), h)

        low = low if low is not None else default_low
        high = high if high is not None else default_high
        if any(isinstance(value, float) and math.isnan(value) for value in [low, high]):
            raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
        elif low == high and dtype in _FLOATING_TYPES:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types "
                          "is deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest_inclusive or low >= highest_exclusive:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                             f"but {dtype} only supports [{lowest_inclusive}, {highest_exclusive})")
        low = clamp(low, lowest_inclusive, highest_exclusive)
        high = clamp(high, lowest_inclusive, highest_exclusive)
        if dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
            return math.ceil(low), math.ceil(high)
        return low, high

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, "
                         f"but got {noncontiguous=} and {memory_format=}")
    if requires_grad and dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got {dtype=}")
    noncontiguous = noncontiguous and functools.reduce(lambda x, y: x * y, shape, 1) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is torch.bool:
        low, high = modify_low_high(low, high, lowest_inclusive=0, highest_exclusive=2, default_low=0,
                                    default_high=2)
        result = torch.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL_TYPES:
        low, high = modify_low_high(low, high, lowest_inclusive=torch.iinfo(dtype).min,
                                    highest_exclusive=torch.iinfo(dtype).max + (1 if dtype is not torch.int64 else 0),
                                    default_low=-9, default_high=10)
        result = torch.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING_TYPES:
        low, high = modify_low_high(low, high, lowest_inclusive=torch.finfo(dtype).min,
                                    highest_exclusive=torch.finfo(dtype).max, default_low=-9, default_high=9)
        result = torch.empty(shape, device=device, dtype=dtype)
        if high - low >= torch.finfo(dtype).max:
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    elif dtype in (torch.complex64, torch.complex128):      # real and imaginary parts uniform in [low, high)
        real = torch.float32 if dtype is torch.complex64 else torch.float64
        low, high = modify_low_high(low, high, lowest_inclusive=torch.finfo(real).min,
                                    highest_exclusive=torch.finfo(real).max, default_low=-9, default_high=9)
        result = torch.complex(torch.empty(shape, device=device, dtype=real).uniform_(low, high),
                               torch.empty(shape, device=device, dtype=real).uniform_(low, high))
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor()."
                        " To request support, file an issue at: https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype in _BOOLEAN_OR_INTEGRAL_TYPES else torch.finfo(dtype).tiny
    if dtype in _FLOATING_TYPES:
        result.requires_grad = requires_grad
    return result
