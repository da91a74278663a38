"""In-place relu_, add_, sub_ and mul_ write their result straight into the tensor's array (``Node.writes_into``, issue 23:
computing apart and copying in took a second pass over memory, on one thread). Against torch: values, data_ptr
kept, version counters, gradients, the saved result's version check, broadcasting, other dtypes, views, op
hooks, and large tensors split over the pool at 1 and 2 threads."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.ophooks import OpHook


@pytest.fixture(params=[1, 2])
def threads(request):
    was = hookgrad.get_num_threads()
    hookgrad.set_num_threads(request.param)
    yield request.param
    hookgrad.set_num_threads(was)


def _rng(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


SHAPES = [(3, 4), (16, 64, 28, 28)]         # small, and large enough for the pool's row chunks


@pytest.mark.parametrize("shape", SHAPES)
def test_relu_and_add_in_place_keep_storage_and_match(threads, shape):
    x0, y0, b0 = _rng(*shape), _rng(*shape, seed=1), _rng(*shape[1:2], *([1] * (len(shape) - 2)), seed=2)
    res = []
    for lib in (torch, hookgrad):
        x = lib.tensor(x0)
        ptr, v0 = x.data_ptr(), x._version
        x.relu_()
        x.add_(lib.tensor(y0))
        x += lib.tensor(b0)                 # a bias broadcast along the rows
        x.add_(lib.tensor(y0), alpha=0.5)
        x.add_(2.0)
        x.mul_(lib.tensor(y0))
        x.sub_(lib.tensor(b0), alpha=2)
        x *= 0.5
        res.append((x.numpy().copy(), x.data_ptr() == ptr, x._version - v0))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5, atol=1e-5)
    assert res[1][1:] == res[0][1:] == (True, 8)


@pytest.mark.parametrize("shape", SHAPES)
def test_gradients_through_in_place_ops_of_a_graph(threads, shape):
    """A ResNet block's tail: conv-free stand-in (mul), += identity, relu_; every gradient as torch's."""
    x0, w0 = _rng(*shape), _rng(*shape, seed=1)
    res = []
    for lib in (torch, hookgrad):
        x, w = lib.tensor(x0, requires_grad=True), lib.tensor(w0, requires_grad=True)
        h = x * w
        h += x
        h *= w                              # saves its inputs: the old value is kept apart
        h -= 0.25
        out = h.relu_()
        assert out is h
        g = lib.tensor(_rng(*shape, seed=3))
        out.backward(g)
        res.append((h.detach().numpy().copy(), x.grad.numpy(), w.grad.numpy(), type(h.grad_fn).__name__))
    for a, b in zip(res[1][:3], res[0][:3]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert res[1][3] == res[0][3] == "ReluBackward0"


def test_saved_result_is_the_tensor_itself():
    """relu_ saves its result: changing the tensor afterwards makes backward raise, as in torch."""
    msgs = []
    for lib in (torch, hookgrad):
        x = lib.tensor(_rng(4, 5), requires_grad=True)
        h = x * 2
        h.relu_()
        h.add_(1.0)
        with pytest.raises(RuntimeError) as e:
            h.sum().backward()
        msgs.append("modified by an inplace operation" in str(e.value))
    assert msgs == [True, True]


@pytest.mark.parametrize("case", ["float64 into float32", "int into float", "float into int", "double", "view",
                                  "broadcast error", "expanded"])
def test_other_dtypes_views_and_errors(case):
    def run(lib):
        x = lib.tensor(_rng(4, 6))
        try:
            if case == "float64 into float32":
                x.add_(lib.tensor(_rng(4, 6, seed=1, dtype=np.float64)))
            elif case == "int into float":
                x.add_(lib.arange(24).reshape(4, 6))
            elif case == "float into int":
                lib.arange(24).reshape(4, 6).add_(x)
            elif case == "double":
                x = lib.tensor(_rng(4, 6, dtype=np.float64))
                x.relu_().add_(x)
            elif case == "view":
                v = x.t()[1:]
                v.relu_()
                v.add_(lib.ones(5, 4))
            elif case == "broadcast error":
                x.add_(lib.ones(2, 4, 6))
            elif case == "expanded":
                lib.ones(1, 6).expand(4, 6).add_(x)
        except RuntimeError as e:
            return ("error", str(e).split(" (hookgrad")[0][:60])
        return x.numpy().copy(), str(x.dtype)
    t, h = run(torch), run(hookgrad)
    if isinstance(t[0], str):
        assert h == t
    else:
        np.testing.assert_allclose(h[0], t[0], rtol=1e-6, atol=1e-6)
        assert h[1] == t[1]


def test_op_hooks_and_dispatch_modes_see_pytorch_arguments():
    """Under op hooks and a dispatch mode the result is still written in place (same storage, same values), and
    the mode sees PyTorch's aten ops and keyword arguments (no destination), as torch's mode does."""
    seen = []

    class Spy(OpHook):
        def forward_pre(self, name, inputs):
            seen.append(name)

    x = hookgrad.ones(3, 4)
    ptr = x.data_ptr()
    with Spy():
        x.relu_()
        x.add_(hookgrad.ones(3, 4))
        x.mul_(3.0)
    assert seen == ["Relu", "Add", "Mul"] and x.data_ptr() == ptr
    np.testing.assert_array_equal(x.numpy(), np.full((3, 4), 6, np.float32))
    logs = []
    for lib in (torch, hookgrad):
        from importlib import import_module
        mode = import_module(lib.__name__ + ".utils._python_dispatch").TorchDispatchMode
        log = []

        class M(mode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                log.append((str(func), sorted((kwargs or {}).keys())))
                return func(*args, **(kwargs or {}))

        x, y = lib.ones(3, 4), lib.full((3, 4), 2.0)
        with M():
            x.relu_()
            x.add_(y)
            x.sub_(y)
            x.mul_(y)
        logs.append((log, x.numpy().tolist()))
    assert logs[1] == logs[0]


@pytest.mark.parametrize("n,dtype", [(4, np.float32), (600_000, np.float32), (9_000, np.float64)])
def test_relu_keeps_nan_and_negative_zero(threads, n, dtype):
    """relu(-0.0) is -0.0 and NaN stays NaN, out of place and in place (relu_'s one-array kernel from 4096
    elements), small and split over the pool."""
    x0 = np.resize(np.array([-0.0, np.nan, -1.0, 2.0, 0.0, -np.inf, np.inf], dtype), n)
    res = []
    for lib in (torch, hookgrad):
        x = lib.tensor(x0)
        a = lib.relu(x).numpy().copy()
        x.relu_()
        res.append((a, x.numpy().copy()))
    for h, t in zip(res[1], res[0]):
        np.testing.assert_array_equal(h, t)
        np.testing.assert_array_equal(np.signbit(h), np.signbit(t))
