"""gradcheck / gradgradcheck: analytical gradients against central finite differences (float64).

Mirrors torch.autograd.gradcheck (slow mode): a mismatch raises :class:`GradcheckError` (a
RuntimeError) with PyTorch's "Jacobian mismatch for output i with respect to input j" text, or
returns False with ``raise_exception=False``.
"""
import warnings

import numpy as np

from .._array import array_module, to_numpy
from .. import _layout as _L
from . import node as _g

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


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


def _diff_inputs(inputs):
    T = _T()
    return [(i, t) for i, t in enumerate(inputs) if isinstance(t, T) and t.requires_grad]


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


def _outputs(func, inputs):
    return _as_tuple(func(*inputs))


def _numerical_jacobian(func, inputs, outputs, eps):
    """Per (input, output): array of shape (input.numel(), output.numel()) (the Jacobians are NumPy arrays,
    on the host, whatever the tensors' array module)."""
    T = _T()
    res = []
    for _, inp in _diff_inputs(inputs):
        data = inp._data
        rows = None
        if _sparse(data):       # a sparse input: its values are poked; each is one row of the dense Jacobian
            rows = _L.value_positions(data)
            data = data.values
        flat = data.reshape(-1)  # a view when contiguous (inputs are made contiguous by the caller)
        jac = [np.zeros((data.size if rows is None else inp._data.size, o._data.size), np.float64) for o in outputs]
        for k in range(data.size):
            orig = flat[k].item()
            # the raw data is poked (no version bump), with grad mode as it is: gradgradcheck's
            # function itself differentiates
            flat[k] = orig - eps
            lo = [to_numpy(o._data).astype(np.float64).reshape(-1) if isinstance(o, T) else None
                  for o in _outputs(func, inputs)]
            flat[k] = orig + eps
            hi = [to_numpy(o._data).astype(np.float64).reshape(-1) if isinstance(o, T) else None
                  for o in _outputs(func, inputs)]
            flat[k] = orig
            for j, (a, b) in enumerate(zip(lo, hi)):
                if a is not None:
                    jac[j][k if rows is None else rows[k]] = (b - a) / (2 * eps)
        res.append(jac)
    return res


def _analytical_jacobian(inputs, outputs):
    """Per (input, output): array (input.numel(), output.numel()); also whether backward is reentrant."""
    from .api import grad
    T = _T()
    diff = [t for _, t in _diff_inputs(inputs)]
    jac = [[np.zeros((t._data.size, o._data.size), np.float64) for o in outputs] for t in diff]
    reentrant = True
    for j, out in enumerate(outputs):
        if not isinstance(out, T) or not out.requires_grad:
            continue
        for m in range(out._data.size):
            seed = array_module(out._data).zeros(out._data.size, out._data.dtype)
            seed[m] = 1
            g = T._make(seed.reshape(out._data.shape))
            gs = grad(out, diff, g, retain_graph=True, allow_unused=True)
            gs2 = grad(out, diff, g, retain_graph=True, allow_unused=True)
            for i, (a, b) in enumerate(zip(gs, gs2)):
                if a is not None:
                    a, b = _dense(a), _dense(b)     # a sparse gradient: its dense form
                    jac[i][j][:, m] = to_numpy(a._data).astype(np.float64).reshape(-1)
                    if b is None or not np.array_equal(a._data, b._data):
                        reentrant = False
    return jac, reentrant


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _fmt(a):
    from .._creation import tensor
    return repr(tensor(a))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Check the gradients of ``func`` at ``inputs`` against finite differences."""
    tupled = _as_tuple(inputs)
    diff = _diff_inputs(tupled)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True.")
    for i, t in diff:
        if t._data.dtype != np.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ")
        content = t._data.values if _sparse(t._data) else t._data
        if content.size and any(st == 0 and n > 1 for st, n in zip(content.strides, content.shape)):
            raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs that are "
                               "non-overlapping to be able to compute the numerical gradients correctly. You should "
                               "call .contiguous on the input before passing it to gradcheck.")
    # contiguous, writable copies so that finite differences can poke single elements
    T = _T()
    work = []
    for t in tupled:
        if isinstance(t, T):
            d = t._data
            c = T._make(_L.sparse_copy(d) if _sparse(d) else array_module(d).array(d, copy=True, order="C"))
            c._requires_grad = t.requires_grad
            work.append(c)
        else:
            work.append(t)
    work = tuple(work)
    outputs = _outputs(func, work)
    if any(isinstance(o, T) and _sparse(o._data) for o in outputs):
        raise ValueError("Sparse output is not supported at gradcheck yet. Please call to_dense(masked_grad=...) on "
                         "the output of fn for gradcheck.")
    # PyTorch: unless masked, the numerical Jacobian is taken at the inputs with every element specified
    # (unspecified ones as zeros), the analytical one at the inputs as they are
    work_num = work if masked else tuple(_densified(t) for t in work)
    if check_forward_ad and not _check_forward_ad(func, work, outputs, eps, atol, rtol, raise_exception):
        return False
    if not check_backward_ad:
        return True
    numerical = _numerical_jacobian(func, work_num, outputs, eps)
    analytical, reentrant = _analytical_jacobian(work, outputs)
    in_idx = [i for i, _ in diff]
    for k, i in enumerate(in_idx):
        for j, out in enumerate(outputs):
            if not isinstance(out, T):
                continue
            n, a = numerical[k][j], analytical[k][j]
            if not out.requires_grad:
                if not np.allclose(n, 0, rtol, atol):
                    return _fail("Numerical gradient for function expected to be zero", raise_exception)
                continue
            if not np.allclose(a, n, rtol, atol):
                return _fail(f"Jacobian mismatch for output {j:d} with respect to input {i:d},\n"
                             f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n", raise_exception)
    if not reentrant and nondet_tol == 0.0:
        return _fail("Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                     "times gives different values, although analytical gradient matches numerical gradient.The "
                     f"tolerance for nondeterminism was {nondet_tol}.", raise_exception)
    return True


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
        rng = np.random.default_rng(0)
        grad_outputs = tuple(T._make(array_module(o._data).asarray(rng.standard_normal(o._data.shape).astype(o._data.dtype)))
                             .requires_grad_(True) for o in outs if isinstance(o, T) and o.requires_grad)
    tupled_go = _as_tuple(grad_outputs)
    n_go = len(tupled_go)

    def new_func(*args):
        input_args = args[:-n_go]
        gos = args[-n_go:]
        outputs = [o for o in _as_tuple(func(*input_args)) if isinstance(o, T) and o.requires_grad]
        diff_in = tuple(x for x in input_args if isinstance(x, T) and x.requires_grad)
        gi = grad(outputs, diff_in, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gi if g is not None)

    return gradcheck(new_func, tupled + tupled_go, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
                     nondet_tol=nondet_tol, check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev)


# ---- forward AD (forward_ad.py): check_forward_ad / check_fwd_over_rev make real jvp calls ----

def _forward_ad_jacobian(func, inputs, outputs):
    """Per (input, output): array (input.numel(), output.numel()), one column per unit tangent of one input
    element, through forward_ad's dual tensors."""
    from . import forward_ad as fw
    T = _T()
    diff = _diff_inputs(inputs)
    jac = [[np.zeros((t._data.size, o._data.size if isinstance(o, T) else 0), np.float64) for o in outputs]
           for _, t in diff]
    for k, (i, inp) in enumerate(diff):
        d = inp._data
        for m in range(d.size):
            tan = array_module(d).zeros(d.size, d.dtype)
            tan[m] = 1
            with fw.dual_level():
                args = list(inputs)
                args[i] = fw.make_dual(inp.detach().requires_grad_(inp.requires_grad), T._make(tan.reshape(d.shape)))
                outs = _outputs(func, args)
                for j, o in enumerate(outs):
                    if isinstance(o, T):
                        t = fw.unpack_dual(o).tangent
                        if t is not None:
                            jac[k][j][m] = to_numpy(t._data).astype(np.float64).reshape(-1)
    return jac


def _check_forward_ad(func, inputs, outputs, eps, atol, rtol, raise_exception):
    T = _T()
    numerical = _numerical_jacobian(func, inputs, outputs, eps)
    analytical = _forward_ad_jacobian(func, inputs, outputs)
    for k, (i, _) in enumerate(_diff_inputs(inputs)):
        for j, out in enumerate(outputs):
            if not isinstance(out, T):
                continue
            n, a = numerical[k][j], analytical[k][j]
            if not np.allclose(a, n, rtol, atol):
                return _fail(f"Jacobian computed with forward mode mismatch for output {j:d} with respect to input "
                             f"{i:d},\nnumerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n", raise_exception)
    return True


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
