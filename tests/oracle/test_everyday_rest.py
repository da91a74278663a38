"""Issue 10, part Q: the last everyday names (torch.testing, torch.random, layouts and memory formats,
switches, storages, Tensor methods, nn.grad, F.*_with_indices), each compared with torch at run time."""
import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import hookgrad

from oracle import check, assert_same


def _outcome(fn, lib):
    """(kind, value): the return value, or the exception type name and its message."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            out = ("ok", fn(lib))
        except Exception as e:  # noqa: BLE001 - compared with torch
            out = ("raise", type(e).__name__, str(e))
    return out, [(x.category.__name__, str(x.message)) for x in w]


def _norm(msg):  # hookgrad's classes live in hookgrad's modules
    return msg.replace("hookgrad._tensor.Tensor", "torch.Tensor").replace("hookgrad.", "torch.")


def same(fn, warn=True):
    t, tw = _outcome(fn, torch)
    h, hw = _outcome(fn, hookgrad)
    assert t[0] == h[0], (t, h)
    if t[0] == "raise":
        # PyTorch's text first (hookgrad may append details)
        assert t[1] == h[1] and _norm(h[2]).startswith(t[2]), (t, h)
    else:
        tv, hv = t[1], h[1]
        if isinstance(tv, torch.Tensor):
            assert_same(tv, hv)
        else:
            assert repr(tv).replace("torch.", "") == repr(hv).replace("torch.", "").replace("hookgrad.", ""), (tv, hv)
    if warn:
        assert [c for c, _ in tw] == [c for c, _ in hw], (tw, hw)
    return t, h


# ---- torch.testing
A = [1., 2., 3.]
ASSERT_CLOSE_CASES = [
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor(A)),
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor([1., 2.5, 3.])),
    lambda L: L.testing.assert_close(L.tensor([[1., 2.], [3., 4]]), L.tensor([[1., 2.5], [3., 5]])),
    lambda L: L.testing.assert_close(L.tensor([1, 2, 3]), L.tensor([1, 4, 3])),
    lambda L: L.testing.assert_close(L.tensor([True, False]), L.tensor([True, True])),
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor(A, dtype=L.float64)),
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor(A, dtype=L.float64), check_dtype=False),
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor([1., 2.])),
    lambda L: L.testing.assert_close(L.tensor([1., float("nan")]), L.tensor([1., float("nan")])),
    lambda L: L.testing.assert_close(L.tensor([1., float("nan")]), L.tensor([1., float("nan")]), equal_nan=True),
    lambda L: L.testing.assert_close(L.tensor([1., float("inf")]), L.tensor([1., 2.])),
    lambda L: L.testing.assert_close(1.0, 1.1),
    lambda L: L.testing.assert_close(1, 2),
    lambda L: L.testing.assert_close(True, False),
    lambda L: L.testing.assert_close(None, 1),
    lambda L: L.testing.assert_close([1., 2.], [1., 2.1]),
    lambda L: L.testing.assert_close([1., 2.], [1.]),
    lambda L: L.testing.assert_close({"a": L.tensor(1.)}, {"a": L.tensor(2.)}),
    lambda L: L.testing.assert_close({"a": L.tensor(1.)}, {"b": L.tensor(1.)}),
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor([1., 2.5, 3.]), msg="custom"),
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor([1., 2.5, 3.]), msg=lambda m: m.upper()),
    lambda L: L.testing.assert_close(L.tensor(A), A),
    lambda L: L.testing.assert_close(L.tensor(1.), L.tensor(2.)),
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor([1., 2.5, 3.]), rtol=1e-3),
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor([1., 2.5, 3.]), rtol=0.5, atol=0.),
    lambda L: L.testing.assert_close(L.tensor(A), L.tensor([1.001, 2., 3.]), rtol=0., atol=0.),
    lambda L: L.testing.assert_close(L.tensor(A, dtype=L.float16), L.tensor([1.0005, 2., 3.], dtype=L.float16)),
    lambda L: L.testing.assert_close(L.tensor(A).t(), L.tensor(A), check_stride=True),
    lambda L: L.testing.assert_close(L.ones(2, 3), L.ones(3, 2).t(), check_stride=True),
    lambda L: L.testing.assert_close((L.tensor(1.), 2), (L.tensor(1.), 2)),
]


@pytest.mark.parametrize("i", range(len(ASSERT_CLOSE_CASES)))
def test_assert_close(i):
    same(ASSERT_CLOSE_CASES[i])


def test_assert_allclose_deprecated():
    same(lambda L: L.testing.assert_allclose(L.tensor(A), [1., 2., 3.00001]))
    same(lambda L: L.testing.assert_allclose(L.tensor(A), [1., 2.5, 3.]))
    same(lambda L: L.testing.assert_allclose([1., float("nan")], [1., float("nan")]))


def test_make_tensor():
    for kw in [dict(dtype="float32"), dict(dtype="int64"), dict(dtype="bool"), dict(dtype="float64", low=0, high=1),
               dict(dtype="int32", low=-3, high=3, noncontiguous=True), dict(dtype="float32", exclude_zero=True)]:
        def fn(L, kw=kw):
            L.manual_seed(0)
            k = dict(kw, dtype=getattr(L, kw["dtype"]))
            t = L.testing.make_tensor(2, 3, device="cpu", **k)
            return t.shape, t.dtype, t.is_contiguous(), bool(((t >= (k.get("low") or 0) - 9) & (t < 10)).all())
        same(fn)
    same(lambda L: L.testing.make_tensor((2,), dtype=L.float32, device="cpu", requires_grad=True).requires_grad)
    same(lambda L: L.testing.make_tensor((2,), dtype=L.int64, device="cpu", requires_grad=True))
    same(lambda L: L.testing.make_tensor((2,), dtype=L.float32, device="cpu", low=3, high=1))
    same(lambda L: L.testing.make_tensor((2,), dtype=L.uint8, device="cpu", low=-5, high=-1))


# ---- torch.random
def test_random_module():
    def fn(L):
        L.random.manual_seed(3)
        a = L.rand(3)
        with L.random.fork_rng():
            L.rand(5)
        b = L.rand(2)
        L.random.manual_seed(3)
        L.rand(3)
        s = L.random.get_rng_state()
        c = L.rand(2)
        L.random.set_rng_state(s)
        return L.cat([a, b, c, L.rand(2)]), L.random.initial_seed(), s.dtype, s.dim()
    same(fn)
    same(lambda L: [L.random.fork_rng(enabled=False).__enter__(), L.random.thread_safe_generator()])
    same(lambda L: L.random.fork_rng(devices=[0]).__enter__())
    same(lambda L: isinstance(L.random.seed(), int) and L.random.initial_seed() == L.initial_seed())


# ---- layout and memory_format
TAGS = ["strided", "sparse_coo", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
        "legacy_contiguous_format"]


def test_layout_memory_format_objects():
    for n in TAGS:
        same(lambda L, n=n: (repr(getattr(L, n)), str(getattr(L, n)), type(getattr(L, n)).__name__,
                             pickle.loads(pickle.dumps(getattr(L, n))) is getattr(L, n),
                             copy.deepcopy(getattr(L, n)) is getattr(L, n), getattr(L, n) == getattr(L, n)))
    same(lambda L: L.legacy_contiguous_format is L.contiguous_format)
    same(lambda L: (isinstance(L.strided, L.layout), isinstance(L.channels_last, L.memory_format),
                    L.strided == "torch.strided", L.zeros(2).layout is L.strided, str(L.zeros(2).layout)))
    same(lambda L: L.layout())
    same(lambda L: L.memory_format())


IS_CONT = [((2, 3, 4, 5), None), ((2, 3, 1, 1), None), ((2, 1, 4, 5), None), ((2, 3, 4, 5), (0, 2, 3, 1)),
           ((2, 3), None), ((2, 3, 4, 5, 6), None), ((2, 3, 4, 5, 6), (0, 2, 3, 4, 1)), ((4, 5, 6, 3), (0, 3, 1, 2))]


@pytest.mark.parametrize("shape,perm", IS_CONT)
def test_is_contiguous_memory_format(shape, perm):
    def fn(L):
        x = L.zeros(*shape)
        if perm:
            x = x.permute(*perm)  # a channels-last tensor seen in NCHW order
            if len(perm) == 4 and perm[1] == 3:
                x = L.zeros(*shape).permute(0, 3, 1, 2)
        return [x.is_contiguous(memory_format=getattr(L, f)) for f in
                ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")] + [x.is_contiguous()]
    same(fn)


def test_is_contiguous_bad_memory_format():
    same(lambda L: L.zeros(2).is_contiguous(memory_format=1))


# ---- switches
def test_switches():
    def fn(L):
        out = [L.get_deterministic_debug_mode(), L.is_deterministic_algorithms_warn_only_enabled()]
        for v in ["warn", "error", "default", 1, 2, 0]:
            L.set_deterministic_debug_mode(v)
            out.append((L.get_deterministic_debug_mode(), L.are_deterministic_algorithms_enabled(),
                        L.is_deterministic_algorithms_warn_only_enabled()))
        L.use_deterministic_algorithms(True, warn_only=True)
        out.append(L.get_deterministic_debug_mode())
        L.use_deterministic_algorithms(False)
        return out
    same(fn)
    for bad in [3, "x", 1.0]:
        same(lambda L, bad=bad: L.set_deterministic_debug_mode(bad))

    def prec(L):
        out = [L.get_float32_matmul_precision()]
        for v in ["high", "medium", "highest"]:
            L.set_float32_matmul_precision(v)
            out.append(L.get_float32_matmul_precision())
        return out
    same(prec)
    same(lambda L: L.set_float32_matmul_precision("x"))
    same(lambda L: L.set_float32_matmul_precision(1))
    same(lambda L: L.set_num_interop_threads(0))
    same(lambda L: L.set_num_interop_threads("a"))
    same(lambda L: (L.get_device(L.ones(2)), L.ones(2).get_device(), L.ones(2).is_cpu))
    same(lambda L: L.get_device(1))
    same(lambda L: (L.cpu.is_available(), L.cpu.device_count(), L.cpu.current_device(), L.cpu.synchronize(),
                    L.cpu.is_initialized()))
    same(lambda L: (issubclass(L.FatalError, Exception), L.FatalError.__mro__[1:]))


def test_classproperty():
    def fn(L):
        class K:
            @L.classproperty
            def name(cls):
                return cls.__name__
        return K.name, K().name
    same(fn)


# ---- overrides / functional / types
def test_overrides():
    class A:
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return "A", func.__name__

    class B:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    def fn(L):
        O = L.overrides

        def f(a, b):
            if O.has_torch_function((a, b)):
                return O.handle_torch_function(f, (a, b), a, b)
            return "plain"
        x = L.ones(2)
        return (O.has_torch_function((x,)), L.nn.functional.has_torch_function_unary(x),
                L.nn.functional.has_torch_function_variadic(x, 1), O.has_torch_function((A(),)), f(A(), 1), f(1, 2),
                O.is_tensor_like(x), O.is_tensor_like(A()), O.is_tensor_like(1), type(O.get_ignored_functions()))
    same(fn, warn=False)
    same(lambda L: L.overrides.handle_torch_function(test_overrides, (B(),), B()))


def test_functional_and_types():
    same(lambda L: L.functional.einsum("ij->j", L.ones(2, 3)))
    same(lambda L: L.functional.split(L.arange(5), 2))
    same(lambda L: sorted(L.functional.__all__))
    same(lambda L: (L.types.Number, L.types._int, isinstance(L.ones(1), L.types.Tensor)))
    from hookgrad.nn import common_types as hct
    from torch.nn import common_types as tct
    assert sorted(n for n in dir(tct) if n.startswith("_size") or n.startswith("_ratio")) == \
        sorted(n for n in dir(hct) if n.startswith("_size") or n.startswith("_ratio"))


# ---- storages
def test_legacy_storages():
    for n in ["FloatStorage", "DoubleStorage", "LongStorage", "IntStorage", "ShortStorage", "CharStorage",
              "ByteStorage", "BoolStorage", "HalfStorage"]:
        same(lambda L, n=n: (getattr(L, n)([1, 0, 2]).tolist(), getattr(L, n)(3).size(), getattr(L, n).dtype,
                             isinstance(getattr(L, n)([1]), L.TypedStorage)), warn=False)
    same(lambda L: (isinstance(L.ones(2).storage(), L.FloatStorage), isinstance(L.ones(2).storage(), L.DoubleStorage),
                    L.Storage is L.FloatStorage, isinstance(L.ones(2).untyped_storage(), L.StorageBase),
                    L.ones(2, dtype=L.long).storage_type().__name__), warn=False)
    for args in [("a",), (1.5,), (1, 2), (np.float32(1),)]:
        same(lambda L, args=args: L.FloatStorage(*args), warn=False)
    same(lambda L: L.FloatStorage(L.ones(2)), warn=False)
    same(lambda L: sorted(L.storage.__all__))


# ---- Tensor methods
X = np.arange(6.).reshape(2, 3).astype(np.float32)


def test_tensor_methods_views():
    check(lambda L, x: x.adjoint(), X)
    check(lambda L, x: L.adjoint(x * 2), X)
    same(lambda L: L.ones(3).adjoint())
    for f in ["adjoint", "split_with_sizes", "as_strided_copy"]:
        same(lambda L, f=f: getattr(L, f)(3, (1,), (1,)))
    same(lambda L: L.slice_inverse(3, 3))
    same(lambda L: L.split_with_sizes(L.ones(2, 3), L.ones(2)))
    same(lambda L: L.ones(2, 3).split_with_sizes(2))
    same(lambda L: L.ones(2, 3).split_with_sizes((1, 1)))
    same(lambda L: L.StorageBase())
    check(lambda L, x: x.broadcast_to((4, 2, 3)), X)
    check(lambda L, x: L.split_with_sizes(x, [1, 2], 1), X)
    check(lambda L, x: L.as_strided_copy(x, (2, 2), (1, 2)), X)
    same(lambda L: L.tensor(X).slice_inverse(L.tensor(X)[:1], 0, 0, 1))
    same(lambda L: L.slice_inverse(L.tensor(X)[:1], L.tensor(X), 0, 0, 1))
    same(lambda L: (L.tensor(X).dim_order(), L.tensor(X).t().dim_order(), L.zeros(2, 3, 4).permute(2, 0, 1).dim_order()))
    same(lambda L: L.tensor(X).new_empty_strided((2, 2), (1, 2)).stride())
    same(lambda L: [(x.const_data_ptr() == x.data_ptr(), x.is_cpu) for x in [L.tensor(X)]])
    check(lambda L, x, y: x.inner(y), X, X)
    check(lambda L, x, y: x[0].ger(y[1]), X, X)


def test_tensor_methods_legacy():
    check(lambda L, x: x.resize(3, 2), X)
    check(lambda L, x: x.resize_as(x.t()), X)
    same(lambda L: L.tensor(X).resize(4, 2))
    same(lambda L: L.ones(2).reinforce(1))
    same(lambda L: L.ones(2).volatile)
    same(lambda L: (L.ones(2, requires_grad=True) * 1).resize(2).grad_fn.name())
    same(lambda L: L.ones(2, 3).storage_type().__name__, warn=False)

    def load(L):
        p = L.zeros(2)
        q = p.module_load(L.ones(2))
        r = p.module_load(L.full((2,), 3.), assign=True)
        return p, q, r
    same(load)


def test_tensor_methods_inplace():
    same(lambda L: L.tensor(X).apply_(lambda v: v * 2 + 1))
    same(lambda L: L.tensor([1, 2, 3]).apply_(lambda v: v * 3))
    same(lambda L: L.tensor(X).map_(L.tensor([1., 2., 3.]), lambda a, b: a * b))
    same(lambda L: L.tensor(X).map2_(L.tensor(X), L.tensor([1.]), lambda a, b, c: a + b - c))
    same(lambda L: L.ones(2, requires_grad=True).apply_(lambda v: v))
    for shape, wrap in [((3, 3), False), ((5, 3), True), ((5, 3), False), ((3, 5), True), ((7, 2), True),
                        ((2, 2, 2), False)]:
        same(lambda L, shape=shape, wrap=wrap: L.zeros(*shape).fill_diagonal_(5, wrap=wrap))
    same(lambda L: L.ones(3).fill_diagonal_(5))
    same(lambda L: L.ones(2, 3, 3).fill_diagonal_(5))
    check(lambda L, x: (x * 1).fill_diagonal_(0.5), X)
    same(lambda L: L.ones(2, 2).addmm_(L.ones(2, 2), L.full((2, 2), 2.), beta=2, alpha=3))

    def setter(L):
        y = L.arange(4.)
        z = L.ones(2)
        z.set_(y)
        a = z.is_set_to(y)
        w = L.ones(2)
        w.set_(y.untyped_storage(), 1, (2,), (1,))
        v = L.ones(3)
        v.set_()
        y.add_(1)
        return z, a, w, w.is_set_to(y), v.shape, y.is_set_to(y.clone())
    same(setter)


def test_tensor_methods_subclass():
    same(lambda L: (type(L.tensor(X).as_subclass(L.nn.Parameter)).__name__, L.tensor(X).as_subclass(L.Tensor)))
    same(lambda L: L.tensor(X).as_subclass(int))

    def grad(L):
        x = L.tensor(X, requires_grad=True)
        y = (x * 2).as_subclass(L.Tensor)
        y.sum().backward()
        return x.grad, type(y.grad_fn).__name__
    same(grad)


RANDOM_FILLS = [("cauchy_", (), "float32", 5), ("cauchy_", (1.5, 2.0), "float64", 20),
                ("log_normal_", (), "float64", 5), ("log_normal_", (0.5, 0.25), "float32", 17),
                ("geometric_", (0.3,), "float32", 5), ("geometric_", (0.7,), "int64", 18)]


@pytest.mark.parametrize("name,args,dt,n", RANDOM_FILLS)
def test_random_fills_match_torch(name, args, dt, n):
    def fn(L):
        L.manual_seed(7)
        x = getattr(L.empty(n, dtype=getattr(L, dt)), name)(*args)
        return x, L.rand(2)  # the generator advanced by as much as torch's
    same(fn)
    same(lambda L: type(getattr((L.ones(3, requires_grad=True) * 1), name)(*args).grad_fn).__name__
         if dt != "int64" else None)


def test_random_fill_errors():
    for f in [lambda L: L.ones(2).geometric_(0), lambda L: L.ones(2).geometric_(1.5), lambda L: L.ones(2).cauchy_(0, 0),
              lambda L: L.ones(2).log_normal_(1, 0), lambda L: L.ones(2, dtype=L.long).cauchy_()]:
        same(f)


def test_multinomial_method():
    def fn(L):
        L.manual_seed(0)
        return L.tensor([0.1, 0.5, 0.4]).multinomial(6, replacement=True)
    same(fn)


# ---- nn / nn.functional
def test_nn_names():
    same(lambda L: L.nn.NLLLoss2d()(L.tensor([[-1., -2.]]), L.tensor([1])))
    same(lambda L: isinstance(L.nn.NLLLoss2d(), L.nn.NLLLoss), warn=False)
    same(lambda L: L.nn.factory_kwargs({"dtype": L.float32, "factory_kwargs": {"device": "cpu"}}))
    same(lambda L: L.nn.factory_kwargs({"dtype": L.float32, "bad": 1}))
    same(lambda L: L.nn.factory_kwargs({"dtype": L.float32, "factory_kwargs": {"dtype": L.float32}}))
    same(lambda L: L.nn.factory_kwargs(None))


@pytest.mark.parametrize("n", [1, 2])
def test_nn_grad_conv(n):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4) + (7,) * n).astype(np.float32)
    w = rng.standard_normal((6, 2) + (3,) * n).astype(np.float32)
    go = rng.standard_normal((2, 6) + (4,) * n).astype(np.float32)
    kw = dict(stride=2, padding=1, dilation=1, groups=2)
    check(lambda L, w, go: getattr(L.nn.grad, f"conv{n}d_input")(x.shape, w, go, **kw), w, go, grad=False)
    check(lambda L, x, go: getattr(L.nn.grad, f"conv{n}d_weight")(x, w.shape, go, **kw), x, go, grad=False)


def test_functional_names():
    x = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
    check(lambda L, x: L.nn.functional.max_pool1d_with_indices(x, 3, 2), x)
    check(lambda L, x: L.nn.functional.adaptive_max_pool1d_with_indices(x, 3), x)
    check(lambda L, x: L.nn.functional.adaptive_max_pool2d_with_indices(x, (2, 3)), x)
    y = np.random.default_rng(2).standard_normal((1, 2, 3, 3)).astype(np.float32)
    same(lambda L: L.nn.functional.upsample_nearest(L.tensor(y), scale_factor=2))
    same(lambda L: L.nn.functional.upsample_bilinear(L.tensor(y), size=(5, 4)))

    def gumbel(L):
        g = L.nn.functional.gumbel_softmax(L.tensor(y[0, 0]), tau=0.5, hard=True)
        return g.sum(-1), g.shape, ((g == 0) | (g == 1)).all()
    same(gumbel)
    same(lambda L: L.nn.functional.gumbel_softmax(L.ones(2, 3), eps=1e-5).shape)
