"""SyncBatchNorm across 2 ranks and the Join context manager, against PyTorch.

SyncBatchNorm: PyTorch's refuses CPU tensors, so the oracle is PyTorch's BatchNorm on the concatenated batch in
this (single) process: outputs, input gradients, weight/bias gradients (summed over the ranks) and running stats,
float64, to 1e-6. Join: a toy all_reduce-counting Joinable (as PyTorch's own test_join.py) on uneven inputs, and
DDP under Join against PyTorch's DDP under PyTorch's Join (gloo) in the same worker. The sampler's index lists
are checked in one process, in tests/oracle/test_distributed_sampler.py."""
import numpy as np
import pytest
import torch

import hookgrad
from harness import launch

JOIN_PRELUDE = r'''
import numpy as np
import hookgrad as torch, hookgrad.distributed as dist
import hookgrad as hgt      # the Counter's library, whatever `torch` names later in a worker
from hookgrad.distributed.algorithms.join import Join, Joinable, JoinHook
from hookgrad.distributed.elastic.multiprocessing.errors import record
dist.init_process_group("gloo")
out = {}
n_inputs = [3, 5][RANK]

# Join with a toy Joinable: each iteration all_reduces a 1; a joined rank's main hook shadows it with a 0
class Counter(Joinable):
    def __init__(self):
        super().__init__()
        self.sums, self.events = [], []
    def __call__(self):
        work = Join.notify_join_context(self)
        self.events.append(("notify", None if work is None else type(work).__name__))
        if work is not None:
            work.wait()
        t = hgt.ones(1)
        dist.all_reduce(t)
        self.sums.append(t.item())
    def join_hook(self, **kwargs):
        counter = self
        class Hook(JoinHook):
            def main_hook(self):
                counter.events.append(("main", kwargs.get("tag")))
                t = hgt.zeros(1)
                dist.all_reduce(t)
            def post_hook(self, is_last_joiner):
                counter.events.append(("post", is_last_joiner))
        return Hook()
    @property
    def join_device(self):
        return hgt.device("cpu")
    @property
    def join_process_group(self):
        return dist.group.WORLD

'''

SBN_JOIN_WORKER = JOIN_PRELUDE + r'''

def data(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape)

def run_sbn(name, shape, split, steps=2, make=lambda: torch.nn.SyncBatchNorm(3, dtype=torch.float64), group=None):
    """Each rank gets rows split[RANK]:split[RANK+1] of the full batch; `steps` training steps, then eval."""
    m = make()
    dt = m.running_mean.dtype if m.running_mean is not None else torch.float64
    if m.affine:
        with torch.no_grad():
            m.weight.copy_(torch.tensor(data(1, 3)))
            if m.bias is not None:
                m.bias.copy_(torch.tensor(data(2, 3)))
    rec = []
    for step in range(steps):
        full, dy = data(10 + step, shape), data(20 + step, shape)
        lo, hi = split[RANK], split[RANK + 1]
        x = torch.tensor(full[lo:hi], dtype=dt, requires_grad=True)
        y = m(x)
        (y * torch.tensor(dy[lo:hi], dtype=dt)).sum().backward()
        grads = {}
        for p in ("weight", "bias"):
            t = getattr(m, p)
            if t is not None:
                g = torch.zeros_like(t) if t.grad is None else t.grad.clone()   # None on an empty rank
                dist.all_reduce(g, group=group)
                grads[p] = g.numpy()
                t.grad = None
        gx = np.zeros(x.shape) if x.grad is None else x.grad.numpy()
        rec.append(dict(y=y.detach().numpy(), dtype=str(y.dtype), gx=gx,
                        grads=grads, grad_fn=type(y.grad_fn).__name__,
                        rm=None if m.running_mean is None else m.running_mean.numpy().copy(),
                        rv=None if m.running_var is None else m.running_var.numpy().copy()))
    m.eval()
    lo, hi = split[RANK], split[RANK + 1]
    ye = m(torch.tensor(data(30, shape)[lo:hi], dtype=dt))
    out[name] = dict(steps=rec, eval=ye.detach().numpy(),
                     eval_grad_fn=type(ye.grad_fn).__name__ if ye.grad_fn else None)

run_sbn("uneven 2d", (7, 3), [0, 3, 7])
run_sbn("even 4d momentum None no affine", (4, 3, 2, 5), [0, 2, 4],
        make=lambda: torch.nn.SyncBatchNorm(3, momentum=None, affine=False, dtype=torch.float64))
run_sbn("3d no bias", (5, 3, 4), [0, 4, 5],
        make=lambda: torch.nn.SyncBatchNorm(3, bias=False, dtype=torch.float64))
run_sbn("empty rank 1", (4, 3), [0, 4, 4], steps=1)
run_sbn("float32", (5, 3, 2), [0, 2, 5], make=lambda: torch.nn.SyncBatchNorm(3))
run_sbn("untracked", (6, 3), [0, 2, 6], steps=1,
        make=lambda: torch.nn.SyncBatchNorm(3, track_running_stats=False, dtype=torch.float64))
# process_group respected: each rank alone in its group, so each normalises its own half
mine = [dist.new_group([0]), dist.new_group([1])][RANK]
run_sbn("own group", (6, 3), [0, 2, 6], steps=1, group=mine,
        make=lambda: torch.nn.SyncBatchNorm(3, process_group=mine, dtype=torch.float64))
# convert_sync_batchnorm of a small net, one step: the gradient of the Linear before it is the full batch's
net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(
    torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Tanh()).double())
with torch.no_grad():
    net[0].weight.copy_(torch.tensor(data(3, (3, 4)))); net[0].bias.zero_()
xs = data(40, (6, 4))[[0, 1, 2] if RANK == 0 else [3, 4, 5]]
net(torch.tensor(xs)).pow(2).sum().backward()
g = net[0].weight.grad.clone(); dist.all_reduce(g)
out["converted"] = dict(type=type(net[1]).__name__, gw=g.numpy())

a, b = Counter(), Counter()
with Join([a, b], tag="k") as ctx:
    for _ in range(n_inputs):
        a(); b()
out["join"] = dict(ctx=ctx, a=(a.sums, a.events), b=(b.sums, b.events), cfg=tuple(a._join_config),
                   cfg_b=tuple(b._join_config))
d = Counter()
with Join([d], enable=False):
    for _ in range(2):
        d()
out["disabled"] = (d.sums, d.events)
dist.barrier()

@record
def main():
    return "ran"
out["record"] = main()
report(out)
'''


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return launch(tmp_path_factory.mktemp("sbn_join"), SBN_JOIN_WORKER).ranks


def _data(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape)


def _torch_bn(shape, steps, make, eval_rows=slice(None), eval_shape=None):
    """PyTorch's BatchNorm on the full batches; per step (y, gx, grads, running stats), then the eval output."""
    m = make()
    dt = m.running_mean.dtype if m.running_mean is not None else torch.float64
    if m.affine:
        with torch.no_grad():
            m.weight.copy_(torch.tensor(_data(1, 3)))
            if m.bias is not None:
                m.bias.copy_(torch.tensor(_data(2, 3)))
    rec = []
    for step in range(steps):
        x = torch.tensor(_data(10 + step, shape), dtype=dt, requires_grad=True)
        y = m(x)
        (y * torch.tensor(_data(20 + step, shape), dtype=dt)).sum().backward()
        grads = {p: getattr(m, p).grad.numpy().copy() for p in ("weight", "bias") if getattr(m, p) is not None}
        for p in ("weight", "bias"):
            if getattr(m, p) is not None:
                getattr(m, p).grad = None
        rec.append(dict(y=y.detach().numpy(), gx=x.grad.numpy(), grads=grads,
                        rm=None if m.running_mean is None else m.running_mean.numpy().copy(),
                        rv=None if m.running_var is None else m.running_var.numpy().copy()))
    m.eval()
    return rec, m(torch.tensor(_data(30, eval_shape or shape)[eval_rows], dtype=dt)).detach().numpy()


SBN_CASES = {
    "uneven 2d": ((7, 3), [0, 3, 7], 2, lambda: torch.nn.BatchNorm1d(3, dtype=torch.float64)),
    "even 4d momentum None no affine": ((4, 3, 2, 5), [0, 2, 4], 2,
                                        lambda: torch.nn.BatchNorm2d(3, momentum=None, affine=False,
                                                                     dtype=torch.float64)),
    "3d no bias": ((5, 3, 4), [0, 4, 5], 2, lambda: torch.nn.BatchNorm1d(3, bias=False, dtype=torch.float64)),
    "empty rank 1": ((4, 3), [0, 4, 4], 1, lambda: torch.nn.BatchNorm1d(3, dtype=torch.float64)),
    "float32": ((5, 3, 2), [0, 2, 5], 2, lambda: torch.nn.BatchNorm1d(3)),
    "untracked": ((6, 3), [0, 2, 6], 1, lambda: torch.nn.BatchNorm1d(3, track_running_stats=False,
                                                                        dtype=torch.float64)),
}


def _close(a, b, what):
    tol = 1e-6 if a is None or a.dtype == np.float64 else 1e-5
    assert a is None and b is None or a.dtype == b.dtype and np.allclose(a, b, rtol=tol, atol=tol), (what, a, b)


@pytest.mark.parametrize("name", list(SBN_CASES))
def test_sync_batchnorm_equals_full_batch_batchnorm(ranks, name):
    shape, split, steps, make = SBN_CASES[name]
    ref, ref_eval = _torch_bn(shape, steps, make)
    for rank in (0, 1):
        got = ranks[rank][name]
        lo, hi = split[rank], split[rank + 1]
        for step, (g, r) in enumerate(zip(got["steps"], ref)):
            what = f"{name}, rank {rank}, step {step}"
            assert g["y"].shape == r["y"][lo:hi].shape, what
            assert g["dtype"] == "torch." + str(r["y"].dtype), what
            _close(g["y"], r["y"][lo:hi], what + ": output")
            _close(g["gx"], r["gx"][lo:hi], what + ": input grad")
            assert sorted(g["grads"]) == sorted(r["grads"]), what
            for p in r["grads"]:
                _close(g["grads"][p], r["grads"][p], f"{what}: {p} grad (summed over ranks)")
            _close(g["rm"], r["rm"], what + ": running_mean")
            _close(g["rv"], r["rv"], what + ": running_var")
            if hi > lo:
                assert g["grad_fn"] == "SyncBatchNormBackward", what
        if name == "untracked":     # no running stats: eval normalises each rank's own batch, unsynchronised
            ref_eval = _torch_bn((hi - lo,) + shape[1:], 0, make, eval_rows=slice(lo, hi), eval_shape=shape)[1]
        _close(got["eval"], ref_eval[lo:hi] if name != "untracked" else ref_eval, f"{name}, rank {rank}: eval")
        assert got["eval_grad_fn"] != "SyncBatchNormBackward", name      # eval mode never synchronises


def test_sync_batchnorm_respects_its_process_group(ranks):
    # each rank alone in its group: the statistics are its own half's, as BatchNorm on that half
    shape, split = (6, 3), [0, 2, 6]
    for rank in (0, 1):
        lo, hi = split[rank], split[rank + 1]
        got = ranks[rank]["own group"]["steps"][0]
        m = torch.nn.BatchNorm1d(3, dtype=torch.float64)
        with torch.no_grad():
            m.weight.copy_(torch.tensor(_data(1, 3)))
            m.bias.copy_(torch.tensor(_data(2, 3)))
        x = torch.tensor(_data(10, shape)[lo:hi], requires_grad=True)
        y = m(x)
        (y * torch.tensor(_data(20, shape)[lo:hi])).sum().backward()
        _close(got["y"], y.detach().numpy(), f"rank {rank}: output")
        _close(got["gx"], x.grad.numpy(), f"rank {rank}: input grad")
        _close(got["grads"]["weight"], m.weight.grad.numpy(), f"rank {rank}: weight grad")
        _close(got["rm"], m.running_mean.numpy(), f"rank {rank}: running_mean")


def test_convert_sync_batchnorm_trains_on_the_full_batch(ranks):
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Tanh()).double()
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor(_data(3, (3, 4))))
        net[0].bias.zero_()
    net(torch.tensor(_data(40, (6, 4)))).pow(2).sum().backward()
    for rank in (0, 1):
        assert ranks[rank]["converted"]["type"] == "SyncBatchNorm"
        _close(ranks[rank]["converted"]["gw"], net[0].weight.grad.numpy(), f"rank {rank}: Linear weight grad")


def test_join_shadows_the_joined_rank(ranks):
    r0, r1 = ranks[0]["join"], ranks[1]["join"]
    assert r0["ctx"] is None and r1["ctx"] is None            # Join.__enter__ returns None, as PyTorch's
    # rank 1 has 2 more inputs: its last 2 all_reduces meet rank 0's main hooks (0) instead of rank 0's 1
    assert r1["a"][0] == r1["b"][0] == [2.0, 2.0, 2.0, 1.0, 1.0]
    assert r0["a"][0] == r0["b"][0] == [2.0, 2.0, 2.0]
    # only the first Joinable notifies (an async Work); main hooks get Join's kwargs; post_hook(is_last_joiner)
    assert r0["a"][1] == [("notify", "Work")] * 3 + [("main", "k")] * 2 + [("post", False)]
    assert r0["b"][1] == [("notify", None)] * 3 + [("main", "k")] * 2 + [("post", False)]
    assert r1["a"][1] == [("notify", "Work")] * 5 + [("post", True)]
    assert r1["b"][1] == [("notify", None)] * 5 + [("post", True)]
    assert r0["cfg"] == (True, False, True) and r0["cfg_b"] == (True, False, False)


def test_join_disabled_and_record(ranks):
    for rank in (0, 1):
        assert ranks[rank]["disabled"] == ([2.0, 2.0], [("notify", None)] * 2)
        assert ranks[rank]["record"] == "ran"


def _error(fn):
    try:
        fn()
    except Exception as e:
        return type(e).__name__, str(e)
    return None


def test_join_errors_match_torch_in_one_process():
    from torch.distributed.algorithms.join import Join as TJoin, Joinable as TJoinable, JoinHook as TJoinHook
    from hookgrad.distributed.algorithms.join import Join, Joinable, JoinHook

    def joinable(base, hook, group):
        class J(base):
            def __init__(self):
                super().__init__()

            def join_hook(self, **kwargs):
                return hook()

            join_device = property(lambda self: "cpu")
            join_process_group = property(lambda self: group)
        return J()

    assert _error(lambda: Join([])) == _error(lambda: TJoin([])) == \
        ("ValueError", "The join context manager requires at least one joinable")
    mixed = _error(lambda: Join([joinable(Joinable, JoinHook, 1), joinable(Joinable, JoinHook, 2)]))
    assert mixed == _error(lambda: TJoin([joinable(TJoinable, TJoinHook, 1), joinable(TJoinable, TJoinHook, 2)]))
    plain = object()
    assert _error(lambda: Join.notify_join_context(plain)) == _error(lambda: TJoin.notify_join_context(plain))
    # outside a Join: a disabled config, nothing communicated
    assert Join.notify_join_context(joinable(Joinable, JoinHook, None)) is None
    assert tuple(joinable(Joinable, JoinHook, None)._join_config) == (False, False, False)
    assert _error(lambda: Joinable()) == _error(lambda: TJoinable())      # abstract
    import hookgrad.distributed.algorithms as alg
    assert alg.Join is Join and hookgrad.distributed.constants.default_pg_timeout.total_seconds() > 0


# DDP under Join beside PyTorch's DDP under PyTorch's Join; then the toy Joinable with throw_on_early_termination
DDP_JOIN_WORKER = JOIN_PRELUDE + r'''
import hookgrad as hg
tdist = gloo()
import torch
from torch.distributed.algorithms.join import Join as TJoin
from hookgrad.distributed.algorithms.join import Join as HJoin
rng = np.random.default_rng(0)
w1, b1, w2, b2 = (rng.standard_normal(s) for s in ((3, 4), 3, (1, 3), 1))
batches = [np.random.default_rng(100 + 10 * RANK + i).standard_normal((4, 4)) for i in range(n_inputs)]
for name, lib, join in (("torch", torch, TJoin), ("hookgrad", hg, HJoin)):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Tanh(), lib.nn.Linear(3, 1)).double()
    with lib.no_grad():
        for p, v in zip(net.parameters(), (w1, b1, w2, b2)):
            p.copy_(lib.tensor(v))
    ddp = lib.nn.parallel.DistributedDataParallel(net)
    opt = lib.optim.SGD(ddp.parameters(), lr=0.1)
    with join([ddp]):
        for x in batches:
            opt.zero_grad()
            ddp(lib.tensor(x)).pow(2).mean().backward()
            opt.step()
    out[name] = [p.detach().numpy().copy() for p in ddp.parameters()]
c = Counter()
try:
    with Join([c], throw_on_early_termination=True):
        for _ in range(n_inputs):
            c()
    out["throw"] = None
except RuntimeError as e:
    out["throw"] = (str(e), len(c.sums))
report(out)
'''


@pytest.fixture(scope="module")
def ddp_join(tmp_path_factory):
    return launch(tmp_path_factory.mktemp("ddp_join"), DDP_JOIN_WORKER).ranks


def test_ddp_under_join_equals_torch_ddp_under_join(ddp_join):
    # uneven inputs (3 batches on rank 0, 5 on rank 1): the joined rank shadows the other's allreduces with zeros,
    # so every rank ends with the same parameters as PyTorch's DDP under PyTorch's Join on the same data
    ranks = ddp_join
    for rank in (0, 1):
        for i, (ours, theirs) in enumerate(zip(ranks[rank]["hookgrad"], ranks[rank]["torch"])):
            assert ours.dtype == theirs.dtype and np.allclose(ours, theirs, rtol=1e-10, atol=1e-12), (rank, i)


def test_join_throw_on_early_termination(ddp_join):
    # rank 0 runs out first: it raises its own error, rank 1 the "Throwing across all ranks" one, after 3 steps each
    assert ddp_join[0]["throw"] == ("Rank 0 exhausted all inputs.", 3)
    assert ddp_join[1]["throw"] == ("Detected at least one rank that exhausted inputs. Throwing across all ranks.", 3)
