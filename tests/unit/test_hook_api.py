"""Public hook-introspection API beyond PyTorch: Module.hooks()/remove_hooks(), Tensor.hooks(),
op-level hooks (autograd.graph.OpHook). No torch needed."""
import hookgrad as torch
from hookgrad.autograd.graph import OpHook, _op_hooks
from hookgrad.nn.modules.module import global_module_hooks, register_module_forward_hook


def test_module_hooks_lists_kinds_flags_and_order():
    m = torch.nn.Linear(2, 2)
    a = m.register_forward_hook(lambda *a: None, always_call=True)
    b = m.register_forward_hook(lambda *a: None, prepend=True, with_kwargs=True)
    c = m.register_full_backward_hook(lambda *a: None)
    infos = m.hooks()
    assert [(i.kind, i.id, i.flags) for i in infos] == [
        ("forward", b.id, ("with_kwargs",)), ("forward", a.id, ("always_call",)), ("full_backward", c.id, ())]
    a.remove()
    assert [i.id for i in m.hooks()] == [b.id, c.id]


def test_remove_hooks_clears_flag_dicts_and_recurses():
    seq = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    seq.register_forward_hook(lambda *a: None, always_call=True, with_kwargs=True)
    seq[0].register_forward_pre_hook(lambda *a: None)
    seq[1].register_full_backward_pre_hook(lambda *a: None)
    assert seq.remove_hooks(recurse=True) == 3
    assert all(m.hooks() == [] for m in seq.modules())
    assert not seq._forward_hooks_always_called and not seq._forward_hooks_with_kwargs
    out = seq(torch.randn(3, 2, requires_grad=True))     # the model still works
    out.sum().backward()


def test_tensor_hooks_and_global_listing():
    t = torch.ones(2, requires_grad=True)
    h1 = t.register_hook(lambda g: g)
    h2 = t.register_post_accumulate_grad_hook(lambda p: None)
    assert [(i.kind, i.id) for i in t.hooks()] == [("grad", h1.id), ("post_accumulate_grad", h2.id)]
    g = register_module_forward_hook(lambda *a: None)
    try:
        assert [i.id for i in global_module_hooks() if i.kind == "forward"][-1] == g.id
    finally:
        g.remove()


class Recorder(OpHook):
    def __init__(self):
        self.fwd, self.bwd = [], []

    def forward_post(self, name, inputs, output, node):
        self.fwd.append((name, None if node is None else node.name()))
        output.sum()          # ops run inside a hook are not hooked (no recursion)

    def backward_post(self, node, grad_inputs, grad_outputs):
        self.bwd.append(node.name())


def test_op_hooks_see_forward_and_backward_and_cost_nothing_after():
    x = torch.ones(3, requires_grad=True)
    with Recorder() as r:
        y = (x * 2).exp().sum()
        y.backward()
    assert r.fwd == [("Mul", "MulBackward0"), ("Exp", "ExpBackward0"), ("Sum", "SumBackward0")]
    assert r.bwd == ["SumBackward0", "ExpBackward0", "MulBackward0", "torch::autograd::AccumulateGrad"]
    assert len(_op_hooks) == 0
    with torch.no_grad(), Recorder() as r2:
        torch.ones(2) + 1
    assert r2.fwd == [("Add", None)]


def test_node_hooks_and_tensor_remove_hooks():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    a = y.grad_fn.register_prehook(lambda go: None)
    b = y.grad_fn.register_hook(lambda gi, go: None)
    assert [(i.kind, i.id) for i in y.grad_fn.hooks()] == [("node_pre", a.id), ("node", b.id)]
    fired = []
    x.register_hook(lambda g: fired.append(1))
    x.register_post_accumulate_grad_hook(lambda p: fired.append(2))
    assert x.remove_hooks("grad") == 1 and [i.kind for i in x.hooks()] == ["post_accumulate_grad"]
    y.sum().backward()
    assert fired == [2]
