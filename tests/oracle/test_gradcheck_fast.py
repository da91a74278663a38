"""gradcheck(fast_mode=True) against torch's: verdicts, whole messages (the v^T J u scalars from the same random
vectors, then the slow-mode note), the number of calls of the function, the caller's random state, on real,
complex, sparse and float32 inputs, in backward and forward mode, and gradgradcheck."""
import re
import warnings

from oracle import events


def _norm(text):
    """The message with each decimal number to 8 significant digits (sums may differ in the last bits)."""
    return re.sub(r"\d+\.\d+(e-?\d+)?", lambda m: f"{float(m.group(0)):.8g}", text)


def _log_call(log, fn):
    """Run fn: log its result, or its error's type and whole (normalized) message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn()
        except Exception as e:  # noqa: BLE001
            log("err", type(e).__name__, _norm(str(e)))
        else:
            log("ok", r)


def _fns(lib):
    class Wrong(lib.autograd.Function):       # backward (and jvp) of sin wrong: the identity's
        @staticmethod
        def forward(ctx, x):
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            return t

    class Scaled(lib.autograd.Function):      # x * 2 with x * 3's gradients
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

        @staticmethod
        def jvp(ctx, t):
            return t * 3
    return Wrong, Scaled


def test_real_functions_and_a_wrong_backward():
    def s(lib, log):
        gc = lib.autograd.gradcheck
        Wrong, Scaled = _fns(lib)
        x = lib.tensor([1., 2., 3.], dtype=lib.double, requires_grad=True)
        y = lib.tensor([[0.5, -1.], [2., .3]], dtype=lib.double, requires_grad=True)
        _log_call(log, lambda: gc(lambda a, b: (a.sum() * b, b.exp()), (x, y), fast_mode=True))
        _log_call(log, lambda: gc(lambda a: (a @ a).tanh(), (y,), fast_mode=True, check_batched_grad=True))
        _log_call(log, lambda: gc(lambda a: (a.argmax(), a * 2), (x,), fast_mode=True))
        _log_call(log, lambda: gc(lambda a: a.sin(), (lib.zeros(0, dtype=lib.double, requires_grad=True),),
                                  fast_mode=True))
        _log_call(log, lambda: gc(Scaled.apply, (x,), fast_mode=True))
        _log_call(log, lambda: gc(Scaled.apply, (x,), fast_mode=True, raise_exception=False))
        _log_call(log, lambda: gc(lambda a: (a * 2, Wrong.apply(a)), (x,), fast_mode=True))   # output 1
        _log_call(log, lambda: gc(lambda a, b: (a.sum() + b.sum(), Wrong.apply(b)), (x, y), fast_mode=True))
        _log_call(log, lambda: gc(lambda a: a.clone(), (x,), fast_mode=True, atol=0, rtol=0))
        # no differentiable output, but the numerical gradient is not zero
        _log_call(log, lambda: gc(lambda a: a.detach() * a.detach(), (x,), fast_mode=True))
        _log_call(log, lambda: gc(lambda a: a.detach() * 0, (x,), fast_mode=True))
    events(s)


def test_fast_fails_where_slow_passes():
    """Errors small element-wise that do not cancel in v^T J u: PyTorch's note that slow mode would pass."""
    def s(lib, log):
        g = lib.Generator()          # the vectors gradcheck draws: u for the input first, then v for the output
        u, v = lib.rand(4, generator=g).double(), lib.rand(4, generator=g).double()
        p = u * v
        w = lib.tensor([1., 1., 1., -float(p[:3].sum() / p[3])], dtype=lib.double)   # v^T J u == 0

        class Off(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * w

            @staticmethod
            def backward(ctx, gr):
                return gr * w + 5e-4 * gr
        x = lib.tensor([1., 2., 3., 4.], dtype=lib.double, requires_grad=True)
        _log_call(log, lambda: lib.autograd.gradcheck(Off.apply, (x,), fast_mode=True, atol=0, rtol=1e-3))
        _log_call(log, lambda: lib.autograd.gradcheck(Off.apply, (x,), fast_mode=False, atol=0, rtol=1e-3))
    events(s)


def test_complex_inputs_and_outputs():
    def s(lib, log):
        gc = lib.autograd.gradcheck
        Wrong, Scaled = _fns(lib)
        x = lib.tensor([1., 2., 3.], dtype=lib.double, requires_grad=True)
        z = lib.tensor([1., 2. + 1j, 3.], dtype=lib.complex128, requires_grad=True)
        _log_call(log, lambda: gc(lambda a: (a * a).exp(), (z,), fast_mode=True))              # C -> C
        _log_call(log, lambda: gc(lambda a: a.abs(), (z,), fast_mode=True))                    # C -> R
        _log_call(log, lambda: gc(lambda a: (a * 1j).sin(), (x,), fast_mode=True))             # R -> C
        _log_call(log, lambda: gc(lambda a, b: a * b, (z, x), fast_mode=True))
        _log_call(log, lambda: gc(Scaled.apply, (z,), fast_mode=True))                         # imaginary part
        _log_call(log, lambda: gc(Wrong.apply, (z,), fast_mode=True))
        _log_call(log, lambda: gc(lambda a: Wrong.apply(a) * 1j, (x,), fast_mode=True))
        _log_call(log, lambda: gc(lambda a: lib.view_as_real(a * a), (z,), fast_mode=True))
    events(s)


def test_forward_mode():
    def s(lib, log):
        gc = lib.autograd.gradcheck
        Wrong, Scaled = _fns(lib)
        x = lib.tensor([1., 2., 3.], dtype=lib.double, requires_grad=True)
        z = lib.tensor([1., 2. + 1j, 3.], dtype=lib.complex128, requires_grad=True)
        kw = dict(fast_mode=True, check_forward_ad=True)
        _log_call(log, lambda: gc(lambda a: (a.conj() * a).real, (z,), **kw))
        _log_call(log, lambda: gc(lambda a: lib.complex(a, a * 2), (x,), **kw))
        _log_call(log, lambda: gc(lambda a: a.sin(), (x,), check_batched_grad=True, check_batched_forward_grad=True,
                                  **kw))
        _log_call(log, lambda: gc(Scaled.apply, (x,), check_backward_ad=False, **kw))
        _log_call(log, lambda: gc(Scaled.apply, (z,), check_backward_ad=False, **kw))       # a complex input
        _log_call(log, lambda: gc(lambda a: Scaled.apply(a) * 1j, (x,), check_backward_ad=False, **kw))
    events(s)


def test_sparse_and_float32_inputs():
    def s(lib, log):
        gc = lib.autograd.gradcheck
        sp = lib.tensor([[0., 1.5], [2., 0.]], dtype=lib.double).to_sparse().requires_grad_()
        for masked in (True, False):
            _log_call(log, lambda: gc(lambda a: a.to_dense() * 2, (sp,), fast_mode=True, masked=masked))
        _log_call(log, lambda: gc(lambda a: a.to_dense() ** 2, (sp,), fast_mode=True))
        f = lib.tensor([1., 2., 3.], requires_grad=True)
        _log_call(log, lambda: gc(lambda a: (a * a).sum(), (f,), fast_mode=True))     # float32: a mismatch
        x = lib.tensor([1., 2., 3.], dtype=lib.double, requires_grad=True)
        # a float32 output of a double input: the slow-mode note's allclose meets two dtypes
        _log_call(log, lambda: gc(lambda a: a.float() * 2, (x,), fast_mode=True))
        # an output that changes shape under perturbation
        _log_call(log, lambda: gc(lambda a: a.expand(2, 3) if a[0] > 1.0000001 else a, (x,), fast_mode=True))
    events(s)


def test_gradgradcheck_fast_mode():
    def s(lib, log):
        Wrong, _ = _fns(lib)
        x = lib.tensor([1., 2., 3.], dtype=lib.double, requires_grad=True)
        z = lib.tensor([1., 2. + 1j], dtype=lib.complex128, requires_grad=True)
        ggc = lib.autograd.gradgradcheck
        lib.manual_seed(0)       # (the random grad_outputs come from the global random state, as make_tensor's)
        _log_call(log, lambda: ggc(lambda a: (a ** 3).sum(), (x,), fast_mode=True))
        _log_call(log, lambda: ggc(lambda a: a * a * a, (z,), fast_mode=True))
        _log_call(log, lambda: ggc(lambda a, b: (a * b).sin(), (x, x.detach().clone().requires_grad_()),
                                   fast_mode=True, check_fwd_over_rev=True))

        class WrongDouble(lib.autograd.Function):    # first derivative right, its own derivative wrong
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a ** 2

            @staticmethod
            def backward(ctx, g):
                a, = ctx.saved_tensors
                return g * 2 * a.detach()
        _log_call(log, lambda: ggc(WrongDouble.apply, (x,), fast_mode=True))
    events(s)


def test_calls_and_random_state():
    """The function is called as often as under torch; the caller's random numbers are left alone."""
    def s(lib, log):
        for fast in (True, False):
            for inp in (lib.tensor([1., 2., 3.], dtype=lib.double), lib.tensor([1., 2. + 1j], dtype=lib.complex128)):
                for kw in ({}, {"check_forward_ad": True}, {"check_undefined_grad": False},
                           {"check_batched_grad": True}):
                    n = [0]

                    def f(a, b):
                        n[0] += 1
                        return a.sin() * 2, (a * b).exp()
                    a, b = inp.clone().requires_grad_(), inp.clone().requires_grad_()
                    lib.manual_seed(3)
                    _log_call(log, lambda: lib.autograd.gradcheck(f, (a, b), fast_mode=fast, **kw))
                    log(n[0], lib.rand(2))
    events(s)


def test_empty_inputs_and_outputs():
    """Fast mode runs one backward even for empty outputs (view_as_real's backward on an empty gradient)."""
    def s(lib, log):
        gc = lib.autograd.gradcheck
        e = lib.zeros(0, 2, dtype=lib.double, requires_grad=True)
        x = lib.tensor([1., 2.], dtype=lib.double, requires_grad=True)
        for fast in (True, False):
            _log_call(log, lambda: gc(lambda v: (v * 1j).tanh(), (e,), fast_mode=fast))
            _log_call(log, lambda: gc(lambda v: (v[:0] * 1j, v * 2), (x,), fast_mode=fast))
            _log_call(log, lambda: gc(lambda v: lib.view_as_complex(v.reshape(0, 1, 2)), (e,), fast_mode=fast))
        log(lib.view_as_complex(lib.zeros(3, 0, 2)).shape, lib.view_as_real(lib.zeros(0, 3, dtype=lib.cdouble)).shape)
    events(s)


def test_check_grad_dtypes_both_modes():
    """check_grad_dtypes: a jvp whose tangent is complex for a real output, in fast and in slow mode."""
    def s(lib, log):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return (g * 2).float()

            @staticmethod
            def jvp(ctx, t):
                return t * 2 + 0j
        x = lib.tensor([1., 2.], dtype=lib.double, requires_grad=True)
        for kw in (dict(check_grad_dtypes=True), dict(check_forward_ad=True, check_backward_ad=False),
                   dict(check_forward_ad=True, check_backward_ad=False, check_grad_dtypes=True)):
            for fast in (True, False):
                _log_call(log, lambda: lib.autograd.gradcheck(F.apply, (x,), fast_mode=fast, **kw))
    events(s)


def test_sparse_wrong_backward_messages():
    """COO and CSR inputs, masked or not: u over the stored values, the same v^T J u and slow-mode note."""
    def s(lib, log):
        class W(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 3
        d = lib.tensor([[0., 1.5, 0.], [2., 0., 3.]], dtype=lib.double)
        for sp in (d.to_sparse(), d.to_sparse_csr()):
            sp.requires_grad_()
            for masked in (True, False):
                _log_call(log, lambda: lib.autograd.gradcheck(lambda a: W.apply(a.to_dense()), (sp,), fast_mode=True,
                                                              masked=masked))
                _log_call(log, lambda: lib.autograd.gradcheck(lambda a: (a.to_dense() * 2).sin(), (sp,),
                                                              fast_mode=True, masked=masked))
    events(s)
