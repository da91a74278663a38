"""DDP and the collectives with tensors on the "cuda" device, on 2 ranks over MPI.

hookgrad's MPI backend stages device tensors through the host: a collective copies the device array to a host
buffer (``_array.to_host``), MPI works on that, and the result is copied back into the tensor's device memory (no
CUDA-aware MPI). Here the CPU stand-in of CuPy (tests/backend/cupylike.py) is the device's array module in each
rank, so the staging runs in CI; the results are compared with torch's DDP over gloo on the CPU in the same ranks.
"""
import numpy as np

from harness import launch

FAKE = '''
import sys
sys.path.insert(0, {tests!r})
from backend import cupylike
cupylike.use_as_cuda()
'''


def _launch(tmp_path, code):
    import os
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return launch(tmp_path, FAKE.format(tests=tests) + code)


def test_collectives_stage_device_tensors_through_the_host(tmp_path):
    res = _launch(tmp_path, '''
import hookgrad as hg, hookgrad.distributed as dist
dist.init_process_group("mpi")
out = {}
t = hg.arange(4, dtype=hg.float32, device="cuda") + RANK
dist.all_reduce(t)
out["all_reduce"] = (t.is_cuda, type(t._data).__name__, t.cpu().tolist())
b = hg.full((3,), float(RANK + 1), device="cuda")
dist.broadcast(b, src=1)
out["broadcast"] = (b.is_cuda, b.cpu().tolist())
parts = [hg.zeros(2, device="cuda") for _ in range(WORLD)]
dist.all_gather(parts, hg.full((2,), float(RANK), device="cuda"))
out["all_gather"] = ([p.is_cuda for p in parts], [p.cpu().tolist() for p in parts])
nc = (hg.arange(6, dtype=hg.float32, device="cuda").reshape(2, 3) * (RANK + 1)).t()     # not contiguous
dist.all_reduce(nc, op=dist.ReduceOp.MAX)
out["noncontig"] = (nc.is_cuda, nc.cpu().tolist())
w = dist.all_reduce(hg.ones(2, device="cuda"), async_op=True)
w.wait()
report(out)
''')
    for r in range(2):
        o = res[r]
        assert o["all_reduce"] == (True, "ndarray", [1.0, 3.0, 5.0, 7.0])
        assert o["broadcast"] == (True, [2.0, 2.0, 2.0])
        assert o["all_gather"] == ([True, True], [[0.0, 0.0], [1.0, 1.0]])
        assert o["noncontig"] == (True, [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]])


def test_ddp_training_on_the_device_matches_torch(tmp_path):
    res = _launch(tmp_path, '''
import numpy as np
import hookgrad as hg, hookgrad.distributed as hdist
from hookgrad import _array
tdist = gloo()
import torch
hdist.init_process_group("mpi")
rng = np.random.default_rng(RANK)
xs, ys = rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)
res = {}
for L, dev in ((torch, "cpu"), (hg, "cuda")):
    L.manual_seed(0)
    m = L.nn.Sequential(L.nn.Linear(5, 4), L.nn.Tanh(), L.nn.Linear(4, 3)).to(dev)
    ddp = L.nn.parallel.DistributedDataParallel(m, bucket_cap_mb=0.0001)
    opt = L.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    x, y = L.tensor(xs).to(dev), L.tensor(ys).to(dev)
    reads = _array.HOST_READS[0]
    for _ in range(3):
        opt.zero_grad()
        L.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    res[L.__name__] = ([p.detach().cpu().numpy() for p in m.parameters()],
                       [p.grad.cpu().numpy() for p in m.parameters()],
                       all(p.is_cuda and p.grad.is_cuda for p in m.parameters()) if L is hg else None,
                       _array.HOST_READS[0] - reads if L is hg else None)
report(res)
''')
    for r in range(2):
        t, h = res[r]["torch"], res[r]["hookgrad"]
        assert h[2] is True                      # parameters and gradients stayed on the device
        assert h[3] > 0                          # the buckets went through the host (staging)
        for a, b in zip(t[0] + t[1], h[0] + h[1]):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    for a, b in zip(res[0]["hookgrad"][0], res[1]["hookgrad"][0]):
        np.testing.assert_array_equal(a, b)      # the ranks agree


def test_ddp_unused_parameters_and_buffers_on_the_device(tmp_path):
    res = _launch(tmp_path, '''
import numpy as np
import hookgrad as hg, hookgrad.distributed as hdist
from backend import cupylike
hdist.init_process_group("mpi")
hg.manual_seed(0)
m = hg.nn.ModuleDict({"a": hg.nn.Linear(4, 3), "b": hg.nn.Linear(4, 3), "bn": hg.nn.BatchNorm1d(3)}).to("cuda")
class Net(hg.nn.Module):
    def __init__(self):
        super().__init__()
        self.m = m
    def forward(self, x, use_b):
        return self.m["bn"](self.m["b" if use_b else "a"](x))
ddp = hg.nn.parallel.DistributedDataParallel(Net(), find_unused_parameters=True)
implicit = cupylike.IMPLICIT[0]
x = hg.full((5, 4), float(RANK + 1), device="cuda")
for step in range(2):
    ddp.zero_grad()
    ddp(x, step == 1).sum().backward()
report({"grads": {k: (None if p.grad is None else (p.grad.is_cuda, p.grad.cpu().tolist()))
                  for k, p in ddp.named_parameters()},
        "running_mean": ddp.module.m["bn"].running_mean.cpu().tolist(),
        "implicit": cupylike.IMPLICIT[0] - implicit})
''')
    for r in range(2):
        assert res[r]["grads"] == res[0]["grads"]                      # averaged over the ranks
        assert len(res[r]["running_mean"]) == 3        # (buffers: broadcast from rank 0 before each forward)
        assert all(g is None or g[0] for g in res[r]["grads"].values())
        assert res[r]["implicit"] == 0, res[r]["implicit"]           # nothing CuPy would read behind the back
