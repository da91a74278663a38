"""AccumulateGrad takes the incoming gradient buffer as .grad when nothing else can see it (as PyTorch
"steals" it). Whatever the buffer's history, a later in-place change of one .grad (optimizers, zero_,
a second backward) must never show in another gradient, a hook's tensor or a user's tensor: each
scenario mutates gradients in place and logs every value, under torch and hookgrad."""
import numpy as np

from oracle import events

A = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
B = np.arange(6, 12, dtype=np.float32).reshape(2, 3) / 5


def _leaves(L):
    return L.tensor(A, requires_grad=True), L.tensor(B, requires_grad=True)


def test_one_gradient_buffer_for_two_leaves():
    def scenario(L, log):
        a, b = _leaves(L)
        (a + b).sum().backward()               # AddBackward0 sends one gradient to both leaves
        a.grad.add_(1)
        log("grads", a.grad, b.grad)
        (a - b).sum().backward()               # accumulation into both, in place
        b.grad.mul_(3)
        log("grads", a.grad, b.grad)
    events(scenario)


def test_user_gradient_and_hook_tensors_stay_apart():
    def scenario(L, log):
        a, b = _leaves(L)
        seen = []
        v = a.view(3, 2)
        v.register_hook(seen.append)
        g = L.ones(3, 2)
        (v * 1).backward(g)
        a.grad.add_(5)
        log("after", a.grad, g, seen[0])
        w = b.view(6)
        gw = L.full((6,), 2.0)
        w.backward(gw)                          # the user's tensor reaches AccumulateGrad as a view
        gw.add_(1)
        log("user", b.grad, gw)
    events(scenario)


def test_linear_weight_gradient_then_optimizer_steps():
    def scenario(L, log):
        L.manual_seed(0)
        lin = L.nn.Linear(3, 4)
        opt = L.optim.SGD(lin.parameters(), lr=0.5, momentum=0.9)
        x = L.tensor(A)
        for _ in range(3):
            opt.zero_grad()
            out = lin(x)
            out.retain_grad()
            (out * out).sum().backward()
            log("grad", lin.weight.grad, lin.bias.grad, out.grad)
            opt.step()
            log("params", lin.weight, lin.bias)
        lin.weight.grad.zero_()
        log("zeroed", lin.weight.grad, lin.bias.grad)
    events(scenario)


def test_shared_leaf_and_second_backward():
    def scenario(L, log):
        a, _ = _leaves(L)
        y = a * a + a.exp()
        y.sum().backward(retain_graph=True)
        first = a.grad
        log("first", first)
        y.sum().backward()                      # accumulates into the same .grad in place
        log("second", a.grad, first, a.grad is first)
    events(scenario)
