"""gradcheck's checks against torch's (issue 27): complex outputs as real and imaginary parts (and their message),
complex inputs, outputs that change shape or dtype under perturbation, undefined output gradients, reentrancy,
backward multiplied by grad_output, the deprecated get_*_jacobian, the argument checks."""
import warnings

from oracle import events


def _first_line(log, fn):
    """Run fn: log its result, or its error's type and first line (the Jacobians print differently)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = fn()
        except Exception as e:  # noqa: BLE001
            log("err", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        else:
            log("ok", r if isinstance(r, bool) else type(r).__name__)
    log("warned", sorted({(x.category.__name__, str(x.message)[:60]) for x in w
                          if "double precision" not in str(x.message)}))


def test_jacobian_mismatch_real_and_complex():
    def s(lib, log):
        gc = lib.autograd.gradcheck

        def fn(x):          # R -> R, C -> C
            y = x.clone()
            y.register_hook(lambda g: g + 1e-2)
            return y

        def fn2(x):         # R -> C
            y = lib.complex(x, x)
            y.register_hook(lambda g: g + 1e-2)
            return y

        def fn3(x):         # C -> R
            y = lib.real(x)
            y.register_hook(lambda g: g + 1e-2)
            return y
        x = lib.ones(2, 2, dtype=lib.double, requires_grad=True)
        xc = lib.ones(2, 2, dtype=lib.complex128, requires_grad=True)
        for f, a in ((fn, x), (fn, xc), (fn2, x), (fn3, xc)):
            _first_line(log, lambda: gc(f, (a,)))
            _first_line(log, lambda: gc(f, (a,), raise_exception=False))
    events(s)


def test_complex_functions_pass():
    def s(lib, log):
        gc = lib.autograd.gradcheck
        a = lib.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([[1.5, 0.5], [-0.3, 1.0]], dtype=lib.float64, requires_grad=True)
        c = lib.tensor([[0.5 + 1j, -1.0 + 0.2j], [2.0 - 1j, 0.25j]], dtype=lib.complex128, requires_grad=True)
        _first_line(log, lambda: gc(lambda x, y: (lib.complex(x, y), x + 1), (a, b)))
        _first_line(log, lambda: gc(lambda z: (z, lib.real(z)), (c,)))
        _first_line(log, lambda: gc(lambda z: (z * z).exp(), (c,)))
        _first_line(log, lambda: gc(lambda z: z.abs(), (c,)))
        _first_line(log, lambda: gc(lambda z, x: z * x, (c, a)))
        _first_line(log, lambda: lib.autograd.gradgradcheck(lambda z: z * z * z, (c,)))
    events(s)


def test_outputs_must_keep_shape_and_dtype():
    def s(lib, log):
        a = lib.ones(1, dtype=lib.double, requires_grad=True)

        def fn(x):
            return lib.cat([x, x]) if lib.all(x >= 1) else x

        def fn2(x):
            return x.to(lib.float32) if lib.all(x >= 1) else x
        _first_line(log, lambda: lib.autograd.gradcheck(fn, (a,)))
        _first_line(log, lambda: lib.autograd.gradcheck(fn2, (a,)))
    events(s)


def test_undefined_output_grads():
    def s(lib, log):
        def fn(x):
            def hook(g):
                if g is None:
                    raise RuntimeError("x is undefined")
            y = x.clone()
            y.register_hook(hook)
            return y
        x = lib.ones(1, dtype=lib.double, requires_grad=True)
        _first_line(log, lambda: lib.autograd.gradcheck(fn, (x,)))
        _first_line(log, lambda: lib.autograd.gradcheck(fn, (x,), raise_exception=False))
        _first_line(log, lambda: lib.autograd.gradcheck(fn, (x,), check_undefined_grad=False))

        class NotZero(lib.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                ctx.set_materialize_grads(False)
                return t.clone()

            @staticmethod
            def backward(ctx, g):
                return lib.ones(1, dtype=lib.double) if g is None else g
        _first_line(log, lambda: lib.autograd.gradcheck(NotZero.apply, (x,)))
    events(s)


def test_reentrancy_and_grad_output():
    def s(lib, log):
        class NonDet(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, jitter=0.0):
                ctx.jitter = jitter
                return x

            @staticmethod
            def backward(ctx, g):
                return NonDet.apply(g, ctx.jitter) * (1 + lib.rand_like(g) * ctx.jitter), None

        class Ignores(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return lib.full_like(g, 2.0)
        inp = lib.randn(3, 3, dtype=lib.double, requires_grad=True)
        gc = lib.autograd.gradcheck
        _first_line(log, lambda: gc(lambda x: NonDet.apply(x, 0.0), (inp,)))
        _first_line(log, lambda: gc(lambda x: NonDet.apply(x, 1e-6), (inp,)))
        _first_line(log, lambda: gc(lambda x: NonDet.apply(x, 1e-6), (inp,), nondet_tol=1e-5))
        _first_line(log, lambda: lib.autograd.gradgradcheck(lambda x: NonDet.apply(x, 1e-12), (inp,)))
        x1 = lib.ones(1, dtype=lib.double, requires_grad=True)
        _first_line(log, lambda: gc(Ignores.apply, (x1,)))
        _first_line(log, lambda: gc(lambda x: x * 2, (inp,), check_forward_ad=False, check_backward_ad=False))
        _first_line(log, lambda: gc(lambda x: x * 2, (inp.detach(),)))
        _first_line(log, lambda: gc(lambda x: (x > 0).double(), (inp,)))
        _first_line(log, lambda: gc(lambda x, y: x * x, (inp, inp.detach().clone().requires_grad_())))
    events(s)


def test_deprecated_jacobian_functions():
    def s(lib, log):
        from importlib import import_module
        gcm = import_module(lib.__name__ + ".autograd.gradcheck")
        a = lib.tensor([[0.5, 1.0], [1.5, 2.0]], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=lib.float64, requires_grad=True)

        def fn(inputs):
            return 2 * inputs[0] + inputs[1], inputs[0] + 2 * inputs[1]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            j = gcm.get_numerical_jacobian(fn, (a, b), eps=1e-6)
            jt = gcm.get_numerical_jacobian(fn, (a, b), target=a, eps=1e-6)
            ja, reentrant, sizes, types = gcm.get_analytical_jacobian((a, b), 2 * a + b)
        log("numerical", [t.to(lib.float32) for t in j], len(jt), jt[0].to(lib.float32))
        log("analytical", [t.to(lib.float32) for t in ja], reentrant, sizes, types)
        log("warned", [(x.category.__name__, str(x.message)[:60]) for x in w])
        _first_line(log, lambda: gcm.get_numerical_jacobian(fn, (a, b), grad_out=2.0))
        _first_line(log, lambda: gcm.get_analytical_jacobian((a,), a * 2, grad_out=2.0))
    events(s)
