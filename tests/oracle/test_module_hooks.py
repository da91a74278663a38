"""Module hooks (M1-M5, GM1-GM5) against torch: event sequences, values, errors and warnings."""
import warnings

import numpy as np
import pytest

from oracle import events
from _scen import msg

_DEFS = {}


def defs(lib):
    """Tiny modules built from tensor ops only (one namespace per library, cached)."""
    if lib in _DEFS:
        return _DEFS[lib]
    nn = lib.nn

    class Lin(nn.Module):
        def __init__(self, i, o, seed=0, addmm=False):
            super().__init__()
            rng = np.random.default_rng(seed)
            self.weight = nn.Parameter(lib.tensor(rng.standard_normal((o, i)).astype(np.float32)))
            self.bias = nn.Parameter(lib.tensor(rng.standard_normal(o).astype(np.float32)))
            self.addmm = addmm

        def forward(self, x):
            if self.addmm:
                return lib.addmm(self.bias, x, self.weight.t())
            return x @ self.weight.t() + self.bias

        def extra_repr(self):
            return f"in_features={self.weight.shape[1]}, out_features={self.weight.shape[0]}"

    class Relu(nn.Module):
        def forward(self, x):
            return x.relu()

    class Multi(nn.Module):
        def forward(self, a, flag, b, c=None, *, k=None):
            return a * 2, "str", b * 3 + (k if k is not None else 0)

    class Two(nn.Module):
        def __init__(self, log=None):
            super().__init__()
            self.a = Lin(2, 2, 1)
            self.b = Lin(2, 2, 2)
            self.log = log

        def forward(self, x):
            h = self.a(x)
            if self.log is not None:
                h.register_hook(lambda g: self.log("inner tensor hook"))
            return self.b(h)

    class Params(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lib.ones(2))

        def forward(self):
            return self.w * 2

    class Fail(nn.Module):
        def forward(self, x):
            raise ValueError("forward failed")

    class ToDict(nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    class Inplace(nn.Module):
        def forward(self, x):
            x.mul_(2)
            return x

    ns = type("NS", (), dict(Lin=Lin, Relu=Relu, Multi=Multi, Two=Two, Params=Params, Fail=Fail, ToDict=ToDict,
                             Inplace=Inplace))
    _DEFS[lib] = ns
    return ns


def X(lib, shape=(3, 2), seed=5, rg=True):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return lib.tensor(a, requires_grad=rg)


def S(t):
    """Shape summary of a grad tuple."""
    if t is None:
        return None
    if isinstance(t, (tuple, list)):
        return tuple(S(x) for x in t)
    return tuple(t.shape)


def wlog(log, w):
    for ww in w:
        log("warn", ww.category.__name__, str(ww.message))


def gm(lib):
    return lib.nn.modules.module


def _reset_global_flag(lib):
    gm(lib)._global_is_full_backward_hook = None


# ---------------------------------------------------------------- forward hooks (M1/M2/GM1/GM2)

def test_forward_hooks_order_nested_and_prepend():
    def sc(lib, log):
        D = defs(lib)
        net = lib.nn.Sequential(D.Lin(2, 3), lib.nn.Sequential(D.Relu(), D.Lin(3, 1, 3)))
        hs = []
        for name, m in net.named_modules():
            nm = name or "root"
            hs.append(m.register_forward_pre_hook(lambda m, a, nm=nm: log("pre", nm, a)))
            hs.append(m.register_forward_hook(lambda m, a, o, nm=nm: log("fwd", nm, o)))
        hs.append(net.register_forward_pre_hook(lambda m, a: log("pre root prepended"), prepend=True))
        hs.append(net.register_forward_hook(lambda m, a, o: log("fwd root prepended"), prepend=True))
        g1 = gm(lib).register_module_forward_pre_hook(lambda m, a: log("GLOBAL pre", type(m).__name__))
        g2 = gm(lib).register_module_forward_hook(lambda m, a, o: log("GLOBAL fwd", type(m).__name__))
        try:
            net(X(lib))
            net.forward(X(lib))                # direct forward: the root's hooks do not run
        finally:
            g1.remove()
            g2.remove()
        for h in hs:
            h.remove()
        net(X(lib))
        log("after removal", len(net._forward_hooks), len(net._forward_pre_hooks))
    events(sc)


def test_forward_pre_hook_returns_and_kwargs():
    def sc(lib, log):
        D = defs(lib)
        m = D.Multi()
        a, b, k = lib.ones(2), lib.ones(2) * 2, lib.ones(2) * 5
        h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 10,) + args[1:])
        h2 = m.register_forward_pre_hook(lambda mod, args, kw: log("kw", args, kw) or (args, {"k": kw["k"] + 1}),
                                         with_kwargs=True)
        h3 = m.register_forward_hook(lambda mod, args, kw, out: log("fwd kw", args, kw, out), with_kwargs=True)
        h4 = m.register_forward_hook(lambda mod, args, out: (out[0] + 1,) + out[1:])
        log("out", m(a, True, b, k=k))
        for h in (h1, h2, h3, h4):
            h.remove()
        log("flags", len(m._forward_pre_hooks_with_kwargs), len(m._forward_hooks_with_kwargs))
        # a non-tuple return is wrapped (a list becomes one argument)
        r = D.Relu()
        r.register_forward_pre_hook(lambda mod, args: args[0] * -1)
        log("wrapped", r(lib.ones(2)))
        r2 = D.Relu()
        r2.register_forward_pre_hook(lambda mod, args: (lambda: None) and None)
        log("none", r2(lib.ones(2)))
        r3 = D.Relu()
        r3.register_forward_pre_hook(lambda mod, args, kw: (lib.tensor(5.),), with_kwargs=True)
        try:
            r3(lib.ones(1))
        except RuntimeError as e:
            log("err", msg(e))
        # forward hook may return any type; the next hook sees it
        r4 = D.Relu()
        r4.register_forward_hook(lambda mod, args, out: {"o": out})
        r4.register_forward_hook(lambda mod, args, out: log("saw", out))
        log("dict", r4(lib.ones(2)))
    events(sc)


def test_forward_hooks_run_under_no_grad_and_global_kwargs():
    def sc(lib, log):
        D = defs(lib)
        m = D.Lin(2, 2)
        g = gm(lib).register_module_forward_hook(lambda mod, a, kw, o: log("g", kw), with_kwargs=True)
        try:
            with lib.no_grad():
                m(X(lib))
        finally:
            g.remove()
        log("kw flag kept", g.id in gm(lib)._global_forward_hooks_with_kwargs)
        m.register_forward_hook(lambda mod, a, o: log("nograd", o.requires_grad))
        with lib.no_grad():
            m(X(lib))
    events(sc)


def test_always_call_on_exceptions():
    def sc(lib, log):
        D = defs(lib)
        f = D.Fail()
        f.register_forward_hook(lambda m, a, o: log("normal"))
        f.register_forward_hook(lambda m, a, o: log("always", o), always_call=True)
        f.register_forward_hook(lambda m, a, kw, o: log("always kw", kw, o), always_call=True, with_kwargs=True)

        def bad(m, a, o):
            raise KeyError("boom")
        f.register_forward_hook(bad, always_call=True)
        g = gm(lib).register_module_forward_hook(lambda m, a, kw, o: log("global kw"), with_kwargs=True,
                                                 always_call=True)
        g2 = gm(lib).register_module_forward_hook(lambda m, a, o: log("global", o), always_call=True)
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    f(lib.ones(1))
                except ValueError as e:
                    log("raised", str(e))
            wlog(log, w)
        finally:
            g.remove()
            g2.remove()
        # an exception in a forward hook: always_call hooks already run are not run again
        r = D.Relu()
        r.register_forward_hook(lambda m, a, o: log("r always", o), always_call=True)

        def bad2(m, a, o):
            raise ValueError("hook failed")
        h = r.register_forward_hook(bad2)
        r.register_forward_hook(lambda m, a, o: log("r always 2", o), always_call=True)
        try:
            r(lib.ones(1))
        except ValueError as e:
            log("raised", str(e))
        # a pre-hook that raises: the module stays usable and hooks removable
        p = r.register_forward_pre_hook(lambda m, a: 1 / 0)
        try:
            r(lib.ones(1))
        except ZeroDivisionError:
            log("zde")
        p.remove()
        h.remove()
        log("ok again", r(lib.ones(1)))
    events(sc)


def test_forward_hook_snapshot():
    def sc(lib, log):
        D = defs(lib)
        m = D.Relu()
        hs = {}

        def first(mod, a, o):
            log("first")
            hs["second"].remove()
            mod.register_forward_hook(lambda *a: log("added"))
        hs["first"] = m.register_forward_hook(first)
        hs["second"] = m.register_forward_hook(lambda *a: log("second"))
        m(lib.ones(1))
        hs["first"].remove()
        m(lib.ones(1))
    events(sc)


# ---------------------------------------------------------------- full backward hooks (M3/M4/GM3/GM4)

def test_full_backward_basic_and_no_input_grad():
    def sc(lib, log):
        D = defs(lib)
        lin = D.Lin(3, 2)
        lin.register_full_backward_pre_hook(lambda m, go: log("pre", go))
        lin.register_full_backward_hook(lambda m, gi, go: log("bw", gi, go, m.weight.grad is None))
        lin(X(lib, (4, 3))).sum().backward()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lin(X(lib, (4, 3), rg=False)).sum().backward()
        wlog(log, w)
        log("wgrad", lin.weight.grad)
        frozen = D.Lin(3, 2).requires_grad_(False)
        frozen.register_full_backward_hook(lambda m, gi, go: log("never"))
        y = frozen(X(lib, (1, 3), rg=False))
        log("frozen", y.requires_grad)
        with lib.no_grad():
            y = lin(X(lib, (4, 3)))
        log("nograd", y.requires_grad, y.grad_fn is None)
    events(sc)


def test_full_backward_nested_order_with_globals():
    def sc(lib, log):
        D = defs(lib)
        _reset_global_flag(lib)
        net = D.Two(log)
        gp = gm(lib).register_module_full_backward_pre_hook(lambda m, go: log("GLOBAL bw_pre", type(m).__name__))
        gb = gm(lib).register_module_full_backward_hook(lambda m, gi, go: log("GLOBAL bw", type(m).__name__))
        try:
            for name, mod in net.named_modules():
                nm = name or "root"
                mod.register_full_backward_pre_hook(lambda m, go, nm=nm: log("bw_pre", nm, go))
                mod.register_full_backward_hook(lambda m, gi, go, nm=nm: log("bw", nm, gi, go))
            net.register_full_backward_hook(lambda m, gi, go: log("bw root prepended"), prepend=True)
            net.register_full_backward_pre_hook(lambda m, go: log("bw_pre root prepended"), prepend=True)
            x = X(lib, (1, 2))
            x.register_hook(lambda g: log("hook on input x", g))
            out = net(x)
            out.register_hook(lambda g: log("hook on output", g))
            out.sum().backward()
            log("x.grad", x.grad)
        finally:
            gp.remove()
            gb.remove()
            _reset_global_flag(lib)
    events(sc)


def test_full_backward_return_values_and_errors():
    def sc(lib, log):
        D = defs(lib)
        lin = D.Lin(2, 2)
        lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 10,))
        lin.register_full_backward_hook(lambda m, gi, go: log("bw sees", gi, go) or (gi[0] + 1,))
        x = X(lib, (1, 2))
        lin(x).sum().backward()
        log("x.grad", x.grad, "w.grad", lin.weight.grad)

        def run(register, ret, rg=True):
            m = D.Lin(2, 2)
            getattr(m, register)(ret)
            try:
                with warnings.catch_warnings(record=True):
                    warnings.simplefilter("always")
                    m(X(lib, (1, 2), rg=rg)).sum().backward()
                log("ok")
            except Exception as e:
                log("err", type(e).__name__, msg(e))
        run("register_full_backward_hook", lambda m, gi, go: (gi[0], gi[0]))
        run("register_full_backward_pre_hook", lambda m, go: (go[0], go[0]))
        run("register_full_backward_pre_hook", lambda m, go: [go[0] * 2])
        run("register_full_backward_hook", lambda m, gi, go: (lib.ones(3),))
        run("register_full_backward_hook", lambda m, gi, go: gi[0])
        run("register_full_backward_hook", lambda m, gi, go: (lib.ones(1, 2),), rg=False)
        run("register_full_backward_hook", lambda m, gi, go: (None,), rg=False)
        run("register_full_backward_hook", lambda m, gi, go: (None,))
        # None at a tensor position drops the grad; a pre-hook returning (None,) drops the output grad
        m = D.Lin(2, 2)
        m.register_full_backward_hook(lambda m, gi, go: (None,))
        x = X(lib, (1, 2))
        m(x).sum().backward()
        log("dropped", x.grad)
        m = D.Lin(2, 2)
        m.register_full_backward_pre_hook(lambda m, go: (None,))
        m.register_full_backward_hook(lambda m, gi, go: log("bw after None pre", gi, go))
        x = X(lib, (1, 2))
        m(x).sum().backward()
        log("None pre", x.grad, m.weight.grad)
    events(sc)


def test_full_backward_multi_io_kwargs_and_nontensor():
    def sc(lib, log):
        D = defs(lib)
        m = D.Multi()
        m.register_full_backward_pre_hook(lambda mod, go: log("pre go", go))
        m.register_full_backward_hook(lambda mod, gi, go: log("gi", gi, "go", go))
        a, b, k = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        c = lib.ones(2) * 3
        outs = m(a, True, b, c, k=k)
        log("types", [type(o).__name__ for o in outs])
        (outs[0].sum() + outs[2].sum()).backward()
        log("k.grad", k.grad)
        outs = m(a, True, b, c, k=k)
        outs[0].sum().backward()
        # the same tensor passed twice
        m2 = D.Multi()
        m2.register_full_backward_hook(lambda mod, gi, go: log("twice", gi))
        o = m2(a, 1, a)
        (o[0] * 2 + o[2]).sum().backward()
        log("a.grad", a.grad)
    events(sc)


def test_full_backward_called_twice_retain_and_double():
    def sc(lib, log):
        D = defs(lib)
        lin = D.Lin(2, 2)
        lin.register_full_backward_hook(lambda m, gi, go: log("bw", gi, go))
        y = lin(X(lib, (1, 2)))
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        x = X(lib, (1, 2))
        lin(lin(x)).sum().backward()
        log("x.grad", x.grad)
        x = X(lib, (1, 2))
        y = (lin(x) ** 2).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        log("first", g)
        g.sum().backward()
        log("double", x.grad)
    events(sc)


def test_full_backward_snapshot_at_forward_time():
    def sc(lib, log):
        D = defs(lib)
        lin = D.Lin(2, 2)
        h = lin.register_full_backward_hook(lambda m, gi, go: log("captured"))
        y = lin(X(lib, (1, 2)))
        h.remove()
        lin.register_full_backward_hook(lambda m, gi, go: log("added after forward"))
        y.sum().backward()
        y2 = lin(X(lib, (1, 2)))
        y2.sum().backward()
        # forward hook replacing output / pre-hook replacing input
        m = D.Lin(2, 2)
        m.register_forward_hook(lambda mod, a, o: o * 3)
        m.register_forward_pre_hook(lambda mod, a: (a[0][:, :2] * 2,))
        m.register_full_backward_hook(lambda mod, gi, go: log("replaced", gi, go))
        x = X(lib, (1, 3))
        m(x).sum().backward()
        log("x.grad", x.grad)
    events(sc)


def test_full_backward_no_tensor_inputs_and_dict_output():
    def sc(lib, log):
        D = defs(lib)
        p = D.Params()
        p.register_full_backward_hook(lambda m, gi, go: log("bw", gi, go, m.w.grad))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            p().sum().backward()
        wlog(log, w)
        log("w.grad", p.w.grad)
        d = D.ToDict()
        d.register_full_backward_hook(lambda *a: log("dict bw fired"))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            o = d(lib.ones(2, requires_grad=True))
        wlog(log, w)
        o["y"].sum().backward()
        log("done")
    events(sc)


def test_full_backward_views_and_inplace_errors():
    def sc(lib, log):
        D = defs(lib)

        class Peek(lib.nn.Module):
            def forward(self, x):
                log("inside", x.grad_fn.name(), x._is_view())
                return x * 2
        p = Peek()
        p.register_full_backward_hook(lambda *a: None)
        # (a non-leaf input: for a leaf input hookgrad does not mark the wrapped tensor as a view until
        # ops._inplace.check_inplace tests _forbid_inplace before "view of a leaf")
        y = p(lib.ones(2, requires_grad=True) * 1)
        log("out", y.grad_fn.name(), y._is_view())
        m = D.Inplace()
        m.register_full_backward_hook(lambda *a: None)
        try:
            m(lib.ones(2, requires_grad=True) * 1)
        except RuntimeError as e:
            log("in forward", msg(e))
        lin = D.Lin(2, 2)
        lin.register_full_backward_hook(lambda *a: None)
        y = lin(X(lib, (1, 2)))
        try:
            y.add_(1)
        except RuntimeError as e:
            log("on output", msg(e))
        with lib.no_grad():
            y.add_(1)
        log("no_grad inplace ok")
    events(sc)


def test_full_backward_hook_that_raises():
    def sc(lib, log):
        D = defs(lib)
        lin = D.Lin(2, 2)

        def bad(m, gi, go):
            raise ValueError("bad hook")
        h = lin.register_full_backward_hook(bad)
        x = X(lib, (1, 2))
        y = lin(x)
        try:
            y.sum().backward()
        except ValueError as e:
            log("raised", str(e))
        h.remove()
        lin(x).sum().backward()
        log("x.grad", x.grad)
    events(sc)


def test_mixing_legacy_and_full_is_sticky():
    def sc(lib, log):
        D = defs(lib)
        _reset_global_flag(lib)
        try:
            lin = D.Lin(2, 2)
            lin.register_full_backward_hook(lambda *a: None)
            try:
                lin.register_backward_hook(lambda *a: None)
            except RuntimeError as e:
                log(msg(e))
            lin = D.Lin(2, 2)
            lin.register_backward_hook(lambda *a: None).remove()
            try:
                lin.register_full_backward_hook(lambda *a: None)
            except RuntimeError as e:
                log("sticky", msg(e))
            log("flag", lin._is_full_backward_hook)
            g = gm(lib).register_module_backward_hook(lambda *a: None)
            g.remove()
            try:
                gm(lib).register_module_full_backward_hook(lambda *a: None)
            except RuntimeError as e:
                log("global", msg(e))
            # global legacy + local full is allowed
            lin2 = D.Lin(2, 2)
            lin2.register_full_backward_hook(lambda m, gi, go: log("local full"))
            lin2(X(lib, (1, 2))).sum().backward()
        finally:
            _reset_global_flag(lib)
    events(sc)


# ---------------------------------------------------------------- legacy backward hooks (M5)

def test_legacy_backward_hook():
    def sc(lib, log):
        D = defs(lib)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lin = D.Lin(3, 2, addmm=True)
            lin.register_backward_hook(lambda m, gi, go: log("legacy lin", gi, go))
            x = X(lib, (4, 3))
            lin(x).sum().backward()
            lin(X(lib, (4, 3), rg=False)).sum().backward()
            seq = lib.nn.Sequential(D.Lin(3, 2, addmm=True), D.Relu())
            seq.register_backward_hook(lambda m, gi, go: log("legacy seq", gi, go))
            seq[1].register_backward_hook(lambda m, gi, go: log("legacy relu", gi, go))
            seq(x).sum().backward()
            m = D.Multi()
            m.register_backward_hook(lambda mod, gi, go: log("legacy multi", gi, go))
            o = m(x, 1, x)
            (o[0].sum() + o[2].sum()).backward()
            z = D.Lin(3, 2, addmm=True)
            z.register_backward_hook(lambda m, gi, go: tuple(None if g is None else g * 0 for g in gi))
            x = X(lib, (4, 3))
            z(x).sum().backward()
            log("zeroed", x.grad, z.weight.grad, z.bias.grad)
        wlog(log, w)
    events(sc)


def test_legacy_backward_hook_wrong_count():
    def sc(lib, log):
        D = defs(lib)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            seq = lib.nn.Sequential(D.Lin(3, 2, addmm=True))

            def backward_hook(module, grad_input, grad_output):
                return grad_input[0], grad_input[1]
            seq.register_backward_hook(backward_hook)
            try:
                seq(X(lib, (4, 3))).sum().backward()
            except RuntimeError as e:
                log(msg(e))
    events(sc)


# ---------------------------------------------------------------- registration hooks (R1-R3)

def test_registration_hooks():
    def sc(lib, log):
        D = defs(lib)
        M = gm(lib)
        h1 = M.register_module_parameter_registration_hook(lambda m, n, p: log("param", type(m).__name__, n))
        h2 = M.register_module_buffer_registration_hook(lambda m, n, b: log("buffer", n, b))
        h3 = M.register_module_module_registration_hook(lambda m, n, s: log("module", n, type(s).__name__))
        h4 = M.register_module_buffer_registration_hook(lambda m, n, b: None if b is None else b * 2)
        try:
            lin = D.Lin(2, 2)
            lin.register_parameter("extra", None)
            lin.extra = None
            lin.register_buffer("buf", lib.ones(2))
            lin.buf = lib.ones(2) * 3
            lin.buf = None
            lin.register_buffer("nb", None, persistent=False)
            lin.b2 = lib.nn.Buffer(lib.ones(1))
            seq = lib.nn.Sequential(D.Relu())
            seq.add_module("x", None)
            seq.x = D.Relu()
            seq.x = None
            seq.register_module("y", D.Relu())
            log("buffers", dict(lin.named_buffers()))
        finally:
            for h in (h1, h2, h3, h4):
                h.remove()
    events(sc)


def test_registration_hook_replacement_not_revalidated():
    def sc(lib, log):
        D = defs(lib)
        M = gm(lib)
        h = M.register_module_parameter_registration_hook(
            lambda m, n, p: lib.nn.Parameter(lib.zeros(p.shape)) if n == "bias" else None)
        try:
            lin = D.Lin(2, 2)
            log("bias", lin.bias)
        finally:
            h.remove()
    events(sc)


# ---------------------------------------------------------------- with the library's layers

def test_real_layers_all_hooks_nested():
    def sc(lib, log):
        nn = lib.nn
        lib.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 3), nn.ReLU()), nn.Linear(3, 2))
        for name, m in net.named_modules():
            nm = name or "root"
            m.register_forward_pre_hook(lambda m, a, nm=nm: log("pre", nm, a))
            m.register_forward_hook(lambda m, a, o, nm=nm: log("fwd", nm, o))
            m.register_full_backward_pre_hook(lambda m, go, nm=nm: log("bw_pre", nm, go))
            m.register_full_backward_hook(lambda m, gi, go, nm=nm: log("bw", nm, gi, go))
        x = lib.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4), requires_grad=True)
        net(x).sum().backward()
        log("grads", x.grad, [p.grad for p in net.parameters()])
    events(sc)


def test_real_layers_legacy_seed_example_and_inplace_relu():
    def sc(lib, log):
        nn = lib.nn
        lib.manual_seed(0)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 5))

            def backward_hook(module, grad_input, grad_output):
                return grad_input[0], grad_input[1]
            model.register_backward_hook(backward_hook)
            try:
                model(lib.randn(3, 10, requires_grad=True)).sum().backward()
            except RuntimeError as e:
                log(msg(e))   # PyTorch's text; hookgrad appends the node name after it
            lin = nn.Linear(3, 2)
            lin.register_backward_hook(lambda m, gi, go: log("legacy", S(gi), S(go)))
            lin(lib.randn(4, 3, requires_grad=True)).sum().backward()
            lin(lib.randn(2, 4, 3)).sum().backward()
        wlog(log, w)
        r = nn.ReLU(inplace=True)
        r.register_full_backward_hook(lambda *a: None)
        for x in (lib.randn(3, requires_grad=True), lib.randn(3, requires_grad=True) * 1):
            try:
                r(x)
            except RuntimeError as e:
                log("inplace", msg(e))
    events(sc)


def _dead_hook(module, *args):
    return None


def test_wrapped_hook_dead_module():
    import gc
    import pickle

    def sc(lib, log):
        m = lib.nn.Module()
        m.register_load_state_dict_pre_hook(_dead_hook)
        wrapped = next(iter(m._load_state_dict_pre_hooks.values()))
        log("name", wrapped.__name__)
        state = wrapped.__getstate__()
        del m, state
        gc.collect()
        try:
            wrapped({}, "", {}, True, [], [], [])
        except RuntimeError as e:
            log(msg(e))
        try:
            pickle.dumps(wrapped)
            pickle.loads(pickle.dumps(wrapped))
        except RuntimeError as e:
            log(msg(e))
    events(sc)
