"""tools.per_sample_grads on hookgrad and torch models of the same weights: equal to a loop of
batch-size-1 backward passes (1e-6 in float64) and equal across the two libraries."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.per_sample import per_sample_grads

torch.set_num_threads(1)


def build(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4, padding_idx=0)
            self.conv = nn.Conv1d(4, 6, 3, padding=1, groups=2)
            self.gn = nn.GroupNorm(2, 6)
            self.inorm = nn.InstanceNorm1d(6, affine=True)
            self.conv2 = nn.Conv2d(1, 2, (2, 3), stride=(1, 2), dilation=(2, 1), padding=1)
            self.conv3 = nn.Conv3d(1, 2, 3, padding="same", bias=False)
            self.ln = nn.LayerNorm(6)
            self.fc = nn.Linear(6, 3)
            self.rms = nn.RMSNorm(3)
            self.bn = nn.BatchNorm1d(3)

        def forward(self, idx):
            h = self.emb(idx).transpose(1, 2)                               # (N, 4, L)
            h = self.inorm(self.gn(self.conv(h)).tanh())                     # (N, 6, L)
            c = self.conv2(h.unsqueeze(1)).mean((1, 2, 3))                   # (N,)
            d = self.conv3(h.reshape(h.shape[0], 1, 2, 3, -1)).mean((1, 2, 3, 4))
            h = self.ln(h.transpose(1, 2)) * (c + d).reshape(-1, 1, 1)       # (N, L, 6)
            h = self.rms(self.fc(h))                                         # (N, L, 3); fc shared below
            return self.bn(h.sum(1)) + self.fc(h.new_ones(h.shape[0], 6) * h.mean((1, 2)).unsqueeze(1))

    return Net()


def pair(dtype="float64", seed=0):
    torch.manual_seed(seed)
    tm = build(torch).to(getattr(torch, dtype))
    hm = build(hookgrad).to(getattr(hookgrad, dtype))
    hm.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    tm.eval()
    hm.eval()       # BatchNorm in eval mode: a per-sample affine map
    return tm, hm


IDX = np.random.RandomState(0).randint(0, 10, (5, 6))


def loss(out):
    return (out ** 2).sum() + out[:, 0].sum()


def loop(lib, m, x):
    rows = []
    for n in range(x.shape[0]):
        m.zero_grad()
        loss(m(x[n:n + 1])).backward()
        rows.append({k: p.grad.clone() for k, p in m.named_parameters()})
    m.zero_grad(set_to_none=True)
    return rows


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_equals_loop_of_batch_size_one(dtype):
    tm, hm = pair(dtype)
    results = {}
    for lib, m in ((torch, tm), (hookgrad, hm)):
        x = lib.tensor(IDX)
        ps = per_sample_grads(m, loss, x)
        assert sorted(ps) == sorted(k for k, _ in m.named_parameters())
        assert all(p.grad is None for p in m.parameters())          # .grad untouched
        assert not any(mod._forward_hooks for mod in m.modules())    # handles removed
        rows = loop(lib, m, x)
        for k, v in ps.items():
            assert tuple(v.shape) == (5,) + tuple(dict(m.named_parameters())[k].shape)
            for n in range(5):
                ref = rows[n][k]
                err = float((v[n] - ref).abs().max())
                tol = 1e-6 if dtype == "float64" else 3e-5 * max(1.0, float(ref.abs().max()))
                assert err <= tol, f"{lib.__name__} {k}[{n}]: {err}"
        results[lib.__name__] = {k: v.detach().numpy() for k, v in ps.items()}
    for k, v in results["torch"].items():
        tol = 1e-9 if dtype == "float64" else 1e-4
        np.testing.assert_allclose(results["hookgrad"][k], v, rtol=tol, atol=tol, err_msg=k)


def test_padding_rows_are_zero():
    for lib in (torch, hookgrad):
        lib.manual_seed(0)
        emb = lib.nn.Embedding(5, 3, padding_idx=2)
        ps = per_sample_grads(emb, lambda o: o.sum(), lib.tensor([[2, 1, 1], [2, 2, 4]]))
        w = ps["weight"]
        assert float(w[:, 2].abs().sum()) == 0
        assert w[0, 1].tolist() == [2.0, 2.0, 2.0] and w[1, 4].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])
def test_errors_name_the_module(lib):
    nn = lib.nn
    m = nn.Sequential(nn.Linear(3, 4), nn.GRU(4, 2))
    with pytest.raises(NotImplementedError, match=r"module '1' \(GRU\)"):
        per_sample_grads(m, lambda o: o[0].sum(), lib.zeros(2, 3))
    bn = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    with pytest.raises(NotImplementedError, match=r"module '1' \(BatchNorm1d\).*training mode"):
        per_sample_grads(bn, lambda o: o.sum(), lib.randn(3, 3))
    with pytest.raises(ValueError, match="summed loss"):
        per_sample_grads(nn.Linear(3, 2), lambda o: o, lib.zeros(2, 3))


@pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])
def test_weight_used_outside_its_module_is_caught(lib):
    nn = lib.nn

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(6, 4)

        def forward(self, idx):
            return self.emb(idx) @ self.emb.weight.T        # LM head reads the tied weight directly

    with pytest.raises(RuntimeError, match="'emb.weight' do not add up"):
        per_sample_grads(Tied(), lambda o: (o ** 2).sum(), lib.tensor([[1, 2], [3, 3]]))


@pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])
def test_frozen_and_inplace_after(lib):
    """A frozen layer needs no rule; an in-place op after a module still gives that module's gradient."""
    nn = lib.nn
    lib.manual_seed(1)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.GRU(4, 2), nn.Identity())
    for p in m[2].parameters():
        p.requires_grad_(False)
    m2 = nn.Sequential(m[0], m[1])
    x = lib.randn(4, 3)
    ps = per_sample_grads(m2, lambda o: (o ** 2).sum(), x)
    for n in range(4):
        m2.zero_grad()
        (m2(x[n:n + 1]) ** 2).sum().backward()
        assert float((ps["0.weight"][n] - m2[0].weight.grad).abs().max()) < 1e-5
