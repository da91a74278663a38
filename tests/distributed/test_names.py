"""The rest of torch.distributed's namespace, against PyTorch: the key-value stores (HashStore, PrefixStore, a
user's Store subclass), the debug level, backend queries, reduce_op's deprecation, and on 2 ranks (one launch,
hookgrad over MPI beside PyTorch over gloo in the same processes) the coalesced collectives,
all_gather_single / reduce_scatter_single, send/recv_object_list, subgroups, split_group, shrink_group's errors,
get_pg_count and breakpoint."""
import threading
import time
import warnings
from datetime import timedelta

import numpy as np
import pytest
import torch.distributed as tdist

import hookgrad.distributed as hdist
from harness import launch


def _outcome(fn):
    """(kind, value): 'ok' and the result, or 'error', the exception type's name and its message."""
    try:
        return ("ok", fn())
    except Exception as e:                      # noqa: BLE001
        return ("error", type(e).__name__, str(e))


# ------------------------------------------------------------------------------------------------
# stores, in this process

def _store_script(d, s):
    """The same calls on a store of library ``d``; each call's outcome, in order."""
    out = []
    run = lambda f: out.append(_outcome(f))                       # noqa: E731
    s.set_timeout(timedelta(seconds=0.05))
    run(lambda: s.timeout)
    run(lambda: s.set("a", "x"))
    run(lambda: s.set("b", b"\x00\xff"))
    run(lambda: s.set("u", "é"))
    run(lambda: [s.get("a"), s.get("b"), s.get("u")])
    run(lambda: s.get("missing"))
    run(lambda: [s.add("c", 3), s.add("c", -1), s.get("c")])
    run(lambda: s.add("a", 1))                                     # not a number: std::stoll's ValueError
    run(lambda: [s.set("n", " 12xyz"), s.add("n", 1)])             # stoll reads the leading number
    run(lambda: [s.set("big", "99999999999999999999"), s.add("big", 1)])
    run(lambda: [s.add("w", 2 ** 63 - 1), s.add("w", 1)])          # int64 wraps
    run(lambda: [s.set("e", ""), s.add("e", 4)])
    run(lambda: s.num_keys())
    run(lambda: [s.check(["a", "c"]), s.check(["a", "missing"]), s.check([])])
    run(lambda: s.wait(["a", "c"]))
    run(lambda: s.wait(["missing"]))
    run(lambda: s.wait(["missing"], timedelta(seconds=0.01)))
    run(lambda: [s.delete_key("a"), s.delete_key("a"), s.num_keys()])
    run(lambda: [s.compare_set("k", "", "v1"), s.compare_set("k", "no", "v2"), s.compare_set("k", "v1", "v2"),
                 s.get("k")])
    run(lambda: [s.compare_set("k2", "x", "v"), s.check(["k2"])])
    run(lambda: [s.append("ap", "12"), s.append("ap", b"34"), s.get("ap")])
    run(lambda: [s.multi_set(["m1", "m2"], ["1", b"2"]), s.multi_get(["m1", "m2"])])
    run(lambda: s.multi_get(["m1", "missing"]))
    run(lambda: sorted(s.list_keys()))
    run(lambda: [s.queue_push("q", "a"), s.queue_push("q", b"b"), s.queue_len("q"), s.check(["q"]),
                 s.num_keys()])
    run(lambda: [s.queue_pop("q"), s.queue_pop("q", block=False), s.queue_len("q"), s.check(["q"])])
    run(lambda: s.queue_pop("q", block=False))
    run(lambda: s.queue_pop("q"))
    run(lambda: [s.barrier("bar", 1), s.get("bar/num_members"), s.get("bar/last_member")])
    run(lambda: s.barrier("bar2", 2, timedelta(seconds=0.01)))
    run(lambda: s.has_extended_api())
    run(lambda: s.clone() is s)
    for bad in (lambda: s.set(1, "x"), lambda: s.set("x", 1), lambda: s.get(1), lambda: s.add("z", 1.5),
                lambda: s.add("z", 2 ** 63), lambda: s.set_timeout(5), lambda: s.wait(["x"], 3),
                lambda: s.check("abc")):
        r = _outcome(bad)
        out.append(r[:2] + (r[2].split("(")[0],))                  # pybind's message names the function
    # another thread sets the key get waits for
    s.set_timeout(timedelta(seconds=5))
    timer = threading.Timer(0.05, lambda: s.set("late", "v"))
    timer.start()
    run(lambda: s.get("late"))
    timer = threading.Timer(0.05, lambda: s.queue_push("lateq", "w"))
    timer.start()
    run(lambda: s.queue_pop("lateq"))
    # a PrefixStore over it, and one over that
    p = d.PrefixStore("pre", s)
    p2 = d.PrefixStore("two", p)
    run(lambda: [p.set("k", "v"), s.get("pre/k"), p.get("k"), p.num_keys() == s.num_keys(), p.list_keys()])
    run(lambda: [p.add("cnt", 2), s.get("pre/cnt"), p.check(["k", "cnt"]), p.delete_key("k"), p.check(["k"])])
    run(lambda: [p.compare_set("z", "", "1"), s.get("pre/z"), p.append("z", "2"), s.get("pre/z")])
    run(lambda: [p.multi_set(["m"], ["1"]), p.multi_get(["m"]), s.get("pre/m")])
    run(lambda: [p.queue_push("q", "1"), p.queue_len("q"), s.queue_len("pre/q"), p.queue_pop("q")])
    run(lambda: [p2.set("k", "v"), s.get("pre/two/k"), p2.underlying_store is p,
                 p2._underlying_non_prefix_store is s, type(p2.clone()).__name__])
    run(lambda: [p.barrier("b", 1), s.get("pre/b/num_members")])
    p.set_timeout(timedelta(seconds=0.05))
    run(lambda: [s.timeout, p.timeout, p.has_extended_api()])
    run(lambda: p.get("missing"))
    run(lambda: d.PrefixStore("x", None))
    out.append(_outcome(lambda: d.PrefixStore(1, s))[:2])
    return out


def test_hash_and_prefix_stores_behave_as_torch():
    ours = _store_script(hdist, hdist.HashStore())
    theirs = _store_script(tdist, tdist.HashStore())
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, (i, a, b)


def test_store_base_class_and_a_subclass():
    """A user's Store subclass: the base class's methods raise as PyTorch's; multi_get / multi_set / append /
    barrier come from the subclass's get / set / compare_set / add / wait, and a PrefixStore uses them."""
    def run(d):
        class Dict(d.Store):
            def __init__(self):
                super().__init__()
                self.data = {}

            def set(self, key, value):
                self.data[key] = value if isinstance(value, bytes) else value.encode()

            def get(self, key):
                return self.data[key]

            def compare_set(self, key, expected, desired):
                cur = self.data.get(key)
                expected = expected if isinstance(expected, bytes) else expected.encode()
                desired = desired if isinstance(desired, bytes) else desired.encode()
                if (cur is None and not expected) or cur == expected:
                    self.data[key] = desired
                    return desired
                return expected if cur is None else cur

        base, mine = d.Store(), Dict()
        out = [_outcome(lambda: base.timeout)]
        for name, args in [("set", ("a", "b")), ("get", ("a",)), ("add", ("a", 1)), ("check", (["a"],)),
                           ("wait", (["a"],)), ("delete_key", ("a",)), ("num_keys", ()),
                           ("compare_set", ("a", "", "b")),
                           ("list_keys", ()), ("queue_push", ("a", "b")), ("queue_len", ("a",)),
                           ("has_extended_api", ()), ("clone", ())]:
            r = _outcome(lambda: getattr(base, name)(*args))
            out.append(r[:2])               # (PyTorch's messages are its C++ asserts')
        out.append(_outcome(lambda: [mine.set("k", "v"), mine.multi_get(["k"]), mine.multi_set(["x"], [b"1"]),
                                     mine.get("x"), mine.append("x", "2"), mine.get("x")]))
        out.append(_outcome(lambda: [d.PrefixStore("p", mine).set("k", "w"), mine.get("p/k")]))
        return out
    assert run(hdist) == run(tdist)


def test_queue_empty_error_and_store_error_types():
    assert issubclass(hdist.QueueEmptyError, hdist.DistStoreError)
    assert issubclass(hdist.DistStoreError, hdist.DistError) and issubclass(hdist.DistError, RuntimeError)
    s = hdist.HashStore()
    with pytest.raises(hdist.QueueEmptyError, match="queue is empty"):
        s.queue_pop("nothing", block=False)
    s.set_timeout(timedelta(seconds=0.05))
    start = time.monotonic()
    with pytest.raises(hdist.DistStoreError, match="Wait timeout"):
        s.get("nothing")
    assert time.monotonic() - start >= 0.04      # it waited for the key (the timeout), not raised at once


# ------------------------------------------------------------------------------------------------
# debug level, backends, reduce_op

def test_debug_level_as_torch(monkeypatch):
    def run(d):
        out = []
        saved = d.get_debug_level()
        try:
            for value in ("info", "DETAIL", "bogus", "", None, "Off"):
                if value is None:
                    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
                else:
                    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", value)
                out.append(_outcome(d.set_debug_level_from_env))
                out.append(repr(d.get_debug_level()))
            out.append(_outcome(lambda: d.set_debug_level(d.DebugLevel.DETAIL)))
            out.append(repr(d.get_debug_level()))
            out.append(_outcome(lambda: d.set_debug_level(1))[:2])
            out.append([repr(d.DebugLevel(1)), int(d.DebugLevel.INFO), d.DebugLevel.INFO.value, str(d.DebugLevel.OFF),
                        d.DebugLevel.OFF.name, list(d.DebugLevel.__members__), d.DebugLevel.OFF == 0])
        finally:
            d.set_debug_level(saved)
        return out
    assert run(hdist) == run(tdist)


def test_backend_queries_as_torch():
    def run(d):
        out = []
        for name in ("gloo", "GLOO", "nccl", "ucc", "xccl", "undefined", "foo", "cpu:gloo", "cpu:gloo,cuda:nccl",
                     "cpu:foo"):
            out.append((name, _outcome(lambda: d.is_backend_available(name))))
        out.append([d.is_ucc_available(), d.is_xccl_available(), d.is_nccl_available()])
        for dev in ("cpu", "cuda", "cuda:1", "mps", "meta"):
            out.append((dev, _outcome(lambda: d.get_default_backend_for_device(dev))))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for b in ("gloo", "mpi", "cpu:gloo,cuda:nccl", "GLOO", "undefined", "foo", "cpu:gloo:x",
                      "cpu:gloo,cpu:mpi"):
                r = _outcome(lambda: d.BackendConfig(d.Backend(b)))
                out.append((b, (r[0], repr(r[1]), r[1].get_device_backend_map()) if r[0] == "ok" else r[:2]))
        out.append([str(w.message) for w in caught])
        out.append([d.supports_complex(getattr(d.ReduceOp, op)) for op in
                    ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM")])
        out.append(d.get_pg_count())
        out.append(_outcome(d.get_backend_config))
        out.append(_outcome(lambda: d.new_subgroups(2))[:2])
        out.append(d.is_initialized())
        return out
    ours, theirs = run(hdist), run(tdist)
    assert ours == theirs


def test_reduce_op_is_deprecated_alias():
    def run(d):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = d.reduce_op.MAX
            members = list(d.reduce_op.__members__)
        return [repr(value), value == d.ReduceOp.MAX, members,
                [(w.category.__name__, str(w.message)) for w in caught]]
    assert run(hdist) == run(tdist)


def test_names_module_level():
    assert hdist.RankType is int and hdist.GroupName("x") == "x"
    assert hdist.log.name == "hookgrad.distributed"
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        hdist.breakpoint(rank=0)               # no group: nothing to wait in (as torch: get_rank's error)
    with hdist.record_comm("FSDP::all_gather"):
        pass


# ------------------------------------------------------------------------------------------------
# on 2 ranks, against gloo

WORKER = r'''
import warnings
import numpy as np
import hookgrad as hg, hookgrad.distributed as hd
tdist = gloo()
import torch
hd.init_process_group("gloo")
results = {}

def outcome(fn):
    try:
        r = fn()
        return ("ok", r)
    except Exception as e:
        return ("error", type(e).__name__, str(e)[:300])

def arrays(x):
    """Tensors (nested in lists) -> (numpy array, dtype name)."""
    if isinstance(x, (list, tuple)):
        return [arrays(v) for v in x]
    if hasattr(x, "numpy") and hasattr(x, "dtype"):
        return (x.numpy().copy(), str(x.dtype).split(".")[-1])
    return x

def both(name, fn, *data):
    out = []
    for lib, d in ((torch, tdist), (hg, hd)):
        ts = [lib.from_numpy(np.array(a, copy=True)) for a in data]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = outcome(lambda: fn(lib, d, *ts))
        r = r[:1] + (arrays(r[1]),) if r[0] == "ok" else r
        out.append((r, sorted({(w.category.__name__, str(w.message)) for w in caught})))
    results[name] = out

rng = np.random.default_rng(RANK)

def arc(lib, d, a, b):
    d.all_reduce_coalesced([a, b])
    return [a, b]
both("all_reduce_coalesced", arc, rng.standard_normal((2, 3)), rng.standard_normal(4))
both("all_reduce_coalesced max int", lambda lib, d, a, b: [d.all_reduce_coalesced([a, b], op=d.ReduceOp.MAX), a, b][1:],
     rng.integers(0, 9, 5), rng.integers(0, 9, (2, 2)))
both("all_reduce_coalesced one tensor", lambda lib, d, a: [d.all_reduce_coalesced(a), a][1], rng.standard_normal(3))
both("all_reduce_coalesced complex", lambda lib, d, a: [d.all_reduce_coalesced([a]), a][1],
     (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype("complex64"))
both("all_reduce_coalesced complex max", lambda lib, d, a: d.all_reduce_coalesced([a], op=d.ReduceOp.MAX),
     np.ones(2, "complex64"))
both("all_reduce_coalesced mixed dtypes", lambda lib, d, a, b: d.all_reduce_coalesced([a, b]),
     np.ones(2, "float32"), np.ones(2, "float64"))
both("all_reduce_coalesced not a list", lambda lib, d: d.all_reduce_coalesced((1, 2)))

def arc_async(lib, d, a, b):
    fut = d.all_reduce_coalesced([a, b], async_op=True)
    value = fut.wait()
    return [type(fut).__name__ == "Future", value, a, b]
both("all_reduce_coalesced async", arc_async, rng.standard_normal(2), rng.standard_normal(3))

def agc(lib, d, a, b):
    outs = [[lib.zeros_like(a), lib.zeros_like(b)] for _ in range(WORLD)]
    d.all_gather_coalesced(outs, [a, b])
    return outs
both("all_gather_coalesced", agc, rng.standard_normal((2, 2)), rng.standard_normal(3))

def agc_async(lib, d, a):
    outs = [[lib.zeros_like(a)] for _ in range(WORLD)]
    fut = d.all_gather_coalesced(outs, [a], async_op=True)
    value = fut.wait()
    return [type(fut).__name__ == "Future", value, outs]
both("all_gather_coalesced async", agc_async, rng.integers(0, 9, 3))
both("all_gather_coalesced bad output", lambda lib, d, a: d.all_gather_coalesced(a, [a]), rng.standard_normal(2))

def ags(lib, d, a):
    cat = lib.zeros(WORLD * 3, dtype=a.dtype)
    d.all_gather_single(cat, a)
    cat2 = lib.zeros(WORLD * 3, dtype=a.dtype)
    w = d.all_gather_single(cat2, a, async_op=True)
    w.wait()
    return [cat, cat2]
both("all_gather_single", ags, rng.standard_normal(3))
# the stack form the docs describe: gloo refuses it ("invalid tensor size"), hookgrad fills it
stack = hg.zeros(WORLD, 2)
hd.all_gather_single(stack, hg.tensor([1.0, 2.0]) + RANK)
results["all_gather_single stack"] = stack.numpy().tolist()
both("all_gather_into_tensor deprecated", lambda lib, d, a: [(o := lib.zeros(WORLD * 2, dtype=a.dtype)),
     d.all_gather_into_tensor(o, a)][0], rng.standard_normal(2))
both("all_gather_single not a tensor", lambda lib, d, a: d.all_gather_single([a], a), rng.standard_normal(2))

def rss(lib, d, a):
    out = lib.zeros(2, dtype=a.dtype)
    d.reduce_scatter_single(out, a)
    out2 = lib.zeros(2, dtype=a.dtype)
    d.reduce_scatter_single(out2, a, op=d.ReduceOp.MAX)
    return [out, out2]
both("reduce_scatter_single", rss, rng.standard_normal(4))
out = hg.zeros(2)
hd.reduce_scatter_single(out, hg.tensor([[1.0, 2.0], [3.0, 4.0]]) * (RANK + 1))      # the stack form
results["reduce_scatter_single stack"] = out.numpy().tolist()
both("reduce_scatter_tensor deprecated", lambda lib, d, a: [(o := lib.zeros(2, dtype=a.dtype)),
     d.reduce_scatter_tensor(o, a)][0], rng.standard_normal(4))

def objects(lib, d):
    if RANK == 0:
        d.send_object_list(["foo", 12, {1: 2}, None], dst=1)
        got = [None, None]
        src = d.recv_object_list(got, src=1)
        return [got, src]
    got = [None] * 4
    src = d.recv_object_list(got, src=0)
    d.send_object_list([("tuple", 1.5), list(range(3))], dst=0)
    return [got, src]
both("send_recv_object_list", objects)

def objects_group(lib, d):
    g = d.new_group([0, 1])
    if RANK == 1:
        d.send_object_list([{"x": RANK}], group=g, group_dst=0)
        return [lib.tensor(0)]
    got = [None]
    return [got, d.recv_object_list(got, group=g, group_src=1)]
both("send_recv_object_list group", objects_group)
both("send_object_list to self", lambda lib, d: d.send_object_list([1], dst=RANK))
both("recv_object_list no src", lambda lib, d: d.recv_object_list([None]))
both("send_object_list both dst", lambda lib, d: d.send_object_list([1], dst=1 - RANK, group_dst=1 - RANK))

def subgroups(lib, d, a):
    mine, groups = d.new_subgroups(group_size=1)
    d.all_reduce(a, group=mine)
    b = a.clone()
    mine2, groups2 = d.new_subgroups_by_enumeration([[0], [1]])
    d.all_reduce(b, group=mine2)
    full, _ = d.new_subgroups(group_size=WORLD)
    c = a.clone()
    d.all_reduce(c, group=full)
    return [a, b, c, d.get_world_size(mine), d.get_rank(mine), d.get_process_group_ranks(mine), len(groups),
            groups2[1 - RANK] == d.GroupMember.NON_GROUP_MEMBER, d.get_pg_count()]
both("new_subgroups", subgroups, rng.standard_normal(3))
both("new_subgroups errors", lambda lib, d: [outcome(lambda: d.new_subgroups(0))[:2],
     outcome(lambda: d.new_subgroups(3)), outcome(lambda: d.new_subgroups_by_enumeration([]))])
both("new_subgroups overlap", lambda lib, d: d.new_subgroups_by_enumeration([[0, 1], [1]]))
both("shrink_group", lambda lib, d: [outcome(lambda: d.shrink_group([1])), outcome(lambda: d.shrink_group(1)),
     outcome(lambda: d.shrink_group([])), outcome(lambda: d.shrink_group([1], shrink_flags=7))])
both("split_group empty", lambda lib, d: d.split_group(split_ranks=[]))

def non_member(lib, d, a):
    g = d.new_group([0])
    if RANK == 1:
        return [d.all_reduce_coalesced([a], group=g), d.all_gather_single(a, a, group=g),
                d.reduce_scatter_single(a, a, group=g), outcome(lambda: d.recv_object_list([None], src=0, group=g))]
    return [a]
both("non-member", non_member, rng.standard_normal(2))
both("pg count", lambda lib, d: d.get_pg_count())

# split_group: PyTorch's gloo has no split (it needs a device); hookgrad's is MPI_Comm_split of the parent
split = {"torch": outcome(lambda: tdist.split_group(split_ranks=[[0], [1]]))[:2]}
mine = hd.split_group(split_ranks=[[1], [0]])
t = hg.tensor([1.0 + RANK])
hd.all_reduce(t, group=mine)
both_g = hd.split_group(split_ranks=[[0, 1]], timeout=__import__("datetime").timedelta(seconds=30))
u = hg.tensor([1.0 + RANK])
hd.all_reduce(u, group=both_g)
only0 = hd.split_group(split_ranks=[[0]])
sub = hd.split_group(parent_pg=both_g, split_ranks=[[1], [0]])
v = hg.tensor([10.0 + RANK])
hd.all_reduce(v, group=sub)
split["hookgrad"] = [t.item(), hd.get_process_group_ranks(mine), u.item(), both_g._timeout, only0 is None,
                     hd.get_process_group_ranks(only0) if only0 is not None else None, v.item(),
                     hd.get_process_group_ranks(sub), outcome(lambda: hd.split_group(split_ranks=[[0, 0]]))[:3],
                     outcome(lambda: hd.split_group(parent_pg=hd.GroupMember.NON_GROUP_MEMBER, split_ranks=[[0]]))[:2],
                     hd.get_backend_config(), hd.get_backend_config(both_g), tdist.get_backend_config()]
results["split_group"] = split

# breakpoint: rank 5 stops nowhere (both wait in the barrier); rank 1 stops in a stub pdb
import hookgrad.distributed.distributed_c10d as c10d
calls = []
class StubPdb:
    def message(self, text):
        calls.append(text)
    def set_trace(self):
        calls.append("set_trace")
c10d._make_distributed_pdb = StubPdb
hd.breakpoint(rank=5)
hd.breakpoint(rank=1, timeout_s=120)
for _ in range(3):
    hd.breakpoint(rank=RANK, skip=2)
results["breakpoint"] = [calls, hd.group.WORLD._timeout]
report(results)
'''


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return launch(tmp_path_factory.mktemp("names"), WORKER).ranks


SAME = ["all_reduce_coalesced", "all_reduce_coalesced max int", "all_reduce_coalesced one tensor",
        "all_reduce_coalesced complex", "all_reduce_coalesced async", "all_gather_coalesced",
        "all_gather_coalesced async", "all_gather_single", "all_gather_into_tensor deprecated",
        "reduce_scatter_single", "reduce_scatter_tensor deprecated", "send_recv_object_list",
        "send_recv_object_list group", "new_subgroups", "pg count"]
# errors: the same exception type (and message where PyTorch raises it in Python)
ERRORS = ["all_reduce_coalesced complex max", "all_reduce_coalesced mixed dtypes", "all_reduce_coalesced not a list",
          "all_gather_coalesced bad output", "all_gather_single not a tensor", "send_object_list to self",
          "recv_object_list no src", "send_object_list both dst", "new_subgroups overlap", "split_group empty"]


def _same(a, b, where):
    if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], np.ndarray):
        assert isinstance(b, tuple) and a[1] == b[1] and a[0].shape == b[0].shape, (where, a, b)
        np.testing.assert_allclose(a[0], b[0], rtol=1e-6, atol=1e-6, err_msg=where)
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (where, a, b)
        for x, y in zip(a, b):
            _same(x, y, where)
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize("rank", [0, 1])
def test_collectives_equal_torch(ranks, rank):
    res = ranks[rank]
    for name in SAME:
        (theirs, t_warn), (ours, o_warn) = res[name]
        assert theirs[0] == ours[0] == "ok", (name, theirs, ours)
        _same(theirs[1], ours[1], name)
        assert t_warn == o_warn, (name, t_warn, o_warn)          # the FutureWarnings of the deprecated names


@pytest.mark.parametrize("rank", [0, 1])
def test_errors_equal_torch(ranks, rank):
    res = ranks[rank]
    for name in ERRORS:
        (theirs, _), (ours, _) = res[name]
        assert theirs[0] == ours[0] == "error" and theirs[1] == ours[1], (name, theirs, ours)
        if theirs[1] in ("ValueError", "TypeError"):
            assert theirs[2] == ours[2], (name, theirs, ours)
    for name in ("new_subgroups errors", "shrink_group"):
        (theirs, _), (ours, _) = res[name]
        assert theirs == ours, (name, theirs, ours)


@pytest.mark.parametrize("rank", [0, 1])
def test_non_member_warns_and_returns_none(ranks, rank):
    (theirs, t_warn), (ours, o_warn) = ranks[rank]["non-member"]
    assert theirs[0] == ours[0] == "ok"
    _same(theirs[1], ours[1], "non-member")
    assert t_warn == o_warn


def test_stack_forms(ranks):
    for rank, r in enumerate(ranks):
        assert r["all_gather_single stack"] == [[1.0, 2.0], [2.0, 3.0]]
        assert r["reduce_scatter_single stack"] == [[3.0, 6.0], [9.0, 12.0]][rank]


@pytest.mark.parametrize("rank", [0, 1])
def test_split_group_over_mpi(ranks, rank):
    split = ranks[rank]["split_group"]
    assert split["torch"] == ("error", "RuntimeError")             # gloo on the CPU cannot split
    got = split["hookgrad"]
    assert got[0] == 1.0 + rank and got[1] == [rank]                # a group of its own
    assert got[2] == 3.0 and got[3] == 30.0                         # both ranks; the timeout given
    assert got[4] == (rank == 1) and got[5] == ([0] if rank == 0 else None)
    assert got[6] == 10.0 + rank and got[7] == [rank]               # split of a split
    assert got[8] == ("error", "ValueError", "the split group cannot have duplicate ranks")
    assert got[9][:2] == ("error", "ValueError")
    assert got[10] == got[11] == "cpu:mpi,cuda:mpi" and got[12] == "cpu:gloo,cuda:gloo"


@pytest.mark.parametrize("rank", [0, 1])
def test_breakpoint_stops_one_rank(ranks, rank):
    calls, timeout = ranks[rank]["breakpoint"]
    stops = ["\n!!! ATTENTION !!!\n\nType 'up' to get to the frame that called dist.breakpoint(rank=1)\n",
             "set_trace"] if rank == 1 else []
    # rank=RANK with skip=2: the first two calls are skipped, the third stops
    stops += [f"\n!!! ATTENTION !!!\n\nType 'up' to get to the frame that called dist.breakpoint(rank={rank})\n",
              "set_trace"]
    assert calls == stops
    assert timeout == 3600.0
