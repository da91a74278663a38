"""PyTorch's exceptions: the one place that builds them for argument checks and NumPy's errors.

Shared argument checks (``not_tensor``, ``not_number``, ``not_implemented_for``, ``no_device``, ...) give
PyTorch's argument-parser and kernel texts. Arguments are checked where PyTorch checks them (in the public functions); this is the net under
that: an exception NumPy raises while an op's forward runs (shapes that do not broadcast, an axis out
of range, a dtype no ufunc loop takes, an integer division by zero) reaches the user as PyTorch's
exception type with a message that names the op, never as NumPy's own. The converted exception is
also an instance of the original built-in base (ValueError, IndexError, ...), so that code inside
hookgrad that catches NumPy's error to build a more precise message keeps working.
"""
import linecache
import numbers
import re

import numpy as np

_PKG_DIR = __file__.rsplit("_errors.py", 1)[0]
NUMPY_ERRORS = (ValueError, IndexError, TypeError, ZeroDivisionError, ArithmeticError)
_DUAL = {}


def _dual(torch_type, original):
    """An exception class named as PyTorch's type that is also ``original``'s built-in base."""
    base = next(k for k in type(original).__mro__ if k.__module__ == "builtins")
    if issubclass(torch_type, base):
        return torch_type
    key = (torch_type, base)
    cls = _DUAL.get(key)
    if cls is None:
        cls = _DUAL[key] = type(torch_type.__name__, (torch_type, base), {"__module__": "builtins"})
    return cls


def broadcast_error(sa, sb, detail=True):
    """PyTorch's error for shapes that do not broadcast (naming the first mismatch from the right);
    ``detail`` appends both shapes."""
    n = max(len(sa), len(sb))
    a = (1,) * (n - len(sa)) + tuple(sa)
    b = (1,) * (n - len(sb)) + tuple(sb)
    for i in range(n - 1, -1, -1):
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            return RuntimeError(f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) at "
                                f"non-singleton dimension {i}"
                                + (f" (hookgrad: shapes {list(sa)} and {list(sb)})" if detail else ""))
    return RuntimeError(f"shapes {list(sa)} and {list(sb)} do not broadcast")


def _raised_by_hookgrad(e):
    """True when ``e`` comes from a ``raise`` statement in hookgrad's own code (a deliberate error)."""
    tb = e.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if not code.co_filename.startswith(_PKG_DIR):
        return False
    return linecache.getline(code.co_filename, tb.tb_lineno).lstrip().startswith("raise")


def _shapes(text):
    return [tuple(int(d) for d in s.split(",") if d.strip()) for s in re.findall(r"\(([\d, ]*)\)", text)]


def from_numpy(op, e):
    """PyTorch's exception for ``e``, raised by NumPy while running ``op`` (a name such as ``"lerp"``),
    or None when ``e`` is one of hookgrad's deliberate errors (re-raise it unchanged)."""
    if _raised_by_hookgrad(e):
        return None
    msg = str(e)
    where = f" (hookgrad: in {op}, NumPy said: {msg})"
    if isinstance(e, np.exceptions.AxisError):
        m = re.search(r"axis (-?\d+) is out of bounds for array of dimension (\d+)", msg)
        if m:
            d, n = int(m.group(1)), max(int(m.group(2)), 1)
            return _dual(IndexError, e)(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                                        f"but got {d})")
        return _dual(IndexError, e)(f"Dimension out of range{where}")
    if isinstance(e, ValueError) and "could not be broadcast" in msg:
        shapes = _shapes(msg.split("shapes", 1)[-1]) if "shapes" in msg else []
        for i in range(len(shapes)):
            for j in range(i + 1, len(shapes)):
                try:
                    np.broadcast_shapes(shapes[i], shapes[j])
                except ValueError:
                    err = str(broadcast_error(shapes[i], shapes[j]))
                    return _dual(RuntimeError, e)(err[:-1] + f", in {op})" if err.endswith(")") else err)
        return _dual(RuntimeError, e)(f"{op}(): shapes do not broadcast{where}")
    if isinstance(e, IndexError):
        return _dual(IndexError, e)(msg.replace("axis", "dimension"))
    if type(e).__module__.startswith("numpy") and isinstance(e, TypeError):     # no ufunc loop for the dtype
        return _dual(NotImplementedError, e)(f'"{op}" not implemented for these dtypes{where}')
    if isinstance(e, TypeError):
        return None                  # Python's own argument errors: PyTorch raises TypeError too
    if isinstance(e, ZeroDivisionError):
        return _dual(RuntimeError, e)(f"ZeroDivisionError{where}")
    return _dual(RuntimeError, e)(f"{op}(): invalid arguments{where}")


# ------------------------------------------------------------------ argument checks shared by ops
def type_name(x):
    """The type name PyTorch's argument parser prints (``float``, ``NoneType``, ``numpy.float64``, ``Tensor``)."""
    t = type(x)
    if any(k.__name__ == "Tensor" and k.__module__.startswith("hookgrad") for k in t.__mro__):
        return "Tensor"
    if t.__module__.startswith("hookgrad"):
        return f"torch.{t.__name__}"           # torch.dtype, torch.device, torch.Size
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def not_tensor(fname, x, argname="input", pos=1):
    """PyTorch's TypeError for a non-Tensor where its signature takes a Tensor."""
    return TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not {type_name(x)}")


def not_number(fname, x, argname, pos=None):
    """PyTorch's TypeError for a non-number where its signature takes a Scalar."""
    at = f" (position {pos})" if pos else ""
    return TypeError(f"{fname}(): argument '{argname}'{at} must be Number, not {type_name(x)}")


def is_number(x):
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, (str, bytes))


def scalar_name(dt):
    """PyTorch's ScalarType name of a hookgrad dtype or NumPy dtype (``Long``, ``Bool``, ``Float``)."""
    from . import _dtype as D
    if not isinstance(dt, D.dtype):
        dt = D._NP_TO_DT[np.dtype(dt)]
    return dt._legacy[:-len("Tensor")]


def not_implemented_for(kernel, dt):
    """PyTorch's NotImplementedError for a kernel without a loop for the dtype."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{scalar_name(dt)}\'')


def no_bf16_kernel(t, kernel):
    """PyTorch's NotImplementedError for a CPU kernel with float loops but none for bfloat16 (cdist, pdist,
    avg_pool3d, ctc_loss, multi_margin_loss)."""
    if t._data.dtype.kind == "V":
        raise not_implemented_for(kernel, t._data.dtype)


def float_kernel(t, kernel):
    """Raise PyTorch's NotImplementedError when a float-only kernel gets a tensor of another dtype."""
    dt = t._data.dtype
    if dt.kind != "f":
        from ._dtype import has_float_kernels
        if not has_float_kernels(dt):       # bfloat16 passes (ml_dtypes' kind "V")
            raise not_implemented_for(kernel, dt)


# PyTorch built without CUDA (the oracle) raises AssertionError for a CUDA device; hookgrad's error is that
# type and also the RuntimeError it raises for every other device it does not have.
NoCuda = type("AssertionError", (AssertionError, RuntimeError), {"__module__": "builtins"})


def no_device(dv):
    if str(dv).startswith("cuda"):
        return NoCuda(f"Torch not compiled with CUDA enabled (hookgrad runs on the CPU only; device '{dv}' is not "
                      "available)")
    return RuntimeError(f"hookgrad runs on the CPU only; device '{dv}' is not available")


# ------------------------------------------------------------------ PyTorch's argument parser, on the error path
# Parameter names whose type in PyTorch's signatures is Tensor, int, bool or a sequence of Tensors. hookgrad's
# public functions keep PyTorch's parameter names, so the name says what the parser would have demanded.
_TENSOR_PARAMS = frozenset(
    "input self other mat mat1 mat2 vec vec1 vec2 batch1 batch2 tensor tensor1 tensor2 weight bias index src "
    "mask target condition indices x1 x2 input1 input2 the_template source sorted_sequence boundaries elements "
    "test_elements exponent end weights grad_output log_probs targets anchor positive negative var".split())
_SCALAR_OK = frozenset("input self other exponent end weight value elements test_elements index src".split())
_INT_PARAMS = frozenset(
    "dim dim0 dim1 dim2 chunks k row col offset groups start_dim end_dim n diagonal num_samples "
    "output_size dims_other num_classes min_length ddof correction "
    "shifts source_dim destination_dim".split())
# Functions PyTorch writes in Python (torch.functional, ...): no argument parser in front of them.
_PYTHON_LEVEL = frozenset(
    "atleast_1d atleast_2d atleast_3d block_diag broadcast_shapes broadcast_tensors cartesian_prod cdist "
    "chain_matmul einsum istft lu meshgrid norm pca_lowrank split stft svd_lowrank tensordot unique "
    "unique_consecutive unravel_index lobpcg is_tensor is_storage typename vmap cond while_loop "
    "gaussian_nll_loss interpolate grid_sample affine_grid local_response_norm "
    # C functions whose own check raises PyTorch's error (RuntimeError for a str), not the parser's TypeError
    "set_num_threads".split())
# Int parameters that an overload of the same function takes as a Tensor (max(input, other), ...).
_TENSOR_OVERLOAD = {"max": "dim", "min": "dim"}
# Functions whose ``source`` is a dim (int or ints), not a Tensor.
_INT_SOURCE = frozenset(("movedim", "moveaxis"))
_BOOL_PARAMS = frozenset(
    "keepdim sorted largest descending stable unbiased right return_inverse return_counts training train "
    "inplace transpose unitriangular align_corners ceil_mode count_include_pad return_indices "
    "out_int32 assume_unique invert".split())
_TENSOR_LISTS = frozenset("tensors".split())
_INT_LISTS = frozenset("split_sizes size dims shape kernel_size stride dilation".split())
_NUMBERS = frozenset("lower upper alpha beta negative_slope min_val max_val".split())


def _is_tensor(x):
    return type_name(x) == "Tensor"


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not _is_tensor(x)


def parser_error(fname, fn, args, kwargs, exc, python_level=False, method=False):
    """The TypeError PyTorch's argument parser raises for ``fname(*args, **kwargs)``, or None when the
    arguments' types are what PyTorch's signature takes (the error ``exc`` is then the op's own).

    Runs only after the call failed: hookgrad's ops take the arguments on trust, and an argument of the
    wrong type shows up as whatever the op's body tripped on (AttributeError on a number's ``_data``, ...)."""
    import inspect
    if fname in _PYTHON_LEVEL:
        return None
    try:
        sig = inspect.signature(fn)
        bound = sig.bind(*args, **kwargs)
    except ValueError:
        return None
    except TypeError:       # Python's own binding error: PyTorch's text names the function as PyTorch does
        m = re.match(r"^[\w.<>]+\(\) (takes .*|got .*|missing .*)$", str(exc)) if isinstance(exc, TypeError) else None
        return TypeError(f"{fname}() {m.group(1)}") if m else None
    if isinstance(exc, TypeError) and re.search(r"\): argument '|invalid combination|positional arg", str(exc)):
        return None                     # hookgrad's own parser text already (conv1d's overloads, ...)
    pos = {}
    for i, name in enumerate(list(bound.arguments)[:len(args)]):
        pos[name] = i + 1 - method
    for name, v in bound.arguments.items():
        p = sig.parameters[name]
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if v is None and p.default is None:
            continue
        at = f" (position {pos[name]})" if name in pos else ""
        if name in _TENSOR_PARAMS and not _is_tensor(v) and fname not in _INT_SOURCE:
            if name in _SCALAR_OK and is_number(v) and not isinstance(exc, AttributeError):
                continue
            if isinstance(v, (list, tuple)) and not isinstance(exc, AttributeError):
                continue
            if python_level and (name != "input" or not is_number(v)) and isinstance(exc, AttributeError):
                continue
            return TypeError(f"{fname}(): argument '{name}'{at} must be Tensor, not {type_name(v)}")
        if name in _INT_PARAMS and not _is_int(v) and not (python_level and name == "output_size") and _TENSOR_OVERLOAD.get(fname) != name and not (isinstance(v, (list, tuple)) and name.startswith(
                ("dim", "shifts", "split", "repeats", "output_size", "sections"))):
            if isinstance(v, (list, tuple)) and all(_is_int(d) for d in v):
                continue
            return TypeError(f"{fname}(): argument '{name}'{at} must be int, not {type_name(v)}")
        if name in _BOOL_PARAMS and not python_level and not isinstance(v, (bool, np.bool_)):
            return TypeError(f"{fname}(): argument '{name}'{at} must be bool, not {type_name(v)}")
        if name in _INT_LISTS and not _is_int(v) and not (
                isinstance(v, (list, tuple)) and all(_is_int(d) for d in v)) and not (name == "size" and _is_tensor(v)):
            return TypeError(f"{fname}(): argument '{name}'{at} must be tuple of ints, not {type_name(v)}")
        if name in _NUMBERS and not is_number(v):
            return TypeError(f"{fname}(): argument '{name}'{at} must be Number, not {type_name(v)}")
        if name in _TENSOR_LISTS:
            if _is_tensor(v) or not isinstance(v, (list, tuple)):
                return TypeError(f"{fname}(): argument '{name}'{at} must be tuple of Tensors, not {type_name(v)}")
            for i, t in enumerate(v):
                if not _is_tensor(t):
                    return TypeError(f"expected Tensor as element {i} in argument 0, but got {type_name(t)}")
    return None


def complex_unsupported(op):
    """The error for an op that hookgrad does not implement on complex tensors (PyTorch does): a
    NotImplementedError, which is a RuntimeError as PyTorch's dtype errors are."""
    return NotImplementedError(f"hookgrad: {op} does not support complex tensors (see docs/differences.md)")
