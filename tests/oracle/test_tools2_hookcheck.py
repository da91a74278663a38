"""tools.check_hooks and tools.strict_hooks on hookgrad and torch models: the same findings (same
messages) on both libraries, the warning points at the registering line, registration unchanged."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.hookcheck import HookMisuseWarning, check_hooks, returns_value, strict_hooks

LIBS = pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])


def model(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 3), nn.ReLU()), nn.Linear(3, 1))


def misuse(m, lib):
    """Registers one hook of each misuse (and some correct ones); returns the optimizer."""
    def good_acc(p):
        p.grad.mul_(0.5)

    m[0].register_forward_hook(lambda mod, out: None)                               # arity
    m[0].register_forward_hook(lambda mod, a, kw, out: None, with_kwargs=True)      # fine
    m[0].register_forward_pre_hook(lambda mod, a, kw: None)                         # arity (no with_kwargs)
    m[0].weight.register_post_accumulate_grad_hook(lambda grad: grad.mul_(2))       # grad-named + returns
    m[0].bias.register_post_accumulate_grad_hook(good_acc)                          # fine
    m[1].register_backward_hook(lambda mod, gi, go: None)                           # legacy on several ops
    m[2].register_full_backward_hook(lambda mod, go: None)                          # arity
    m[2].weight.register_hook(lambda g: g * 2)                                      # fine: may return
    opt = lib.optim.SGD(m.parameters(), 0.1)
    opt.register_step_post_hook(lambda o, a, k: 3)                                  # returns a value
    opt.register_step_pre_hook(lambda o, a, k: None)                                # fine
    return opt


EXPECTED = [
    ("forward", "module '0'", "takes 2 positional arguments ('mod', 'out') but forward hooks are called with 3"),
    ("forward_pre", "module '0'", "takes 3 positional arguments ('mod', 'a', 'kw') but forward_pre hooks are called with 2"),
    ("post_accumulate_grad", "parameter '0.weight'", "its parameter is named 'grad'"),
    ("post_accumulate_grad", "parameter '0.weight'", "must return None, but this one returns a value"),
    ("backward", "module '1'", "legacy register_backward_hook on Sequential, a module of several ops"),
    ("full_backward", "module '2'", "takes 2 positional arguments ('mod', 'go') but full_backward hooks are called with 3"),
    ("step_post", "optimizer SGD", "must return None"),
]


def _key(problems):
    return sorted((p.kind, p.where, p.problem) for p in problems)


def _matches(problems):
    got = _key(problems)
    assert len(got) == len(EXPECTED), got
    for kind, where, text in EXPECTED:
        assert any(k == kind and w == where and text in p for k, w, p in got), (kind, where, text, got)


@LIBS
def test_check_hooks_finds_each_misuse(lib):
    m = model(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = misuse(m, lib)
    with pytest.warns(HookMisuseWarning) as rec:
        found = check_hooks(m, opt)
    _matches(found)
    assert len(rec) == len(found)
    assert all("<lambda> (test_tools2_hookcheck.py:" in str(w.message) for w in rec)


@LIBS
def test_strict_mode_warns_at_the_registering_line(lib):
    m = model(lib)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with strict_hooks(m) as s:
            opt = misuse(m, lib)
    mine = [w for w in rec if issubclass(w.category, HookMisuseWarning)]
    _matches(s.found)
    assert len(mine) == len(s.found)
    assert {w.filename for w in mine} == {__file__}          # points at misuse(), not at the tool
    # after the context: the library's methods are the originals again, and no check runs
    assert not hasattr(lib.nn.Module.register_forward_hook, "__wrapped__")
    assert not hasattr(lib.Tensor.register_hook, "__wrapped__")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m[0].register_forward_hook(lambda mod, out: None)
    assert len(check_hooks(m, opt, warn=False)) == len(EXPECTED) + 1


def test_same_findings_on_both_libraries():
    res = []
    for lib in (torch, hookgrad):
        m = model(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = misuse(m, lib)
        res.append([(k, w, p.split(" (test_tools2")[0]) for k, w, p in _key(check_hooks(m, opt, warn=False))])
    assert res[0] == res[1]


@LIBS
def test_strict_error_mode_refuses_the_hook(lib):
    m = model(lib)
    with strict_hooks(m, error=True):
        with pytest.raises(TypeError, match=r"strict_hooks: forward hook .*<lambda> .* on module '2'"):
            m[2].register_forward_hook(lambda out: None)
        h = m[2].register_forward_hook(lambda mod, a, out: None)      # a correct one registers normally
    assert len(m[2]._forward_hooks) == 1
    h.remove()
    assert check_hooks(m, warn=False) == []


@LIBS
def test_strict_mode_changes_nothing_else(lib):
    """Same handles, same firing order, same gradients with strict mode on as off."""
    def run(strict):
        m = model(lib)
        log = []
        ctx = strict_hooks(m) if strict else warnings.catch_warnings()
        with ctx:
            hs = [m[0].register_forward_hook(lambda mod, a, o: log.append("f0")),
                  m[0].register_forward_hook(lambda mod, a, o: log.append("f0-first"), prepend=True),
                  m[2].register_full_backward_hook(lambda mod, gi, go: log.append(("b2", go[0].sum().item()))),
                  m[0].weight.register_hook(lambda g: g * 3),
                  m[0].weight.register_post_accumulate_grad_hook(lambda p: log.append("acc"))]
        m(lib.ones(4, 2)).pow(2).sum().backward()
        hs[1].remove()
        m(lib.ones(1, 2)).sum().backward()
        return log, [p.grad.numpy().copy() for p in m.parameters()], [type(h).__name__ for h in hs]

    off, on = run(False), run(True)
    assert on[0] == off[0] and on[2] == off[2]
    for a, b in zip(on[1], off[1]):
        assert np.array_equal(a, b)


def test_returns_value_heuristic():
    assert returns_value(lambda p: p.grad.mul_(2))
    assert returns_value(lambda p: p.grad * 2)
    assert returns_value(lambda p: 3)
    assert not returns_value(lambda p: None)
    assert not returns_value(lambda p: print(p))          # unknown result: not flagged

    def f(p):
        p.grad.zero_()
    assert not returns_value(f)


# ---- node hooks, state_dict / optimizer / global / multi-grad hooks (issue 25, strict mode's other kinds) ----
import importlib  # noqa: E402

from hookgrad.tools.hookcheck import check_node_hook  # noqa: E402
from hookgrad.tools.registry import HookRegistry  # noqa: E402


def _strict(m, lib, register):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with strict_hooks(m) as s:
            register()
    mine = [w for w in caught if w.category is HookMisuseWarning]
    assert len(mine) == len(s.found)
    return s.found, mine


def _node_registrations(lib, via):
    """Node hooks and pre-hooks, good and bad, registered with grad_fn.register_* or through a registry."""
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    reg = HookRegistry()

    def on(node, kind, fn):
        return reg.register(node, kind, fn) if via == "registry" else getattr(
            node, "register_hook" if kind == "node" else "register_prehook")(fn)

    def register():
        a, _ = (x * 2).split(2)
        on(a.grad_fn, "node", lambda gi: None)                       # arity: node hooks take 2
        on(a.grad_fn, "node_pre", lambda go: (go[0], go[1]))         # SplitBackward0 has 2 outputs: fine
        on((x * 2).grad_fn, "node_pre", lambda go: (go[0], None))    # MulBackward0 has 1 output: wrong
        on((x * x).grad_fn, "node", lambda gi, go: (gi[0],))         # MulBackward0 has 2 inputs: wrong
        on((x * x).grad_fn, "node", lambda gi, go: (gi[0], gi[1]))   # fine
        on((x + 1).grad_fn, "node_pre", lambda go: None)             # fine
    return register


NODE_EXPECTED = [
    ("node", "node SplitBackward0", "it takes 1 positional argument ('gi',) but node hooks are called with 2"),
    ("node", "node MulBackward0", "it returns a tuple of 1 value but MulBackward0 has 2 grad_inputs"),
    ("node_pre", "node MulBackward0", "it returns a tuple of 2 values but MulBackward0 has 1 grad_outputs"),
]


def _check(found, expected):
    got = sorted((p.kind, p.where, p.problem) for p in found)
    assert len(got) == len(expected), got
    for kind, where, text in expected:
        assert any(k == kind and w == where and text in p for k, w, p in got), (kind, where, text, got)


@pytest.mark.parametrize("lib,via", [(hookgrad, "direct"), (hookgrad, "registry"), (torch, "registry")],
                         ids=["hookgrad-direct", "hookgrad-registry", "torch-registry"])
def test_strict_mode_checks_node_hooks(lib, via):
    found, warned = _strict(model(lib), lib, _node_registrations(lib, via))
    _check(found, NODE_EXPECTED)
    assert all(p.registered_at and "test_tools2_hookcheck.py:" in p.registered_at for p in found), \
        [p.registered_at for p in found]
    assert all(f"(registered at {p.registered_at})" in str(w.message) for p, w in zip(found, warned))


def test_torch_direct_node_hooks_are_out_of_strict_modes_reach():
    """PyTorch's nodes are C++ types: grad_fn.register_hook cannot be patched (documented); check_node_hook
    checks one explicitly, with the same findings as hookgrad's."""
    found, _ = _strict(model(torch), torch, _node_registrations(torch, "direct"))
    assert found == []
    out = {}
    for lib in (hookgrad, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        node = (x * x).grad_fn
        out[lib.__name__] = [p.message() for p in check_node_hook(node, lambda gi, go: (gi[0],))
                             + check_node_hook(node, lambda go: (go[0], go[0]), "node_pre")]
    assert out["hookgrad"] == out["torch"] and len(out["torch"]) == 2
    with pytest.raises(ValueError, match="kind must be 'node' or 'node_pre'"):
        check_node_hook(node, lambda g: None, "grad")


@pytest.mark.parametrize("lib", [hookgrad, torch], ids=["hookgrad", "torch"])
def test_the_wrong_tuple_lengths_flagged_do_raise_in_backward(lib):
    """What the node checks predict: the backward raises PyTorch's error (both libraries)."""
    for register in (lambda n: n.register_hook(lambda gi, go: (gi[0],)),
                     lambda n: n.register_prehook(lambda go: (go[0], None))):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        register(y.grad_fn)
        with pytest.raises(RuntimeError, match="has returned an incorrect number of values"):
            y.sum().backward()
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: (g,))
    with pytest.raises(TypeError, match="hook returned 'tuple'"):
        (x * 2).sum().backward()


def _other_registrations(m, lib):
    opt = lib.optim.SGD(m.parameters(), 0.1)
    optim_mod = importlib.import_module(lib.__name__ + ".optim.optimizer")
    graph = importlib.import_module(lib.__name__ + ".autograd.graph")
    module_mod = importlib.import_module(lib.__name__ + ".nn.modules.module")
    x = lib.ones(2, requires_grad=True)

    def register():
        m.register_state_dict_pre_hook(lambda mod, prefix: None)                    # arity
        m[0].register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd)        # must return None
        m[0].register_load_state_dict_pre_hook(lambda *a: None)                     # fine
        m[2].register_load_state_dict_pre_hook(lambda mod, sd: None)                # arity
        opt.register_state_dict_pre_hook(lambda o: None)                            # fine
        opt.register_state_dict_post_hook(lambda o: None)                           # arity
        opt.register_load_state_dict_pre_hook(lambda o, sd: sd)                     # fine: may return
        opt.register_load_state_dict_post_hook(lambda o: o)                         # must return None
        module_mod.register_module_forward_hook(lambda mod, out: None).remove()     # arity
        module_mod.register_module_forward_pre_hook(lambda mod, args: None).remove()  # fine
        optim_mod.register_optimizer_step_post_hook(lambda o, a: None).remove()     # arity
        graph.register_multi_grad_hook((x,), lambda g, h: None).remove()            # arity
        graph.register_multi_grad_hook((x,), lambda grads: None).remove()           # fine
        x.register_hook(lambda g: (g,))                                             # a tuple from a tensor hook
    return register, opt


OTHER_EXPECTED = [
    ("state_dict_pre", "module '<root>'", "but state_dict_pre hooks are called with 3 arguments (module, prefix, keep_vars)"),
    ("state_dict", "module '0'", "state_dict hooks must return None, but this one returns a value (ignored or an "
                                 "error; modify the state_dict in place instead)"),
    ("load_state_dict_pre", "module '2'", "but load_state_dict_pre hooks are called with 8 arguments"),
    ("optimizer_state_dict", "optimizer SGD", "but optimizer_state_dict hooks are called with 2 arguments (optimizer, "
                                              "state_dict)"),
    ("optimizer_load_state_dict_post", "optimizer SGD", "must return None"),
    ("forward", "the global module hooks", "but forward hooks are called with 3 arguments"),
    ("step_post", "the global optimizer hooks", "but step_post hooks are called with 3 arguments"),
    ("multi_grad", "register_multi_grad_hook", "but multi_grad hooks are called with 1 argument (grads)"),
    ("tensor", "tensor of shape (2,)", "it returns a tuple, but a tensor hook returns one tensor"),
]


def test_strict_mode_checks_state_dict_optimizer_global_and_multi_grad_hooks_the_same_on_both():
    res = {}
    for lib in (hookgrad, torch):
        m = model(lib)
        register, opt = _other_registrations(m, lib)
        found, _ = _strict(m, lib, register)
        _check(found, OTHER_EXPECTED)
        res[lib.__name__] = sorted((p.kind, p.where, p.problem.split(" (test_tools2")[0]) for p in found)
        # the hooks already on the model: check_hooks finds those it can list (state_dict post-hooks'
        # return values are not judged: PyTorch keeps its private ones, which may return, in the same dict)
        listed = sorted((p.kind, p.where) for p in check_hooks(m, opt, warn=False))
        assert listed == [("load_state_dict_pre", "module '2'"), ("optimizer_load_state_dict_post", "optimizer SGD"),
                          ("optimizer_state_dict", "optimizer SGD"), ("state_dict_pre", "module '<root>'")], listed
    assert res["hookgrad"] == res["torch"]


def test_check_hooks_lists_node_hooks_of_given_tensors_on_hookgrad():
    x = hookgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    y.register_hook(lambda g: None)
    found = check_hooks(model(hookgrad), warn=False, tensors=[y])
    assert [(p.kind, p.where) for p in found] == [("node", "node MulBackward0")]


@pytest.mark.parametrize("lib", [hookgrad, torch], ids=["hookgrad", "torch"])
def test_strict_mode_restores_every_patched_function(lib):
    module_mod = importlib.import_module(lib.__name__ + ".nn.modules.module")
    graph = importlib.import_module(lib.__name__ + ".autograd.graph")
    before = (module_mod.register_module_forward_hook, graph.register_multi_grad_hook, HookRegistry.register,
              lib.nn.Module.register_state_dict_pre_hook)
    node_cls = type((lib.ones(1, requires_grad=True) * 1).grad_fn)
    node_before = node_cls.register_hook
    with strict_hooks(model(lib)):
        assert module_mod.register_module_forward_hook is not before[0]
    assert (module_mod.register_module_forward_hook, graph.register_multi_grad_hook, HookRegistry.register,
            lib.nn.Module.register_state_dict_pre_hook) == before
    assert node_cls.register_hook == node_before
