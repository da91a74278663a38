"""torch.distributed's collectives on 2 ranks, hookgrad (MPI) beside PyTorch (gloo) in the same processes: the
same inputs, the outputs compared on each rank (values, dtypes, shapes), blocking and async, Futures included."""
import pytest

from harness import launch

WORKER = r'''
import numpy as np
import hookgrad as hg, hookgrad.distributed as hd
tdist = gloo()
import torch
hd.init_process_group("gloo")
assert hd.is_initialized() and hd.get_rank() == RANK and hd.get_world_size() == WORLD
results = {}

def both(name, fn, *arrays):
    """Run fn(lib, dist, *tensors) on torch and hookgrad over copies of the arrays; keep both results."""
    out = []
    for lib, dist in ((torch, tdist), (hg, hd)):
        ts = [lib.from_numpy(np.array(a, copy=True)) for a in arrays]
        try:
            r = fn(lib, dist, *ts)
            r = [ts if r is None else [r] if isinstance(r, lib.Tensor) else r]
            out.append(("ok", [[(t.numpy().copy(), str(t.dtype).split(".")[-1]) for t in x] if isinstance(x, list)
                               else x for x in r]))
        except Exception as e:
            out.append(("error", type(e).__name__, str(e)[:200]))
    results[name] = out

rng = np.random.default_rng(RANK)
for dt in ("float32", "float64", "int64", "int32", "uint8"):
    for op in ("SUM", "PRODUCT", "MIN", "MAX", "AVG"):
        if op == "AVG" and dt != "float32" and dt != "float64":
            continue
        a = (rng.standard_normal((3, 4)) * 4).astype(dt) if dt.startswith("float") else rng.integers(0, 5, (3, 4)).astype(dt)
        both(f"all_reduce {dt} {op}", lambda lib, d, t, op=op: d.all_reduce(t, op=getattr(d.ReduceOp, op)), a)
for op in ("BAND", "BOR", "BXOR"):
    both(f"all_reduce int64 {op}", lambda lib, d, t, op=op: d.all_reduce(t, op=getattr(d.ReduceOp, op)),
         rng.integers(0, 16, (5,)))
both("all_reduce float16", lambda lib, d, t: d.all_reduce(t), rng.standard_normal(7).astype("float16"))
both("all_reduce bool", lambda lib, d, t: d.all_reduce(t), rng.integers(0, 2, 6).astype(bool))
both("all_reduce complex", lambda lib, d, t: d.all_reduce(t), (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype("complex64"))
both("all_reduce 0-dim", lambda lib, d, t: d.all_reduce(t), np.array(2.5 + RANK))
both("all_reduce empty", lambda lib, d, t: d.all_reduce(t), np.zeros((0, 3), "float32"))

def async_then(lib, d, t):
    w = d.all_reduce(t, async_op=True)
    fut = w.get_future().then(lambda f: f.value()[0] * 2)
    w.wait()
    return [fut.wait(), t, lib.tensor(float(w.is_completed()))]
both("all_reduce async then", async_then, rng.standard_normal(5))
both("broadcast src 1", lambda lib, d, t: d.broadcast(t, src=1), rng.standard_normal((2, 3)))
both("broadcast int", lambda lib, d, t: d.broadcast(t, src=0), rng.integers(0, 9, 4))
# reduce: only the destination's tensor is defined afterwards (gloo uses the others' as scratch)
both("reduce dst 1", lambda lib, d, t: [d.reduce(t, dst=1), [t] if RANK == 1 else []][1], rng.standard_normal(4))
both("reduce max dst 0", lambda lib, d, t: [d.reduce(t, dst=0, op=d.ReduceOp.MAX), [t] if RANK == 0 else []][1],
     rng.standard_normal(4))

def all_gather(lib, d, t):
    outs = [lib.zeros_like(t) for _ in range(WORLD)]
    d.all_gather(outs, t)
    return outs
both("all_gather", all_gather, rng.standard_normal((2, 2)))
both("all_gather_into_tensor cat", lambda lib, d, t: [(o := lib.zeros(WORLD * 3, dtype=t.dtype)), d.all_gather_into_tensor(o, t)][0], rng.standard_normal(3))

def reduce_scatter(lib, d, a, b):
    out = lib.zeros(3, dtype=a.dtype)
    d.reduce_scatter(out, [a, b])
    return [out]
both("reduce_scatter", reduce_scatter, rng.standard_normal(3), rng.standard_normal(3))
both("reduce_scatter_tensor", lambda lib, d, t: [(o := lib.zeros(2, dtype=t.dtype)), d.reduce_scatter_tensor(o, t)][0], rng.standard_normal(4))

def gather(lib, d, t):
    lst = [lib.zeros_like(t) for _ in range(WORLD)] if RANK == 1 else None
    d.gather(t, lst, dst=1)
    return lst or [t]
both("gather", gather, rng.standard_normal(3))

def scatter(lib, d, a, b):
    out = lib.zeros(2, dtype=a.dtype)
    d.scatter(out, [a, b] if RANK == 0 else None, src=0)
    return [out]
both("scatter", scatter, np.full(2, 1.0 + RANK), np.full(2, 10.0 + RANK))

def all_to_all(lib, d, a, b):
    outs = [lib.zeros(2, dtype=a.dtype), lib.zeros(2, dtype=a.dtype)]
    d.all_to_all(outs, [a, b])
    return outs
both("all_to_all", all_to_all, np.full(2, 1.0 + 10 * RANK), np.full(2, 2.0 + 10 * RANK))
both("all_to_all_single", lambda lib, d, t: [(o := lib.zeros(4, dtype=t.dtype)), d.all_to_all_single(o, t)][0], np.arange(4.0) + 10 * RANK)

def a2a_splits(lib, d, t):
    ins = [1, 2] if RANK == 0 else [3, 1]
    outs = [1, 3] if RANK == 0 else [2, 1]
    o = lib.zeros(sum(outs), 2, dtype=t.dtype)
    d.all_to_all_single(o, t[:sum(ins)], outs, ins)
    return [o]
both("all_to_all_single splits", a2a_splits, np.arange(8.0).reshape(4, 2) + 100 * RANK)

def p2p(lib, d, t):
    if RANK == 0:
        d.send(t, dst=1)
        r = lib.zeros_like(t)
        w = d.irecv(r, src=1)
        w.wait()
        return [r]
    r = lib.zeros_like(t)
    src = d.recv(r)
    w = d.isend(t * 3, dst=0)
    w.wait()
    return [r, lib.tensor(src)]
both("send recv", p2p, np.arange(3.0) + RANK)

def objects(lib, d):
    out = [None] * WORLD
    d.all_gather_object(out, {"rank": RANK, "x": [RANK] * 2})
    lst = [None, None] if RANK else [{"a": 1}, "two"]
    d.broadcast_object_list(lst, src=0)
    return [out, lst]
both("objects", objects)

def subgroup(lib, d, t):
    g = d.new_group([1])
    if RANK == 1:
        d.all_reduce(t, group=g)
        return [t, lib.tensor(d.get_rank(g)), lib.tensor(d.get_world_size(g))]
    return [t]
both("new_group", subgroup, np.arange(3.0))

def barrier(lib, d):
    d.barrier()
    w = d.barrier(async_op=True)
    w.wait()
    return [lib.tensor(1.0)]
both("barrier", barrier)

both("noncontiguous", lambda lib, d, t: d.all_reduce(t.t()), rng.standard_normal((2, 3)))
# errors: same exception type on both
both("bad op", lambda lib, d, t: d.all_reduce(t, op="sum"), rng.standard_normal(2))
both("not a tensor", lambda lib, d: d.all_reduce([1.0, 2.0]))
both("broadcast bad src", lambda lib, d, t: d.broadcast(t, src=5), rng.standard_normal(2))
both("send to self", lambda lib, d, t: d.send(t, dst=RANK), rng.standard_normal(2))
both("all_gather wrong count", lambda lib, d, t: d.all_gather([lib.zeros(2, dtype=t.dtype)], t), rng.standard_normal(2))
report(results)
'''


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return launch(tmp_path_factory.mktemp("coll"), WORKER).ranks


NAMES = ["all_reduce float32 SUM", "all_reduce float64 AVG", "all_reduce int64 PRODUCT", "all_reduce uint8 MAX",
         "all_reduce int64 BXOR", "all_reduce float16", "all_reduce bool", "all_reduce complex", "all_reduce 0-dim",
         "all_reduce empty", "all_reduce async then", "broadcast src 1", "broadcast int", "reduce dst 1",
         "reduce max dst 0", "all_gather", "all_gather_into_tensor cat", "noncontiguous",
         "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single",
         "all_to_all_single splits", "send recv", "objects", "new_group", "barrier"]
ERRORS = ["bad op", "not a tensor", "broadcast bad src", "send to self", "all_gather wrong count"]


def _same(a, b):
    import numpy as np
    if isinstance(a, tuple) and len(a) == 2 and hasattr(a[0], "dtype"):
        assert a[1] == b[1], (a[1], b[1])
        assert a[0].shape == b[0].shape
        np.testing.assert_allclose(a[0] if a[0].dtype.kind == "c" else a[0].astype(float), b[0], rtol=1e-6, atol=1e-6)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


def test_every_case_ran(ranks):
    for r in ranks:
        assert set(NAMES + ERRORS) <= set(r), set(NAMES + ERRORS) - set(r)
    full = [k for k in ranks[0] if k.startswith("all_reduce ")]
    assert len(full) >= 25


@pytest.mark.parametrize("rank", [0, 1])
def test_outputs_equal_torch(ranks, rank):
    res = ranks[rank]
    for name, (torch_out, hg_out) in res.items():
        if name in ERRORS:
            continue
        assert torch_out[0] == hg_out[0] == "ok" or torch_out[0] == hg_out[0] == "error", (name, torch_out, hg_out)
        if torch_out[0] == "ok":
            try:
                _same(torch_out[1], hg_out[1])
            except AssertionError as e:
                raise AssertionError(f"{name}: {e}") from None
        else:
            assert torch_out[1] == hg_out[1], (name, torch_out, hg_out)


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_torch_types(ranks, name):
    for r in ranks:
        t, h = r[name]
        assert t[0] == h[0] == "error", (name, t, h)
        assert issubclass_name(h[1], t[1]), (name, t, h)


def issubclass_name(got, want):
    """hookgrad's DistBackendError is a RuntimeError, as torch's."""
    return got == want or (want, got) in {("RuntimeError", "DistBackendError"), ("DistBackendError", "RuntimeError")}
