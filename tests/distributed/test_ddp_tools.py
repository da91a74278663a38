"""The toolkit sees DistributedDataParallel's hooks, on 2 ranks, with PyTorch's DDP (gloo) beside it in the same
processes: the hook registry lists the comm hook and DDP's gradient-ready hooks under the DDP module; a comm hook
registered through the registry fires as often, on the same buckets, as PyTorch's registered directly, and
trains to the same parameters as the hook registered directly; registering it twice or with a bad annotation
fails as PyTorch's direct registration does; why.watch explains a comm hook that did not fire (registered
after the backward, no_sync, DDP bypassed, backward not reached) in the cases where PyTorch's did not fire
either. One launch for all."""
from harness import launch

WORKER = r'''
import numpy as np, torch
import hookgrad as hg, hookgrad.distributed as hdist
from hookgrad.tools import why
from hookgrad.tools.registry import HookRegistry
tdist = gloo()
hdist.init_process_group("mpi")
out = {}
ITERS = 3

def make_hook(T, D, calls):
    """The same mean-allreduce comm hook for torch (T, D = torch, torch.distributed) and hookgrad, annotated as
    PyTorch's docs show it; it logs (index, is_last, parameter shapes) per call."""
    def mean_hook(state, bucket: D.GradBucket) -> T.futures.Future[T.Tensor]:
        calls.append((bucket.index(), bucket.is_last(), [tuple(p.shape) for p in bucket.parameters()]))
        buf = bucket.buffer().div_(D.get_world_size())
        return D.all_reduce(buf, async_op=True).get_future().then(lambda f: f.value()[0])
    return mean_hook

def net(T):
    T.manual_seed(0)
    return T.nn.Sequential(T.nn.Linear(8, 16), T.nn.ReLU(), T.nn.Linear(16, 16), T.nn.ReLU(), T.nn.Linear(16, 4))

rs = np.random.RandomState(7 + RANK)
xs = [rs.randn(6, 8).astype(np.float32) for _ in range(ITERS)]
CAP = 0.0006        # MB: several buckets after the rebuild at iteration 2

def train(T, D, ddp, opt=None):
    opt = T.optim.SGD(ddp.parameters(), lr=0.1)
    for x in xs:
        opt.zero_grad()
        ddp(T.tensor(x)).pow(2).sum().backward()
        opt.step()
    return [p.detach().numpy().copy() for p in ddp.parameters()]

# -- PyTorch: the hook registered directly
tcalls = []
tddp = torch.nn.parallel.DistributedDataParallel(net(torch), bucket_cap_mb=CAP)
tddp.register_comm_hook(None, make_hook(torch, tdist, tcalls))
tparams = train(torch, tdist, tddp)

# -- hookgrad: through the registry, and directly
hcalls, dcalls = [], []
hddp = hg.nn.parallel.DistributedDataParallel(net(hg), bucket_cap_mb=CAP)
reg = HookRegistry(hddp)
user_hook = hddp.module[0].weight.register_hook(lambda g: None)      # a user's own parameter hook
ret = reg.register(hddp, "comm", make_hook(hg, hdist, hcalls), tag="mean")
hparams = train(hg, hdist, hddp)
dddp = hg.nn.parallel.DistributedDataParallel(net(hg), bucket_cap_mb=CAP)
dddp.register_comm_hook(None, make_hook(hg, hdist, dcalls))
dparams = train(hg, hdist, dddp)
[crec] = reg.hooks(tag="mean")
out["register"] = dict(ret=ret, fired=crec.fired, calls=list(hcalls), tcalls=tcalls, direct_calls=dcalls,
                       same_as_direct=all(np.array_equal(a, b) for a, b in zip(hparams, dparams)),
                       vs_torch=max(float(np.abs(a - b).max()) for a, b in zip(hparams, tparams)))

# -- the listing under the DDP owner
recs = reg.hooks(owner=hddp)
out["listing"] = dict(
    rows=[(r.kind, r.path, r.name, r.by, r.tag, r.fired, r.state, r.owner is hddp) for r in recs],
    names=[n for n, _ in hddp.named_parameters()],
    all_rows=[(r.kind, r.path, r.by, r.owner is hddp) for r in reg.hooks()],
    param_only=[(r.kind, r.by) for r in reg.hooks(owner=hddp.module[0].weight)],
    table=reg.table())
# a registry that does not know the model lists the same under the DDP owner (paths relative to it)
out["listing"]["bare"] = [(r.kind, r.path, r.by) for r in HookRegistry().hooks(owner=dddp)]

# -- errors: remove / disable a comm hook, register twice, a bad annotation (as PyTorch's direct calls)
def err(f):
    try:
        f()
    except Exception as e:
        return type(e).__name__, str(e)
    return None
errs = dict(remove=err(lambda: reg.remove(tag="mean")), disable=err(lambda: reg.disable(owner=hddp)),
            remove_all=reg.remove_all())
errs["after"] = (crec.state, crec.enabled, len(hcalls))
hddp(hg.tensor(xs[0])).sum().backward()
errs["still_fires"] = crec.fired == len(hcalls) and len(hcalls) > errs["after"][2]
errs["twice"] = err(lambda: reg.register(hddp, "comm", make_hook(hg, hdist, [])))
errs["twice_torch"] = err(lambda: tddp.register_comm_hook(None, make_hook(torch, tdist, [])))
errs["listed_after_twice"] = [(r.name, r.tag, r.state) for r in reg.hooks(owner=hddp, kind="comm")]
def bad(state, bucket: int): pass
def bad_t(state, bucket: int): pass
errs["annotation"] = err(lambda: reg.register(hg.nn.parallel.DistributedDataParallel(net(hg)), "comm", bad))
errs["annotation_torch"] = err(lambda: torch.nn.parallel.DistributedDataParallel(net(torch)).register_comm_hook(
    None, bad_t))
errs["unknown_kind"] = err(lambda: reg.register(hddp.module, "comm", bad))
def in_scope():
    with reg.scope():
        reg.register(hg.nn.parallel.DistributedDataParallel(net(hg)), "comm", make_hook(hg, hdist, []))
errs["scope"] = err(in_scope)
out["errors"] = errs

# -- why: four ways a comm hook does not fire; the torch twin of each shows PyTorch's hook did not fire either
x = xs[0]
def case(T, D, scenario, via_registry):
    calls = []
    ddp = T.nn.parallel.DistributedDataParallel(net(T))
    hook = make_hook(T, D, calls)
    r = HookRegistry(ddp) if T is hg else None
    register = (lambda: r.register(ddp, "comm", hook)) if r is not None and via_registry else \
        (lambda: ddp.register_comm_hook(None, hook))
    if scenario != "late":
        register()
    def body():
        if scenario == "late":
            ddp(T.tensor(x)).sum().backward()
            register()
        elif scenario == "no_sync":
            with ddp.no_sync():
                ddp(T.tensor(x)).sum().backward()
        elif scenario == "bypass":
            ddp.module(T.tensor(x)).sum().backward()
        elif scenario == "no_backward":
            ddp(T.tensor(x))
    if T is torch:
        body()
        return len(calls)
    with why.watch(ddp, registry=r) as w:
        body()
    return len(calls), [(f.record.kind, f.record.fired, f.reason, str(f)) for f in w.report()]
whys = {}
for scenario in ("late", "no_sync", "bypass", "no_backward"):
    for via in (True, False):
        whys[scenario, via] = (case(hg, hdist, scenario, via), case(torch, tdist, scenario, via))
# a comm hook that fires is not reported, and neither are DDP's own hooks
ddp = hg.nn.parallel.DistributedDataParallel(net(hg))
r = HookRegistry(ddp); r.register(ddp, "comm", make_hook(hg, hdist, []))
with why.watch(ddp, registry=r) as w:
    ddp(hg.tensor(x)).sum().backward()
whys["fired"] = w.report()
with why.watch(ddp, registry=r) as w:
    with hg.no_grad():
        ddp(hg.tensor(x))
whys["grad_off"] = [(f.record.kind, f.reason) for f in w.report()]
out["why"] = whys
report(out)
'''


def test_ddp_tools(tmp_path):
    res = launch(tmp_path, WORKER)
    for rank, out in enumerate(res.ranks):
        reg = out["register"]
        assert reg["ret"] is None                                   # register_comm_hook returns None
        assert len(reg["tcalls"]) > 3                                # several buckets after the rebuild
        assert reg["calls"] == reg["tcalls"] == reg["direct_calls"]  # index, is_last, shapes per call
        assert reg["fired"] == len(reg["tcalls"])                   # once per bucket per backward
        assert reg["same_as_direct"]
        assert reg["vs_torch"] < 1e-5

        lst = out["listing"]
        rows = lst["rows"]
        assert rows[0] == ("comm", "", "mean_hook", None, "mean", reg["fired"], "active", True)
        assert [r[:4] for r in rows[1:]] == [("post_accumulate_grad", n, "autograd_hook", "DistributedDataParallel")
                                             for n in lst["names"]]
        assert all(r[6] == "active" and r[7] for r in rows[1:])
        assert lst["names"][0] == "module.0.weight"
        # the whole listing: the user's hook under its parameter, DDP's hooks under DDP, each once
        assert ("grad", "module.0.weight", None, False) in lst["all_rows"]
        assert sorted(lst["all_rows"]) == sorted([("grad", "module.0.weight", None, False)] +
                                                 [(r[0], r[1], r[3], True) for r in rows])
        assert lst["param_only"] == [("grad", None), ("post_accumulate_grad", "DistributedDataParallel")]
        assert "<DistributedDataParallel>" in lst["table"] and "module.4.bias" in lst["table"]
        assert lst["bare"] == [("comm", None, None)] + [("post_accumulate_grad", n, "DistributedDataParallel")
                                                        for n in lst["names"]]

        e = out["errors"]
        assert e["remove"][0] == e["disable"][0] == "RuntimeError"
        assert "cannot be removed" in e["remove"][1] and "mean_hook" in e["remove"][1]
        assert "cannot be disabled" in e["disable"][1]
        assert e["remove_all"] == 0 and e["after"][:2] == ("active", True) and e["still_fires"]
        assert e["twice"] == e["twice_torch"]
        assert e["listed_after_twice"] == [("mean_hook", "mean", "active")]     # the refused one is not listed
        assert e["annotation"] == e["annotation_torch"]
        assert e["unknown_kind"][0] == "ValueError" and "'comm'" in e["unknown_kind"][1]
        assert e["scope"][0] == "RuntimeError" and "scope" in e["scope"][1], e["scope"]

        w = out["why"]
        expect = {"late": "comm_registered_late", "no_sync": "no_sync", "bypass": "ddp_bypassed",
                  "no_backward": "backward_not_reached"}
        for (scenario, via), ((n_hg, findings), n_torch) in ((k, v) for k, v in w.items() if isinstance(k, tuple)):
            assert n_hg == n_torch == 0, (scenario, via)
            [(kind, fired, reason, text)] = findings
            assert (kind, reason) == ("comm", expect[scenario]), (scenario, via, findings)
            assert fired == (0 if via else None)
            assert "mean_hook" in text
        assert "too late" in w["late", True][0][1][0][3] and "no_sync()" in w["no_sync", True][0][1][0][3]
        assert "model.module(...)" in w["bypass", True][0][1][0][3]
        assert w["fired"] == []
        assert w["grad_off"] == [("comm", "grad_mode_off")]
