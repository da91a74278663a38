"""Complex tensors vs torch: dtypes and promotion, construction, printing, the complex ops with first- and
second-order gradients (PyTorch's conjugate Wirtinger convention), views, and errors."""
import numpy as np
import pytest

import torch
import hookgrad
from complex_oracle import ccheck, cdata, same

DTYPES = ["bool", "int64", "float16", "float32", "float64", "complex64", "complex128"]


# ------------------------------------------------------------------------------------ dtypes
def test_dtype_attributes_and_aliases():
    for name in ("complex64", "complex128", "cfloat", "cdouble"):
        t, h = getattr(torch, name), getattr(hookgrad, name)
        assert repr(h) == repr(t)
        assert (h.is_complex, h.is_floating_point, h.is_signed, h.itemsize) == \
            (t.is_complex, t.is_floating_point, t.is_signed, t.itemsize)
        assert repr(h.to_real()) == repr(t.to_real()) and repr(h.to_complex()) == repr(t.to_complex())
    for name in ("float32", "float64"):
        assert repr(getattr(hookgrad, name).to_complex()) == repr(getattr(torch, name).to_complex())
        assert getattr(hookgrad, name).to_real() is getattr(hookgrad, name)
    with pytest.raises(RuntimeError):
        torch.int32.to_complex()
    with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for Int"):
        hookgrad.int32.to_complex()
    assert hookgrad.finfo(hookgrad.complex64).eps == torch.finfo(torch.complex64).eps


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_promote_types(a, b):
    assert repr(hookgrad.promote_types(getattr(hookgrad, a), getattr(hookgrad, b))) == \
        repr(torch.promote_types(getattr(torch, a), getattr(torch, b)))


@pytest.mark.parametrize("case", [
    lambda L: L.ones(2) * 1j, lambda L: L.ones(2, dtype=L.float64) * 1j, lambda L: L.ones(2, dtype=L.int64) * 1j,
    lambda L: L.ones(2, dtype=L.complex64) * 2.5, lambda L: L.ones(2, dtype=L.complex64) / 2,
    lambda L: L.ones(2, dtype=L.float64) + L.tensor(1j), lambda L: L.ones(2) + L.tensor(1j, dtype=L.complex128),
    lambda L: L.ones(2, dtype=L.complex64) + L.tensor(1.0, dtype=L.float64),
    lambda L: L.ones(2, dtype=L.complex64) * L.ones(2, dtype=L.float64),
    lambda L: L.ones(2, dtype=L.int32) - L.ones(2, dtype=L.complex128), lambda L: 1j - L.ones(2),
    lambda L: 2 / L.tensor([1 + 1j, 2j]),
])
def test_result_types_and_values(case):
    same(case(torch), case(hookgrad), "result")


def test_tensor_from_complex_numbers():
    for data, kw in [([1 + 2j, 3], {}), (1 - 2j, {}), ([[1.5, 2j], [0, -1]], {}), ([1j], {"dtype": "complex128"}),
                     (np.array([1 + 1j], np.complex64), {}), ([1, 2], {"dtype": "complex64"})]:
        if "dtype" in kw:
            t = torch.tensor(data, dtype=getattr(torch, kw["dtype"]))
            h = hookgrad.tensor(data, dtype=getattr(hookgrad, kw["dtype"]))
        else:
            t, h = torch.tensor(data), hookgrad.tensor(data)
        same(t, h, repr(data))
        assert h.is_complex() and hookgrad.is_complex(h) and not h.is_floating_point()
    t = torch.tensor([1j], requires_grad=True)
    h = hookgrad.tensor([1j], requires_grad=True)
    assert h.requires_grad and t.requires_grad
    same(torch.zeros(2, dtype=torch.cfloat), hookgrad.zeros(2, dtype=hookgrad.cfloat), "zeros")
    same(torch.from_numpy(np.array([1 + 1j])), hookgrad.from_numpy(np.array([1 + 1j])), "from_numpy")


def test_default_complex_dtype_follows_default_float():
    old_t, old_h = torch.get_default_dtype(), hookgrad.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        hookgrad.set_default_dtype(hookgrad.float64)
        same(torch.tensor([1j]), hookgrad.tensor([1j]), "tensor")
        same(torch.ones(2, dtype=torch.int64) * 1j, hookgrad.ones(2, dtype=hookgrad.int64) * 1j, "scalar")
        assert repr(torch.tensor([1j])) == repr(hookgrad.tensor([1j]))
    finally:
        torch.set_default_dtype(old_t)
        hookgrad.set_default_dtype(old_h)


@pytest.mark.parametrize("shape", [(3,), (4, 5)])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_random_complex_draws_as_torch(shape, dtype):
    for name in ("rand", "randn"):
        torch.manual_seed(3)
        hookgrad.manual_seed(3)
        same(getattr(torch, name)(*shape, dtype=getattr(torch, dtype)),
             getattr(hookgrad, name)(*shape, dtype=getattr(hookgrad, dtype)), name, tol=(1e-6, 1e-6))


# ------------------------------------------------------------------------------------ printing
@pytest.mark.parametrize("make", [
    lambda L: L.tensor([1 + 2j, 3 - 1j]),
    lambda L: L.tensor([[1.5 + 2j, 3 - 1j], [0.25j, -4]]),
    lambda L: L.tensor(1 + 2j), lambda L: L.tensor([-0.0j, 1e-5 + 1e5j]),
    lambda L: L.tensor([1 + 2j], dtype=L.complex128), lambda L: L.zeros(0, dtype=L.complex64),
    lambda L: L.tensor([1 + 1j, 2], requires_grad=True) * 2,
    lambda L: L.arange(2000.0).reshape(20, 100) * (1 + 0.5j),
])
def test_repr(make):
    assert repr(make(hookgrad)) == repr(make(torch))


# ------------------------------------------------------------------------------------ ops with autograd
Z = cdata(3, 4)
Z32 = cdata(3, 4, dtype="complex64")
X = cdata(3, 4, dtype="float64", seed=1)
Y = cdata(4, dtype="float64", seed=2)


@pytest.mark.parametrize("fn, args", [
    (lambda L, z: z.real * 1.0, (Z,)),
    (lambda L, z: z.imag * 1.0, (Z,)),
    (lambda L, z: (z.real, z.imag), (Z32,)),
    (lambda L, z: L.view_as_real(z), (Z,)),
    (lambda L, z: L.view_as_real(z.t()), (Z,)),
    (lambda L, x: L.view_as_complex(x.reshape(3, 2, 2)), (X,)),
    (lambda L, x: L.view_as_complex(x.reshape(3, 2, 2)) * 2, (X.astype(np.float32),)),
    (lambda L, z: z.conj() * z, (Z,)),
    (lambda L, z: L.conj_physical(z), (Z,)),
    (lambda L, z: z.resolve_conj() * 1, (Z,)),
    (lambda L, z: z.abs(), (Z,)),
    (lambda L, z: z.abs().pow(2).sum(), (Z,)),
    (lambda L, z: z.angle(), (Z,)),
    (lambda L, z: L.angle(z) * z.abs(), (Z32,)),
    (lambda L, z: z.sgn(), (Z,)),
    (lambda L, z, w: (z + w, z - w, z * w, z / w), (Z, cdata(3, 4, seed=5))),
    (lambda L, z, x: (z + x, z - x, z * x, z / x, x / z, x * z), (Z, X)),
    (lambda L, z, y: (z * y, y - z, z / y), (Z, Y)),
    (lambda L, z: (z * 2.5, z * 1j, 3 - z, (1 + 2j) / z, z / 2, z + 1), (Z,)),
    (lambda L, x: (x * 1j, x + (2 - 1j)), (X,)),
    (lambda L, z: (z.sum(), z.sum(0), z.mean(), z.mean(1, keepdim=True)), (Z,)),
    (lambda L, z: (z.reshape(4, 3), z.t(), z.transpose(0, 1), z[1], z[:, 1:3], z.unsqueeze(0), z.flatten()), (Z,)),
    (lambda L, z: z.exp(), (Z,)),
    (lambda L, z: (z.H, z.mH, z.adjoint(), z.T), (Z,)),
    (lambda L, x: (x.H, x.mH, x.adjoint()), (X,)),
    (lambda L, z: L.exp(z * 0.5) * z, (Z32,)),
    (lambda L, a, b: L.complex(a, b), (X, cdata(3, 4, dtype="float64", seed=3))),
    (lambda L, a, b: L.complex(a, b), (X, Y)),
    (lambda L, a, b: L.polar(a, b), (X, cdata(3, 4, dtype="float64", seed=3))),
    (lambda L, a, b: L.polar(a.abs(), b) * 2, (X.astype(np.float32), Y.astype(np.float32))),
    (lambda L, z: (z * z.conj()).real.sum(), (Z,)),
    (lambda L, z, x: (z * x).abs().sum() + L.view_as_real(z / (x + 3)).sum(), (Z, X)),
])
def test_ops_values_and_gradients(fn, args):
    ccheck(fn, *args)


@pytest.mark.parametrize("fn, args", [
    (lambda L, z, w: (z * w, z / w, w / z, z.exp(), 1 / z), (Z, cdata(3, 4, seed=5))),
    (lambda L, z, x: (z * x, z / x, x / z), (Z32, X.astype(np.float32))),
])
def test_plain_backward_on_arrays(fn, args):
    # a first-order backward runs the formulas on arrays (the create_graph checks above run them on Tensors)
    ccheck(fn, *args, second=False)


def test_abs_squared_gradient_is_two_z():
    # PyTorch's convention: for L = |z|^2, z.grad == 2 * z
    z = hookgrad.tensor([1 + 2j, -3 + 0.5j], dtype=hookgrad.complex128, requires_grad=True)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * z.detach().numpy())


def test_abs_and_angle_at_zero():
    ccheck(lambda L, z: (z.abs().sum(), z.angle().sum()), np.array([0j, 1 + 1j]), second=False)


def test_real_and_imag_are_views():
    for L in (torch, hookgrad):
        z = L.tensor([1 + 2j, 3 - 1j])
        r, i = z.real, z.imag
        assert r._base is z and i._base is z
        r.add_(10)
        i[0] = -5
        z.real = L.tensor([7.0, 8.0])
        assert z.tolist() == [7 - 5j, 8 - 1j]
        assert not z.is_conj() and z.conj().is_conj()
        v = L.view_as_real(z)
        v[1, 1] = 0.5
        assert z.tolist() == [7 - 5j, 8 + 0.5j]
    x = hookgrad.tensor([1.0, 2.0])
    assert x.real is x and x.conj() is x and hookgrad.conj_physical(x) is x and x.resolve_conj() is x


def test_complex_grad_through_real_input_mul():
    # a real leaf whose gradient is complex downstream: the real part reaches it
    ccheck(lambda L, x: L.view_as_real(x * L.tensor([1 + 2j, 3j, -1, 2 - 1j], dtype=L.complex128)), Y)


# ------------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("bad", [
    lambda L: L.tensor([1 + 1j], requires_grad=True).sum().backward(),
    lambda L: L.view_as_real(L.ones(2)),
    lambda L: L.view_as_complex(L.ones(3, 3)),
    lambda L: L.view_as_complex(L.ones(2, 3).t()),
    lambda L: L.view_as_complex(L.ones(3, 2, dtype=L.int32)),
    lambda L: L.complex(L.ones(2), L.ones(2, dtype=L.float64)),
    lambda L: L.complex(L.ones(2, dtype=L.int32), L.ones(2, dtype=L.int32)),
    lambda L: L.polar(L.ones(2), L.ones(2, dtype=L.float64)),
    lambda L: L.ones(2).imag,
])
def test_errors_as_torch(bad):
    with pytest.raises(Exception) as t_err:
        bad(torch)
    with pytest.raises(type(t_err.value)) as h_err:
        bad(hookgrad)
    assert str(t_err.value).split("(")[0][:40] == str(h_err.value).split("(")[0][:40]


@pytest.mark.parametrize("op", [lambda z: z.sinc(), lambda z: hookgrad.sinc(z)])
def test_unsupported_ops_refuse_complex(op):
    z = hookgrad.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(NotImplementedError, match="does not support complex tensors"):
        op(z)
    assert isinstance(NotImplementedError(), RuntimeError)
