"""Saved tensors' lifetime and the errors around them, against torch (issue 27): SavedTensor as a torch name,
freed values, a mutated view saved by a custom Function, resize_ and versions, .data and .grad assignment checks,
grad_dtype."""
import gc
import weakref

from oracle import events
from _scen import attempt as _attempt, identity_function


def attempt(log, fn):
    """_scen.attempt, without the object addresses of pybind11's "Invoked with" list."""
    def cut(*a):
        log(*[x.split("Invoked with")[0] if isinstance(x, str) else x for x in a])
    _attempt(cut, fn)


def test_saved_tensor_objects():
    def s(lib, log):
        ST = lib._C._autograd.SavedTensor
        log("same class", lib.autograd.SavedTensor is ST)
        attempt(log, lambda: lib.autograd.SavedTensor())
        a = lib.ones(2, 2, requires_grad=True)
        out = a * a
        raw = out.grad_fn._raw_saved_self
        log("isinstance", isinstance(raw, ST))
        attempt(log, lambda: raw.register_hooks(lambda x: x))
        attempt(log, lambda: raw.register_hooks(1, 1))
        raw.register_hooks(lambda x: x, lambda x: x)
        attempt(log, lambda: raw.register_hooks(lambda x: x, lambda x: x))
        out.sum().backward()
        attempt(log, lambda: out.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x))
        attempt(log, lambda: out.grad_fn._saved_self)
        counts = []
        with lib.autograd.graph.saved_tensors_hooks(lambda x: counts.append("pack") or x,
                                                    lambda x: counts.append("unpack") or x):
            st = lib._C._autograd._make_saved_tensor(a, is_output=False)
            log("packed", counts)
            u1 = st.unpack()
            u2 = st.unpack()
        log("unpacked", counts, u1, u2)
        st = lib._C._autograd._make_saved_tensor(a, is_output=False)
        log("plain", st.unpack() is a)
    events(s)


def test_freed_saved_values_raise():
    def s(lib, log):
        x = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
        y = (x * x).exp()
        y.sum().backward()
        attempt(log, lambda: y.sum().backward())
        attempt(log, lambda: y.grad_fn._saved_result)
        y = x.exp()
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        log("retained", x.grad)
        # a saved input detached and then modified in place (detach shares the version counter)
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a * 2
        c = b.sin()
        d = b.detach()
        d.add_(1)
        attempt(log, lambda: c.sum().backward())
        e = a.sin()
        a.detach().mul_(2)
        attempt(log, lambda: e.sum().backward())
    events(s)


def test_custom_function_saving_mutated_view_is_freed():
    def s(lib, log):
        class Test(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                ctx.save_for_backward(x)
                return x.mul_(2)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                log("saved in backward", x, x.grad_fn.name())
                return grad * 2

        def scope():
            x = lib.tensor([1.0, 3.0], requires_grad=True).clone()
            v = x.view_as(x)
            Test.apply(v)
            return weakref.ref(v)
        ref = scope()
        log("freed", ref() is None)
        leaf = lib.tensor([1.0, 3.0], requires_grad=True)
        x = leaf.clone()
        v = x.view_as(x)
        y = Test.apply(v)
        log("y", y is v, y.grad_fn.name(), x.grad_fn.name())
        (x * lib.tensor([1.0, 10.0])).sum().backward()
        log("grad", leaf.grad)
    was = gc.isenabled()
    gc.disable()
    try:
        events(s)
    finally:
        if was:
            gc.enable()


def test_resize_same_size_keeps_version():
    def s(lib, log):
        x = lib.ones(3)
        v0 = x._version
        x.resize_(3)
        log("same", x._version - v0)
        x.resize_(2)
        log("smaller", x._version - v0, x.shape)
        x.resize_as_(lib.ones(2))
        log("as same", x._version - v0)
        x.resize_(2, 2)
        log("bigger", x._version - v0, x.shape)
    events(s)


def test_data_assignment_checks():
    def s(lib, log):
        a = lib.tensor(1.0, requires_grad=True)
        a.data = lib.tensor(2.0)
        log("a", a, a.requires_grad)
        attempt(log, lambda: setattr(a, "data", lib.tensor(3, dtype=lib.int64)))
        b = lib.tensor(1.0)
        b.data = lib.tensor(3)
        log("b", str(b.dtype), b)
        x = lib.randn(2, 2)
        sp = lib.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
        attempt(log, lambda: setattr(x, "data", sp))
    events(s)


def test_grad_assignment_and_grad_dtype():
    def s(lib, log):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        log("default", str(x.grad_dtype))
        for g in (lib.ones(3), lib.ones(2, dtype=lib.int64), lib.ones(2, dtype=lib.float64), 3,
                  lib.ones(2, dtype=lib.bfloat16), lib.ones(2, dtype=lib.complex64)):
            attempt(log, lambda: setattr(x, "grad", g))
        x.grad_dtype = lib.float16
        log("set", str(x.grad_dtype))
        attempt(log, lambda: setattr(x, "grad", lib.ones(2)))
        x.grad = lib.ones(2, dtype=lib.float16)
        log("f16 grad", str(x.grad.dtype))
        x.grad_dtype = None
        log("none", x.grad_dtype)
        x.grad = lib.ones(2, dtype=lib.float64)
        log("any", str(x.grad.dtype))
        attempt(log, lambda: setattr(x, "grad_dtype", lib.float16))
        x.grad_dtype = lib.float64
        attempt(log, lambda: setattr(x, "grad_dtype", 3))
        y = x * 2
        attempt(log, lambda: y.grad_dtype)
        attempt(log, lambda: setattr(y, "grad_dtype", lib.float16))
        z = lib.ones(2, dtype=lib.int64)
        log("int", str(z.grad_dtype))
    events(s)


def test_attribute_assignment_and_deletion_errors():
    def s(lib, log):
        x = lib.randn(3, 3, requires_grad=True)
        del x.grad
        log("grad deleted", x.grad is None)
        for f in (lambda: setattr(x, "grad", x), lambda: delattr(x, "data"), lambda: setattr(x, "data", None),
                  lambda: delattr(x, "requires_grad"), lambda: delattr(x, "_grad_fn"),
                  lambda: delattr(x, "_backward_hooks")):
            attempt(log, f)
        log("still usable", x.requires_grad, x.grad_fn, x.shape)
        x.foo = 1
        del x.foo
        log("own attribute", hasattr(x, "foo"))
    events(s)


def test_repr_of_a_view_modified_in_no_grad():
    def s(lib, log):
        a = lib.ones(1, requires_grad=True)
        with lib.no_grad():
            b = a[:]
            b *= 2
        log("repr", repr(b), repr(a), repr(a.clone()))
        log("custom", repr(identity_function(lib, "Func").apply(a)))
        attempt(log, lambda: b.grad_fn)
    events(s)


def test_grad_dtype_casts_incoming_gradients():
    def s(lib, log):
        class Mismatched(lib.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                return inp * 2

            @staticmethod
            def backward(ctx, g):
                return g.to(lib.float64)
        for gdt in ("default", None, lib.float16, lib.float64):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            if gdt != "default":
                x.grad_dtype = gdt
            Mismatched.apply(x).sum().backward()
            log("custom", str(gdt), str(x.grad.dtype), x.grad.to(lib.float32))
            y = lib.tensor([1.0, 2.0], requires_grad=True)
            if gdt != "default":
                y.grad_dtype = gdt
            (y * 3).sum().backward()
            log("builtin", str(gdt), str(y.grad.dtype), y.grad.to(lib.float32))
            (y * 3).sum().backward()
            log("accumulated", str(y.grad.dtype), y.grad.to(lib.float32))
    events(s)


def test_advanced_index_nodes_are_freed():
    """IndexBackward0 / IndexPutBackward0 save their index tensors in PyTorch: a second pass raises."""
    def s(lib, log):
        b = lib.tensor([0.5, 1.5, 2.5], dtype=lib.double, requires_grad=True)
        c = lib.zeros(3, dtype=lib.double)
        c[[1, 2]] = b[[1, 1]]
        c.backward(lib.tensor([1.0, 1.0, 1.0], dtype=lib.double))
        log("grad", b.grad)
        attempt(log, lambda: c.backward(lib.tensor([1.0, 1.0, 1.0], dtype=lib.double)))
        for idx in ([0, 1], slice(1, None), 1, (lib.tensor([True, False, True]),)):
            x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
            y = x[idx]
            y.sum().backward(retain_graph=True)
            y.sum().backward()
            attempt(log, lambda: y.sum().backward())
            log("x.grad", x.grad)
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.clone()
        y[[0, 1]] = 2.0
        y.sum().backward()
        attempt(log, lambda: y.sum().backward())
    events(s)
