"""Module state (registration, iteration, state_dict/load_state_dict + hooks S1-S4, conversions, repr,
containers, deepcopy/pickle) against torch."""
import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

from oracle import events
from _scen import msg
from test_module_hooks import defs, X


def Tree(lib):
    D = defs(lib)
    net = lib.nn.Sequential(D.Lin(2, 3, 1), lib.nn.Sequential(D.Relu(), D.Lin(3, 2, 2)), D.Lin(2, 1, 3))
    net[1].register_buffer("running", lib.zeros(2))
    net[1].register_buffer("scratch", lib.ones(1), persistent=False)
    return net


def keys_of(it):
    return [k for k, _ in it]


# ---------------------------------------------------------------- registration and iteration

def test_named_members_prefix_recurse_duplicates():
    def sc(lib, log):
        D = defs(lib)
        net = Tree(lib)
        shared = D.Lin(2, 2, 7)
        net.add_module("s1", shared)
        net.add_module("s2", shared)
        net.tied = lib.nn.Parameter(lib.ones(1))
        net.tied2 = net.tied
        log("params", keys_of(net.named_parameters()))
        log("params prefix", keys_of(net.named_parameters(prefix="model")))
        log("params norec", keys_of(net.named_parameters(recurse=False)))
        log("params dup", keys_of(net.named_parameters(remove_duplicate=False)))
        log("buffers", keys_of(net.named_buffers()), keys_of(net.named_buffers(prefix="p", recurse=False)))
        log("children", keys_of(net.named_children()))
        log("modules", keys_of(net.named_modules()), keys_of(net.named_modules(prefix="m", remove_duplicate=False)))
        log("n", len(list(net.parameters())), len(list(net.buffers())), len(list(net.modules())),
            len(list(net.children())))
        log("getsub", type(net.get_submodule("1.1")).__name__, net.get_parameter("1.1.bias"),
            net.get_buffer("1.running"))
        for target, fn in [("1.9", net.get_submodule), ("1.running.x", net.get_submodule),
                           ("1.1.nope", net.get_parameter), ("1.running", net.get_parameter),
                           ("1.1.weight", net.get_buffer)]:
            try:
                fn(target)
            except AttributeError as e:
                log("err", msg(e))
    events(sc)


def test_setattr_rules_and_errors():
    def sc(lib, log):
        D = defs(lib)
        nn = lib.nn
        m = D.Lin(2, 2)

        def attempt(f):
            try:
                f()
                log("ok")
            except Exception as e:
                log("err", type(e).__name__, msg(e).replace("hookgrad", "torch").replace("torch.nn.modules.module.", ""))
        attempt(lambda: setattr(m, "weight", lib.ones(2)))
        attempt(lambda: setattr(m, "weight", None))
        log("weight", m.weight, "weight" in m._parameters)
        attempt(lambda: m.register_parameter("a.b", None))
        attempt(lambda: m.register_parameter("", None))
        attempt(lambda: m.register_parameter(1, None))
        attempt(lambda: m.register_parameter("addmm", None))
        attempt(lambda: m.register_parameter("p", lib.ones(1)))
        attempt(lambda: m.register_parameter("p", nn.Parameter(lib.ones(1)) * 2))
        attempt(lambda: m.register_buffer("a.b", None))
        attempt(lambda: m.register_buffer("", None))
        attempt(lambda: m.register_buffer("bias", None))
        attempt(lambda: m.register_buffer("q", 3))
        attempt(lambda: m.add_module("a.b", None))
        attempt(lambda: m.add_module("", None))
        attempt(lambda: m.add_module("bias", D.Relu()))
        attempt(lambda: m.add_module("x", 3))
        m.child = D.Relu()
        attempt(lambda: setattr(m, "child", 3))
        m.register_buffer("buf", lib.ones(1))
        attempt(lambda: setattr(m, "buf", 3))
        m.buf = lib.zeros(2)
        log("buf", m.buf)
        # reassigning a name moves it between the dicts
        m.child = nn.Parameter(lib.ones(1))
        log("moved", sorted(m._parameters), sorted(m._modules))
        m.child = D.Relu()
        log("moved back", sorted(m._parameters), sorted(m._modules))
        del m.child
        del m.buf
        log("deleted", sorted(m._modules), sorted(m._buffers))
        attempt(lambda: m.nothing)
        m.plain = 3
        log("plain", m.plain, "plain" in m.__dict__)
        log("dir", [k for k in dir(m) if k in ("weight", "bias", "plain", "training", "forward")])
        log("training", m.training, m.eval().training, m.train().training)
        attempt(lambda: m.train("yes"))
    events(sc)


def test_train_eval_zero_grad_requires_grad_apply():
    def sc(lib, log):
        net = Tree(lib)
        net.eval()
        log("eval", [m.training for m in net.modules()])
        net.train()
        net[1].eval()
        log("mixed", [m.training for m in net.modules()])
        x = X(lib, (1, 2))
        net(x).sum().backward()
        net.zero_grad(set_to_none=False)
        log("zeroed", [p.grad for p in net.parameters()])
        net.zero_grad()
        log("none", [p.grad for p in net.parameters()])
        net.requires_grad_(False)
        log("rg", [p.requires_grad for p in net.parameters()])
        seen = []
        net.apply(lambda m: seen.append(type(m).__name__))
        log("apply", seen)
    events(sc)


def test_dtype_conversions_keep_identity():
    def sc(lib, log):
        net = Tree(lib)
        net[1].register_buffer("count", lib.zeros(1, dtype=lib.int64))
        w = net[0].weight
        net(X(lib, (1, 2))).sum().backward()
        net.double()
        log("double", w is net[0].weight, str(w.dtype), str(w.grad.dtype), str(net[1].running.dtype),
            str(net[1].count.dtype))
        net.to(lib.float16)
        log("half", str(w.dtype), str(net[1].running.dtype))
        net.float()
        log("float", str(w.dtype), str(w.grad.dtype), [str(p.dtype) for p in net.parameters()])
        net.half()
        log("half2", str(w.dtype))
        net.to(dtype=lib.float64)
        log("to kw", str(w.dtype))
        try:
            net.to(lib.int32)
        except TypeError as e:
            log("err", msg(e))
        out = net(X(lib, (1, 2)).double())
        log("out", str(out.dtype))
    events(sc)


# ---------------------------------------------------------------- state_dict / load_state_dict

def test_state_dict_keys_metadata_and_hook_order():
    def sc(lib, log):
        net = Tree(lib)
        for name, m in net.named_modules():
            nm = name or "root"
            m.register_state_dict_pre_hook(lambda mod, prefix, keep, nm=nm: log("pre", nm, prefix, keep))

            def post(mod, sd, prefix, meta, nm=nm):
                log("post", nm, prefix, sorted(sd.keys()), meta)
            m.register_state_dict_post_hook(post)
        sd = net.state_dict()
        log("keys", list(sd.keys()), dict(sd._metadata))
        log("detached", [v.requires_grad for v in sd.values()])
        sd2 = net.state_dict(keep_vars=True, prefix="model.")
        log("keep_vars", list(sd2.keys()), [v.requires_grad for v in sd2.values()])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            dest = OrderedDict()
            net.state_dict(dest, "p.")
        log("positional", list(dest.keys()), [str(x.message)[:40] for x in w])
    events(sc)


def test_state_dict_private_and_public_post_hooks():
    def sc(lib, log):
        net = Tree(lib)
        net._register_state_dict_hook(lambda m, sd, p, meta: OrderedDict(root_only=lib.ones(1)))
        net[1]._register_state_dict_hook(lambda m, sd, p, meta: OrderedDict(ignored=lib.ones(1)))
        log("private", list(net.state_dict().keys()))

        def pub(m, sd, p, meta):
            return sd
        net[0].register_state_dict_post_hook(pub)
        try:
            net.state_dict()
        except RuntimeError as e:
            log("err", msg(e))
        try:
            net[2]._register_state_dict_hook(pub)
        except RuntimeError as e:
            log("err", msg(e))
    events(sc)


def test_load_state_dict_hooks_and_keys():
    def sc(lib, log):
        net = Tree(lib)
        src = Tree(lib)
        with lib.no_grad():
            for p in src.parameters():
                p.mul_(2)
        for name, m in net.named_modules():
            nm = name or "root"

            def pre(mod, sd, prefix, meta, strict, missing, unexpected, errors, nm=nm):
                log("pre", nm, prefix, sorted(sd.keys()), meta, strict, list(missing))
            m.register_load_state_dict_pre_hook(pre)
            m._register_load_state_dict_pre_hook(
                lambda sd, prefix, *rest, nm=nm: log("private pre", nm, prefix, len(rest)))
            m.register_load_state_dict_post_hook(lambda mod, keys, nm=nm: log("post", nm, keys.missing_keys,
                                                                               keys.unexpected_keys))
        r = net.load_state_dict(src.state_dict())
        log("result", repr(r), net[0].weight)
        sd = src.state_dict()
        del sd["0.bias"]
        sd["extra"] = lib.ones(1)
        sd["1.zzz"] = lib.ones(1)
        r = net.load_state_dict(sd, strict=False)
        log("nonstrict", repr(r), r.missing_keys, r.unexpected_keys)
    events(sc)


def test_load_state_dict_errors_all_reported():
    def sc(lib, log):
        net = Tree(lib)
        sd = Tree(lib).state_dict()
        del sd["0.bias"]
        del sd["2.weight"]
        sd["extra"] = lib.ones(1)
        sd["1.1.weight"] = lib.ones(5, 5)
        sd["1.running"] = "not a tensor"
        before = [p.clone() for p in net.parameters()]
        try:
            net.load_state_dict(sd)
        except RuntimeError as e:
            log("err", str(e))
        # (hookgrad leaves the module unchanged on failure; torch copies what it could: not compared)
        try:
            net.load_state_dict([1, 2])
        except TypeError as e:
            log("type", str(e))
        # a post hook can clear the lists and make strict loading succeed
        net2 = Tree(lib)

        def clear(m, keys):
            keys.missing_keys.clear()
            keys.unexpected_keys.clear()
        net2.register_load_state_dict_post_hook(clear)
        sd = Tree(lib).state_dict()
        del sd["0.bias"]
        log("cleared", repr(net2.load_state_dict(sd)))
        net2.register_load_state_dict_post_hook(lambda m, k: 1)
        try:
            net2.load_state_dict(Tree(lib).state_dict())
        except AssertionError as e:
            log("assert", str(e))
        # 0-dim param from a 1-dim checkpoint entry
        m = lib.nn.Module()
        m.s = lib.nn.Parameter(lib.tensor(1.0))
        m.load_state_dict({"s": lib.tensor([5.0])})
        log("scalar", m.s)
        del before
    events(sc)


def test_load_state_dict_pre_hook_renames_and_assign():
    def sc(lib, log):
        net = Tree(lib)

        def rename(sd, prefix, *rest):
            for k in list(sd.keys()):
                if k.startswith(prefix + "old."):
                    sd[prefix + k[len(prefix) + 4:]] = sd.pop(k)
        net[1]._register_load_state_dict_pre_hook(rename)
        sd = Tree(lib).state_dict()
        sd = OrderedDict((("1.old." + k[2:]) if k.startswith("1.") else k, v) for k, v in sd.items())
        log("renamed", repr(net.load_state_dict(sd)))
        w = net[0].weight
        new = Tree(lib).state_dict()
        net.load_state_dict(new, assign=True)
        log("assign", w is net[0].weight, type(net[0].weight).__name__, net[0].weight.requires_grad,
            net[1].running is new["1.running"])
    events(sc)


def test_load_state_dict_leaves_module_unchanged_on_failure():
    import hookgrad
    net = Tree(hookgrad)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    ids = {k: id(v) for k, v in net.state_dict(keep_vars=True).items()}
    sd = Tree(hookgrad).state_dict()
    for v in sd.values():
        v.add_(1)
    sd["1.1.weight"] = hookgrad.ones(5, 5)
    with pytest.raises(RuntimeError, match="size mismatch for 1.1.weight: copying a param with shape "
                                           r"torch.Size\(\[5, 5\]\) from checkpoint, the shape in current model is "
                                           r"torch.Size\(\[2, 3\]\)."):
        net.load_state_dict(sd)
    with pytest.raises(RuntimeError):
        net.load_state_dict(sd, assign=True)
    after = net.state_dict(keep_vars=True)
    assert {k: id(v) for k, v in after.items()} == ids
    for k, v in after.items():
        np.testing.assert_array_equal(v.detach().numpy(), before[k].numpy())


# ---------------------------------------------------------------- repr, containers

def test_reprs():
    def sc(lib, log):
        D = defs(lib)
        nn = lib.nn
        net = Tree(lib)
        log(repr(net))
        log(repr(nn.Sequential(OrderedDict(a=D.Lin(1, 1), b=nn.Sequential()))))
        log(repr(nn.ModuleList([D.Lin(2, 2), D.Lin(2, 2), D.Lin(3, 3), D.Lin(2, 2)])))
        log(repr(nn.ModuleList([Tree(lib), Tree(lib)])))
        log(repr(nn.ModuleDict({"x": D.Relu(), "y": D.Lin(1, 2)})))
        log(repr(nn.ParameterList([nn.Parameter(lib.ones(2, 3)), lib.zeros(2, dtype=lib.float64), "s"])))
        log(repr(nn.ParameterDict({"b": nn.Parameter(lib.ones(2, 3)), "a": lib.zeros(2)})))
        log(repr(nn.Module()), repr(D.Relu()), repr(nn.ModuleList()), repr(nn.ModuleDict()))

        class Multi(nn.Module):
            def extra_repr(self):
                return "a=1\nb=2"
        m = Multi()
        log(repr(m))
        m.c = D.Lin(1, 1)
        log(repr(m))
    events(sc)


def test_sequential_api():
    def sc(lib, log):
        D = defs(lib)
        nn = lib.nn
        s = nn.Sequential(D.Lin(2, 3, 1), D.Relu(), D.Lin(3, 2, 2))
        x = X(lib, (1, 2))
        log("fwd", s(x), s[:2](x))
        log("types", type(s[1:]).__name__, len(s[1:]), list(s[::2]._modules.keys()), type(s[-1]).__name__)
        try:
            s[3]
        except IndexError as e:
            log("idx", str(e))
        s.append(D.Relu())
        s.insert(1, D.Lin(3, 3, 4))
        s.insert(-1, D.Relu())
        log("keys", list(s._modules.keys()), [type(m).__name__ for m in s])
        del s[1]
        log("del", list(s._modules.keys()), [type(m).__name__ for m in s])
        s.extend([D.Relu(), D.Relu()])
        log("len", len(s), type(s.pop(0)).__name__, len(s))
        s[0] = D.Lin(2, 2)
        log("set", type(s[0]).__name__)
        t = nn.Sequential(D.Relu()) + nn.Sequential(D.Relu(), D.Relu())
        log("add", len(t), len(t * 2), len(2 * t))
        t += nn.Sequential(D.Relu())
        log("iadd", len(t), list(t._modules.keys()))
        for bad in (lambda: t + 1, lambda: t * 0, lambda: t * "a", lambda: t.insert(9, D.Relu()),
                    lambda: t.insert(0, 3)):
            try:
                bad()
            except Exception as e:
                log("err", type(e).__name__)
        log("dir", [k for k in dir(s) if k.isdigit()])
    events(sc)


def test_modulelist_moduledict():
    def sc(lib, log):
        D = defs(lib)
        nn = lib.nn
        ml = nn.ModuleList([D.Relu(), D.Lin(1, 1)])
        ml.append(D.Relu())
        ml.extend([D.Lin(1, 1)])
        ml.insert(1, D.Relu())
        ml += [D.Relu()]
        log("ml", len(ml), [type(m).__name__ for m in ml], list(ml._modules.keys()))
        log("slice", type(ml[1:3]).__name__, len(ml[1:3]), type(ml[-1]).__name__)
        del ml[0]
        log("del", list(ml._modules.keys()), type(ml.pop(1)).__name__, len(ml))
        ml[0] = D.Lin(2, 2)
        log("params", len(list(ml.parameters())), len(ml + nn.ModuleList([D.Relu()])))
        try:
            ml[10]
        except IndexError as e:
            log("idx", str(e))
        try:
            ml.extend(3)
        except TypeError as e:
            log("ext", str(e))
        try:
            ml(1)
        except NotImplementedError as e:
            log("call", str(e))
        md = nn.ModuleDict({"b": D.Relu(), "a": D.Lin(1, 1)})
        md["c"] = D.Relu()
        md.update([("d", D.Relu())])
        log("md", list(md.keys()), "a" in md, len(md), type(md.pop("a")).__name__, list(md))
        log("items", [(k, type(v).__name__) for k, v in md.items()], len(list(md.values())))
        for bad in (lambda: md.update(3), lambda: md.update([("a",)]), lambda: md.update([3])):
            try:
                bad()
            except Exception as e:
                log("err", type(e).__name__, str(e))
        md.clear()
        log("cleared", len(md))
    events(sc)


def test_parameterlist_parameterdict():
    def sc(lib, log):
        nn = lib.nn
        pl = nn.ParameterList([lib.ones(2), nn.Parameter(lib.zeros(1))])
        pl.append(lib.ones(3))
        pl.extend([lib.ones(1)])
        log("pl", len(pl), [type(p).__name__ for p in pl], [k for k, _ in pl.named_parameters()])
        log("slice", len(pl[1:]), pl[-1])
        pl[0] = lib.zeros(2)
        log("set", pl[0], isinstance(pl[0], nn.Parameter))
        try:
            pl()
        except RuntimeError as e:
            log("call", str(e))
        try:
            pl.extend(lib.ones(2))
        except TypeError as e:
            log("ext", str(e))
        pd = nn.ParameterDict({"b": lib.ones(1), "a": lib.zeros(2)})
        pd["c"] = nn.Parameter(lib.ones(3))
        pd.update(OrderedDict(z=lib.ones(1), y=lib.ones(1)))
        log("pd", list(pd.keys()), [k for k, _ in pd.named_parameters()], "a" in pd, len(pd))
        log("pop", pd.pop("a"), pd.get("nope", 7), pd.setdefault("n", lib.ones(1)).shape)
        log("popitem", pd.popitem()[0], list(reversed(pd)))
        pd2 = pd | {"q": lib.ones(1)}
        log("or", list(pd2.keys()), list(pd.copy().keys()))
        try:
            pd[1] = lib.ones(1)
        except TypeError as e:
            log("key", str(e))
        pd.clear()
        log("cleared", len(pd), list(pd.named_parameters()))
    events(sc)


# ---------------------------------------------------------------- copying and pickling

def _hook_fn(m, a, o):
    return None


def test_deepcopy_copies_hooks():
    def sc(lib, log):
        D = defs(lib)
        m = D.Lin(2, 2)
        calls = []
        h = m.register_forward_hook(lambda mod, a, o: calls.append(mod is m))
        m.register_load_state_dict_pre_hook(lambda mod, *a: calls.append(("load", mod is m)))
        m.register_full_backward_hook(lambda mod, gi, go: calls.append(("bw", mod is m)))
        c = copy.deepcopy(m)
        log("copied", len(c._forward_hooks), len(c._load_state_dict_pre_hooks), c.weight is m.weight,
            c._is_full_backward_hook)
        c(X(lib, (1, 2))).sum().backward()
        c.load_state_dict(c.state_dict())
        h.remove()
        log("calls", calls, len(c._forward_hooks), len(m._forward_hooks))
        lc = copy.deepcopy(lib.nn.Sequential(D.Relu(), D.Lin(1, 1)))
        log("seq", [type(x).__name__ for x in lc])
    events(sc)


def test_pickle_module_and_lambda_hooks():
    def sc(lib, log):
        D = defs(lib)
        m = lib.nn.Sequential(lib.nn.Module())
        m.register_buffer("b", lib.ones(2))
        m.p = lib.nn.Parameter(lib.ones(1))
        m.register_forward_hook(_hook_fn)
        r = pickle.loads(pickle.dumps(m))
        log("roundtrip", type(r).__name__, list(r.state_dict().keys()), len(r._forward_hooks),
            type(r.p).__name__, r.p.requires_grad)
        m.register_forward_hook(lambda *a: None)
        try:
            pickle.dumps(m)
        except Exception as e:
            log("lambda", type(e).__name__)
        del D
    events(sc)


def test_setstate_fills_missing_hook_dicts():
    import hookgrad
    m = hookgrad.nn.Module()
    state = dict(m.__dict__)
    for k in ("_forward_hooks_always_called", "_state_dict_pre_hooks", "_backward_pre_hooks",
              "_is_full_backward_hook", "_non_persistent_buffers_set"):
        del state[k]
    n = hookgrad.nn.Module.__new__(hookgrad.nn.Module)
    n.__setstate__(state)
    assert n._forward_hooks_always_called == {} and n._is_full_backward_hook is None
    n(1) if False else None
    assert repr(n) == "Module()"
