"""Views and in-place ops against torch: rebased histories (AsStridedBackward0 / CopySlices), hooks and
retain_grad across an in-place op, no_grad views, requires_grad rules, in-place broadcast errors."""
import pytest

from oracle import events
from _scen import attempt


def _name(t):
    return None if t.grad_fn is None else t.grad_fn.name()


def _grad_of(lib, log, w):
    log("grad", w.grad)


def test_base_modified_then_view_read():
    # the silent wrong gradient: the view is rebased on the base's new history
    def sc(lib, log):
        w = lib.tensor([1., 2, 3, 4], requires_grad=True)
        a = w * 1
        v = a[1:3]
        u = v[0:1]                       # a view of a view
        a.mul_(2)
        log("names", _name(v), _name(u), _name(a), v._version, a._version, u._version)
        (v * v).sum().backward(retain_graph=True)
        log("g1", w.grad)
        (u * 3).sum().backward()
        log("g2", w.grad)
    events(sc)


def test_view_modified_sibling_and_base():
    def sc(lib, log):
        w = lib.tensor([1., 2, 3, 4], requires_grad=True)
        x = lib.tensor([5., 6], requires_grad=True)
        a = w * 1
        v = a[1:3]
        s = a[0:2]
        t = a.view(2, 2)
        v.mul_(x)
        log("names", _name(v), _name(a), _name(s), _name(t), v._version, s._version)
        log("flags", v._is_view(), v._base is a, s.requires_grad, a.is_leaf)
        loss = (s * s).sum() + (a * lib.tensor([1., 2, 3, 4])).sum() + (t ** 2).sum() + (v * 7).sum()
        loss.backward()
        log("g", w.grad, x.grad)
    events(sc)


def test_chain_of_inplace_views_and_transpose():
    def sc(lib, log):
        w = lib.arange(12.).reshape(3, 4).div(6).requires_grad_()
        a = w * 2
        col = a.t()[1]                   # view of a transposed view
        col.add_(1)
        row = a[2]
        row.mul_(lib.tensor([1., 2, 3, 4]))
        a[0, 1:3] = lib.tensor([9., 9.])  # setitem goes through the same path
        log("names", _name(col), _name(row), _name(a))
        (a.tanh().sum() + col.sum() * 3 + (row ** 2).sum()).backward()
        log("g", w.grad)
    events(sc)


def test_view_of_leaf_base_modified_under_no_grad():
    def sc(lib, log):
        w = lib.tensor([1., 2, 3, 4], requires_grad=True)
        v = w[1:3]
        with lib.no_grad():
            w.mul_(2)
        log("v", _name(v), v.requires_grad, v.is_leaf)
        (v * v).sum().backward()
        log("g", w.grad)
    events(sc)


def test_detached_alias_modified():
    def sc(lib, log):
        w = lib.tensor([1., 2, 3, 4], requires_grad=True)
        a = w * 1
        d = a.detach()
        v = a[1:3]
        d.mul_(2)
        log("v", _name(v), d._is_view(), v._version)
        (v * v).sum().backward()
        log("g", w.grad)
    events(sc)


def test_non_grad_base_gets_copyslices():
    def sc(lib, log):
        a = lib.zeros(4)
        v = a[1:3]
        u = a[0:2]
        x = lib.tensor([1., 2], requires_grad=True)
        v.copy_(x * 3)
        log("names", _name(a), _name(v), _name(u), u.requires_grad, a.requires_grad)
        ((u * lib.tensor([10., 20])).sum() + (a ** 2).sum()).backward()
        log("g", x.grad)
    events(sc)


def test_hooks_inplace_over_view():
    # PyTorch's test_tensor_hooks_inplace_over_view
    def sc(lib, log):
        base = lib.ones(2, 3, requires_grad=True).clone()
        view = base[1]
        other = base[0]
        view.register_hook(lambda g: log("view before", g))
        other.register_hook(lambda g: log("other before", g))
        view.mul_(lib.tensor([1., 2, 3]))
        view.register_hook(lambda g: log("view after", g))
        base.register_hook(lambda g: log("base", g))
        view.retain_grad()
        (base.sum() + view.sum() * 2 + other.sum()).backward()
        log("view.grad", view.grad)
    events(sc)


def test_retain_grad_moves_to_regenerated_view():
    def sc(lib, log):
        w = lib.tensor([1., 2, 3, 4], requires_grad=True)
        a = w * 1
        v = a[1:3]
        v.retain_grad()
        h = v.register_hook(lambda g: log("old hook", g))
        a.add_(1)
        v.register_hook(lambda g: log("new hook", g))
        (v * lib.tensor([3., 5])).sum().backward()
        log("retained", v.grad, v.retains_grad, w.grad)
        h.remove()
    events(sc)


def test_no_grad_views_modified():
    def sc(lib, log):
        w = lib.tensor([1., 2, 3, 4], requires_grad=True)
        with lib.no_grad():
            v = w[1:3]
        log("flags", v.requires_grad, v.grad_fn is None, v.is_leaf, v._is_view())
        attempt(log, lambda: v.mul_(2))
        c = w * 1
        with lib.no_grad():
            cv = c[1:3]
            cvv = cv[0:1]
        attempt(log, lambda: cv.mul_(2))
        attempt(log, lambda: cvv.add_(1))
        c.mul_(2)                                     # the base moves: the no_grad view cannot be rebased
        attempt(log, lambda: cv.grad_fn)
        attempt(log, lambda: (cv * 2).sum())
        a = lib.zeros(4)
        with lib.no_grad():
            av = a[1:3]
        attempt(log, lambda: av.mul_(lib.ones(2, requires_grad=True)))
        with lib.no_grad():                            # both under no_grad: allowed, not recorded
            cv.mul_(3)
        log("c", c.detach())
        w2 = lib.tensor([1., 2, 3, 4], requires_grad=True)
        with lib.no_grad():
            v2 = w2[1:3]
            w2.mul_(2)
        attempt(log, lambda: v2.grad_fn)
    events(sc)


def test_leaf_views_refuse_inplace():
    def sc(lib, log):
        w = lib.tensor([1., 2, 3, 4], requires_grad=True)
        attempt(log, lambda: w[1:3].mul_(2))
        attempt(log, lambda: w.view(2, 2).t().add_(1))
        attempt(log, lambda: w.mul_(2))
        with lib.no_grad():
            w[1:3].mul_(2)
        log("w", w.detach(), w._version)
    events(sc)


def test_requires_grad_rules():
    def sc(lib, log):
        i = lib.ones(3, dtype=lib.long)
        attempt(log, lambda: i.requires_grad_())
        attempt(log, lambda: lib.nn.Parameter(lib.ones(3, dtype=lib.long)))
        p = lib.nn.Parameter(lib.ones(3, dtype=lib.long), requires_grad=False)
        log("p", p.requires_grad, str(p.dtype))
        attempt(log, lambda: lib.ones(3, dtype=lib.long, requires_grad=True))
        attempt(log, lambda: lib.tensor([1, 2], requires_grad=True))
        w = lib.ones(3, requires_grad=True)
        attempt(log, lambda: (w * 2).requires_grad_(False))
        attempt(log, lambda: (w * 2).requires_grad_(True))
        attempt(log, lambda: lib.ones(3, dtype=lib.bool).requires_grad_(False))
    events(sc)


def test_inplace_broadcast_errors():
    def sc(lib, log):
        a = lib.zeros(4)
        v = a[1:3]
        attempt(log, lambda: v.add_(lib.ones(3)))
        attempt(log, lambda: v.add_(lib.ones(2, 2)))
        attempt(log, lambda: lib.zeros(2, 3).add_(lib.ones(4, 3)))
        attempt(log, lambda: lib.zeros(2, 3).mul_(lib.ones(2, 2, 3)))
        attempt(log, lambda: a.__setitem__(slice(1, 3), lib.ones(3)))
        attempt(log, lambda: a.__setitem__(lib.tensor([0, 1]), lib.ones(3)))
        attempt(log, lambda: lib.zeros(2, 3).__setitem__(0, lib.ones(2, 3)))
        attempt(log, lambda: lib.zeros(2, 3).__setitem__((slice(None), 1), lib.ones(3)))
        log("a", a, a._version)
    events(sc)


@pytest.mark.parametrize("op", ["mul", "div", "pow", "copy", "setitem", "clamp", "sigmoid"])
def test_inplace_ops_on_views_gradients(op):
    def sc(lib, log):
        w = lib.tensor([[0.5, 1.5, 2.5], [1.0, 2.0, 3.0]], requires_grad=True)
        x = lib.tensor([0.3, 0.7], requires_grad=True)
        a = w.exp()
        v = a[:, 1]
        if op == "mul":
            v.mul_(x)
        elif op == "div":
            v.div_(x)
        elif op == "pow":
            v.pow_(2)
        elif op == "copy":
            v.copy_(x * 2)
        elif op == "setitem":
            a[:, 1] = x * 2
        elif op == "clamp":
            v.clamp_(min=3.0)
        else:
            v.sigmoid_()
        log("names", _name(a), _name(v))
        (a * lib.tensor([[1., 2, 3], [4, 5, 6]])).sum().backward()
        log("g", w.grad, x.grad)
    events(sc)


def test_upstream_tensor_hooks_inplace_over_view():
    # verbatim scenario of PyTorch's test_tensor_hooks_inplace_over_view
    def sc(lib, log):
        base = lib.tensor([1.0], requires_grad=True).clone()
        view = base[:]
        other = base[:]
        view.register_hook(lambda g: log("fn0", g))
        other.register_hook(lambda g: log("fn1", g))
        view.mul_(2)
        view.register_hook(lambda g: log("fn2 view", g))
        other.register_hook(lambda g: log("fn2 other", g))
        view.sum().backward()
        other2 = base[:]
        other2.register_hook(lambda g: log("other2", g))
        base.add_(1)
        other2.register_hook(lambda g: log("other2 late", g))
        (other2 * 3).sum().backward()
    events(sc)
