"""Inference mode as a mode of its own, torch vs hookgrad (issue 27): which tensors are inference tensors
(allocated in inference mode, views of them), how they mix with autograd outside the mode (no saving for
backward, no in-place update), views of normal tensors made inside the mode, numpy() under no_grad."""
import pytest

from test_autograd_modes import both, _err


def test_which_tensors_are_inference_tensors():
    def scenario(lib, log):
        s = lib.ones(1, 2, 3, requires_grad=True)
        a = s.clone()
        with lib.inference_mode():
            c = lib.ones(1, 2, 3)
            cr = lib.ones(1, 2, 3, requires_grad=True)
            log("factories", lib.is_inference(c), c.is_inference(), lib.is_inference(cr), cr.requires_grad)
            log("ops", lib.is_inference(cr * cr), (cr * cr).requires_grad, lib.is_inference(cr.sin()),
                lib.is_inference(a + 1), lib.is_inference(a * a))
            v = a.view(-1)
            log("view of normal", lib.is_inference(v), v.requires_grad, v._is_view())
            vi = cr.view(-1)
            log("view of inference", lib.is_inference(vi), vi.requires_grad)
            a.add_(1)
            log("inplace on normal", lib.is_inference(a), a.requires_grad)
            cr.add_(1)
            log("inplace on inference", lib.is_inference(cr), cr.requires_grad)
        log("outside", lib.is_inference(c * c), lib.is_inference(s), lib.is_inference(c.view(-1)),
            c.view(-1).requires_grad, c.view(-1)._is_view(), c.view(-1).is_leaf)
        log("view_as", lib.is_inference(c.view_as(s)), lib.is_inference(s.view_as(c)), s.view_as(c).requires_grad)

        @lib.inference_mode()
        def f(x):
            return x * x
        d = f(s)
        log("decorated", lib.is_inference(d), d.requires_grad)
    both(scenario)


def test_inference_tensors_outside_inference_mode():
    def scenario(lib, log):
        s = lib.ones(1, 2, 3, requires_grad=True)
        with lib.inference_mode():
            c = lib.ones(1, 2, 3, requires_grad=True)
            n = lib.ones(1, 2, 3)
        out = c.add(s)                      # add saves nothing: fine, and c gets a gradient
        log("add", lib.is_inference(out), out.requires_grad)
        out.backward(lib.ones_like(out))
        log("grad", c.grad)
        log("saved", _err(lambda: c * s))
        log("inference inputs alone", c.sin().requires_grad, (c * c).requires_grad, (c * 2).requires_grad)
        a = s.clone()
        log("mul_", _err(lambda: a.mul_(n)))
        log("inplace", _err(lambda: n.add_(2)), _err(lambda: n.transpose_(0, 1)))
        log("out=", _err(lambda: lib.mul(s, s, out=n)))
        m = lib.ones(1, 2, 3)
        log("out= no grad", _err(lambda: lib.mul(m, m, out=n)))
        log("clone is normal", lib.is_inference(n.clone()), _err(lambda: n.clone().add_(1)))
        with lib.inference_mode():
            log("inside", _err(lambda: n.add_(2)), _err(lambda: c.resize_(1, 2)))
    both(scenario)


def test_saved_before_inference_mode_still_checked():
    def scenario(lib, log):
        s = lib.ones(1, 2, 3, requires_grad=True)
        a = s.clone()
        out = a * a
        with lib.inference_mode():
            a.add_(2)
        log(lib.is_inference(a), _err(lambda: out.backward(lib.ones_like(out))) is not None)
    both(scenario)


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "grad"])
def test_numpy_of_a_tensor_requiring_grad(mode):
    def scenario(lib, log):
        x = lib.ones(2, requires_grad=True)
        ctx = {"no_grad": lib.no_grad, "inference_mode": lib.inference_mode, "grad": lib.enable_grad}[mode]
        with ctx():
            r = _err(lambda: x.numpy())
            log(r if r is None else r[0])
    both(scenario)
