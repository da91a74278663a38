"""gradcheck / gradgradcheck: analytical gradients against central finite differences (float64).

Mirrors torch.autograd.gradcheck, slow mode (full Jacobians) and fast mode (``fast_mode=True``: v^T J u for random
unit vectors u and v, drawn as PyTorch draws them, analytically and by central differences): a mismatch raises
:class:`GradcheckError` (a RuntimeError) with PyTorch's "Jacobian mismatch for output i with respect to input j"
text, or returns False with ``raise_exception=False``. As PyTorch, it checks complex outputs as their real and
imaginary parts ("While considering the imaginary part of complex outputs only, ..."), complex inputs through
the conjugate Wirtinger derivative, that the outputs keep their shape and dtype under perturbation, that
backward is reentrant and multiplied by grad_output, and that backward handles undefined output gradients.
The Jacobians are NumPy arrays on the host, whatever the tensors' array module.
"""
import contextlib
import warnings

import numpy as np

from .._array import array_module, to_numpy
from .. import _layout as _L
from . import node as _g

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError", "get_numerical_jacobian", "get_analytical_jacobian"]


class GradcheckError(RuntimeError):
    """Error raised by gradcheck and gradgradcheck."""


def _T():
    return _g.Tensor


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_t(x):
    return isinstance(x, _T())


def _diff_inputs(inputs):
    return [t for t in inputs if _is_t(t) and t.requires_grad]


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if _is_t(o) and o.requires_grad)


def _sparse(a):
    return type(a) is not np.ndarray and _L.is_sparse_storage(a)


def _dense(t):
    return t if t is None or not _sparse(t._data) else _T()._make(t._data.to_dense())


def _densified(t):
    if not isinstance(t, _T()) or not _sparse(t._data):
        return t
    c = _T()._make(_L.densified(t._data))
    c._requires_grad = t._requires_grad
    return c


def _host(t):
    """A tensor's values as a flat float64 (complex128 for complex) NumPy copy."""
    a = to_numpy(t._data)
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64).reshape(-1)


def _fmt(a):
    """As PyTorch's f-strings print a Jacobian: a tensor, or a 0-d one's Python number (fast mode's v^T J u)."""
    from .._creation import tensor
    return f"{a.item()}" if np.ndim(a) == 0 else repr(tensor(a))


# ------------------------------------------------------------------------------------------ numerical
def _check_outputs_same_dtype_and_shape(out1, out2, eps, idx=None):
    on_index = f"on index {idx} " if idx is not None else ""
    assert out1.shape == out2.shape, (f"Expected `func` to return outputs with the same shape when inputs are "
                                      f"perturbed {on_index}by {eps}, but got: shapes {out1.shape} and {out2.shape}.")
    assert out1.dtype == out2.dtype, (f"Expected `func` to return outputs with the same dtype when inputs are "
                                      f"perturbed {on_index}by {eps}, but got: dtypes {out1.dtype} and {out2.dtype}.")


def _numerical_jacobian(func, inputs, outputs, eps, targets=None):
    """Per differentiable input (or target), per Tensor output: array (input.numel(), output.numel()) of central
    differences; for a complex input the conjugate Wirtinger derivative ds/dx + 1j ds/dy (real outputs)."""
    outs = [o for o in _as_tuple(outputs) if _is_t(o)]
    res = []
    for inp in (_diff_inputs(inputs) if targets is None else targets):
        data = inp._data
        rows = None
        if _sparse(data):       # a sparse input: its values are poked; each is one row of the dense Jacobian
            rows = _L.value_positions(data)
            data = data.values
        flat = data.reshape(-1)   # a view when contiguous (inputs are made contiguous by the caller)
        cplx = data.dtype.kind == "c"
        # (complex where the input or the output is: a real input's column of a complex output is complex)
        jac = [np.zeros((data.size if rows is None else inp._data.size, o._data.size),
                        np.complex128 if cplx or o._data.dtype.kind == "c" else np.float64) for o in outs]
        for k in range(data.size):
            r = k if rows is None else rows[k]
            orig = flat[k].item()
            for step in ((1.0, 1j) if cplx else (1.0,)):
                # the raw data is poked (no version bump), with grad mode as it is: gradgradcheck's function
                # itself differentiates
                flat[k] = orig - eps * step
                lo = [o for o in _as_tuple(func(*inputs)) if _is_t(o)]
                lo_v = [_host(o) for o in lo]
                flat[k] = orig + eps * step
                hi = [o for o in _as_tuple(func(*inputs)) if _is_t(o)]
                hi_v = [_host(o) for o in hi]       # (before the input is restored: an output may alias it)
                flat[k] = orig
                for j, (a, av, b, bv) in enumerate(zip(lo, lo_v, hi, hi_v)):
                    _check_outputs_same_dtype_and_shape(a, b, eps, tuple(int(n) for n in np.unravel_index(
                        k, data.shape)))
                    d = (bv - av) / (2 * eps)
                    jac[j][r] += d if step == 1.0 else d * 1j
        res.append(jac)
    return res


def get_numerical_jacobian(fn, inputs, target=None, eps=1e-3, grad_out=1.0):
    """Deprecated (as in PyTorch): the numerical Jacobians of ``fn(inputs)``'s first output with respect to each
    input requiring grad (or each of ``target``), as Tensors of shape (input.numel(), output.numel())."""
    warnings.warn(_DEPRECATED.format("get_numerical_jacobian"), FutureWarning, stacklevel=2)
    if grad_out != 1.0:
        raise ValueError("Expected grad_out to be 1.0. get_numerical_jacobian no longer supports values of "
                         "grad_out != 1.0.")
    tupled = _as_tuple(inputs)

    def fn_pack(*inps):
        return fn(inps)
    targets = None if target is None else _diff_inputs(_as_tuple(target))
    jac = _numerical_jacobian(fn_pack, tupled, fn_pack(*tupled), eps, targets)
    return tuple(_T()._make(j[0]) for j in jac)


_DEPRECATED = ("`{}` was part of PyTorch's private API and not meant to be exposed. We are deprecating it and it "
               "will be removed in a future version of PyTorch. If you have a specific use for this or feature "
               "request for this to be a stable API, please file us an issue at "
               "https://github.com/pytorch/pytorch/issues/new")


# ------------------------------------------------------------------------------------------ analytical
def _analytical_rows(inputs, output, v=None):
    """vjp of each one-hot grad_output (of the flat vector ``v`` alone in fast mode): per differentiable input, the
    list of its gradients (None: unused)."""
    from .api import grad
    T = _T()
    diff = _diff_inputs(inputs)
    d = output._data
    rows = [[] for _ in diff]
    for m in range(d.size if v is None else 1):
        if v is None:
            seed = array_module(d).zeros(d.size, d.dtype)
            seed[m] = 1
        else:
            seed = array_module(d).asarray(v.astype(d.dtype))
        gs = grad(output, diff, T._make(seed.reshape(d.shape)), retain_graph=True, allow_unused=True)
        for i, g in enumerate(gs):
            rows[i].append(None if g is None else _dense(g.detach()).clone())     # a sparse gradient: dense
    return rows


def _stack(rows, inputs, n_out):
    diff = _diff_inputs(inputs)
    jacs, sizes_ok, types_ok = [], True, True
    for inp, col in zip(diff, rows):
        cplx = inp._data.dtype.kind == "c"
        jac = np.zeros((inp._data.size, n_out), np.complex128 if cplx else np.float64)
        for j, g in enumerate(col):
            if g is None:
                continue
            if tuple(g.shape) != tuple(inp.shape):
                sizes_ok = False
            elif g.dtype is not inp.dtype:
                types_ok = False
            v = _host(g)
            if v.size != jac.shape[0]:
                continue
            jac[:, j] = v if cplx else v.real
        jacs.append(jac)
    return jacs, sizes_ok, types_ok


def _jacobians_equal(j1, j2, atol):
    return all(a.size == 0 or np.abs(a - b).max() <= atol for a, b in zip(j1, j2))


_NONDET = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""


def _analytical_jacobian(inputs, output, nondet_tol, check_grad_dtypes, v=None):
    """The analytical Jacobians of one output (computed twice: reentrancy), with PyTorch's attribute checks; with
    ``v`` (fast mode) the single column v^T J per input."""
    n = output._data.size if v is None else 1
    j1, sizes_ok, types_ok = _stack(_analytical_rows(inputs, output, v), inputs, n)
    j2, _, _ = _stack(_analytical_rows(inputs, output, v), inputs, n)
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not _jacobians_equal(j1, j2, nondet_tol):
        raise GradcheckError("Backward is not reentrant, i.e., running backward with same input and grad_output "
                             "multiple times gives different values, although analytical gradient matches numerical "
                             f"gradient.The tolerance for nondeterminism was {nondet_tol}." + _NONDET)
    return j1


def get_analytical_jacobian(inputs, output, nondet_tol=0.0, grad_out=1.0):
    """Deprecated (as in PyTorch): (Jacobians per differentiable input, reentrant, sizes ok, dtypes ok)."""
    warnings.warn(_DEPRECATED.format("get_analytical_jacobian"), FutureWarning, stacklevel=2)
    if grad_out != 1.0:
        raise ValueError("Expected grad_out to be 1.0. get_analytical_jacobian no longer supports values of "
                         "grad_out != 1.0.")
    if output.is_complex():
        raise ValueError("Expected output to be non-complex. get_analytical_jacobian no longer supports functions "
                         "that return complex outputs.")
    inputs = _as_tuple(inputs)
    n = output._data.size
    j1, sizes_ok, types_ok = _stack(_analytical_rows(inputs, output), inputs, n)
    j2, _, _ = _stack(_analytical_rows(inputs, output), inputs, n)
    T = _T()
    return tuple(T._make(j) for j in j1), _jacobians_equal(j1, j2, nondet_tol), sizes_ok, types_ok


# ------------------------------------------------------------------------------------------ the checks
def _notallclose_msg(a, n, i, j, complex_indices, test_imag, is_forward_ad=False):
    part = "imaginary" if test_imag else "real"
    element = "inputs" if is_forward_ad else "outputs"
    prefix = f"While considering the {part} part of complex {element} only, " if complex_indices and (
        j if is_forward_ad else i) in complex_indices else ""
    mode = "computed with forward mode " if is_forward_ad else ""
    return (prefix + f"Jacobian {mode}mismatch for output {i:d} with respect to input {j:d},\n"
            f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n")


def _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol, *,
                    complex_indices=None, test_imag=False, inputs_num=None):
    if not outputs:
        for per_input in _numerical_jacobian(func, inputs, func_out, eps):
            for jac in per_input:
                if np.any(jac != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    tensor_outs = [o for o in _as_tuple(func_out) if _is_t(o)]
    numerical = _numerical_jacobian(func, inputs if inputs_num is None else inputs_num, func_out, eps)  # [in][out]
    keep = [k for k, o in enumerate(tensor_outs) if o.requires_grad]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][keep[i]]
            if not np.allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(a, n, i, j, complex_indices, test_imag))
    return True


# ---- forward AD (forward_ad.py): check_forward_ad / check_fwd_over_rev make real jvp calls ----

@contextlib.contextmanager
def _dual_inputs(inputs):
    """In a forward-AD level: the inputs, each differentiable one made dual (detached: the function sees no
    requires_grad) with a zero tangent, and those tangents (the callers write units or u into them)."""
    from . import forward_ad as fw
    with fw.dual_level():
        duals, grads = list(inputs), []
        for i, inp in enumerate(inputs):
            if _is_t(inp) and inp.requires_grad:
                d = inp._data
                duals[i] = fw.make_dual(inp.detach(), _T()._make(array_module(d).zeros(d.shape, d.dtype)))
                grads.append(fw.unpack_dual(duals[i]).tangent)
        yield duals, grads


def _forward_ad_jacobian(func, inputs, outputs, check_grad_dtypes=False):
    """Per (input, output): array (input.numel(), output.numel()) through forward_ad's dual tensors, as PyTorch's
    _get_analytical_jacobians_forward_ad: every differentiable input made dual at once (detached: the function
    sees no requires_grad) with a zero tangent, then one jvp call per input element with a unit there (a complex
    input: a real and an imaginary unit, d/dx + 1j d/dy, the numerical Jacobian's conjugate Wirtinger form)."""
    from . import forward_ad as fw
    T = _T()
    jac = []
    with _dual_inputs(inputs) as (duals, grads):
        for g in grads:
            cx = g._data.dtype.kind == "c"
            cols = [np.zeros((g._data.size, o._data.size if isinstance(o, T) else 0),
                             np.complex128 if cx or (isinstance(o, T) and o._data.dtype.kind == "c") else np.float64)
                    for o in outputs]
            flat = g._data.reshape(-1)
            for m in range(flat.size):
                for unit in ((1, 1j) if cx else (1,)):
                    flat[m] = unit
                    outs = _as_tuple(func(*duals))
                    for j, o in enumerate(outs[:len(outputs)]):
                        if isinstance(o, T):
                            t = fw.unpack_dual(o).tangent
                            if check_grad_dtypes and t is not None and o.is_complex() != t.is_complex():
                                raise GradcheckError("Forward AD gradient has dtype mismatch.")
                            if t is not None:      # (read before the unit goes: a tangent may alias it)
                                h = _host(t)
                                if h.dtype.kind == "c" and cols[j].dtype.kind != "c":
                                    cols[j] = cols[j].astype(np.complex128)
                                cols[j][m] += unit * h
                    flat[m] = 0
            jac.append(cols)
    return jac


def _check_forward_ad(func, inputs, outputs, eps, atol, rtol, complex_indices=None, test_imag=False, fast=False,
                      check_grad_dtypes=False):
    """The Jacobians through jvp calls against the numerical ones (PyTorch's check_forward_ad; the inputs are
    real: a complex input is checked through its real and its imaginary part, see _gradcheck_real_imag); fast:
    J u against its central difference."""
    if fast:
        return _fast_gradcheck(func, outputs, inputs, _differentiable_outputs(outputs), eps, rtol, atol,
                               check_grad_dtypes, 0.0, complex_indices=complex_indices, test_imag=test_imag,
                               use_forward_ad=True)
    outputs = [o for o in _as_tuple(outputs) if _is_t(o)]
    numerical = _numerical_jacobian(func, inputs, outputs, eps)
    analytical = _forward_ad_jacobian(func, inputs, outputs, check_grad_dtypes)
    for k in range(len(analytical)):
        for j in range(len(outputs)):
            n, a = numerical[k][j], analytical[k][j]
            if not np.allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(a, n, j, k, complex_indices, test_imag, is_forward_ad=True))
    return True


def _real_and_imag_input(fn, complex_indices, inputs):
    """PyTorch's: the functions of a complex input's real part (the imaginary part held) and of its imaginary part
    (the real part held), ``x -> fn(x + y * 1j)`` and ``y -> fn(x + y * 1j)``."""
    def apply(make):
        def wrapped(*args):
            args = list(args)
            for i in complex_indices:
                args[i] = make(args[i], inputs[i])
            return _as_tuple(fn(*args))
        return wrapped
    return apply(lambda inp, orig: inp + orig.imag * 1j), apply(lambda inp, orig: orig.real + inp * 1j)


def _part(t, part):
    """A complex input's real or imaginary part as a contiguous real input (requires_grad kept)."""
    c = _T()._make(array_module(t._data).ascontiguousarray(getattr(t._data, part)))
    c._requires_grad = t.requires_grad
    return c


def _check_forward_ad_real_imag(func, func_out, inputs, eps, atol, rtol, check_undefined_grad, fast,
                                check_grad_dtypes):
    cidx = [i for i, t in enumerate(inputs) if _is_t(t) and t.is_complex()]
    if not cidx:
        _check_forward_ad(func, inputs, func_out, eps, atol, rtol, fast=fast, check_grad_dtypes=check_grad_dtypes)
        if check_undefined_grad:
            _test_undefined_forward_mode(func, inputs)
        return
    real_fn, imag_fn = _real_and_imag_input(func, cidx, inputs)
    checked = []
    for fn, part in ((imag_fn, "imag"), (real_fn, "real")):
        parts = tuple(_part(t, part) if i in cidx else t for i, t in enumerate(inputs))
        _check_forward_ad(fn, parts, fn(*parts), eps, atol, rtol, cidx, part == "imag", fast, check_grad_dtypes)
        checked.append((fn, parts))
    if check_undefined_grad:
        for fn, parts in checked:
            _test_undefined_forward_mode(fn, parts)


def _test_undefined_forward_mode(func, inputs):
    """PyTorch's: with every other input dual (a random tangent), an input's zero tangent materialized and its
    tangent undefined (a plain tensor) must give the same output tangents."""
    from . import forward_ad as fw
    from .._creation import zeros_like, randn_like, Generator
    gen = Generator()       # (its own generator, as PyTorch: the caller's random state is left alone)
    with fw.dual_level():
        duals = list(inputs)
        idx = []
        for i, inp in enumerate(inputs):
            if _is_t(inp) and inp.requires_grad:
                duals[i] = fw.make_dual(inp.detach(), randn_like(inp.detach(), generator=gen))
                idx.append(i)
        for i in idx:
            inp = inputs[i]
            keep = duals[i]
            duals[i] = fw.make_dual(inp.detach(), zeros_like(inp.detach()))
            outs1 = [o for o in _as_tuple(func(*duals)) if _is_t(o) and (o.is_floating_point() or o.is_complex())]
            duals[i] = inp.detach()
            outs2 = [o for o in _as_tuple(func(*duals)) if _is_t(o) and (o.is_floating_point() or o.is_complex())]
            duals[i] = keep
            for k, (o1, o2) in enumerate(zip(outs1, outs2)):
                r1, r2 = fw.unpack_dual(o1).tangent, fw.unpack_dual(o2).tangent
                if r1 is not None and r2 is not None and not np.allclose(_host(r1), _host(r2)):
                    raise GradcheckError(f"Mismatch in tangent values for output with index: {k} when input: {inp} "
                                         f"has an undefined tangent value.  Got: {r1} but expected: {r2}")
    return True


def _real_and_imag_output(fn):
    def apply(part):
        def wrapped(*inputs):
            return tuple(getattr(o, part) if _is_t(o) and o.is_complex() else o for o in _as_tuple(fn(*inputs)))
        return wrapped
    return apply("real"), apply("imag")


def _gradcheck_real_imag(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol,
                         check_forward_ad, check_backward_ad, inputs_num, check_undefined_grad, fast_mode=False):
    check = _fast_gradcheck if fast_mode else _slow_gradcheck
    if check_backward_ad:
        complex_out = [i for i, o in enumerate(outputs) if o.is_complex()]
        if any(_is_t(o) and o.is_complex() for o in _as_tuple(func_out)):
            real_fn, imag_fn = _real_and_imag_output(func)
            imag_out = imag_fn(*inputs)
            check(imag_fn, imag_out, inputs, _differentiable_outputs(imag_out), eps, rtol, atol, check_grad_dtypes,
                  nondet_tol, complex_indices=complex_out, test_imag=True, inputs_num=inputs_num)
            real_out = real_fn(*inputs)
            check(real_fn, real_out, inputs, _differentiable_outputs(real_out), eps, rtol, atol, check_grad_dtypes,
                  nondet_tol, complex_indices=complex_out, inputs_num=inputs_num)
        else:
            check(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol,
                  inputs_num=inputs_num)
    if check_forward_ad:
        _check_forward_ad_real_imag(func, func_out, inputs, eps, atol, rtol, check_undefined_grad, fast_mode,
                                    check_grad_dtypes)


# ---- fast mode (PyTorch's _fast_gradcheck; pytorch/pytorch#53876): v^T J u, numerically and analytically ----
def _real_np(dtype):
    return np.dtype(dtype).type(0).real.dtype


def _vec(t, gen, downcast_complex=False):
    """PyTorch's _vec_from_tensor: uniform [0, 1) values from ``gen`` (float32 draws, as torch.rand), one per element
    (per stored value of a sparse tensor), in t's dtype (its real dtype when downcast), scaled to unit norm."""
    from .._creation import rand
    d = t._data
    n = d.values.size if _sparse(d) else d.size
    a = to_numpy(rand(n, generator=gen)._data).astype(_real_np(d.dtype) if downcast_complex else d.dtype)
    return a / a.dtype.type(np.linalg.norm(a)) if n else a


def _dense_vec(t, u):
    """u (over t's elements, or over a sparse t's stored values) as a flat vector over t's dense elements."""
    if not _sparse(t._data):
        return u
    flat = np.zeros(t._data.size, u.dtype)
    flat[_L.value_positions(t._data)] = u
    return flat


def _make_vectors(inputs, outputs, use_forward_ad):
    """From a fresh Generator (the caller's random state is left alone), as PyTorch's _make_vectors: per
    differentiable input a real u (a complex input: (ur, ui), for its real and imaginary parts) as flat vectors over
    its dense elements, then one v per differentiable output (none in forward mode)."""
    from .._creation import Generator
    gen = Generator()
    all_u = []
    for t in _diff_inputs(inputs):
        ur = _dense_vec(t, _vec(t, gen, True))
        all_u.append((ur, _dense_vec(t, _vec(t, gen, True))) if t.is_complex() else ur)
    return None if use_forward_ad else [_vec(o, gen) for o in outputs], all_u


def _float_outputs(outs):
    return [o for o in _as_tuple(outs) if _is_t(o) and (o.is_floating_point() or o.is_complex())]


def _numerical_jvps(func, inputs, inp, u, eps, is_forward_ad=False):
    """J u by central differences along ``eps * u`` for the differentiable input ``inp`` (the raw data is poked, as
    in slow mode), per floating-point output a flat array; a complex input: d/dx along ur + 1j d/dy along ui (the
    conjugate Wirtinger form)."""
    data = inp._data
    arr = data.values if _sparse(data) else data
    flat = arr.reshape(-1)

    def along(delta):
        if _sparse(data):
            delta = delta[_L.value_positions(data)]
        orig = flat.copy()
        flat[...] = orig - delta
        lo = [o for o in _as_tuple(func(*inputs)) if _is_t(o)]
        lo_v = [_host(o) for o in lo]
        flat[...] = orig + delta
        hi = [o for o in _as_tuple(func(*inputs)) if _is_t(o)]
        hi_v = [_host(o) for o in hi]
        flat[...] = orig
        for a, b in zip(lo, hi):
            _check_outputs_same_dtype_and_shape(a, b, eps)
        return [(bv - av) / (2 * eps) for a, av, bv in zip(lo, lo_v, hi_v)
                if a.is_floating_point() or a.is_complex()]
    if isinstance(u, tuple):
        return [dx + dy * 1j for dx, dy in zip(along(eps * u[0]), along(eps * u[1] * 1j))]
    jvps = along(eps * u)
    if not is_forward_ad and any(j.dtype.kind == "c" for j in jvps):
        raise AssertionError("Expected ds_dx to be real-valued, not complex.")
    return jvps


def _scalar_dtype(dtype, cplx):
    """PyTorch's dtype of a v^T J u scalar: ``dtype`` (a float or complex dtype), made complex for a complex input."""
    single = np.dtype(dtype) in (np.float16, np.float32, np.complex64)
    if cplx or np.dtype(dtype).kind == "c":
        return np.complex64 if single else np.complex128
    return np.float32 if single else np.float64


def _numerical_vJu(func, inputs, func_out, all_u, all_v, eps, is_forward_ad):
    """Per differentiable input: v^T J u per differentiable output (J u per floating-point output without v), in
    the output's dtype (complex for a complex input)."""
    outs = _float_outputs(func_out)
    res = []
    for inp, u in zip(_diff_inputs(inputs), all_u):
        jus = [ju.astype(_scalar_dtype(o._data.dtype, isinstance(u, tuple)))
               for ju, o in zip(_numerical_jvps(func, inputs, inp, u, eps, is_forward_ad), outs)]
        res.append(jus if all_v is None else [(ju * v).sum() for ju, v in zip(jus, all_v)])
    return res


def _analytical_vJu(inputs, outputs, nondet_tol, check_grad_dtypes, all_v, all_u):
    """Per differentiable output: (v^T J) u per differentiable input, one backward with v (twice: reentrancy)."""
    diff = _diff_inputs(inputs)
    res = []
    for o, v in zip(outputs, all_v):
        row = []
        for vj, u, inp in zip(_analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes, v), all_u, diff):
            vj = vj[:, 0]
            # (products summed in order, as torch.dot: BLAS's blocked sums differ in the last bits)
            s = (vj.real * u[0]).sum() + 1j * (vj.imag * u[1]).sum() if isinstance(u, tuple) else (vj * u).sum()
            row.append(np.asarray(s).astype(_scalar_dtype(inp._data.dtype, False)))
        res.append(row)
    return res


def _forward_vJu(func, inputs, func_out, all_u, check_grad_dtypes):
    """Per differentiable input: J u per floating-point output, one forward-AD call with tangent u (PyTorch's
    _get_analytical_jacobian_forward_ad with all_u); a missing output tangent is zeros."""
    from . import forward_ad as fw
    res = []
    with _dual_inputs(inputs) as (duals, grads):
        for g, u in zip(grads, all_u):
            flat = g._data.reshape(-1)
            flat[...] = array_module(g._data).asarray(u)
            cols = []
            for o in _float_outputs(func(*duals)):
                p, t = fw.unpack_dual(o)
                if check_grad_dtypes and t is not None and p.is_complex() != t.is_complex():
                    raise GradcheckError("Forward AD gradient has dtype mismatch.")
                dt = _scalar_dtype(o._data.dtype, False)      # (PyTorch's Jacobian has the output's dtype)
                cols.append(np.zeros(o._data.size, dt) if t is None else _host(t).astype(dt))
            flat[...] = 0
            res.append(cols)
    return res


def _adjusted_atol(atol, u, v):
    """PyTorch's: atol scaled by v^T M u (M all ones) = sum(u) sum(v), as the entries compared are sums."""
    sum_v = 1.0 if v is None else float(v.sum().real)
    if isinstance(u, tuple):
        return atol * (float(u[0].sum()) + float(u[1].sum())) * sum_v
    return atol * float(u.sum()) * sum_v


_FAST_FAIL_SLOW_OK = """
Fast gradcheck failed but element-wise differences are small. This means that the
test might've passed in slow_mode!

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck:

If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `fast_mode=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_fast_mode=False`
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_fast_mode=False`
""".strip()


def _slow_mode_error(func, func_out, inputs, outputs, input_idx, output_idx, rtol, atol, eps, is_forward_ad):
    """PyTorch's note after a fast-mode mismatch: the pair's full Jacobians (slow mode), their largest difference,
    and whether slow mode would have passed."""
    inp = _diff_inputs(inputs)[input_idx]
    tensor_outs = [t for t in _as_tuple(func_out) if _is_t(t)]
    pos = [k for k, t in enumerate(tensor_outs)
           if (t.is_floating_point() or t.is_complex() if is_forward_ad else t.requires_grad)][output_idx]
    o = tensor_outs[pos]
    num = _numerical_jacobian(func, inputs, func_out, eps)[input_idx][pos]
    if is_forward_ad:
        ana = _forward_ad_jacobian(func, inputs, tensor_outs)[input_idx][pos]
    else:
        ana = _analytical_jacobian(inputs, o, float("inf"), False)[input_idx]
    num = num.astype(_scalar_dtype(inp._data.dtype if inp.is_complex() else o._data.dtype, False))
    ana = ana.astype(_scalar_dtype(o._data.dtype if is_forward_ad else inp._data.dtype, False))
    diff = np.abs(num - ana).max() if num.size else np.abs(num - ana).sum()
    msg = ("\nThe above quantities relating the numerical and analytical jacobians are computed \n"
           "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
           "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
           f"Numerical:\n {_str(num)}\nAnalytical:\n{_str(ana)}\n\n"
           f"The max per-element difference (slow mode) is: {diff.item()}.\n")
    from ..primitives.index import allclose      # (PyTorch's allclose: two dtypes raise "Double did not match Float")
    T = _T()
    if allclose(T._make(ana), T._make(num), rtol, atol):
        msg += _FAST_FAIL_SLOW_OK
    return msg


def _str(a):
    from .._creation import tensor
    return str(tensor(a))


def _fast_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol, *,
                    complex_indices=None, test_imag=False, inputs_num=None, use_forward_ad=False):
    """v^T J u against v^T (numerical J) u for random vectors u (inputs) and v (outputs); forward mode compares
    J u. A mismatch recomputes that pair's Jacobians in slow mode for the message."""
    all_v, all_u = _make_vectors(inputs, outputs, use_forward_ad)
    numerical = _numerical_vJu(func, inputs if inputs_num is None else inputs_num, func_out, all_u, all_v, eps,
                               use_forward_ad)
    if use_forward_ad:
        analytical = _forward_vJu(func, inputs, func_out, all_u, check_grad_dtypes)
    else:
        if not outputs:
            for inp, u in zip(_diff_inputs(inputs), all_u):
                for jvp in _numerical_jvps(func, inputs, inp, u, eps):
                    if jvp.size and np.abs(jvp).max() > nondet_tol:
                        raise GradcheckError("Numerical gradient for function expected to be zero")
        analytical = _analytical_vJu(inputs, outputs, nondet_tol, check_grad_dtypes, all_v, all_u)
    for i, per_input in enumerate(numerical):
        for j, n in enumerate(per_input):
            a = analytical[i][j] if use_forward_ad else analytical[j][i]
            tol = _adjusted_atol(atol, all_u[i], None if use_forward_ad else all_v[j])
            if not np.allclose(a, n, rtol, tol):
                raise GradcheckError(_notallclose_msg(a, n, j, i, complex_indices, test_imag, use_forward_ad)
                                     + _slow_mode_error(func, func_out, inputs, outputs, i, j, rtol, atol, eps,
                                                        use_forward_ad))
    return True


# ---- batched gradients (vmap over backward / over forward AD), as PyTorch's _test_batched_grad(_forward_ad) ----
def _batched_workaround(flag):
    """PyTorch's advice, in both batched-gradient failures, on turning the check off."""
    return ("If you are adding a new operator, please file an issue and then use one of the\n"
            "workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.\n"
            "If the test\n"
            "- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck\n"
            f"  with `{flag}=False` as a keyword argument.\n"
            "- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test\n"
            f"  to have `{flag}=False`")


_FAILED_BATCHED = f"""
gradcheck or gradgradcheck failed while testing batched gradient computation.
This could have been invoked in a number of ways (via a test that calls
gradcheck/gradgradcheck directly or via an autogenerated test).

{_batched_workaround("check_batched_grad")} and/or `check_batched_gradgrad=False`.

If you're modifying an existing operator that supports batched grad computation,
or wish to make a new operator work with batched grad computation, please read
the following.

To compute batched grads (e.g., jacobians, hessians), we vmap over the backward
computation. The most common failure case is if there is a 'vmap-incompatible
operation' in the backward pass. Please see
NOTE: [How to write vmap-compatible backward formulas]
in the codebase for an explanation of how to fix this.
""".strip()

_FAILED_BATCHED_FWD = f"""
gradcheck failed while testing batched gradient computation with forward-mode AD.
This test is enabled automatically when both `check_batched_grad=True`
and `check_forward_ad=True`, but can be disabled in the following ways
dependong on how the test was invoked (via a test that calls gradcheck
directly or via an autogenerated test).

{_batched_workaround("check_batched_forward_grad")}
"""


def _batched_mismatch(output_idx, input_idx, res, exp, forward=False):
    return (f"For output {output_idx} and input {input_idx}:\n\n{_FAILED_BATCHED_FWD if forward else _FAILED_BATCHED}"
            f"\n\nGot:\n{res}\n\nExpected:\n{exp}").strip()


def _check_batched(fn, vectors, output_idx, forward):
    """fn (a vjp, or a jvp when forward) on each random vector, stacked, against fn under vmap on the stacked
    vectors; torch squashes vmap's fallback warnings in the reverse-mode check only."""
    from ..primitives.join import stack
    # (a sparse gradient is compared dense: hookgrad stacks no sparse tensors)
    expected = [stack([_dense(g) for g in shards]) for shards in zip(*[fn(v) for v in vectors])]
    with warnings.catch_warnings():
        if not forward:
            warnings.filterwarnings("ignore", message="There is a performance drop")
            warnings.filterwarnings("ignore", message="Please use `torch.vmap`")
        try:
            result = _vmap[0](fn)(stack(vectors))
        except RuntimeError as ex:
            raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n"
                                 f"{_FAILED_BATCHED_FWD if forward else _FAILED_BATCHED}") from ex
    for k, (res, exp) in enumerate(zip(result, expected)):
        if not np.allclose(_host(res), _host(exp), rtol=1e-5, atol=1e-8):
            raise GradcheckError(_batched_mismatch(k if forward else output_idx, k, res, exp, forward))


_vmap = [None]      # torch._vmap_internals._vmap, set by hookgrad.func (a layer above) when it loads


def _zeros_expanded(t):
    from .._creation import zeros
    return zeros([], dtype=t.dtype).expand(t.shape)


def _test_batched_grad(inputs, output, output_idx):
    """Two autograd.grad calls against one under vmap, with random grad_outputs."""
    from .api import grad
    from .._creation import randn_like
    diff = _diff_inputs(inputs)

    def vjp(v):
        gs = grad(output, diff, v, retain_graph=True, allow_unused=True)
        return tuple(_zeros_expanded(t) if g is None else g for g, t in zip(gs, diff))
    _check_batched(vjp, [randn_like(output.detach()) for _ in range(2)], output_idx, False)
    return True


def _test_batched_grad_forward_ad(func, inputs):
    """Per differentiable input: two jvp calls against one under vmap (a batched tangent), with random tangents."""
    from . import forward_ad as fw
    from .._creation import randn_like
    for idx, current in enumerate(inputs):
        if not (_is_t(current) and current.requires_grad):
            continue

        def jvp(tangent, idx=idx, current=current):
            with fw.dual_level():
                dual = fw.make_dual(current.detach(), tangent)
                args = tuple(dual if i == idx else (a.detach() if _is_t(a) else a) for i, a in enumerate(inputs))
                ret = []
                for o in _as_tuple(func(*args)):
                    if o is None:
                        continue
                    p, t = fw.unpack_dual(o)
                    ret.append(t if t is not None else _zeros_expanded(p))
                return tuple(ret)
        if not (current.is_floating_point() or current.is_complex()):
            continue
        _check_batched(jvp, [randn_like(current.detach()) for _ in range(2)], idx, True)
    return True


def _test_backward_mul_by_grad_output(outputs, inputs):
    from .api import grad
    diff = _diff_inputs(inputs)
    gis = grad(outputs, diff, [o.new_zeros(o.shape) for o in outputs], allow_unused=True)
    for gi, di in zip(gis, diff):
        if gi is None:
            continue
        if _sparse(gi._data):
            if gi.layout != di.layout:
                raise GradcheckError(f"grad is incorrect layout ({gi.layout} is not {di.layout})")
            if gi.layout == _L.sparse_coo:
                for what in ("sparse_dim", "dense_dim"):
                    a, b = getattr(gi, what)(), getattr(di, what)()
                    if a != b:
                        raise GradcheckError(f"grad is sparse tensor, but has incorrect {what} {a}, expected {b}")
            gi, di = gi.to_dense(), di.to_dense()
        if not bool((gi == 0).all()):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype is not di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi._data.shape != di._data.shape:
            raise GradcheckError("grad is incorrect size")
    return True


def _test_undefined_backward_mode(func, outputs, inputs):
    """Backward must accept undefined (None) output gradients: all of them at once, then one at a time."""
    try:
        from .basic_ops import UndefinedGrad
    except ImportError:         # (no UndefinedGrad node: nothing to check with)
        return True
    from .api import grad
    diff = _diff_inputs(inputs)

    def warn_bc_breaking():
        warnings.warn("Backwards compatibility: New undefined gradient support checking feature is enabled by "
                      "default, but it may break existing callers of this function. If this is true for you, you "
                      'can call this function with "check_undefined_grad=False" to disable the feature',
                      stacklevel=3)

    def check(outs):
        try:
            gis = grad(outs, diff, [o.new_zeros(o.shape) for o in outs], allow_unused=True)
        except RuntimeError as e:
            warn_bc_breaking()
            raise GradcheckError('Expected backward function to handle undefined output grads. Please look at "Notes '
                                 'about undefined output gradients" in "tools/autograd/derivatives.yaml"') from e
        for gi in gis:
            if gi is not None and not bool((gi == 0).all()):
                warn_bc_breaking()
                raise GradcheckError('Expected all input grads to be undefined or zero when all output grads are '
                                     'undefined or zero. Please look at "Notes about undefined output gradients" in '
                                     '"tools/autograd/derivatives.yaml"')
        return True

    to_check = [[UndefinedGrad()(o) for o in _differentiable_outputs(func(*inputs))]]
    if len(to_check[0]) > 1:
        for k in range(len(outputs)):
            outs = _differentiable_outputs(func(*inputs))
            to_check.append([UndefinedGrad()(o) if i == k else o for i, o in enumerate(outs)])
    return all(check(o) for o in to_check)


def _check_inputs(tupled):
    any_rg = False
    for i, t in enumerate(tupled):
        if _is_t(t) and t.requires_grad:
            if t._data.dtype not in (np.float64, np.complex128):
                warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or "
                              "complex. This check will likely fail if all the inputs are not of double precision "
                              "floating point or complex. ", stacklevel=3)
            d = t._data.values if _sparse(t._data) else t._data
            if d.size and not all(st > 0 or n <= 1 for st, n in zip(d.strides, d.shape)):
                raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs "
                                   "that are non-overlapping to be able to compute the numerical gradients "
                                   "correctly. You should call .contiguous on the input before passing it to "
                                   "gradcheck.")
            any_rg = True
    if not any_rg:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Check the gradients of ``func`` at ``inputs`` against finite differences."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    try:
        return _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                                 check_forward_ad, check_backward_ad, masked, check_batched_grad,
                                 check_batched_forward_grad, fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                      check_forward_ad, check_backward_ad, masked, check_batched_grad=False,
                      check_batched_forward_grad=False, fast_mode=False):
    tupled = _as_tuple(inputs)
    _check_inputs(tupled)
    # contiguous, writable copies so that finite differences can poke single elements
    T = _T()
    work = []
    for t in tupled:
        if _is_t(t):
            d = t._data
            c = T._make(_L.sparse_copy(d) if _sparse(d) else array_module(d).array(d, copy=True, order="C"))
            c._requires_grad = t.requires_grad
            work.append(c)
        else:
            work.append(t)
    work = tuple(work)
    func_out = func(*work)
    if any(_is_t(o) and _sparse(o._data) for o in _as_tuple(func_out)):
        raise ValueError("Sparse output is not supported at gradcheck yet. Please call to_dense(masked_grad=...) on "
                         "the output of fn for gradcheck.")
    outputs = _differentiable_outputs(func_out)
    # PyTorch: unless masked, the numerical Jacobian is taken at the inputs with every element specified
    # (unspecified ones as zeros), the analytical one at the inputs as they are
    work_num = work if masked else tuple(_densified(t) for t in work)
    _gradcheck_real_imag(func, func_out, work, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol,
                         check_forward_ad, check_backward_ad, work_num, check_undefined_grad, fast_mode)
    if check_batched_forward_grad:
        _test_batched_grad_forward_ad(func, work)
    if not check_backward_ad:
        return True
    if check_batched_grad:
        for i, o in enumerate(outputs):
            _test_batched_grad(work, o, i)
    if outputs:
        _test_backward_mul_by_grad_output(outputs, work)
        if check_undefined_grad:
            _test_undefined_backward_mode(func, outputs, work)
    return True


def _random_grad_output(o, noncontiguous):
    """PyTorch's: torch.testing.make_tensor(o.shape, low=-1, high=1, requires_grad=True) from the global random
    state: uniform_ on the values (a complex tensor's real and imaginary parts interleaved, as view_as_real);
    noncontiguous: every second element of a last dimension twice as long."""
    from .._creation import empty
    from ..primitives.complex import view_as_complex
    shape = tuple(o.shape)
    if noncontiguous and int(np.prod(shape)) > 1:
        shape = (*shape[:-1], 2 * shape[-1])
    else:
        noncontiguous = False
    if o.is_complex():
        r = view_as_complex(empty((*shape, 2), dtype=o.dtype.to_real()).uniform_(-1, 1))
    else:
        r = empty(shape, dtype=o.dtype).uniform_(-1, 1)
    return (r[..., 1::2] if noncontiguous else r).requires_grad_(True)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """Check second-order gradients: gradcheck of (inputs, grad_outputs) -> grad w.r.t. inputs."""
    from .api import grad
    T = _T()
    tupled = _as_tuple(inputs)
    if grad_outputs is None:
        outs = _as_tuple(func(*tupled))
        grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs) for o in outs
                             if _is_t(o) and o.requires_grad)
    tupled_go = _as_tuple(grad_outputs)
    n_go = len(tupled_go)

    diff_in_idx = {i for i, x in enumerate(tupled) if _is_t(x) and x.requires_grad}
    diff_go_idx = {i for i, x in enumerate(tupled_go) if _is_t(x) and x.requires_grad}

    def new_func(*args):
        # requires_grad restored, as PyTorch: the forward-AD check (check_fwd_over_rev) passes detached duals
        input_args = tuple(x.requires_grad_() if i in diff_in_idx and not x.requires_grad else x
                           for i, x in enumerate(args[:-n_go]))
        gos = tuple(x.requires_grad_() if i in diff_go_idx and not x.requires_grad else x
                    for i, x in enumerate(args[-n_go:]))
        outputs = _differentiable_outputs(func(*input_args))
        diff_in = tuple(x for x in input_args if _is_t(x) and x.requires_grad)
        gi = grad(outputs, diff_in, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gi if g is not None)

    return gradcheck(new_func, tupled + tupled_go, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
                     nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     masked=masked)


def _calculate_shape(output, grad, is_grads_batched):
    """torch.autograd._calculate_shape: the shapes of an output and of its grad_output (without the batch
    dimension of batched grads) that backward/grad compare."""
    T = _T()
    if not isinstance(output, T) and hasattr(output, "node"):      # a GradientEdge
        if is_grads_batched:
            raise RuntimeError("Batched grads are not supported with GradientEdge")
        from .._tensor import Size
        return Size(output.node._input_metadata[output.output_nr].shape), grad.shape
    return output.shape, (grad.shape[1:] if is_grads_batched else grad.shape)
