"""hookgrad's DistributedDataParallel (MPI) against PyTorch's (gloo), side by side in the same 2 processes:
comm-hook call sequences (buckets, rebuild), gradients, parameters after SGD steps, no_sync,
find_unused_parameters, static_graph, gradient_as_bucket_view, broadcast_buffers, the built-in comm hooks,
the errors and the logging data. One launch; each rank reports what it compared."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import launch  # noqa: E402

import pytest  # noqa: E402

WORKER = r'''
import inspect, warnings
import numpy as np
tdist = gloo()
import torch
import hookgrad as hg, hookgrad.distributed as hdist
hdist.init_process_group("mpi")
warnings.simplefilter("ignore")
out = {}


def pair(make_t, make_h, seed=0):
    """The same module in both libraries, torch's initial weights copied into hookgrad's."""
    torch.manual_seed(seed)
    tm, hm = make_t(torch), make_h(hg)
    with hg.no_grad():
        for (n, hp), tp in zip(hm.state_dict().items(), tm.state_dict().values()):
            hp.copy_(hg.tensor(tp.detach().numpy()))
    return tm, hm


def mlp(lib, unused=False):
    nn = lib.nn
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(6, 8)
            self.b = nn.Linear(8, 8)
            self.c = nn.Linear(8, 3)
            self.skip = nn.Linear(8, 8)
        def forward(self, x):
            h = self.b(self.a(x).tanh()).tanh()
            if not unused:
                h = h + self.skip(h)
            return self.c(h)
    return M().double()


def recorder(log, lib):
    dist = tdist if lib is torch else hdist
    def hook(state, bucket):
        log.append((bucket.index(), bucket.is_last(), [tuple(p.shape) for p in bucket.parameters()]))
        t = bucket.buffer()
        t.div_(dist.get_world_size())
        return dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0])
    return hook


def data(rank, it, n=4):
    return np.random.default_rng(100 * it + rank).standard_normal((n, 6))


def run(td, hd, iters=3, lr=0.1, unused=False, zero=True):
    """Train both; per iteration the largest gradient difference (None-ness must agree)."""
    topt, hopt = torch.optim.SGD(td.parameters(), lr=lr), hg.optim.SGD(hd.parameters(), lr=lr)
    diffs = []
    dtype = next(td.parameters()).detach().numpy().dtype
    for it in range(iters):
        x = data(RANK, it).astype(dtype)
        if zero:
            topt.zero_grad(); hopt.zero_grad()
        td(torch.tensor(x)).pow(2).mean().backward()
        hd(hg.tensor(x)).pow(2).mean().backward()
        d = 0.0
        for (n, a), b in zip(td.named_parameters(), hd.parameters()):
            assert (a.grad is None) == (b.grad is None), (it, n, a.grad, b.grad)
            if a.grad is not None:
                d = max(d, float(np.abs(a.grad.numpy() - b.grad.numpy()).max()))
        diffs.append(d)
        topt.step(); hopt.step()
    pd = max(float(np.abs(a.detach().numpy() - b.detach().numpy()).max())
             for a, b in zip(td.parameters(), hd.parameters()))
    return diffs, pd


def with_hooks(kw, iters=3, unused=False):
    tm, hm = pair(lambda l: mlp(l, unused), lambda l: mlp(l, unused))
    td = torch.nn.parallel.DistributedDataParallel(tm, **kw)
    hd = hg.nn.parallel.DistributedDataParallel(hm, **kw)
    tl, hl = [], []
    td.register_comm_hook(None, recorder(tl, torch)); hd.register_comm_hook(None, recorder(hl, hg))
    topt, hopt = torch.optim.SGD(td.parameters(), lr=0.1), hg.optim.SGD(hd.parameters(), lr=0.1)
    for it in range(iters):
        x = data(RANK, it)
        topt.zero_grad(); hopt.zero_grad()
        td(torch.tensor(x)).sum().backward(); hd(hg.tensor(x)).sum().backward()
        tl.append("--"); hl.append("--")
        topt.step(); hopt.step()
    pd = max(float(np.abs(a.detach().numpy() - b.detach().numpy()).max())
             for a, b in zip(td.parameters(), hd.parameters()))
    return tl, hl, pd, td, hd

# 1. comm-hook call sequences: small caps (several buckets after the rebuild), default caps, unused params
seqs = {}
for name, kw, unused in (("small", dict(bucket_cap_mb=0.0005), False), ("default", {}, False),
                         ("first_small", dict(bucket_cap_mb=0.001, find_unused_parameters=True), True),
                         ("unused", dict(bucket_cap_mb=0.0005, find_unused_parameters=True), True),
                         ("static", dict(bucket_cap_mb=0.0005, static_graph=True), True),
                         ("as_view", dict(bucket_cap_mb=0.0005, gradient_as_bucket_view=True), False)):
    tl, hl, pd, td, hd = with_hooks(kw, unused=unused)
    seqs[name] = (tl, hl, pd)
    if name == "small":
        tlog, hlog = td._get_ddp_logging_data(), hd._get_ddp_logging_data()
out["seqs"] = seqs
out["log"] = (tlog, hlog)

# 2. gradients equal the single-process full-batch gradient; parameters after SGD steps equal torch's
tm, hm = pair(mlp, mlp)
import copy
single = copy.deepcopy(hm)
hd = hg.nn.parallel.DistributedDataParallel(hm)
td = torch.nn.parallel.DistributedDataParallel(tm)
x = data(RANK, 0)
hd(hg.tensor(x)).pow(2).mean().backward()
full = np.concatenate([data(r, 0) for r in range(WORLD)])
single(hg.tensor(full)).pow(2).mean().backward()
out["full_batch"] = max(float(np.abs(a.grad.numpy() - b.grad.numpy()).max())
                        for a, b in zip(hd.parameters(), single.parameters()))
tm, hm = pair(mlp, mlp)
out["sgd"] = run(torch.nn.parallel.DistributedDataParallel(tm), hg.nn.parallel.DistributedDataParallel(hm), iters=5)

# 3. no_sync over k micro-batches equals one big batch
tm, hm = pair(mlp, mlp)
single = copy.deepcopy(hm)
hd = hg.nn.parallel.DistributedDataParallel(hm)
td = torch.nn.parallel.DistributedDataParallel(tm)
micro = [data(RANK, k, 2) for k in range(3)]
for i, m in enumerate(micro):
    ctx = hd.no_sync() if i < 2 else __import__("contextlib").nullcontext()
    tctx = td.no_sync() if i < 2 else __import__("contextlib").nullcontext()
    with ctx:
        hd(hg.tensor(m)).pow(2).sum().div(6).backward()
    with tctx:
        td(torch.tensor(m)).pow(2).sum().div(6).backward()
big = np.concatenate([data(r, k, 2) for r in range(WORLD) for k in range(3)])
single(hg.tensor(big)).pow(2).sum().div(6 * WORLD).backward()
out["no_sync"] = (max(float(np.abs(a.grad.numpy() - b.grad.numpy()).max())
                      for a, b in zip(hd.parameters(), single.parameters())),
                  max(float(np.abs(a.grad.numpy() - b.grad.numpy()).max())
                      for a, b in zip(hd.parameters(), td.parameters())))

# 4. options: gradients and parameters against torch
opts = {}
for name, kw, unused in (("find_unused", dict(find_unused_parameters=True), True),
                         ("static", dict(static_graph=True), True),
                         ("static_used", dict(static_graph=True), False),
                         ("as_view", dict(gradient_as_bucket_view=True, bucket_cap_mb=0.0005), False)):
    tm, hm = pair(lambda l: mlp(l, unused), lambda l: mlp(l, unused))
    td = torch.nn.parallel.DistributedDataParallel(tm, **kw)
    hd = hg.nn.parallel.DistributedDataParallel(hm, **kw)
    opts[name] = run(td, hd, iters=4, unused=unused, zero=name != "as_view")
    if name == "as_view":
        bufs = [b.buf for b in hd.reducer.buckets]
        opts["views"] = all(any(np.shares_memory(p.grad._data, b) for b in bufs) for p in hd.parameters())
out["opts"] = opts

# 5. broadcast_buffers: BatchNorm running stats come from rank 0; the module state is rank 0's at construction
def bn(lib):
    return lib.nn.Sequential(lib.nn.Linear(6, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2)).double()
tm, hm = pair(bn, bn, seed=RANK)     # different weights on each rank
hd = hg.nn.parallel.DistributedDataParallel(hm)
td = torch.nn.parallel.DistributedDataParallel(tm)
out["init_sync"] = max(float(np.abs(a.detach().numpy() - b.detach().numpy()).max())
                       for a, b in zip(td.state_dict().values(), hd.state_dict().values()))
out["bn"] = run(td, hd, iters=3)
out["bn_stats"] = (hd.module[1].running_mean.numpy().tolist(), td.module[1].running_mean.numpy().tolist())
tm, hm = pair(bn, bn)
hd = hg.nn.parallel.DistributedDataParallel(hm, broadcast_buffers=False)
td = torch.nn.parallel.DistributedDataParallel(tm, broadcast_buffers=False)
run(td, hd, iters=2)
out["bn_local"] = (hd.module[1].running_mean.numpy().tolist(), td.module[1].running_mean.numpy().tolist())
out["keys"] = (list(td.state_dict()), list(hd.state_dict()))

# 6. built-in comm hooks
builtin = {}
for kind in ("ALLREDUCE", "FP16_COMPRESS"):
    tm, hm = pair(lambda l: mlp(l).float(), lambda l: mlp(l).float())
    td = torch.nn.parallel.DistributedDataParallel(tm)
    hd = hg.nn.parallel.DistributedDataParallel(hm)
    td._register_builtin_comm_hook(getattr(tdist.BuiltinCommHookType, kind))
    hd._register_builtin_comm_hook(getattr(hdist.BuiltinCommHookType, kind))
    builtin[kind] = run(td, hd, iters=3)
out["builtin"] = builtin

# 7. errors: type and text as torch's
def err(f):
    try:
        f()
    except Exception as e:
        return type(e).__name__, str(e)
    return None
errors = {}
def both(name, ft, fh):
    errors[name] = (err(ft), err(fh))
tm, hm = pair(mlp, mlp)
td, hd = torch.nn.parallel.DistributedDataParallel(tm), hg.nn.parallel.DistributedDataParallel(hm)
def bad_bucket_t(state, bucket: int): pass
def bad_bucket_h(state, bucket: int): pass
def bad_ret_t(state, bucket) -> int: pass
def bad_ret_h(state, bucket) -> int: pass
def good_t(state, bucket: tdist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    return tdist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
def good_h(state, bucket: hdist.GradBucket) -> hg.futures.Future[hg.Tensor]:
    return hdist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
both("not_callable", lambda: td.register_comm_hook(None, 3), lambda: hd.register_comm_hook(None, 3))
both("bucket_annotation", lambda: td.register_comm_hook(None, bad_bucket_t), lambda: hd.register_comm_hook(None, bad_bucket_h))
both("return_annotation", lambda: td.register_comm_hook(None, bad_ret_t), lambda: hd.register_comm_hook(None, bad_ret_h))
both("good", lambda: td.register_comm_hook(None, good_t), lambda: hd.register_comm_hook(None, good_h))
both("twice", lambda: td.register_comm_hook(None, good_t), lambda: hd.register_comm_hook(None, good_h))
both("builtin_after", lambda: td._register_builtin_comm_hook(tdist.BuiltinCommHookType.ALLREDUCE),
     lambda: hd._register_builtin_comm_hook(hdist.BuiltinCommHookType.ALLREDUCE))
both("no_grad_params", lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.ReLU()),
     lambda: hg.nn.parallel.DistributedDataParallel(hg.nn.ReLU()))
both("device_ids", lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2), device_ids=[0]),
     lambda: hg.nn.parallel.DistributedDataParallel(hg.nn.Linear(2, 2), device_ids=[0]))
# an unused parameter without find_unused_parameters: the next forward raises
tm, hm = pair(lambda l: mlp(l, True), lambda l: mlp(l, True))
td, hd = torch.nn.parallel.DistributedDataParallel(tm), hg.nn.parallel.DistributedDataParallel(hm)
x = data(RANK, 0)
for it in range(2):      # iteration 1: one bucket, which never fills; iteration 2's forward raises
    both(f"unfinished{it}", lambda: td(torch.tensor(x)).sum().backward(), lambda: hd(hg.tensor(x)).sum().backward())
both("static_twice", lambda: td._set_static_graph(), lambda: hd._set_static_graph())
# parameters that differ across ranks
ts = [torch.zeros(3, 2 + RANK), torch.zeros(4)]
hs = [hg.zeros(3, 2 + RANK), hg.zeros(4)]
both("verify_shape", lambda: tdist._verify_params_across_processes(tdist.group.WORLD, ts),
     lambda: hdist._verify_params_across_processes(hdist.group.WORLD, hs))
both("verify_count", lambda: tdist._verify_params_across_processes(tdist.group.WORLD, ts[:1 + RANK]),
     lambda: hdist._verify_params_across_processes(hdist.group.WORLD, hs[:1 + RANK]))
out["errors"] = errors

# 8. Join: rank 1 runs out of inputs first; the model ends as torch's
tm, hm = pair(mlp, mlp)
td, hd = torch.nn.parallel.DistributedDataParallel(tm), hg.nn.parallel.DistributedDataParallel(hm)
topt, hopt = torch.optim.SGD(td.parameters(), lr=0.1), hg.optim.SGD(hd.parameters(), lr=0.1)
with td.join():
    for it in range(3 - RANK):
        topt.zero_grad(); td(torch.tensor(data(RANK, it))).pow(2).mean().backward(); topt.step()
with hd.join():
    for it in range(3 - RANK):
        hopt.zero_grad(); hd(hg.tensor(data(RANK, it))).pow(2).mean().backward(); hopt.step()
out["join"] = max(float(np.abs(a.detach().numpy() - b.detach().numpy()).max())
                  for a, b in zip(td.parameters(), hd.parameters()))
report(out)
'''


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return launch(tmp_path_factory.mktemp("ddp_oracle"), WORKER).ranks


def test_comm_hook_call_sequences_match_torch(ranks):
    for r in ranks:
        for name, (tl, hl, pd) in r["seqs"].items():
            assert hl == tl, name
            assert pd < 1e-12, name
    small = ranks[0]["seqs"]["small"][0]
    assert small.index("--") == 1 and len(small) > 2 * 3 + 2       # one bucket, then several after the rebuild


def test_gradients_equal_full_batch_and_torch_after_sgd(ranks):
    for r in ranks:
        assert r["full_batch"] < 1e-6
        diffs, pd = r["sgd"]
        assert max(diffs) < 1e-12 and pd < 1e-12


def test_no_sync_equals_one_big_batch(ranks):
    for r in ranks:
        to_full, to_torch = r["no_sync"]
        assert to_full < 1e-6 and to_torch < 1e-12


@pytest.mark.parametrize("name", ["find_unused", "static", "static_used", "as_view"])
def test_options_match_torch(ranks, name):
    for r in ranks:
        diffs, pd = r["opts"][name]
        assert max(diffs) < 1e-12 and pd < 1e-12
    assert all(r["opts"]["views"] for r in ranks)


def test_broadcast_buffers_and_module_state_from_rank0(ranks):
    for r in ranks:
        assert r["init_sync"] < 1e-12
        diffs, pd = r["bn"]
        assert max(diffs) < 1e-12 and pd < 1e-12
        assert r["bn_stats"][0] == pytest.approx(r["bn_stats"][1], abs=1e-12)
        assert r["bn_local"][0] == pytest.approx(r["bn_local"][1], abs=1e-12)
        assert r["keys"][0] == r["keys"][1] and r["keys"][1][0].startswith("module.")
    assert ranks[0]["bn_local"][0] != ranks[1]["bn_local"][0]       # without broadcast: each rank's own


def test_builtin_comm_hooks_match_torch(ranks):
    for r in ranks:
        for kind, (diffs, pd) in r["builtin"].items():
            assert max(diffs) < 1e-6 and pd < 1e-6, kind


def test_errors_match_torch(ranks):
    for r in ranks:
        for name, (t, h) in r["errors"].items():
            assert h == t, name
    assert ranks[0]["errors"]["unfinished1"][1][0] == "RuntimeError"
    assert ranks[1]["errors"]["verify_shape"][1] is not None and ranks[0]["errors"]["verify_count"][1] is not None


def test_join_uneven_inputs_matches_torch(ranks):
    for r in ranks:
        assert r["join"] < 1e-12


def test_logging_data(ranks):
    tlog, hlog = ranks[0]["log"]
    gloo_only = {"gloo_device_transport", "gloo_socket_ifname", "gloo_num_threads"}
    assert set(hlog) == set(tlog) - gloo_only
    for key in ("bucket_sizes", "rebuilt_bucket_sizes", "rebuilt_per_bucket_param_indices", "dtypes", "module_name",
                "prev_iteration_grad_ready_order_indices", "iteration", "num_buckets_reduced", "bucket_cap_bytes",
                "has_rebuilt_buckets", "total_parameter_size_bytes", "world_size", "rank", "comm_hook"):
        assert hlog[key] == tlog[key], key
    for key in ("avg_forward_compute_time", "avg_backward_compute_time", "avg_backward_comm_time",
                "avg_backward_compute_comm_overlap_time"):
        assert hlog[key] > 0, key
