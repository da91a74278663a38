"""torch.func's differentiating transforms against torch: grad, grad_and_value, vjp, jvp, jacrev, jacfwd,
hessian, linearize and their compositions (vmap of grad, jacrev of jacfwd, grad of grad, ...) on plain functions
and on MLP, CNN and attention code; values, shapes, dtypes and requires_grad of every result; errors."""
import numpy as np
import pytest

from _func_util import both, raises_same, data

X = data(3, 4).astype(np.float64)
Y = data(3, seed=1).astype(np.float64)
B = data(5, 4, seed=2).astype(np.float64)


def T(lib, a, rg=False):
    return lib.tensor(a, requires_grad=rg)


def f_scalar(lib):
    return lambda x, y: ((x.sin() * y.unsqueeze(-1)) ** 2).sum() + (x @ x.t()).trace()


def f_vec(lib):
    return lambda x: (x.exp() * x.cos()).sum(0)


def test_grad_and_value():
    def scen(lib):
        fn = lib.func
        x, y = T(lib, X), T(lib, Y)
        f = f_scalar(lib)
        return (fn.grad(f)(x, y), fn.grad(f, argnums=1)(x, y), fn.grad(f, argnums=(0, 1))(x, y),
                fn.grad(f, argnums=-1)(x, y),
                fn.grad_and_value(f)(x, y), fn.grad_and_value(f, argnums=(1,))(x, y),
                fn.grad(lambda x, y: (f(x, y), {"aux": x * 2}), has_aux=True)(x, y),
                fn.grad_and_value(lambda x, y: (f(x, y), [y]), has_aux=True)(x, y),
                fn.grad(lambda d: (d["a"] * d["b"][0]).sum())({"a": x, "b": (x + 1, 0)}) if False else
                fn.grad(lambda d: (d["a"] * d["b"][0]).sum())({"a": x, "b": [x + 1]}),
                fn.grad(lambda x: (x * 2).sum() * 0 + y.sum())(x),                     # unused input: zeros
                fn.grad(lambda x, k: (x ** k).sum())(x, 3))
    both(scen)


def test_grad_with_autograd_outside_and_no_grad():
    def scen(lib):
        x = T(lib, X, rg=True)
        g = lib.func.grad(lambda a: (a.sin() ** 2).sum())(x)          # differentiable through regular autograd
        outer = lib.autograd.grad(g.sum(), x)[0]
        with lib.no_grad():
            g2 = lib.func.grad(lambda a: (a ** 3).sum())(T(lib, X))     # the transform ignores the outer no_grad
        g3 = lib.func.grad(lambda a: (a * lib.no_grad().__enter__() if False else a ** 2).sum())(T(lib, X))
        return g, outer, g2, g3
    both(scen)


def test_vjp_jvp_linearize():
    def scen(lib):
        fn = lib.func
        x, y = T(lib, X), T(lib, Y)
        out, vjp_fn = fn.vjp(lambda a, b: (a * b.unsqueeze(-1)).tanh(), x, y)
        g = vjp_fn(lib.ones_like(out))
        g_again = vjp_fn(out)
        o2, vjp2, aux = fn.vjp(lambda a: ((a.exp(), a.sum()), {"aux": a * 3}), x, has_aux=True)
        g2 = vjp2((lib.ones(3, 4, dtype=lib.float64), lib.tensor(2.0, dtype=lib.float64)))
        p, t = fn.jvp(f_vec(lib), (x,), (lib.ones_like(x),))
        p3, t3 = fn.jvp(lambda a, b: (a * b.unsqueeze(-1), b.sum()), (x, y), (x * 0.5, y))
        p4, t4, aux4 = fn.jvp(lambda a: (a.sin(), {"k": a.cos()}), (x,), (x,), has_aux=True)
        lo, jvp_fn = fn.linearize(f_vec(lib), x)
        return out, g, g_again, o2, aux, g2, p, t, p3, t3, p4, t4, aux4, lo, jvp_fn(lib.ones_like(x))
    both(scen)


def test_jacobians_and_hessian():
    def scen(lib):
        fn = lib.func
        x, y = T(lib, X), T(lib, Y)
        f = lambda a, b: (a.sin() * b.unsqueeze(-1)).sum(1)      # noqa: E731
        s = lambda a: (a ** 3).sum() + (a[0] * a[1]).sum()        # noqa: E731
        return (fn.jacrev(f)(x, y), fn.jacfwd(f)(x, y), fn.jacrev(f, argnums=(0, 1))(x, y),
                fn.jacfwd(f, argnums=(0, 1))(x, y), fn.jacrev(f, 1)(x, y), fn.jacrev(f, chunk_size=2)(x, y),
                fn.jacrev(f, chunk_size=1)(x, y),
                fn.jacrev(lambda a: (a.exp(), a.sum()))(y), fn.jacfwd(lambda a: {"o": a * a})(y),
                fn.jacrev(lambda a: (a * 2, a.sum()), has_aux=True)(y), fn.jacfwd(lambda a: (a * 2, a.cos()), has_aux=True)(y),
                fn.hessian(s)(y), fn.hessian(lambda a: (a.sin() ** 2).sum())(x),
                fn.hessian(lambda a, b: (a * b).sum() ** 2, argnums=(0, 1))(y, y * 2),
                fn.jacrev(fn.jacrev(s))(y), fn.jacfwd(fn.jacfwd(s))(y), fn.jacrev(fn.jacfwd(s))(y),
                fn.jacfwd(fn.jacrev(lambda a: a.sin().sum(0)))(x))
    both(scen)


def test_compositions():
    def scen(lib):
        fn = lib.func
        x, y, bb = T(lib, X), T(lib, Y), T(lib, B)
        s = lambda a: (a.sin() ** 2).sum()                            # noqa: E731
        return (fn.grad(lambda a: fn.grad(lambda b: (b ** 4).sum())(a)[0])(y),
                fn.grad(lambda a: fn.grad(s)(a).sum())(y),
                fn.vmap(fn.grad(s))(bb), fn.vmap(fn.grad(lambda a, w: (a @ w).tanh()), in_dims=(0, None))(bb, y[:1].expand(4)),
                fn.vmap(fn.jacrev(lambda a: a.sin() * a.sum()))(bb), fn.vmap(fn.jacfwd(lambda a: a.exp() / a.sum()))(bb),
                fn.vmap(fn.hessian(s))(bb[:2]),
                fn.vmap(lambda a: fn.vjp(lambda t: t.cos() * 2, a)[1](a))(bb),
                fn.vmap(lambda a: fn.jvp(lambda t: t.cos() * t, (a,), (a,))[1])(bb),
                fn.grad(lambda w: fn.vmap(lambda a: (a * w).sum())(bb).pow(2).sum())(bb[0]),
                fn.vmap(fn.vmap(fn.grad(lambda a: a.sin() * a)))(bb),
                fn.jacrev(lambda a: fn.vmap(lambda r: (r * a).sum())(bb))(bb[1]),
                # perturbation confusion: the inner grad does not see the outer variable as its own
                fn.grad(lambda a: fn.grad(lambda b: (a * b).sum())(a).sum())(y))
    both(scen)


# ---------------------------------------------------------------- MLP, CNN and attention code
def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3)).double()


def _cnn(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3, padding=1), lib.nn.ReLU(), lib.nn.MaxPool2d(2),
                             lib.nn.Flatten(), lib.nn.Linear(12, 2)).double()


class _Attention:
    """A hand-written single-head attention block (parameters passed explicitly)."""

    @staticmethod
    def params(lib):
        g = np.random.default_rng(5)
        return {k: lib.tensor(g.standard_normal(s) * 0.3) for k, s in
                (("q", (6, 6)), ("k", (6, 6)), ("v", (6, 6)), ("o", (6, 6)), ("ln", (6,)))}

    @staticmethod
    def forward(lib, p, x):
        F = lib.nn.functional
        h = F.layer_norm(x, (6,), p["ln"] + 1)
        q, k, v = h @ p["q"], h @ p["k"], h @ p["v"]
        att = F.softmax(q @ k.transpose(-2, -1) / 6 ** 0.5, dim=-1)
        sd = F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)).squeeze(0)
        return x + (att @ v) @ p["o"] + sd * 0.1


MODEL_X = {"mlp": data(6, 4, seed=7).astype(np.float64), "cnn": data(6, 2, 4, 4, seed=8).astype(np.float64)}
TARGETS = np.array([0, 2, 1, 1, 0, 2])


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_model_transforms(kind):
    def scen(lib):
        fn = lib.func
        model = _mlp(lib) if kind == "mlp" else _cnn(lib)
        params = {k: v.detach() for k, v in model.named_parameters()}
        x = lib.tensor(MODEL_X[kind])
        tgt = lib.tensor(TARGETS % (3 if kind == "mlp" else 2))

        def loss(p, xb, tb):
            out = fn.functional_call(model, p, (xb,))
            return lib.nn.functional.cross_entropy(out, tb)
        g = fn.grad(loss)(params, x, tgt)
        per_sample = fn.vmap(fn.grad(loss), in_dims=(None, 0, 0))(params, x.unsqueeze(1), tgt.unsqueeze(1))
        per_sample_v = fn.vmap(fn.grad_and_value(lambda p, xb, tb: loss(p, xb[None], tb[None])),
                               in_dims=(None, 0, 0))(params, x, tgt)
        jac = fn.jacrev(lambda xb: fn.functional_call(model, params, (xb,)))(x[:2])
        jf = fn.jacfwd(lambda xb: fn.functional_call(model, params, (xb,)))(x[:1])
        return g, per_sample, per_sample_v, jac, jf
    both(scen, tol=(1e-7, 1e-8))


def test_attention_transforms():
    def scen(lib):
        fn = lib.func
        p = _Attention.params(lib)
        x = lib.tensor(data(3, 4, 6, seed=9).astype(np.float64))
        f = lambda p, xb: (_Attention.forward(lib, p, xb) ** 2).mean()    # noqa: E731
        return (fn.grad(f)(p, x[0]), fn.vmap(fn.grad(f), in_dims=(None, 0))(p, x),
                fn.vmap(lambda xb: _Attention.forward(lib, p, xb))(x),
                fn.jacrev(lambda xb: _Attention.forward(lib, p, xb).sum(0))(x[0]),
                fn.hessian(lambda ln: f({**p, "ln": ln}, x[1]))(p["ln"]))
    both(scen, tol=(1e-7, 1e-8))


def _setitem_loss(x):
    y = x.clone()
    y[0] = 0
    y[:, 1] *= 2
    return (y ** 2).sum()


MIXED = [
    ("setitem under grad", lambda lib, x: lib.func.vmap(lib.func.grad(_setitem_loss))(x)),
    ("where max norm", lambda lib, x: lib.func.vmap(lib.func.grad(
        lambda a: lib.where(a > 0, a, lib.zeros(5, dtype=a.dtype)).logsumexp(0).sum() + a.max() + a.norm(dim=0).sum()))(x)),
    ("vmap hessian softmax", lambda lib, x: lib.func.vmap(lib.func.hessian(lambda a: (a.softmax(-1) * a).sum()))(x[:, 0])),
    ("jacrev of vmap", lambda lib, x: lib.func.jacrev(lib.func.vmap(lambda a: (a @ x[0].t()).sin()))(x[:, 0])),
    ("vmap jacfwd jacrev", lambda lib, x: lib.func.vmap(lib.func.jacfwd(lib.func.jacrev(lambda a: a.sin().prod())))(x[:, 0, :3])),
    ("grad of vmap of grad", lambda lib, x: lib.func.grad(
        lambda a: lib.func.vmap(lib.func.grad(lambda b: (b * a).sin().sum()))(a).sum())(x[0])),
    ("losses", lambda lib, x: lib.func.vmap(lib.func.grad(
        lambda a, t: lib.nn.functional.binary_cross_entropy_with_logits(a, t) + lib.nn.functional.mse_loss(a, t, reduction="sum")
        + lib.nn.functional.smooth_l1_loss(a, t)
        + lib.nn.functional.kl_div(a.log_softmax(-1), t.softmax(-1), reduction="batchmean")))(x, x.sigmoid())),
    ("cross_entropy ignore_index", lambda lib, x: lib.func.vmap(lib.func.grad(
        lambda a, t: lib.nn.functional.cross_entropy(a, t) + lib.nn.functional.cross_entropy(a, t, reduction="sum") * 0.1))(
        x, lib.tensor([[0, 1, 4], [2, 2, 1], [3, 0, -100], [4, 4, 4]]))),
]


@pytest.mark.parametrize("name,f", MIXED, ids=[m[0] for m in MIXED])
def test_mixed_compositions(name, f):
    both(lambda lib: f(lib, lib.tensor(data(4, 3, 5, seed=12).astype(np.float64))))


ERRORS = [
    ("grad non-scalar", lambda lib: lib.func.grad(lambda a: a * 2)(lib.ones(3))),
    ("grad non-tensor out", lambda lib: lib.func.grad(lambda a: 2.0)(lib.ones(3))),
    ("grad has_aux shape", lambda lib: lib.func.grad(lambda a: a.sum(), has_aux=True)(lib.ones(3))),
    ("argnum range", lambda lib: lib.func.grad(lambda a: a.sum(), argnums=2)(lib.ones(3))),
    ("argnums empty", lambda lib: lib.func.grad(lambda a: a.sum(), argnums=())(lib.ones(3))),
    ("argnums dup", lambda lib: lib.func.grad(lambda a, b: a.sum(), argnums=(0, 0))(lib.ones(3), lib.ones(3))),
    ("argnums type", lambda lib: lib.func.grad(lambda a: a.sum(), argnums=[0])(lib.ones(3))),
    ("grad non-tensor input", lambda lib: lib.func.grad(lambda a: a * 1.0)(3.0)),
    ("vjp int output", lambda lib: lib.func.vjp(lambda a: (a > 0).long(), lib.ones(3))),
    ("vjp cotangent structure", lambda lib: lib.func.vjp(lambda a: (a, a), lib.ones(3))[1](lib.ones(3))),
    ("vjp has_aux", lambda lib: lib.func.vjp(lambda a: a, lib.ones(3), has_aux=True)),
    ("vjp aux not a tensor", lambda lib: lib.func.vjp(lambda a: (a, "aux"), lib.ones(3), has_aux=True)),
    ("grad aux not a tensor", lambda lib: lib.func.grad(lambda a: (a.sum(), 2), has_aux=True)(lib.ones(3))),
    ("jvp primals tuple", lambda lib: lib.func.jvp(lambda a: a, lib.ones(3), (lib.ones(3),))),
    ("jvp structure", lambda lib: lib.func.jvp(lambda a: a, (lib.ones(3),), (lib.ones(3), lib.ones(3)))),
    ("jvp tangent size", lambda lib: lib.func.jvp(lambda a: a, (lib.ones(3),), (lib.ones(4),))),
    ("jvp empty", lambda lib: lib.func.jvp(lambda a: a, (), ())),
    ("jacrev chunk", lambda lib: lib.func.jacrev(lambda a: a, chunk_size=0)),
    ("jacrev complex", lambda lib: lib.func.jacrev(lambda a: a)(lib.ones(2, dtype=lib.complex64))),
]


@pytest.mark.parametrize("name,f", ERRORS, ids=[e[0] for e in ERRORS])
def test_transform_errors(name, f):
    raises_same(f)
