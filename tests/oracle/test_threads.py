"""Concurrent autograd from several threads (PyTorch's TestMultithreadAutograd): a shared leaf gets one
AccumulateGrad, gradients accumulated from all threads add up, every autograd.grad call succeeds."""
import sys
import threading

import numpy as np
import torch

import hookgrad


def _run_threads(fn, n=4, *args):
    errors = []
    start = threading.Barrier(n)

    def body():
        try:
            start.wait()
            fn(*args)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _same_input_backward(lib, n_threads, iters):
    x = lib.ones(5, 5, requires_grad=True)

    def train():
        for _ in range(iters):
            y = (x + 3) * (x + 4) * 0.5
            y.sum().backward()
    errors = _run_threads(train, n_threads)
    return errors, x.grad.detach().numpy().copy()


def test_backward_same_leaf_from_threads_accumulates_every_gradient():
    t_err, t_grad = _same_input_backward(torch, 4, 20)
    h_err, h_grad = _same_input_backward(hookgrad, 4, 20)
    assert t_err == [] and h_err == []
    np.testing.assert_allclose(h_grad, t_grad)


def test_grad_of_a_fresh_forward_on_a_shared_leaf_never_misses_the_leaf():
    # the race: two threads reach the leaf's accumulator for the first time at once; each forward must
    # link the one accumulator that autograd.grad(..., x) then looks for
    failures = []
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)     # switch threads often, so that the race shows up if it exists
    try:
        _fresh_forwards(failures)
    finally:
        sys.setswitchinterval(old)
    assert failures == []


def _fresh_forwards(failures):
    for _ in range(100):
        x = hookgrad.ones(4, requires_grad=True)
        res = []

        def work():
            for _ in range(5):
                (g,) = hookgrad.autograd.grad((x * x).sum(), x)
                res.append(g.numpy().copy())
        failures += _run_threads(work, 4)
        assert len(res) == 20
        for g in res:
            np.testing.assert_allclose(g, 2 * np.ones(4))


def test_one_accumulator_per_leaf_under_concurrent_creation():
    x = hookgrad.ones(3, requires_grad=True)
    accs = []
    errors = _run_threads(lambda: accs.append(x._grad_accumulator()), 8)
    assert errors == [] and len(accs) == 8
    assert all(a is accs[0] for a in accs)


def test_multi_grad_hook_from_threads_fires_once_per_backward():
    counts = {}
    for lib in (torch, hookgrad):
        a = lib.ones(3, requires_grad=True)
        b = lib.ones(3, requires_grad=True)
        calls = []
        lock = threading.Lock()

        def hook(grads):
            with lock:
                calls.append(sum(g is not None for g in grads))
        lib.autograd.graph.register_multi_grad_hook((a, b), hook)

        def work():
            for _ in range(10):
                (a * b).sum().backward()
        assert _run_threads(work, 4) == []
        counts[lib.__name__] = sorted(calls)
    assert counts["hookgrad"] == counts["torch"]
