"""Faults end the job, they do not hang it: a rank killed mid-backward, a rank that raises, a rank that skips a
collective, a rank stuck past the deadline. The survivors end with an error naming the rank, the step and the
collective; the job ends well within the test's limit."""
import time

import pytest

from harness import launch

STEP = r'''
import os, signal, time
import hookgrad as torch, hookgrad.distributed as dist
from datetime import timedelta
dist.init_process_group("mpi", timeout=timedelta(seconds=float(os.environ.get("HG_DEADLINE", "60"))))
MODE = os.environ["HG_MODE"]; AT = int(os.environ.get("HG_AT", "0"))
torch.manual_seed(0)
w = torch.randn(8, 8, requires_grad=True)
calls = [0]
def sync(g):
    """An all_reduce inside backward (as DDP's buckets are), labelled with the step."""
    calls[0] += 1
    if RANK == 1 and calls[0] == AT:
        if MODE == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if MODE == "raise":
            raise ValueError("a bug in rank 1's hook")
        if MODE == "skip":
            return g
        if MODE == "stuck":
            time.sleep(2.5)
    g = g.clone()
    with dist._mpi.label(f"step {step}, hook call {calls[0]}"):
        dist.all_reduce(g)
    return g
try:
    for step in range(4):
        x = w
        for _ in range(3):
            x = (x * 1.5).tanh()
            x.register_hook(sync)
        x.sum().backward()
    report({"ok": True})
except Exception as e:
    report({"type": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__], "msg": str(e)})
'''


def run(tmp_path, mode, at, deadline=60):
    t = time.monotonic()
    res = launch(tmp_path, STEP, env={"HG_MODE": mode, "HG_AT": str(at), "HG_DEADLINE": str(deadline)},
                 check=False, timeout=60)
    return res, time.monotonic() - t


@pytest.mark.parametrize("at", [1, 5, 8])
def test_rank_killed_mid_backward(tmp_path, at):
    res, took = run(tmp_path, "kill", at)
    err = res[0]
    assert err is not None and err["type"] == "DistBackendError" and "RuntimeError" in err["mro"], res.output
    assert "rank 1" in err["msg"] and "all_reduce" in err["msg"] and f"hook call {at}" in err["msg"], err
    assert res[1] is None           # killed before it could report
    assert took < 30


def test_rank_raises_mid_backward(tmp_path):
    res, took = run(tmp_path, "raise", 4)
    assert res.returncode != 0
    assert res[1]["msg"] == "a bug in rank 1's hook"
    err = res[0]
    assert err["type"] == "DistBackendError" and "rank 1" in err["msg"] and "step 1, hook call 4" in err["msg"], err
    assert took < 30


def test_skipped_collective_is_detected(tmp_path):
    res, took = run(tmp_path, "skip", 2)
    for r in (0, 1):
        err = res[r]
        assert err["type"] == "DistBackendError", err
        assert "called different collectives" in err["msg"], err
        # the same shapes: the labels (DDP's "bucket i of iteration n", here the step and hook call) tell them apart
        assert "rank 0 called all_reduce #2" in err["msg"] and "rank 1 called all_reduce #2" in err["msg"], err
        assert "[label" in err["msg"] and f"hook call {2 + r}" in err["msg"], err
    assert took < 30


def test_stuck_rank_hits_the_deadline(tmp_path):
    res, took = run(tmp_path, "stuck", 3, deadline=1)
    err = res[0]
    assert err["type"] == "DistBackendError" and "timed out after" in err["msg"], err
    assert "hook call 3" in err["msg"] and "step 0" in err["msg"]


DDP_KILL = r'''
import os, signal
import hookgrad as torch, hookgrad.distributed as dist
from datetime import timedelta
dist.init_process_group("mpi", timeout=timedelta(seconds=20))
AT = int(os.environ["HG_AT"])
torch.manual_seed(0)
net = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(6)])
ddp = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.02)     # several buckets
step = [0]
def die(module, grad_in, grad_out):
    if RANK == 1 and step[0] == AT:
        os.kill(os.getpid(), signal.SIGKILL)      # mid-backward: the later layers' buckets are under way
net[2].register_full_backward_hook(die)
try:
    for step[0] in range(5):
        ddp(torch.randn(8, 64)).sum().backward()
    report({"ok": True})
except Exception as e:
    report({"type": type(e).__name__, "msg": str(e), "buckets": len(ddp.reducer.buckets)})
'''


@pytest.mark.parametrize("at", [0, 2])
def test_rank_killed_mid_ddp_backward(tmp_path, at):
    t = time.monotonic()
    res = launch(tmp_path, DDP_KILL, env={"HG_AT": str(at)}, check=False, timeout=60)
    err = res[0]
    assert err is not None and err["type"] == "DistBackendError", res.output
    assert err["buckets"] > 1 or at == 0       # iteration 1 has one bucket, as in PyTorch
    assert "rank 1" in err["msg"] and f"of iteration {at + 1}" in err["msg"] and "DDP bucket" in err["msg"], err
    assert "was killed by signal SIGKILL" in res.output
    assert time.monotonic() - t < 30
