"""PyTorch 2.13's own hook tests from test/test_autograd.py, ported with as little change as possible.

Each test runs twice: on real torch (which checks the port) and on hookgrad. Changes from upstream:
``torch`` and ``self`` are fixtures (tests/upstream/_upstream.py), ``Function`` is
``torch.autograd.Function``, CUDA/compile/jit/vmap parts are dropped."""
import gc
import sys
import threading
import warnings
import weakref
from copy import deepcopy
from functools import partial

import pytest

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _upstream import lib_fixtures, disable_gc  # noqa: E402

torch, self = lib_fixtures()


def _get_mul2(torch, use_custom_function):
    if use_custom_function:
        class Mul2(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, gO):
                return gO * 2

        return Mul2.apply
    return lambda x: x * 2


# ---------------------------------------------------------------- tensor hooks

def test_hooks(torch, self):
    x = torch.ones(5, 5, requires_grad=True)
    y = torch.ones(5, 5) * 4
    y.requires_grad_(True)

    counter = [0]

    def bw_hook(inc, grad):
        self.assertIsInstance(grad, torch.Tensor)
        counter[0] += inc

    z = x**2 + x * 2 + x * y + y
    x.register_hook(lambda *args: bw_hook(0, *args))
    test = z.register_hook(lambda *args: bw_hook(1, *args))
    z.backward(torch.ones(5, 5), retain_graph=True)
    self.assertEqual(counter[0], 1)

    test2 = z.register_hook(lambda *args: bw_hook(2, *args))
    z.backward(torch.ones(5, 5), retain_graph=True)
    self.assertEqual(counter[0], 4)

    test2.remove()
    z.backward(torch.ones(5, 5), retain_graph=True)
    self.assertEqual(counter[0], 5)

    def bw_hook_modify(grad):
        return grad.mul(2)

    test.remove()
    z.register_hook(bw_hook_modify)
    with torch.no_grad():
        y.grad.zero_()
    z.backward(torch.ones(5, 5), retain_graph=True)
    self.assertEqual(y.grad, (x + 1) * 2)

    y.register_hook(bw_hook_modify)
    with torch.no_grad():
        y.grad.zero_()
    z.backward(torch.ones(5, 5))
    self.assertEqual(y.grad, (x + 1) * 4)


def test_hooks_cpp(torch, self):
    bn = torch.nn.BatchNorm1d(5, affine=False)
    bn.double()
    bn.eval()

    counter = [0]

    def bw_hook(grad):
        counter[0] += 1
        return grad * 2

    x = torch.ones(5, 5, dtype=torch.double, requires_grad=True)
    z = bn(x)
    z.register_hook(bw_hook)
    z.sum().backward()

    self.assertEqual(counter[0], 1, msg="bw_hook not called")
    self.assertEqual(x.grad, torch.ones(5, 5, dtype=torch.double) * 2, atol=1e-5, rtol=0)


def test_hook_none(torch, self):
    class NoneGradientFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            if not ctx.needs_input_grad[0]:
                raise AssertionError("expected needs_input_grad[0] to be True")
            if ctx.needs_input_grad[1]:
                raise AssertionError("expected needs_input_grad[1] to be False")
            return x, y

        @staticmethod
        def backward(ctx, grad_x, grad_y):
            return grad_x, None

    was_called = [False]

    def hook(grad):
        self.assertIsNotNone(grad)
        was_called[0] = True

    x = torch.randn(5, 5, requires_grad=True)
    y = torch.randn(5, 5)
    rx, ry = NoneGradientFunction.apply(x, y)
    rx.register_hook(hook)
    ry.register_hook(hook)
    sum(rx, ry).sum().backward()
    self.assertTrue(was_called[0])


def test_hook_with_no_name(torch, self):
    class MyHookClass:
        def __call__(self, grad):
            return grad.clone()

    x = torch.randn(5, requires_grad=True).clone()
    x.register_hook(MyHookClass())
    x.sum().backward()


def test_grad_nonleaf_many_outputs(torch, self):
    x = torch.randn(4, 2, requires_grad=True)
    a, b = x.chunk(2)

    def hook(*grads):
        hook_called[0] = True

    hook_called = [False]
    x.register_hook(hook)

    go = torch.randn(2, 2)
    grad_a, grad_b = torch.autograd.grad((a + 2 * b), [a, b], grad_outputs=go, create_graph=True)

    self.assertEqual(grad_a, go)
    self.assertEqual(grad_b, go * 2)
    self.assertFalse(hook_called[0])
    self.assertIsNone(x.grad)


def test_grad_nonleaf_register_hook(torch, self):
    x = torch.randn(5, requires_grad=True)
    x_list = x.unbind()

    x0 = x_list[0]
    hook_results = [None]

    def hook(grad):
        hook_results[0] = grad

    x0.register_hook(hook)

    x_list[0].backward()
    self.assertEqual(hook_results[0], torch.tensor(1.0))
    expected_grad = torch.tensor([1.0, 0, 0, 0, 0])
    self.assertEqual(x.grad, expected_grad)
    self.assertIsNone(x_list[0].grad)

    for i in range(1, 5, 1):
        x_list[i].backward()
        self.assertEqual(hook_results[0], None)
        expected_grad[i] = 1.0
        self.assertEqual(x.grad, expected_grad)
        self.assertIsNone(x_list[i].grad)


def test_copy_slices_graph_task_updates_hook_part(torch, self):
    # upstream's f3 (with y instead of the DelayedError node): the hook must never run
    x = torch.rand(2, requires_grad=True)
    y = torch.rand(2, requires_grad=True)

    def f3(x, y):
        out = x.clone().view(-1)

        def hook(*args):
            self.assertTrue(False)

        out.register_hook(hook)
        b = out + y
        out += y
        return out + b, b

    out, b = f3(x, y)
    torch.autograd.grad(out.sum(), (b, y))


def test_requires_grad(torch, self):
    from collections import OrderedDict
    x = torch.randn(5, 5)
    y = torch.randn(5, 5)
    z = torch.randn(5, 5, requires_grad=True)
    a = x + y
    self.assertFalse(a.requires_grad)
    b = a + z
    self.assertTrue(b.requires_grad)

    def error():
        raise RuntimeError

    a._backward_hooks = OrderedDict()
    x._backward_hooks = OrderedDict()
    y._backward_hooks = OrderedDict()
    a._backward_hooks["test"] = error
    x._backward_hooks["test"] = error
    y._backward_hooks["test"] = error
    b.backward(torch.ones(5, 5))


# ---------------------------------------------------------------- retain_grad

def test_retain_grad(torch, self):
    input = torch.rand(1, 3, requires_grad=True)
    h1 = input * 3
    out = (h1 * h1).sum()

    h1.retain_grad()
    h1.retain_grad()

    out.backward(retain_graph=True)
    self.assertEqual(h1 * 2, h1.grad)
    out.backward(retain_graph=True)
    self.assertEqual(h1 * 4, h1.grad)

    with torch.no_grad():
        input.grad.zero_()
    input.retain_grad()
    input.retain_grad()
    out.backward()
    self.assertEqual(input * 18, input.grad)


def test_retain_grad_inplace(torch, self):
    a = torch.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    self.assertEqual(a.grad, torch.tensor([1.0]))

    a = torch.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.mul_(2)
    a.sum().backward()
    self.assertEqual(a.grad, torch.tensor([1.0]))

    x = torch.tensor([1.0], requires_grad=True).clone()
    x.retain_grad()
    x_view = x[:]
    x_view *= 2
    x *= 2
    x.sum().backward()
    self.assertEqual(a.grad, torch.tensor([1.0]))
    # (not upstream) x's own retained grad, compared across libraries by the torch run
    self.assertEqual(x.grad, torch.tensor([1.0]))

    x = torch.zeros(4)
    y = x.view(2, 2)
    y.add_(torch.randn(2, 2, requires_grad=True))


def test_retains_grad_inplace_multiple_outputs(torch, self):
    class DoubleMul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    var_mean = partial(torch.var_mean, dim=0)

    for fn in (DoubleMul.apply, var_mean):
        b = torch.rand(3, 3, requires_grad=True)
        var, mean = fn(b)
        var.retain_grad()
        mean.retain_grad()
        var.mul_(2)
        (var + mean).sum().backward()
        gvar = var.grad
        gmean = mean.grad

        a = b.detach().requires_grad_(True)
        var, mean = fn(a)
        var.mul_(2)
        out = (var + mean).sum()
        gvar_expected, gmean_expected = torch.autograd.grad(out, inputs=(var, mean))
        self.assertTrue(torch.allclose(gvar, gvar_expected))
        self.assertTrue(torch.allclose(gmean, gmean_expected))


def test_retain_grad_inplace_over_view(torch, self):
    base = torch.tensor([1.0], requires_grad=True).clone()
    view = base[:]
    view2 = base[:]
    view.retain_grad()
    view2.retain_grad()
    view.mul_(2)
    (view + view2).sum().backward()

    self.assertEqual(view.grad, view2.grad)
    self.assertEqual(view.grad, torch.tensor([1.0]))


def test_retain_grad_cycle(torch, self):
    x = torch.ones(5, 5, requires_grad=True)

    def run_test():
        y = x * 2
        y.retain_grad()
        return y / 2, weakref.ref(y)  # upstream: torch._C._WeakTensorRef

    z, ref = run_test()
    self.assertTrue(ref() is None)
    z.sum().backward()


def test_retains_grad_can_always_observe_tensor_prehook(torch, self):
    def tensor_prehook(g):
        return g * 2

    a = torch.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.register_hook(tensor_prehook)
    b.retain_grad()
    b.register_hook(tensor_prehook)

    b.clone().backward()
    self.assertEqual(b.grad.item(), 4)

    a = torch.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.retain_grad()
    b.register_hook(tensor_prehook)

    b.clone().backward()
    self.assertEqual(b.grad.item(), 2)


# ---------------------------------------------------------------- tensor hooks and in-place

def test_tensor_hooks_inplace(torch, self):
    count1 = [0]
    count2 = [0]

    def fn1(grad):
        count1[0] += 1
        self.assertEqual(grad, torch.tensor([4.0]))
        return grad * 2

    def fn2(grad):
        count2[0] += 1
        self.assertEqual(grad, torch.tensor([1.0]))
        return grad * 2

    a = torch.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(fn1)
    b.mul_(2)
    b.register_hook(fn2)
    b.sum().backward()
    self.assertEqual(count1[0], 1)
    self.assertEqual(count2[0], 1)
    self.assertEqual(a.grad, torch.tensor([8.0]))

    count3 = [0]

    def fn3(grad):
        count3[0] += 1
        self.assertEqual(grad, torch.tensor([4.0]))
        return grad * 2

    a = torch.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(fn3)
    b.mul_(2)
    b.mul_(2)
    b.sum().backward()
    self.assertEqual(count1[0], 1)
    self.assertEqual(a.grad, torch.tensor([8.0]))


def test_tensor_hooks_inplace_multiple_outputs(torch, self):
    class DoubleMul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    var_mean = partial(torch.var_mean, dim=0)

    for fn in (DoubleMul.apply, var_mean):
        counts = [0, 0, 0]

        def fn0(grad):
            counts[0] += 1
            self.assertEqual(grad, torch.ones_like(out1) * 2)

        def fn1(grad):
            counts[1] += 1
            self.assertEqual(grad, torch.ones_like(out1) * 3)

        def fn2(grad):
            counts[2] += 1
            self.assertEqual(grad, torch.ones_like(out1))

        b = torch.rand(3, 3, requires_grad=True)
        out1, out2 = fn(b)
        h1 = out1.register_hook(fn0)
        h2 = out2.register_hook(fn1)
        out1.mul_(2)
        h3 = out1.register_hook(fn2)
        (out1 + out2 * 3).sum().backward()
        self.assertEqual(counts, [1, 1, 1])

        h1.remove()
        h2.remove()
        h3.remove()


def test_tensor_hooks_inplace_over_view(torch, self):
    count = [0]

    def fn0(grad):
        self.fail()

    def fn1(grad):
        self.fail()

    def fn2(grad):
        count[0] += 1
        self.assertEqual(grad, torch.tensor([1.0]))

    base = torch.tensor([1.0], requires_grad=True).clone()
    view = base[:]
    view2 = base[:]
    view.register_hook(fn0)
    view2.register_hook(fn1)
    view.mul_(2)
    view2.grad_fn
    view2.register_hook(fn2)
    (view + view2).sum().backward()
    self.assertEqual(count[0], 1)


# ---------------------------------------------------------------- post-accumulate-grad hooks

def test_post_accumulate_grad_hook_on_non_leaf(torch, self):
    def hook(tensor):
        tensor.sub_(1.0)

    leaf = torch.rand(3, requires_grad=True)
    non_leaf = 2.0 * leaf

    with self.assertRaisesRegex(RuntimeError, "post accumulate grad hooks cannot be registered on non-leaf tensors"):
        non_leaf.register_post_accumulate_grad_hook(hook)


def test_post_accumulate_grad_hook_multiple_hooks(torch, self):
    def hook1(tensor):
        tensor.sub_(tensor.grad)

    def hook2(tensor):
        tensor.mul_(4.0)

    tensor = torch.rand(3, requires_grad=True)
    tensor_ref = tensor.detach().clone()
    tensor.register_post_accumulate_grad_hook(hook1)
    tensor.register_post_accumulate_grad_hook(hook2)
    sum = tensor.sum()
    sum.backward()
    self.assertEqual(4.0 * (tensor_ref - 1.0), tensor)


def test_post_accumulate_grad_hook_multiple_tensors(torch, self):
    def hook(tensor):
        tensor.sub_(tensor.grad)

    tensor1 = torch.rand(3, requires_grad=True)
    tensor1_ref = tensor1.detach().clone()
    tensor2 = torch.rand(5, requires_grad=True)
    tensor2_ref = tensor2.detach().clone()
    tensor1.register_post_accumulate_grad_hook(hook)
    tensor2.register_post_accumulate_grad_hook(hook)
    tensor1.sum().backward()
    tensor2.sum().backward()
    self.assertEqual(tensor1_ref - 1.0, tensor1)
    self.assertEqual(tensor2_ref - 1.0, tensor2)


def test_post_accumulate_grad_hook_returns_not_None(torch, self):
    def bad_hook(tensor):
        return tensor.grad

    tensor = torch.rand(2, 3, requires_grad=True)
    tensor.register_post_accumulate_grad_hook(bad_hook)
    with self.assertRaisesRegex(RuntimeError, "hooks should return None."):
        tensor.sum().backward()


def test_post_accumulate_grad_hook_e2e(torch, self):
    def setup_optim_in_bwd(model):
        optims = {}
        handles = []

        def optim_step_hook(param):
            optims[param].step()
            optims[param].zero_grad()

        for p in model.parameters():
            optims[p] = torch.optim.Adam([p])
            handles.append(p.register_post_accumulate_grad_hook(optim_step_hook))

        return handles

    model = torch.nn.Linear(3, 2)
    input = torch.rand(2, 3)
    handles = setup_optim_in_bwd(model)

    model_copy = deepcopy(model)
    optim_copy = torch.optim.Adam(model_copy.parameters())

    iters = 5

    for _ in range(iters):
        loss = model(input).sum()
        loss.backward()

        loss_copy = model_copy(input).sum()
        loss_copy.backward()
        optim_copy.step()
        optim_copy.zero_grad()

    params_copy = []
    for p_reference, p in zip(model_copy.parameters(), model.parameters()):
        self.assertEqual(p_reference, p)
        params_copy.append(p_reference.detach().clone())

    for h in handles:
        h.remove()

    for _ in range(iters):
        loss = model(input).sum()
        loss.backward()

        loss_copy = model_copy(input).sum()
        loss_copy.backward()
        optim_copy.step()
        optim_copy.zero_grad()

    for p_static, p_reference, p in zip(params_copy, model_copy.parameters(), model.parameters()):
        self.assertEqual(p_static, p)
        self.assertNotEqual(p_reference, p)


def test_post_accumulate_grad_hook_gets_cleaned_up(torch, self):
    def fun_stuff_with_hook():
        thing_to_put_in_hook = torch.rand(3)

        def hook(tensor):
            tensor.sub_(tensor.grad)
            tensor.add_(thing_to_put_in_hook)

        tensor = torch.rand(3, requires_grad=True)
        tensor.register_post_accumulate_grad_hook(hook)
        tensor.sum().backward()
        ref = weakref.ref(thing_to_put_in_hook)
        gc.collect()
        return tensor, ref

    with disable_gc():
        tensor, ref = fun_stuff_with_hook()
        self.assertIsNotNone(ref())

        del tensor
        gc.collect()
        self.assertIsNone(ref())


def test_post_accumulate_grad_hook_ordering(torch, self):
    tensor = torch.rand(3, requires_grad=True)

    def pre_hook(grad):
        return grad.sub(2.0)

    def acc_grad_node_pre_hook(grad_out):
        return (grad_out[0].div(5.0),)

    def post_acc_grad_hook(tensor):
        tensor.grad.add_(0.5)

    def acc_grad_node_post_hook(grad_in, grad_out):
        tensor.grad = grad_out[0].mul(10)

    acc_grad = tensor.view_as(tensor).grad_fn.next_functions[0][0]
    tensor.register_hook(pre_hook)
    acc_grad.register_prehook(acc_grad_node_pre_hook)
    tensor.register_post_accumulate_grad_hook(post_acc_grad_hook)
    acc_grad.register_hook(acc_grad_node_post_hook)
    tensor.sum().backward()

    self.assertEqual(torch.tensor([3.0, 3.0, 3.0]), tensor.grad)


# ---------------------------------------------------------------- node hooks

def test_prehook_ordering(torch, self):
    log = []

    def hook1(g):
        log.append(1)
        return g * 3

    def hook2(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)

    a = torch.tensor(1.0, requires_grad=True)
    b = a.clone()

    b.grad_fn.register_prehook(hook2)
    b.register_hook(hook1)
    b.grad_fn.register_prehook(hook2)

    acc = b.grad_fn.next_functions[0][0]
    a.register_hook(hook1)
    acc.register_prehook(hook2)
    a.register_hook(hook1)

    b.sum().backward(retain_graph=True)
    self.assertEqual(log, [1, 2, 2, 1, 1, 2])

    log = []
    torch.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
    self.assertEqual(log, [1, 2, 2, 1, 1])

    log = []
    b.sum().backward(inputs=(b,))
    self.assertEqual(log, [1, 2, 2])
    self.assertEqual(b.grad.item(), 3)


def test_accumulate_grad_posthooks_can_observe_tensor_prehook(torch, self):
    a = torch.tensor(1.0, requires_grad=True)

    def tensor_prehook(g):
        return g * 2

    def posthook(gO, gI):
        self.assertTrue(torch.allclose(gI[0], a * 2))
        self.assertEqual(len(gO), 0)

    def prehook(gI):
        self.assertTrue(torch.allclose(gI[0], a * 2))
        self.assertEqual(len(gI), 1)

    b = a.clone()
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    a.register_hook(tensor_prehook)

    b.backward()


def test_accumulate_grad_posthooks_should_not_execute(torch, self):
    def tensor_prehook(g):
        raise RuntimeError

    def posthook(gO, gI):
        raise RuntimeError

    a = torch.tensor(1.0, requires_grad=True)
    a.register_hook(tensor_prehook)
    b = torch.tensor(1.0, requires_grad=True)
    c = a.clone()
    acc = c.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)

    out = a + b + c
    out.sum().backward(inputs=[b])


def test_hook_edge_case_when_called_with_grad(torch, self):
    a = torch.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 2

    tensor_hook_count = [0]
    prehook_count = [0]
    posthook_count = [0]

    def reset_counts():
        nonlocal tensor_hook_count, prehook_count, posthook_count
        tensor_hook_count = [0]
        prehook_count = [0]
        posthook_count = [0]

    def tensor_prehook(g):
        tensor_hook_count[0] += 1

    def prehook(g):
        prehook_count[0] += 1

    def posthook(gI, gO):
        posthook_count[0] += 1

    a.register_hook(tensor_prehook)
    b.register_hook(tensor_prehook)
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_prehook(prehook)

    torch.autograd.grad(c, inputs=(b), retain_graph=True)
    self.assertEqual(tensor_hook_count[0], 1)
    self.assertEqual(posthook_count[0], 0)
    self.assertEqual(prehook_count[0], 0)
    reset_counts()

    torch.autograd.grad(c, inputs=(a, b), retain_graph=True)
    self.assertEqual(tensor_hook_count[0], 2)
    self.assertEqual(posthook_count[0], 1)
    self.assertEqual(prehook_count[0], 1)
    reset_counts()

    c.backward(retain_graph=True)
    self.assertEqual(tensor_hook_count[0], 2)
    self.assertEqual(posthook_count[0], 2)
    self.assertEqual(prehook_count[0], 2)
    reset_counts()

    c.backward(inputs=(a, b), retain_graph=True)
    self.assertEqual(tensor_hook_count[0], 2)
    self.assertEqual(posthook_count[0], 2)
    self.assertEqual(prehook_count[0], 2)


@pytest.mark.parametrize("use_custom_function", [True, False])
def test_grad_fn_prehooks(torch, self, use_custom_function):
    mul2 = _get_mul2(torch, use_custom_function)

    a = torch.tensor([1.0], requires_grad=True)
    b = mul2(a)

    post_counter = [0]
    pre_counter = [0]

    def posthook(grad_input, grad_output):
        self.assertEqual(pre_counter[0], 3)
        self.assertTrue(torch.allclose(grad_output[0], torch.ones(1) * 8))
        self.assertTrue(torch.allclose(grad_input[0], torch.ones(1) * 16))
        post_counter[0] += 1
        return grad_input

    def prehook(grad_output):
        pre_counter[0] += 1
        return (grad_output[0] * 2,)

    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda x: None)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda x: x)
    b.grad_fn.register_prehook(lambda x: None)

    b.sum().backward()

    self.assertEqual(post_counter[0], 2)
    self.assertEqual(pre_counter[0], 3)

    a = torch.rand(3, 3, requires_grad=True)
    b = mul2(a)

    def prehook(grad_output):
        pre_counter[0] += 1
        return None

    b.grad_fn.register_prehook(prehook)
    b.sum().backward()
    self.assertEqual(pre_counter[0], 4)
    self.assertTrue(torch.allclose(a.grad, torch.ones(3, 3) * 2))


def test_grad_fn_prehooks_multiple_outputs(torch, self):
    b = torch.rand(3, 3, requires_grad=True)
    var, mean = torch.var_mean(b, dim=0)
    (var + mean).sum().backward()

    a = b.detach().requires_grad_()
    counter = [0]

    def prehook(grad_output):
        gvar, gmean = grad_output
        counter[0] += 1
        return (gvar * 2, gmean * 2)

    var, mean = torch.var_mean(a, dim=0)
    mean.grad_fn.register_prehook(prehook)
    (var + mean).sum().backward()

    self.assertEqual(counter[0], 1)
    self.assertTrue(torch.allclose(a.grad, b.grad * 2))

    class DoubleMul2(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, a, y):
            ctx.a = a
            return a * x * 2, a, a * y * 2

        @staticmethod
        def backward(ctx, g1, _a, g2):
            return ctx.a * g1 * 2, None, ctx.a * g2 * 2

    counter = [0]

    def prehook(grad_output):
        g1, ga, g2 = grad_output
        self.assertIsNone(ga)
        counter[0] += 1
        return (g1 * 2, None, g2 * 2)

    a = torch.randn(3, 3, requires_grad=True)
    b = torch.randn(3, 3, requires_grad=True)
    k = 3
    c, _, d = DoubleMul2.apply(a, k, b)
    c.grad_fn.register_prehook(prehook)
    (c + d).sum().backward()

    self.assertEqual(counter[0], 1)
    self.assertTrue(torch.allclose(a.grad, torch.ones(1) * 4 * k))
    self.assertTrue(torch.allclose(b.grad, torch.ones(1) * 4 * k))


@pytest.mark.parametrize("use_custom_function", [True, False])
def test_grad_fn_prehooks_remove_hooks(torch, self, use_custom_function):
    mul2 = _get_mul2(torch, use_custom_function)

    a = torch.rand(3, 3, requires_grad=True)
    b = mul2(a)
    counter = [0]

    def prehook(grad_output):
        counter[0] += 1
        return None

    handle = b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    handle.remove()
    b.sum().backward()
    self.assertTrue(torch.allclose(a.grad, torch.ones(3, 3) * 2))
    self.assertEqual(counter[0], 1)

    a = torch.rand(3, 3, requires_grad=True)
    b = mul2(a)
    counter = [0]

    def prehook1(grad_output):
        handle2.remove()
        handle3.remove()
        return None

    def prehook2(grad_output):
        counter[0] += 1
        return None

    b.grad_fn.register_prehook(prehook1)
    handle2 = b.grad_fn.register_prehook(prehook2)
    handle3 = b.grad_fn.register_prehook(prehook2)
    handle3.remove()
    b.sum().backward()
    self.assertTrue(torch.allclose(a.grad, torch.ones(3, 3) * 2))
    self.assertEqual(counter[0], 1)


def test_node_post_hook_registered_during_unpack_hook(torch, self):
    test_case = self

    class RegisterPostNodeHook(torch.autograd.graph.saved_tensors_hooks):
        def __init__(self) -> None:
            def pack_tensor(tensor):
                return tensor

            def unpack_tensor(tensor):
                node = torch._C._current_autograd_node()

                def hook(outputs, inputs):
                    test_case.assertTrue(all(i is None for i in inputs))
                    halved_outputs = tuple(o / 2.0 if o is not None else None for o in outputs)
                    return halved_outputs

                node.register_hook(hook)
                return tensor

            super().__init__(pack_tensor, unpack_tensor)

    a = torch.rand(3, 3, requires_grad=True)

    def model():
        var, mean = torch.var_mean(a, dim=0)
        loss = (var + mean).sum()
        loss.backward()

    model()
    ref_grad = a.grad.clone()

    with RegisterPostNodeHook():
        model()

    self.assertEqual(ref_grad / 2.0 + ref_grad, a.grad)


# ---------------------------------------------------------------- engine queries

def test_will_engine_execute_node(torch, self):
    counter = [0]

    class MyFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, gO):
            return gO * 2

    def get_grad_fn(t):
        if t.requires_grad and t.grad_fn is None:
            return t.clone().grad_fn.next_functions[0][0]
        else:
            return t.grad_fn

    a = torch.randn(2, 3, 4, requires_grad=True)
    a2 = torch.randn(2, 3, 4, requires_grad=True)
    b = a * a2
    b2 = b.cos()
    c = MyFunction.apply(b)

    should_execute = list(map(get_grad_fn, (a, b, c)))
    should_not_execute = list(map(get_grad_fn, (a2, b2)))

    def fn(x):
        counter[0] += 1

        for g in should_execute:
            self.assertTrue(torch._C._will_engine_execute_node(g))

        for g in should_not_execute:
            self.assertFalse(torch._C._will_engine_execute_node(g))

    h1 = b.register_hook(fn)
    h2 = c.register_hook(fn)

    out = c.sum()
    torch.autograd.backward(out, inputs=(a, b), retain_graph=True)
    self.assertEqual(counter[0], 2)

    should_execute = list(map(get_grad_fn, (a, a2, b, c)))
    should_not_execute = list(map(get_grad_fn, (b2,)))
    torch.autograd.backward(out, retain_graph=True)

    with self.assertRaisesRegex(RuntimeError, "are currently running autograd.grad()"):
        torch.autograd.grad(out, (a,))

    a = torch.randn(1, 2, 3, requires_grad=True) * 2
    b = a * 2

    def fn(x):
        counter[0] += 1
        self.assertTrue(torch._C._will_engine_execute_node(b.grad_fn))

    h3 = b.register_hook(fn)
    counter[0] = 0
    torch.autograd.grad(b.sum(), (a,))
    self.assertEqual(counter[0], 1)

    with self.assertRaisesRegex(RuntimeError, "during the backward pass"):
        torch._C._will_engine_execute_node(out.grad_fn)

    with self.assertRaisesRegex(RuntimeError, "expects an grad_fn"):
        torch._C._will_engine_execute_node(out)

    h1.remove()
    h2.remove()
    h3.remove()


# ---------------------------------------------------------------- saved tensor hooks

def test_saved_tensor_hooks_extra_exit_during_bw_no_crash(torch, self):
    def unpack(x):
        ctx_1.__exit__()
        return x

    ctx_1 = torch.autograd.graph.saved_tensors_hooks(lambda x: x, unpack)
    ctx_2 = torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x)

    for _ in range(10):
        with ctx_2:
            ctx_1.__enter__()
            x = torch.randn(3, 3, requires_grad=True)
            x.sin().sum().backward()

    for _ in range(10):
        ctx_1.__exit__()

    a = torch.tensor(1.0, requires_grad=True)
    y = a.exp()
    y.grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)


def test_saved_tensor_hooks_extra_enter_during_bw_no_leak(torch, self):
    def scope():
        def unpack(x):
            weak_ctx_1().__enter__()
            return x

        ctx_1 = torch.autograd.graph.saved_tensors_hooks(lambda x: x, unpack)
        weak_ctx_1 = weakref.ref(ctx_1)

        x = torch.randn(3, 3, requires_grad=True)
        with ctx_1:
            x.sin().sum().backward()
        return weakref.ref(unpack)

    with disable_gc():
        unpack_hook_ref = scope()
        self.assertIsNone(unpack_hook_ref())


def test_no_unnecessary_unwrapping(torch, self):
    a = torch.randn(5, requires_grad=True)
    a_orig = a.detach().clone()
    b = a * a
    c = a * b
    d = torch.exp(a)

    self.assertIs(b.grad_fn._saved_self, a)
    self.assertIs(b.grad_fn._saved_other, a)
    self.assertIs(c.grad_fn._saved_self, a)
    self.assertIs(c.grad_fn._saved_other, b)
    self.assertEqual(d.grad_fn._saved_result, d)
    self.assertIsNot(d.grad_fn._saved_result, d)

    c.sum().backward()

    with self.assertRaisesRegex(RuntimeError, "after they have already been freed"):
        c.grad_fn._saved_self

    self.assertEqual(a, a_orig)


def test_saved_variable_version_counter(torch, self):
    a = torch.rand(2, requires_grad=True)
    b = torch.exp(a)
    b_unpacked = b.grad_fn._saved_result
    self.assertEqual(b, b_unpacked)
    self.assertEqual(b._version, b_unpacked._version)
    with torch.no_grad():
        b += 1
    self.assertEqual(b, b_unpacked)
    self.assertEqual(b._version, b_unpacked._version)


def test_saved_variable_packing_unpacking_saved_original_with_hooks(torch, self):
    def test(get_input, is_leaf):
        a = get_input()
        grad_fn = a.grad_fn
        y = a * a
        y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x / 2)
        self.assertEqual(a, y.grad_fn._saved_self)
        if not is_leaf:
            self.assertIs(grad_fn, y.grad_fn._saved_self.grad_fn)
            y.sum().backward()
        else:
            y.sum().backward()
            self.assertEqual(2 * a, a.grad)

        a = get_input()
        grad_fn = a.grad_fn
        y = a * a
        y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x)
        self.assertEqual(2 * a, y.grad_fn._saved_self)
        if not is_leaf:
            self.assertIs(grad_fn, y.grad_fn._saved_self.grad_fn)
            y.sum().backward()
        else:
            y.sum().backward()
            self.assertEqual(3 * a, a.grad)

        a = get_input()
        grad_fn = a.grad_fn
        y = a**3
        y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
        s = torch.sum(y)
        (g,) = torch.autograd.grad(s, (a,), create_graph=True)
        if not is_leaf:
            self.assertIs(grad_fn, y.grad_fn._saved_self.grad_fn)
            g.sum().backward()
        else:
            g.sum().backward()
            self.assertEqual(6 * a, a.grad)

        a = get_input()
        y = a * a
        y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: 1)
        with self.assertRaisesRegex(TypeError, "Output of saved tensor unpack_hook expected to be a Tensor"):
            print(y.grad_fn._saved_self)

        a = get_input()
        y = a * a
        with self.assertRaisesRegex(TypeError, "missing 1 required positional argument"):
            y.grad_fn._raw_saved_self.register_hooks(lambda x, b: x, lambda x: x)

        a = get_input()
        y = a * a
        with self.assertRaisesRegex(TypeError, "missing 1 required positional argument"):
            y.grad_fn._raw_saved_self.register_hooks(lambda x, b: (x, b), lambda x: x)

        def inplace_double(x):
            x *= 2
            return x

        a = get_input()
        t = a * a

        with self.assertRaisesRegex(RuntimeError, "A saved tensor pack hook is modifying its input in place."):
            t.grad_fn._raw_saved_self.register_hooks(inplace_double, lambda x: x / 2)

    test(lambda: torch.randn(5, requires_grad=True), True)
    test(lambda: (1 + torch.randn(5, requires_grad=True)), False)


def test_saved_variable_saved_original_inplace_detach(torch, self):
    if torch.__name__ == "hookgrad":
        # not yet: a lightly saved input is read without a check of in-place detach (see the report)
        pytest.xfail("hookgrad does not refuse a saved non-leaf detached in place")
    a = torch.tensor(1.0, requires_grad=True).clone()
    b = a.sin()
    a.detach_()
    with self.assertRaisesRegex(RuntimeError, "Trying to use a saved tensor that has been detached"):
        b.backward()

    a = torch.tensor(1.0, requires_grad=True).clone()
    b = a.exp()
    a.detach_()
    b.backward()


def test_saved_variable_packing_unpacking_did_not_save_original_with_hooks(torch, self):
    a = torch.randn(5, requires_grad=True)
    y = torch.exp(a)
    y.grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)
    self.assertEqual(y, y.grad_fn._saved_result)
    self.assertIs(y.grad_fn, y.grad_fn._saved_result.grad_fn)
    y.sum().backward()
    self.assertEqual(a.grad, y)


def test_saved_variable_packing_unpacking_saved_original_with_default_hooks(torch, self):
    def pack(x):
        warnings.warn("pack")
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        a = torch.ones(5, requires_grad=True)

        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = a * a
            self.assertEqual(len(w), 2)

    with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = torch.randn(5, requires_grad=True)
        y = a * a
        self.assertEqual(a, y.grad_fn._saved_self)
        self.assertEqual(a, y.grad_fn._saved_other)
        y.sum().backward()
        self.assertEqual(2 * a, a.grad)

    with torch.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x / 2):
        a = torch.randn(5, requires_grad=True)
        y = a * a
        self.assertEqual(a, y.grad_fn._saved_self)
        self.assertEqual(a, y.grad_fn._saved_other)
        y.sum().backward()
        self.assertEqual(2 * a, a.grad)

    with torch.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        a = torch.randn(5, requires_grad=True)
        y = a * a
        self.assertEqual(2 * a, y.grad_fn._saved_self)
        self.assertEqual(2 * a, y.grad_fn._saved_other)
        y.sum().backward()
        self.assertEqual(4 * a, a.grad)

    a = torch.randn(5, requires_grad=True)
    y = a * a
    self.assertEqual(a, y.grad_fn._saved_self)
    self.assertEqual(a, y.grad_fn._saved_other)
    y.sum().backward()
    self.assertEqual(2 * a, a.grad)


def test_saved_variable_packing_unpacking_did_not_save_original_with_default_hooks(torch, self):
    with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = torch.randn(5, requires_grad=True)
        y = torch.exp(a)
        self.assertEqual(y, y.grad_fn._saved_result)
        y.sum().backward()
        self.assertEqual(a.grad, y)


def test_setting_default_saved_variable_hooks_twice_should_not_fail(torch, self):
    with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
            pass


def test_setting_default_saved_variable_hooks_twice_should_use_inner(torch, self):
    with torch.autograd.graph.saved_tensors_hooks(lambda x: 3 * x, lambda x: 3 * x):
        b = torch.randn(5, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(lambda x: 5 * x, lambda x: 5 * x):
            a = torch.randn(5, requires_grad=True)
            y = a * a
        z = b * b
    y.sum().backward()
    z.sum().backward()
    self.assertEqual(2 * 5 * 5 * a, a.grad)
    self.assertEqual(2 * 3 * 3 * b, b.grad)


def test_disabling_saved_tensor_hooks(torch, self):
    with torch.autograd.graph.disable_saved_tensors_hooks("error message"):
        with self.assertRaisesRegex(RuntimeError, "error message"):
            with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                pass

    self.assertTrue(torch._C._autograd._saved_tensors_hooks_is_enabled())

    with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        with self.assertRaisesRegex(RuntimeError, "error message"):
            with torch.autograd.graph.disable_saved_tensors_hooks("error message"):
                pass

    self.assertTrue(torch._C._autograd._saved_tensors_hooks_is_enabled())


def test_disabling_saved_tensor_hooks_nested(torch, self):
    with torch.autograd.graph.disable_saved_tensors_hooks("outer"):
        with torch.autograd.graph.disable_saved_tensors_hooks("inner"):
            with self.assertRaisesRegex(RuntimeError, "inner"):
                with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                    pass

        self.assertFalse(torch._C._autograd._saved_tensors_hooks_is_enabled())

    self.assertTrue(torch._C._autograd._saved_tensors_hooks_is_enabled())


def test_saved_tensor_hooks_custom_error_propagation(torch, self):
    class CustomError(Exception):
        pass

    class error_on_pack_hook(torch.autograd.graph.saved_tensors_hooks):
        def __init__(self) -> None:
            def pack_hook(x):
                raise CustomError("pack")

            super().__init__(pack_hook, lambda x: x)

    class error_on_unpack_hook(torch.autograd.graph.saved_tensors_hooks):
        def __init__(self) -> None:
            def unpack_hook(x):
                raise CustomError("unpack")

            super().__init__(lambda x: x, unpack_hook)

    a = torch.tensor(1.0, requires_grad=True)

    with error_on_pack_hook():
        with self.assertRaisesRegex(CustomError, "pack"):
            out = torch.sin(a)

    with error_on_unpack_hook():
        out = torch.sin(a)
        with self.assertRaisesRegex(CustomError, "unpack"):
            out.backward()


def test_saved_tensor_hooks_custom_function_intermediates(torch, self):
    class Func(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            intermediate = x.exp()
            ctx.save_for_backward(intermediate.clone().detach_().requires_grad_(True))
            return x.exp()

        @staticmethod
        def backward(ctx, grad_out):
            (intermediate,) = ctx.saved_tensors
            return grad_out * intermediate

    a = torch.tensor(1.0, requires_grad=True)

    with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        out = Func.apply(a)
    out.backward()


def test_unpack_hooks_exec_count(torch, self):
    def f(x, y):
        return x * y

    pack_count = 0
    unpack_count = 0

    def pack_hook(x):
        nonlocal pack_count
        pack_count += 1
        return x

    def unpack_hook(x):
        nonlocal unpack_count
        unpack_count += 1
        return x

    x = torch.ones(4, requires_grad=True)
    y = torch.ones(4, requires_grad=False)
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        out_test = f(x, y)
        self.assertEqual(pack_count, 1)
        self.assertEqual(unpack_count, 0)
        out_test.sum().backward()
        self.assertEqual(pack_count, 1)
        self.assertEqual(unpack_count, 1)


def test_saved_tensors_hook_version_counter_not_shared(torch, self):
    class Test(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            before = a._version
            x.add_(1)
            self.assertEqual(a._version, before)
            return grad_output

    a = torch.tensor(1.0, requires_grad=True)
    a_replacement = a.clone()

    def pack_hook(x):
        return a_replacement

    def unpack_hook(x):
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        b = Test.apply(a)

    b.backward()


def test_pack_hook_with_inplace_modification_should_fail(torch, self):
    a = torch.randn(5, requires_grad=True)

    def inc(x):
        x += 1
        return x

    with torch.autograd.graph.saved_tensors_hooks(inc, lambda x: x):
        with self.assertRaisesRegex(RuntimeError, "A saved tensor pack hook is modifying its input in place."):
            y = torch.exp(a)

    y = torch.exp(a)
    with self.assertRaisesRegex(RuntimeError, "A saved tensor pack hook is modifying its input in place."):
        y.grad_fn._raw_saved_result.register_hooks(inc, lambda x: x)


def test_saving_variable_to_disk(torch, self, tmp_path):
    import uuid

    def pack(x):
        name = str(tmp_path / str(uuid.uuid4()))
        torch.save(x, name)
        return name

    def unpack(name):
        return torch.load(name)

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        a = torch.ones(5, requires_grad=True)
        y = a * a
        self.assertEqual(a, y.grad_fn._saved_self)

        y.sum().backward()
        self.assertEqual(2 * a, a.grad)


def test_default_saved_tensors_hooks_double_backward(torch, self):
    with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = torch.randn(5, requires_grad=True)
        y = a**3
        s = torch.sum(y)
        (g,) = torch.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
        self.assertEqual(6 * a, a.grad)

    with torch.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        a = torch.randn(5, requires_grad=True)
        y = a**3
        s = torch.sum(y)
    (g,) = torch.autograd.grad(s, (a,), create_graph=True)
    g.sum().backward()
    self.assertEqual(6 * 2 * a, a.grad)

    a = torch.randn(5, requires_grad=True)
    y = a**3
    s = torch.sum(y)
    with torch.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        (g,) = torch.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
        self.assertEqual(6 * 4 * a, a.grad)

    with torch.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        a = torch.randn(5, requires_grad=True)
        y = a**3
        s = torch.sum(y)
        (g,) = torch.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
        self.assertEqual(6 * 8 * a, a.grad)


def test_wrapped_number_saved_tensors_hooks(torch, self):
    def err_hook(x):
        raise RuntimeError("this hook should not be called")

    with torch.autograd.graph.saved_tensors_hooks(err_hook, err_hook):
        a = torch.randn(5, requires_grad=True)
        out = (a * 3).sum()
        torch.autograd.grad(out, (a,))


def test_graph_save_on_cpu(torch, self):
    def test(get_input, pin_memory):
        with torch.autograd.graph.save_on_cpu(pin_memory):
            a = get_input()
            y = a * a
            self.assertEqual(a, y.grad_fn._saved_self)
            self.assertEqual(a, y.grad_fn._saved_other)
            self.assertEqual(a.dtype, y.grad_fn._saved_self.dtype)
            self.assertEqual(a.layout, y.grad_fn._saved_self.layout)
            y.sum().backward()
            self.assertEqual(2 * a, a.grad)

    for pin_memory in [True, False]:
        test(lambda: torch.randn(5, requires_grad=True), pin_memory)
        test(lambda: torch.randn(5, requires_grad=True, dtype=torch.double), pin_memory)
        # (sparse tensors dropped: hookgrad has none)


# ---------------------------------------------------------------- hook lifetime

@pytest.mark.parametrize("use_custom_function", [True, False])
@pytest.mark.parametrize("use_tensor_hook", [True, False])
def test_hook_closure_cycle(torch, self, use_custom_function, use_tensor_hook):
    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class Test:
        pass

    count = [0]

    def scope():
        a = torch.tensor(1.0, requires_grad=True)
        if use_custom_function:
            b = Function.apply(a)
        else:
            b = a.clone()
        grad_fn_b = b.grad_fn
        obj = Test()

        def hook(*args):
            grad_fn_b
            obj
            count[0] += 1

        if use_tensor_hook:
            b.register_hook(hook)
        else:
            b.grad_fn.register_hook(hook)
        c = b.clone()
        ref = weakref.ref(obj)
        return c, ref

    with disable_gc():
        out, ref = scope()
        out.backward(retain_graph=True)
        gc.collect()
        out.backward(retain_graph=True)
        self.assertEqual(count[0], 2)
        self.assertIsNotNone(ref())
        del out
        gc.collect()
        self.assertIsNone(ref())


def test_custom_function_cycle(torch, self):
    class MyFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, metadata):
            x = x.clone()
            ctx.meta = metadata
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            self.assertEqual(x, 3.14)
            self.assertEqual(ctx.meta["foo"], 3.14)
            return gO * x, None

    def get_refs(with_backward):
        a = torch.tensor(3.14, requires_grad=True)
        metadata = {}
        out = MyFn.apply(a, metadata)
        metadata["foo"] = out
        if with_backward:
            out.sum().backward()
            self.assertEqual(a.grad, a)
        return weakref.ref(out)  # upstream: torch._C._WeakTensorRef

    with disable_gc():
        ref = get_refs(False)
        self.assertFalse(ref() is None)
    gc.collect()
    self.assertTrue(ref() is None)

    with disable_gc():
        ref = get_refs(True)
        self.assertFalse(ref() is None)
    gc.collect()
    self.assertTrue(ref() is None)


# ---------------------------------------------------------------- multi-grad hooks

def test_multi_grad_all_hooks(torch, self):
    t1 = torch.rand(2, requires_grad=True)
    t2 = torch.rand(2, requires_grad=True)
    t3 = torch.rand(2, requires_grad=True)
    t4 = torch.rand(2, requires_grad=True)

    t1 = t1.mul(2)

    class Foo(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, gO):
            return gO

    t2 = Foo.apply(t2)
    # upstream: t3 through torch._C._functions.UndefinedGrad, t4 through a C++ custom op
    t3 = t3.clone()
    t4 = t4.exp()

    res = [None] * 4
    count = [0]

    def hook(grads):
        nonlocal res
        count[0] += 1
        res = [g is not None for g in grads]

    handle = torch.autograd.graph.register_multi_grad_hook((t1, t2, t3, t4), hook)

    out = t2 * t3

    out.sum().backward(inputs=(t2, t3), retain_graph=True)
    self.assertEqual(count[0], 1)
    self.assertEqual(res, [False, True, True, False])

    out.sum().backward(inputs=(t1, t4), retain_graph=True)
    self.assertEqual(count[0], 1)

    out.sum().backward(inputs=(t1, t3), retain_graph=True)
    self.assertEqual(count[0], 2)
    self.assertEqual(res, [False, False, True, False])

    class Func(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, gO):
            raise RuntimeError("error message")

    out = Func.apply(t2) * t3
    with self.assertRaisesRegex(RuntimeError, "error message"):
        out.sum().backward(inputs=(t2, t3), retain_graph=True)
    self.assertEqual(count[0], 2)

    handle.remove()
    out.sum().backward(inputs=(t1, t3), retain_graph=True)
    self.assertEqual(count[0], 2)


def test_multi_grad_any_hooks(torch, self):
    nn = torch.nn
    hook_id = 0
    any_hook_handles = []

    class MultiOutputModule(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            z = self.lin(x)
            out = torch.sin(z), torch.cos(z)
            nonlocal hook_id
            z.register_hook(partial(hook, hook_id))
            hook_id += 1
            any_hook_handles.append(torch.autograd.graph.register_multi_grad_hook(out, partial(hook, hook_id), mode="any"))
            hook_id += 1
            return out

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mod1 = MultiOutputModule()
            self.mod2 = MultiOutputModule()

        def forward(self, x):
            y = self.mod1(x)
            z = y[0] + y[1]
            return self.mod2(z)

    hook_order = []
    hook_count = 0

    def hook(hook_id, *unused):
        nonlocal hook_count
        nonlocal hook_order
        hook_count += 1
        hook_order.append(hook_id)

    model = Model()
    inp = torch.randn((2, 3))
    out = model(inp)
    (out[0] + out[1]).sum().backward()
    self.assertEqual(len(any_hook_handles), 2)
    self.assertEqual(hook_order, [3, 2, 1, 0])

    hook_id = 0
    hook_order.clear()
    any_hook_handles.clear()
    out = model(inp)
    for handle in any_hook_handles:
        handle.remove()
    (out[0] + out[1]).sum().backward()
    self.assertEqual(hook_order, [2, 0])


def test_multi_grad_hooks_invalid_mode(torch, self):
    t1 = torch.rand(2, requires_grad=True)
    t2 = torch.rand(2, requires_grad=True)
    regex = r"Expects mode to be one of \('all', 'any'\) but got foo"
    with self.assertRaisesRegex(ValueError, regex):
        torch.autograd.graph.register_multi_grad_hook((t1, t2), lambda _: None, mode="foo")


def test_node_hooks_registered_by_tensor_hook_and_unpack_hook(torch, self):
    # (not upstream) neighbours of test_node_post_hook_registered_during_unpack_hook: node hooks
    # registered by a tensor hook of the same node run in that pass; a post hook registered while
    # the node runs sees an empty grad_outputs
    a = torch.ones(3, requires_grad=True)
    b = a * 2
    c = b.exp()
    log = []

    def th(g):
        b.grad_fn.register_prehook(lambda go: log.append(("pre", len(go))))
        b.grad_fn.register_hook(lambda gi, go: log.append(("post", len(gi), len(go))))

    b.register_hook(th)
    c.sum().backward()
    self.assertEqual(log, [("pre", 1), ("post", 2, 1)])

    def unpack(x):
        torch._C._current_autograd_node().register_hook(lambda gi, go: log.append(("late", len(gi), len(go))))
        return x

    log.clear()
    with torch.autograd.graph.saved_tensors_hooks(lambda x: x, unpack):
        d = (a * 3).exp()
    d.sum().backward()
    self.assertEqual(log, [("late", 1, 0)])
