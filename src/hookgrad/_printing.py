"""repr/str of tensors, formatted exactly as PyTorch 2.13 formats them (torch/_tensor_str.py).

The pieces mirror PyTorch's: one ``_Formatter`` chooses a single layout for every element of a tensor
(integer, integer-valued float ``28.``, fixed point ``1.0000`` or scientific ``2.0201e+07``) and a
common width so columns align; ``_tensor_str`` nests brackets, wraps rows at ``linewidth`` and
summarises tensors with more than ``threshold`` elements to ``edgeitems`` per edge with ``...``;
``tensor_repr`` adds the suffixes (``dtype=``, ``size=``, ``grad_fn=``/``requires_grad=``).
Values are formatted as Python floats (float16/float32 widened exactly to float64), as torch does
through ``tolist()``/``item()``.
"""
import contextlib
import math

import numpy as np

from . import _array, _dtype, _layout


class _PrintOptions:
    """The current print options (``PRINT_OPTS``), defaults as in PyTorch."""
    __slots__ = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")

    def __init__(self):
        self.precision, self.threshold, self.edgeitems, self.linewidth, self.sci_mode = 4, 1000, 3, 80, None


PRINT_OPTS = _PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set print options as ``torch.set_printoptions`` does.

    ``profile`` ('default', 'short', 'full') sets the four numeric options first, explicit arguments
    then override them; ``sci_mode`` is always assigned (None = choose per tensor), as in PyTorch.
    """
    if profile in _PROFILES:
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current print options as a dict that ``set_printoptions(**d)`` accepts."""
    return {k: getattr(PRINT_OPTS, k) for k in _PrintOptions.__slots__}


@contextlib.contextmanager
def printoptions(**kwargs):
    """Context manager that sets print options and restores the previous ones on exit."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Chooses one layout and width for all values of ``arr`` (the, possibly summarised, data)."""

    def __init__(self, arr):
        self.floating = arr.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        if not self.floating:
            for v in set(arr.ravel().tolist()):
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        flat = arr.ravel()
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        absval = np.abs(vals).astype(np.float64)
        vmin, vmax = float(absval.min()), float(absval.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = bool(vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4)
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        p = PRINT_OPTS.precision
        for v in set(vals.astype(np.float64).tolist()):
            if self.sci_mode:
                w = len(f"{v:.{p}e}")
            elif self.int_mode:
                w = len(f"{v:.0f}") + 1          # room for the trailing '.'
            else:
                w = len(f"{v:.{p}f}")
            self.max_width = max(self.max_width, w)

    def format(self, value):
        """One element (a Python scalar) right-aligned to the common width."""
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


class _ComplexFormatter:
    """PyTorch's pair of formatters for a complex tensor: one for the real parts, one for the imaginary
    parts; an element prints as ``real+imagj`` (``-`` when the imaginary part is negative)."""

    def __init__(self, arr):
        self.re, self.im = _Formatter(arr.real), _Formatter(arr.imag)
        self.max_width = self.re.max_width + self.im.max_width + 1      # the width of one element, ``j`` included

    def format(self, value):
        value = complex(value)
        real = self.re.format(value.real)
        imag = (self.im.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _summarized_data(arr):
    """The values shown when summarising (what PyTorch's formatter sees): edge rows at every level."""
    e = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate((arr[:e], arr[-e:])) if arr.shape[0] > 2 * e else arr
    if not e:
        return arr[:0].ravel()
    rows = list(range(e)) + list(range(arr.shape[0] - e, arr.shape[0])) if arr.shape[0] > 2 * e \
        else range(arr.shape[0])
    return np.concatenate([_summarized_data(arr[i]).ravel() for i in rows])


def _vector_str(arr, indent, summarize, fmt):
    """A 1-d row: elements wrapped to ``linewidth``, continuation lines indented under the bracket."""
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2)))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * e:
        data = [fmt.format(v) for v in arr[:e].tolist()] + [" ..."] + [fmt.format(v) for v in arr[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(arr, indent, summarize, fmt):
    """Nested brackets; a d-dim block separates its sub-blocks with d-1 newlines."""
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    e, n = PRINT_OPTS.edgeitems, arr.shape[0]
    if summarize and n > 2 * e:
        slices = ([_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                  + [_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(n - e, n)])
    else:
        slices = [_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _tensor_str(arr, indent):
    """The bracketed body of a non-empty array printed after a prefix ``indent`` characters wide."""
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    if arr.dtype.kind == "V":
        arr = arr.astype(np.float32)     # bfloat16 (ml_dtypes): its exact float32 widening
    fmt = (_ComplexFormatter if arr.dtype.kind == "c" else _Formatter)(_summarized_data(arr) if summarize else arr)
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float64)     # format exact float64 widenings, as torch's tolist() does
    elif arr.dtype.kind == "c":
        arr = arr.astype(np.complex128)
    return _nested_str(arr, indent, summarize, fmt)


def _add_suffixes(body, suffixes, indent):
    """Append ``, suffix`` items, starting a new line when one would pass ``linewidth``."""
    out = [body]
    last_line_len = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if last_line_len + len(s) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
        else:
            out.append(", " + s)
            last_line_len += len(s) + 2
    out.append(")")
    return "".join(out)


def tensor_repr(t, tensor_contents=None):
    """``repr(t)`` as PyTorch prints it (``str(t)`` is the same); ``tensor_contents`` replaces the body."""
    # Tensor, nn.Parameter, nn.Buffer (_tensor_repr) and views (_plain_repr) print as tensor(...); read from the
    # class's own dict, so that a subclass prints its name
    cd = type(t).__dict__
    plain = cd.get("_tensor_repr", False) or cd.get("_plain_repr", False)
    prefix = "tensor(" if plain else f"{type(t).__name__}("
    indent = len(prefix)
    if type(t._data) is not np.ndarray and _layout.is_sparse_storage(t._data):
        return _sparse_repr(t, prefix, tensor_contents)
    if type(t._data) is not np.ndarray and t.is_meta:     # no data: tensor(..., device='meta', size=(2, 3))
        suffixes = ["device='meta'", "size=" + str(tuple(t.shape))]
        if t.dtype is not _dtype.get_default_dtype():
            suffixes.append("dtype=" + str(t.dtype))
        arr, tensor_contents = None, "..." if tensor_contents is None else tensor_contents
    else:
        arr, dt, default = _array.to_host(t._data), t.dtype, _dtype.get_default_dtype()     # one host read
        suffixes = [] if type(t._data) is np.ndarray or t.device.type == "cpu" else [f"device='{t.device}'"]
    if arr is None:
        pass
    elif arr.size == 0:                      # no values to infer the dtype from: always show it
        if arr.ndim != 1:
            suffixes.append("size=" + str(tuple(arr.shape)))
        if dt is not default:
            suffixes.append("dtype=" + str(dt))
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + str(tuple(arr.shape)))
        if dt not in (default, _dtype.int64, _dtype.bool_, _dtype._TO_COMPLEX.get(default)):
            suffixes.append("dtype=" + str(dt))
    if tensor_contents is None:
        tensor_contents = _tensor_str(arr, indent)
    try:
        gf = t.grad_fn
    except RuntimeError:    # a view made and modified in place under no_grad: no history can be rebuilt (PyTorch)
        suffixes.append("grad_fn=<Invalid>")
    else:
        if gf is not None:
            suffixes.append(f"grad_fn=<{type(gf).__name__.rsplit('::', 1)[-1]}>")
        elif t.requires_grad:
            suffixes.append("requires_grad=True")
    tangent = getattr(t, "_fw_grad", None)      # forward AD: a dual tensor shows its tangent
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")
    s = _add_suffixes(prefix + tensor_contents, suffixes, indent)
    wrap = getattr(t, "_repr_wrap", None)       # a subclass of nn.Parameter: Parameter(Name(...))
    return f"{wrap}({s})" if wrap is not None and not plain else s


def _sparse_repr(t, prefix, tensor_contents=None):
    """A sparse tensor as PyTorch prints it: its index and value tensors, then size, nnz, dtype and layout."""
    st = t._data
    indent = len(prefix)
    dt, default = t.dtype, _dtype.get_default_dtype()
    suffixes = ["size=" + str(tuple(st.shape)), "nnz=" + str(st.nnz)]
    if dt not in (default, _dtype.int64, _dtype.bool_, _dtype._TO_COMPLEX.get(default)):
        suffixes.append("dtype=" + str(dt))
    if tensor_contents is None:
        if st._layout is _layout.sparse_coo:
            parts = (("indices", st.indices), ("values", st.values))
        else:
            c, p = ("row", "col") if st.row_major else ("col", "row")
            parts = ((f"c{c}_indices", st.compressed), (f"{p}_indices", st.plain), ("values", st.values))
        out = []
        for name, a in parts:
            a = _array.to_host(a)
            pre = name + "=tensor("
            body = _tensor_str(a, indent + len(pre))
            if a.size == 0:
                body += ", size=" + str(tuple(a.shape))
            out.append(pre + body + ")")
        tensor_contents = (",\n" + " " * indent).join(out)
    suffixes.append("layout=" + str(st._layout))
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__.rsplit('::', 1)[-1]}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    body = prefix + tensor_contents
    if st._layout is not _layout.sparse_coo:
        return _add_suffixes(body, suffixes, indent)
    out = [body, ",\n" + " " * indent + suffixes[0]]     # PyTorch starts a COO tensor's suffixes on a new line
    last = indent + len(suffixes[0])
    for x in suffixes[1:]:
        if last + len(x) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + x)
            last = indent + len(x)
        else:
            out.append(", " + x)
            last += len(x) + 2
    return "".join(out) + ")"

