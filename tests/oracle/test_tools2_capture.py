"""tools.capture, second edition, on hookgrad and torch models of the same weights: streamed to disk
(.npy shards, memory-mapped reload equal to an in-memory capture, a byte budget), a generation-step
index, and phases under activation checkpointing."""
import json
import os

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.capture import CaptureBudgetError, capture, load_capture

torch.set_num_threads(1)
LIBS = pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])


def net(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(3, 4)
            self.block = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
            self.head = nn.Linear(4, 2)
            self.ckpt = False

        def forward(self, x):
            h = self.inp(x).relu()
            if self.ckpt:
                h = lib.utils.checkpoint.checkpoint(self.block, h, use_reentrant=False)
            else:
                h = self.block(h)
            return self.head(h), h          # a tuple output
    return Net()


def pair():
    torch.manual_seed(0)
    t, h = net(torch), net(hookgrad)
    h.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in t.state_dict().items()})
    return t, h


X = np.random.RandomState(0).randn(5, 3).astype(np.float32)


def run(lib, m, times=1):
    x = lib.tensor(X)
    for _ in range(times):
        out, h = m(x)
        (out.pow(2).sum() + h.sum()).backward()


def flat(v):
    if isinstance(v, (tuple, list)):
        return [a for e in v for a in flat(e)]
    return [np.asarray(v)]


def same(a, b):
    fa, fb = flat(a), flat(b)
    return len(fa) == len(fb) and all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(fa, fb))


@LIBS
def test_disk_reload_equals_memory(lib, tmp_path):
    m = pair()[0] if lib is torch else pair()[1]
    with capture(m, "*", grads=True, inputs=True, policy="numpy") as mem:
        run(lib, m, times=2)
    with capture(m, "*", grads=True, inputs=True, to=tmp_path / "cap") as disk:
        run(lib, m, times=2)
        assert same(disk["inp"][1], mem["inp"][1])            # readable inside the context too
    back = load_capture(tmp_path / "cap")
    for c in (disk, back):
        assert c.paths == mem.paths and c.order == mem.order and c.steps == mem.steps
        for p in mem.paths:
            assert c.calls(p) == mem.calls(p) == 2
            for i in range(2):
                assert same(c[p][i], mem[p][i]), (p, i)
                assert same(c.grads[p][i], mem.grads[p][i]), (p, i)
                assert same(c.inputs[p][i], mem.inputs[p][i]), (p, i)
    a = back["block.0"][0]
    assert isinstance(a, np.memmap) and a.dtype == np.float32
    files = sorted(os.listdir(tmp_path / "cap" / "block.0"))
    assert files == ["grad.0.npy", "grad.1.npy", "input.0.0.npy", "input.1.0.npy", "output.0.npy", "output.1.npy"]
    index = json.loads((tmp_path / "cap" / "capture_index.json").read_text())
    assert index["library"] == lib.__name__ and index["bytes"] == disk.bytes > 0


def test_same_capture_on_both_libraries(tmp_path):
    t, h = pair()
    caps = []
    for lib, m in ((torch, t), (hookgrad, h)):
        with capture(m, "*", grads=True, to=tmp_path / lib.__name__):
            run(lib, m)
        caps.append(load_capture(tmp_path / lib.__name__))
    ct, ch = caps
    assert ct.paths == ch.paths and ct.order == ch.order
    for p in ct.paths:
        for a, b in zip(flat(ct[p][0]) + flat(ct.grads[p][0]), flat(ch[p][0]) + flat(ch.grads[p][0])):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=p)


@LIBS
def test_byte_budget(lib, tmp_path):
    m = pair()[0] if lib is torch else pair()[1]
    with pytest.raises(CaptureBudgetError, match=r"writing the output of 'block.2' call 0 \(80 bytes\) would pass "
                                                 r"max_bytes=700"):
        with capture(m, "*", to=tmp_path / "c", max_bytes=700):
            run(lib, m)
    part = load_capture(tmp_path / "c")                  # what was written before the error is loadable
    assert part.calls("block.1") == 1 and part.calls("block.2") == 0 and part.bytes <= 700
    assert not any(mod._forward_hooks for mod in m.modules())
    with pytest.raises(FileExistsError):
        capture(m, to=tmp_path / "c").__enter__()
    with pytest.raises(ValueError, match="max_bytes bounds a disk capture"):
        capture(m, max_bytes=10)


@LIBS
def test_checkpoint_phases(lib):
    m = pair()[0] if lib is torch else pair()[1]
    with capture(m, "block*", grads=True, policy="clone") as plain:
        run(lib, m)
    m.ckpt = True
    with capture(m, "block*", grads=True, policy="clone") as ign:
        run(lib, m)
    with capture(m, "block*", grads=True, policy="clone", recompute="keep") as keep:
        run(lib, m)
    # the recompute stops early once every saved tensor is back (PyTorch's early stop): block.2's output
    # and block's own return are not needed, so their forward hooks do not run again
    assert {p: keep.phases[p] for p in keep.paths} == {
        "block": ["forward"], "block.0": ["forward", "recompute"], "block.1": ["forward", "recompute"],
        "block.2": ["forward"]}
    for p in plain.paths:
        assert ign.calls(p) == 1 and ign.phases[p] == ["forward"]
        assert np.array_equal(ign[p][0].numpy(), plain[p][0].numpy())
        if keep.calls(p) == 2:
            assert np.array_equal(keep[p][1].numpy(), keep[p][0].numpy())      # the recompute reran the same
            assert keep.grads[p][1] is None
        # gradients: once per logical backward, from the forward's outputs, as without checkpointing
        np.testing.assert_allclose(ign.grads[p][0].numpy(), plain.grads[p][0].numpy(), rtol=1e-6, atol=1e-7)
    assert ign.steps["block.0"] == [0] and keep.steps["block.0"] == [0, 0]    # a recompute is not a new step


def lm(lib):
    nn = lib.nn

    class TinyLM(nn.Module):
        """Causal: position t sees tokens <= t only."""
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(11, 8)
            self.q, self.k, self.v = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)
            self.head = nn.Linear(8, 11)

        def forward(self, idx):
            h = self.emb(idx)
            n = idx.shape[1]
            att = self.q(h) @ self.k(h).transpose(1, 2) / 8 ** 0.5
            att = att.masked_fill(lib.ones(n, n).triu(1).bool(), float("-inf")).softmax(-1)
            return self.head(h + att @ self.v(h))
    return TinyLM()


@LIBS
def test_generation_steps_consistent_with_one_clean_forward(lib):
    lib.manual_seed(0)
    model = lm(lib)
    seq = lib.tensor([[1, 5, 2]])
    with lib.no_grad(), capture(model, "head", "emb") as cache:
        for _ in range(4):                                    # greedy decoding, the model called per token
            nxt = model(seq)[:, -1].argmax(-1, keepdim=True)
            seq = lib.cat([seq, nxt], 1)
        clean = model(seq[:, :-1])                            # the last call is step 4
    assert cache.steps["head"] == [0, 1, 2, 3, 4]
    steps = cache.by_step("head")
    assert sorted(steps) == [0, 1, 2, 3, 4]
    ref = clean.numpy()
    for s in range(4):
        (out,) = steps[s]
        n = out.shape[1]
        assert n == 3 + s
        np.testing.assert_allclose(out.numpy(), ref[:, :n], rtol=1e-5, atol=1e-6)
    # the newest position of each step, stacked, is the clean forward's positions 2..5
    new = np.concatenate([steps[s][0].numpy()[:, -1:] for s in range(4)], 1)
    np.testing.assert_allclose(new, ref[:, 2:6], rtol=1e-5, atol=1e-6)


@LIBS
def test_phases_tell_any_hook_where_it_runs(lib):
    from hookgrad.tools.capture import phases
    m = pair()[0] if lib is torch else pair()[1]
    m.ckpt = True
    log = []
    with phases(m) as ph:
        h1 = m.block[0].register_forward_hook(lambda mod, a, o: log.append(("block.0 forward hook", ph.now())))
        x = lib.tensor(X)
        out, h = m(x)
        out.register_hook(lambda g: log.append(("output grad hook", ph.now())))
        log.append(("after forward", ph.now()))
        (out.pow(2).sum() + h.sum()).backward()
        h1.remove()
    # the early-stopping recompute: the non-reentrant checkpoint reruns block.0 inside backward
    assert log == [("block.0 forward hook", "forward"), ("after forward", "forward"),
                   ("output grad hook", "backward"), ("block.0 forward hook", "recompute")]
    assert not any(mod._forward_hooks or mod._forward_pre_hooks for mod in m.modules())
