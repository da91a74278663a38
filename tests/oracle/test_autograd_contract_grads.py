"""Gradient values at the edges PyTorch's formulas define (issue 27): 0 ** b, atan2(0, 0), max/min/median of
NaN inputs, pow with a negative base and a complex exponent, complex sin/cos/log, scatter_reduce/index_reduce
prod's double backward error."""
import numpy as np

from oracle import events
from _scen import attempt


def _nan_safe(t):
    """A tensor logged with its NaNs as a mask (NaN != NaN in the event lists)."""
    if t.is_complex():
        return _nan_safe(t.real), _nan_safe(t.imag)
    return t.isnan(), t.nan_to_num(nan=0.0)


def test_power_at_zero_base():
    def s(lib, log):
        for base in (lib.tensor([0.0, 0.0, 0.0]), 0, 0.0, 2, -2, -1.5):
            b = lib.tensor([-1.0, 0.0, 1.0, 1.5], requires_grad=True)
            a = base if not isinstance(base, lib.Tensor) else lib.zeros(4)
            lib.sum(a ** b).backward()
            log("grad", _nan_safe(b.grad))
        x = lib.tensor([-1.0, 0.0, 2.0], dtype=lib.double, requires_grad=True)
        e = lib.tensor([2.0, 0.5, 0.0], dtype=lib.double, requires_grad=True)
        lib.pow(x, e).sum().backward()
        log("tensor ** tensor", _nan_safe(x.grad), _nan_safe(e.grad))
    events(s)


def test_pow_negative_base_complex_exponent():
    def s(lib, log):
        e = lib.tensor([2 + 1j, -0.5 + 0j, 0j, 0.3 - 0.7j], dtype=lib.cdouble, requires_grad=True)
        lib.pow(-1, e).abs().sum().backward()
        log("scalar base", _nan_safe(e.grad))
        e.grad = None
        lib.pow(0, e).real.sum().backward()
        log("zero base", _nan_safe(e.grad))
        x = lib.tensor([-1.0, -2.0, 2.0, 0.5], dtype=lib.double, requires_grad=True)
        e.grad = None
        lib.pow(x, e).abs().sum().backward()
        log("tensor base", _nan_safe(x.grad), _nan_safe(e.grad))
        base = -lib.ones(2, dtype=lib.double)
        ex = lib.tensor([0.3 + 0.2j, -1.1 + 0.5j], dtype=lib.cdouble, requires_grad=True)
        log("gradcheck", lib.autograd.gradcheck(lambda t: lib.pow(base, t), (ex,)),
            lib.autograd.gradcheck(lambda t: lib.pow(-1, t), (ex,)))
    events(s)


def test_atan2_at_origin():
    def s(lib, log):
        x = lib.tensor([0.0, 1.0, 0.0], requires_grad=True)
        y = lib.tensor([0.0, 0.0, -2.0], requires_grad=True)
        lib.atan2(x, y).sum().backward()
        log("grads", x.grad, y.grad)
    events(s)


def test_max_min_median_with_nan_share_the_gradient():
    def s(lib, log):
        nan = float("nan")
        for f in ("min", "max", "median", "nanmedian", "amax", "amin"):
            for vals in ([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [nan, nan, nan], [1.0, nan, 3.0, nan]):
                x = lib.tensor(vals, requires_grad=True)
                getattr(lib, f)(x).backward()
                log(f, _nan_safe(x.grad))
    events(s)


def test_complex_sin_cos_log():
    def s(lib, log):
        z = lib.tensor([1 + 2j, -0.5 + 0.3j, 0.2 - 1.0j], requires_grad=True)
        for f in (lib.sin, lib.cos, lib.log):
            z.grad = None
            y = f(z)
            log(f.__name__, _nan_safe(y), y.grad_fn.name())
            (y * lib.tensor([1 - 1j, 2 + 0.5j, -1j])).real.sum().backward()
            log("grad", _nan_safe(z.grad))
        zd = z.detach().to(lib.cdouble).requires_grad_()
        log("gradcheck", [lib.autograd.gradcheck(f, (zd,)) for f in (lib.sin, lib.cos, lib.log)],
            lib.autograd.gradgradcheck(lib.sin, (zd,)))
    events(s)


def test_scatter_reduce_prod_double_backward_error():
    def s(lib, log):
        inp = lib.tensor([1.0], dtype=lib.float64, requires_grad=True)
        src = lib.tensor([0.0, 0.0], dtype=lib.float64, requires_grad=True)
        idx = lib.tensor([0, 0])
        for fn in (lib.scatter_reduce, lib.index_reduce):
            log("gradcheck", lib.autograd.gradcheck(fn, (inp, 0, idx, src, "prod"), check_batched_grad=False))
            attempt(log, lambda: lib.autograd.gradgradcheck(fn, (inp, 0, idx, src, "prod")))
            out = fn(inp, 0, idx, src, "prod")
            g, = lib.autograd.grad(out.sum(), src, create_graph=True)
            log("first grad", g, g.requires_grad)
            attempt(log, lambda: g.sum().backward())
        # one zero per position: differentiable twice
        src1 = lib.tensor([0.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        idx1 = lib.tensor([0, 0, 1])
        inp1 = lib.tensor([1.5, 2.0], dtype=lib.float64, requires_grad=True)
        log("gradgradcheck", lib.autograd.gradgradcheck(
            lambda a, b: lib.scatter_reduce(a, 0, idx1, b, "prod"), (inp1, src1)))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # index_reduce is in beta
        events(s)


def test_edge_gradients_match_numeric_values():
    """The same edges through gradcheck-free value checks (all finite, compared to many digits)."""
    def s(lib, log):
        x = lib.tensor(np.array([0.0, 1e-3, -2.0]), requires_grad=True)
        y = lib.tensor(np.array([0.0, 0.0, 0.0]), requires_grad=True)
        (lib.atan2(x, y) * lib.tensor(np.array([1.0, 2.0, 3.0]))).sum().backward()
        log("atan2", x.grad, y.grad)
    events(s)


def test_complex_two_norm():
    def s(lib, log):
        z = lib.tensor([[3 + 4j, 1j], [0.5 - 0.2j, 2 + 0j]], dtype=lib.complex128, requires_grad=True)
        for f in (lambda: lib.linalg.vector_norm(z), lambda: lib.norm(z), lambda: z.norm(),
                  lambda: lib.norm(z, dim=1).sum(), lambda: lib.linalg.vector_norm(z, 2, dim=0, keepdim=True).sum()):
            z.grad = None
            n = f()
            n.backward()
            log("norm", n, _nan_safe(z.grad))
        zd = z.detach().clone().requires_grad_()
        log("gradcheck", lib.autograd.gradcheck(lambda t: 1.0 / lib.norm(t), (zd,)),
            lib.autograd.gradgradcheck(lambda t: lib.norm(t), (zd,)))
    events(s)
