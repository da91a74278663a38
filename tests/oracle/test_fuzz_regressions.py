"""Differences found by the random-graph fuzzer (tests/oracle/_randgraph.py), each minimised to a short
program run under torch and hookgrad; events, values and errors are compared at run time."""
import pytest

from oracle import events


def _rg(g):
    """What a create_graph gradient is: None, or (requires_grad, has a grad_fn, value)."""
    return None if g is None else (g.requires_grad, g.grad_fn is not None, g)


# ------------------------------------------------------------------------------------------------
# F17: a create_graph gradient's requires_grad. PyTorch writes some gradients as constants
# (zeros_like(grad) in copy_'s CopyBackwards, zeros_like(self) in pow(x, 0)'s pow_backward), and
# norm(p=0)'s gradient is undefined; computing them as ``g * 0`` made them depend on the graph.

def test_seed_10480_copy_over_a_differentiable_value():
    # min(dim) -> sub -> copy_ -> chunk -> var_mean, gradients with create_graph (fuzzer seed 10480)
    def sc(lib, log):
        a = lib.tensor([[1., 2., 3., 4.], [5., 6., 7., 8.]], requires_grad=True)
        b = lib.tensor([1., -2., 3., 4.], requires_grad=True)
        x = a - b
        x.copy_(b.min(0)[0])
        v, m = lib.var_mean(x.chunk(2, 1)[0], 0, keepdim=True)
        gs = lib.autograd.grad(v.sum(), [m, a, b], create_graph=True, allow_unused=True)
        log("grads", [_rg(g) for g in gs])
        s2 = sum((g * g).sum() for g in gs if g is not None and g.requires_grad)
        log("grads2", lib.autograd.grad(s2, [a, b], allow_unused=True))
    events(sc)


_CONST = {
    "copy_": lambda lib, x: (x * 1).copy_(lib.ones(3)),
    "copy_broadcast": lambda lib, x: (x * 1).copy_(x[0]),
    "pow_0": lambda lib, x: x ** 0,
    "pow_0.0": lambda lib, x: x.pow(0.0),
    "torch_pow_0": lambda lib, x: lib.pow(x, 0),
    "pow_0_": lambda lib, x: (x * 1).pow_(0),
    "norm_0": lambda lib, x: x.norm(0),
    "vector_norm_0_dim": lambda lib, x: lib.linalg.vector_norm(x, 0, dim=0),
    "vector_norm_0_keepdim": lambda lib, x: lib.linalg.vector_norm(x, 0, dim=0, keepdim=True),
    # neighbours that stay differentiable in PyTorch (their zeros depend on the graph)
    "pow_tensor_0": lambda lib, x: x ** lib.zeros(3),
    "sign": lambda lib, x: x.sign(),
    "round": lambda lib, x: x.round(),
    "zero_": lambda lib, x: (x * 1).zero_(),
    "fill_": lambda lib, x: (x * 1).fill_(2.),
}


@pytest.mark.parametrize("op", list(_CONST))
@pytest.mark.parametrize("square", [False, True])
def test_constant_gradient_formulas(op, square):
    def sc(lib, log):
        x = lib.tensor([0.5, 1.5, 2.5], requires_grad=True)
        y = _CONST[op](lib, x)
        loss = (y * y).sum() if square else y.sum()
        (g,) = lib.autograd.grad(loss, [x], create_graph=True, allow_unused=True)
        log("grad", _rg(g))
        if g is not None and g.requires_grad:
            log("grad2", lib.autograd.grad(g.sum(), [x], allow_unused=True))
    events(sc)


@pytest.mark.parametrize("how", ["backward", "grad", "grad_unused", "hooked"])
def test_norm_0_gradient_is_undefined(how):
    # PyTorch's norm_backward returns an undefined gradient for p=0: no .grad, autograd.grad says unused,
    # tensor hooks and node post-hooks see None; it also had the reduced shape (1,) with dim=
    def sc(lib, log):
        x = lib.tensor([1., 0., 3.], requires_grad=True)
        y = lib.linalg.vector_norm(x * 2, 0, dim=0)
        if how == "hooked":
            x.register_hook(lambda g: log("hook", g))
            y.grad_fn.register_hook(lambda gi, go: log("post", gi, go))
            (y + x.sum()).backward()
            log("grad", x.grad)
            y = lib.linalg.vector_norm(x, 0, dim=0)
            y.backward()
            log("grad", x.grad)
        elif how == "backward":
            y.backward()
            log("grad", x.grad)
        else:
            log("grads", lib.autograd.grad(y, [x], allow_unused=how == "grad_unused"))
    events(sc)


# ------------------------------------------------------------------------------------------------
# F17 neighbours: PyTorch returns the incoming gradient itself where the op is the identity
# (prod / cumprod / cumsum of a 0-d or one-element input), so that gradient does not depend on x.
# Also prod's gradient is grad * (result / input), PyTorch's order: a float32 double backward through
# a tiny element rounded differently with (grad * result) / input (fuzzer seed 20006).

_IDENT = {
    "prod": lambda x: x.prod(),
    "prod_dim": lambda x: x.prod(0),
    "prod_keepdim": lambda x: x.prod(-1, keepdim=True),
    "cumprod": lambda x: x.cumprod(0),
    "cumsum": lambda x: x.cumsum(-1),
    "flip": lambda x: x.flip(0),
}


@pytest.mark.parametrize("op", list(_IDENT))
@pytest.mark.parametrize("value", [2.0, 0.0, [2.0], [0.0]])
def test_identity_cases_pass_the_gradient_through(op, value):
    def sc(lib, log):
        x = lib.tensor(value, requires_grad=True)
        y = _IDENT[op](x * 1)
        log("y", y, y.grad_fn.name())
        (g,) = lib.autograd.grad((y * 3).sum(), [x], create_graph=True)
        log("grad", _rg(g))
        (g,) = lib.autograd.grad((y * y).sum(), [x], create_graph=True)
        log("grad of square", _rg(g), lib.autograd.grad(g.sum(), [x]))
    events(sc)


def test_seed_20006_prod_double_backward_rounding():
    # max(dim) / abs / prod(dim) / min(dim), backward(create_graph=True) then a backward of the
    # gradient's square; one element of the row is -1.3e-3 (float32 cancellation decides the digits)
    row = [-1.2862849e-03, 1.3989151e+00, -1.4946951e+00, -1.1729556e+00]

    def sc(lib, log):
        b = lib.tensor([[-0.31, 0.35, 0.94, 0.75], [0.25, 0.057, 0.92, 0.40], row], requires_grad=True)
        m = b.abs().prod(1).min(0)[0] * 1.3517805
        (g,) = lib.autograd.grad(m, [b], create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), [b])
        log("gg", gg[2, 0].item() == gg[2, 0].item(), round(gg[2, 0].item(), 6))
    events(sc)


def test_flip_argument_checks():
    def sc(lib, log):
        for dims in [(0, 0), (0, -1)]:
            try:
                lib.ones(3).flip(*dims)
            except RuntimeError as e:
                log("error", str(e))
        log("0-d", lib.tensor(2.0).flip(0), lib.tensor(2.0).flip(-1))
    events(sc)


@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
@pytest.mark.parametrize("use", ["both", "mean", "first"])
def test_var_mean_unpacks_once_and_version_checks(fn, use):
    # the node unpacks its saved tensors once per call (an unpack hook runs once), also when only the
    # mean has a gradient, where an in-place change of the input is still an error (seeds 10166/10201)
    def sc(lib, log):
        a = lib.tensor([[0.3, -0.5, 0.7], [0.2, 0.9, -0.4]], requires_grad=True)
        x = a * 1
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: log("unpack", t.shape) or t):
            v, m = getattr(lib, fn)(x, dim=0)
        loss = {"both": (v + m).sum(), "mean": m.sum(), "first": v.sum()}[use]
        loss.backward(retain_graph=True)
        log("grad", a.grad)
        x.mul_(2)
        try:
            loss.backward()
        except RuntimeError as e:
            log("error", str(e)[:60])
    events(sc)


@pytest.mark.parametrize("fn", ["std", "var", "std_mean", "var_mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_std_of_equal_values_is_exactly_zero(fn, dtype):
    # std over an expanded dim (equal values): NumPy's two-pass variance left ~1e-33 where PyTorch's
    # Welford kernel gives 0, and std's gradient g / std became ~1e15 instead of 0 (fuzzer seed 20749)
    def sc(lib, log):
        a = lib.tensor([[0.1], [0.7], [1.3], [-2.9]], dtype=getattr(lib, dtype), requires_grad=True)
        x = lib.cat([a.expand(4, 3), lib.tensor([[0.3], [0.2], [0.1], [0.5]], dtype=a.dtype)], 1)
        for dims in [(1,), (0, 1)]:
            y = getattr(lib, fn)(x[:, :3], dims)
            y = y[0] if isinstance(y, tuple) else y
            log("value", y, lib.autograd.grad(y[:3].sum() if y.dim() else y, [a], allow_unused=True))
        y = getattr(lib, fn)(x, 1, correction=4)
        log("no dof", y[0] if isinstance(y, tuple) else y)
    events(sc)
