"""tools.saved_tensor_bytes on hookgrad and torch models of the same weights: on hookgrad the total is
exactly the sum of the nbytes of the arrays the graph keeps; on torch it is what saved_tensors_hooks
sees (= the graph's _saved_* tensors); per module path the two libraries agree."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.saved_bytes import saved_tensor_bytes

torch.set_num_threads(1)


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 10),
                         nn.Tanh(), nn.Dropout(0.0), nn.Linear(10, 3), nn.Softmax(-1))


def gru(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(7, 4)
            self.rnn = nn.GRU(4, 5, batch_first=True)
            self.gn = nn.GroupNorm(1, 5)
            self.head = nn.Linear(5, 2)

        def forward(self, idx):
            h, _ = self.rnn(self.emb(idx.reshape(5, -1)))
            return self.head(torch_like_sigmoid(self.gn(h.transpose(1, 2)).transpose(1, 2)))
    return Net()


def torch_like_sigmoid(x):
    return x.sigmoid() * x


MODELS = {"conv": (mlp, lambda lib: lib.tensor(np.random.RandomState(0).randn(5, 1, 8, 8).astype("float32"))),
          "gru": (gru, lambda lib: lib.tensor(np.random.RandomState(0).randint(0, 7, (5, 3))))}


def build(kind, lib):
    lib.manual_seed(0)
    return MODELS[kind][0](lib)


def pair(kind):
    tm, hm = build(kind, torch), build(kind, hookgrad)
    hm.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return tm, hm


def graph_nodes(t):
    seen, todo, out = set(), [t.grad_fn], []
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        out.append(fn)
        todo.extend(f for f, _ in fn.next_functions)
    return out


def hookgrad_saved_nbytes(loss):
    """The arrays hookgrad's graph keeps for backward (its nodes' saved entries), summed."""
    total = 0
    for fn in graph_nodes(loss):
        for s in getattr(fn, "_saved", ()) or ():
            if isinstance(s, hookgrad.Tensor):
                total += s._data.nbytes
            elif isinstance(s, hookgrad.autograd.saved.SavedTensor) and s._vc is not None:
                total += s._array().nbytes
    return total


def torch_saved_nbytes(loss):
    """torch's SavedVariables as the graph shows them (every _saved_* tensor of every node)."""
    total = 0
    for fn in graph_nodes(loss):
        for k in dir(fn):
            if k.startswith("_saved_"):
                v = getattr(fn, k)
                for t in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(t, torch.Tensor):
                        total += t.numel() * t.element_size()
    return total


@pytest.mark.parametrize("kind", list(MODELS))
def test_hookgrad_total_is_the_sum_of_saved_nbytes(kind):
    m = build(kind, hookgrad)
    x = MODELS[kind][1](hookgrad)
    loss = m(x).pow(2).sum()
    expected = hookgrad_saved_nbytes(loss)          # without the tool
    with saved_tensor_bytes(m) as acct:
        loss2 = m(x).pow(2).sum()
    assert expected > 0 and acct.total == expected == hookgrad_saved_nbytes(loss2)
    assert sum(acct.by_module.values()) == acct.total == sum(acct.by_op.values())
    assert acct.by_module["<outside>"] == 5 * 3 * 4 if kind == "conv" else acct.by_module["<outside>"] == 5 * 3 * 2 * 4


@pytest.mark.parametrize("kind", list(MODELS))
def test_torch_total_is_what_the_graph_saves(kind):
    m = build(kind, torch)
    x = MODELS[kind][1](torch)
    with saved_tensor_bytes(m) as acct:
        loss = m(x).pow(2).sum()
    assert acct.total == torch_saved_nbytes(loss) > 0
    assert sum(acct.by_module.values()) == acct.total
    # by_op is read from the graph when the model returns: everything but the loss's ops
    assert sum(acct.by_op.values()) == acct.total - acct.by_module["<outside>"]


@pytest.mark.parametrize("kind", list(MODELS))
def test_per_module_equal_across_libraries(kind):
    tm, hm = pair(kind)
    res = []
    for lib, m in ((torch, tm), (hookgrad, hm)):
        with saved_tensor_bytes(m) as acct:
            m(MODELS[kind][1](lib)).pow(2).sum().backward()
        res.append(acct)
    t, h = res
    types = {n: type(mod).__name__ for n, mod in hm.named_modules()}
    for path in set(t.by_module) | set(h.by_module):
        a, b = t.by_module.get(path), h.by_module.get(path)
        if types.get(path) in SAVES_OTHERWISE:
            assert (b or 0) < a, (path, a, b)
        else:
            assert a == b, (path, types.get(path), a, b)


# hookgrad keeps less than PyTorch saves here: MaxPool2d saves no int64 indices (found again in backward),
# Embedding's indices and the norms' mean/rstd are kept outside the saved tensors (pack hooks do not see them)
SAVES_OTHERWISE = {"MaxPool2d": "indices", "Embedding": "indices", "GroupNorm": "mean/rstd",
                   "LayerNorm": "bias"}


def test_steps_and_nothing_changed():
    tm, hm = pair("conv")
    for lib, m in ((torch, tm), (hookgrad, hm)):
        x = MODELS["conv"][1](lib)
        m(x).pow(2).sum().backward()
        ref = [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        with saved_tensor_bytes(m) as acct:
            for _ in range(2):
                m(x).pow(2).sum().backward()
        assert len(acct.steps) == 2 and acct.steps[0].total == acct.steps[1].total == acct.total
        assert acct.steps[0].by_module == acct.steps[1].by_module
        for p, r in zip(m.parameters(), ref):
            if lib is torch:
                assert np.array_equal(p.grad.numpy(), (r * 2).numpy())
            else:       # see test_hookgrad_saved_tensors_hooks_change_no_bit
                np.testing.assert_allclose(p.grad.numpy(), (r * 2).numpy(), rtol=1e-5, atol=1e-7)
        assert not any(mod._forward_hooks or mod._forward_pre_hooks for mod in m.modules())
        assert "step 1:" in acct.table() and "Convolution" in acct.table()


def test_hookgrad_saved_tensors_hooks_change_no_bit():
    """Under saved_tensors_hooks the formulas run on the same arrays as without them (as torch: bit-identical)."""
    m = build("conv", hookgrad)
    x = MODELS["conv"][1](hookgrad)
    m(x).pow(2).sum().backward()
    ref = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    with saved_tensor_bytes(m):
        m(x).pow(2).sum().backward()
    assert all(np.array_equal(p.grad.numpy(), r.numpy()) for p, r in zip(m.parameters(), ref))


@pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])
def test_inplace_change_of_a_saved_tensor_is_still_an_error(lib):
    """saved_tensors_hooks drop PyTorch's version check; the tool keeps it, with PyTorch's message."""
    def run(with_tool):
        m = lib.nn.Linear(3, 3)
        with saved_tensor_bytes(m) if with_tool else _null():
            y = m(lib.ones(2, 3)).exp()
            y.add_(1)                            # exp saved its result
            with pytest.raises(RuntimeError) as e:
                y.sum().backward()
        return str(e.value).split(" Hint")[0].replace("torch.", "")
    plain, tool = run(False), run(True)
    assert plain.startswith("one of the variables needed for gradient computation has been modified by an inplace")
    assert tool.split(" (hookgrad")[0] == plain.split(" (hookgrad")[0]


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
