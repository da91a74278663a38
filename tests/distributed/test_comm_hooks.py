"""The built-in DDP communication hooks on 2 ranks against PyTorch's (gloo) in the same processes: each hook called
directly on the same GradBucket contents (Future values, PowerSGD's P/Q/error dicts over several iterations,
its error-feedback identity), then through DistributedDataParallel (parameters after SGD steps equal PyTorch
DDP's; 100 iterations with each built-in hook keep the ranks identical). One launch for all."""
import pytest

from harness import launch

WORKER = r'''
import numpy as np, torch
import hookgrad as hg, hookgrad.distributed as hdist
tdist = gloo()
hdist.init_process_group("mpi")
from hookgrad.distributed.algorithms.ddp_comm_hooks import (default_hooks as HD, powerSGD_hook as HP,
    quantization_hooks as HQ, debugging_hooks as HN)
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as TD, powerSGD_hook as TP, quantization_hooks as TQ
out = {}

class TB:
    """torch's GradBucket has no Python constructor: the methods its hooks call, over one buffer."""
    def __init__(s, i, n, buf, shapes): s.i, s.n, s.buf, s.shapes = i, n, buf, shapes
    def index(s): return s.i
    def is_last(s): return s.i == s.n - 1
    def buffer(s): return s.buf
    def set_buffer(s, b): s.buf = b
    def gradients(s):
        res, o = [], 0
        for sh in s.shapes:
            k = int(np.prod(sh)); res.append(s.buf[o:o + k].view(sh)); o += k
        return res

def pair(i, n, g, shapes, dtype=np.float32):
    tb = TB(i, n, torch.tensor(g.astype(dtype)), shapes)
    buf = hg.tensor(g.astype(dtype))
    lens = [int(np.prod(s)) for s in shapes]
    offs = list(np.cumsum([0] + lens[:-1]))
    params = [hg.nn.Parameter(hg.zeros(s)) for s in shapes]
    return tb, hdist.GradBucket(i, n, buf, offs, lens, shapes, params)

def diff(t, h):
    t = t.detach().float().numpy(); h = h.detach().float().numpy()
    return (float(np.max(np.abs(t - h))) if t.size else 0.0) if t.shape == h.shape else float("inf")

rs = np.random.RandomState(100 + RANK)
# -- default hooks, wrappers, noop
simple = {}
for name, th, hh in [("allreduce", TD.allreduce_hook, HD.allreduce_hook), ("fp16", TD.fp16_compress_hook, HD.fp16_compress_hook),
                     ("bf16", TD.bf16_compress_hook, HD.bf16_compress_hook),
                     ("fp16w", TD.fp16_compress_wrapper(TD.allreduce_hook), HD.fp16_compress_wrapper(HD.allreduce_hook)),
                     ("bf16w", TD.bf16_compress_wrapper(TD.allreduce_hook), HD.bf16_compress_wrapper(HD.allreduce_hook))]:
    g = (rs.randn(37) * 3).astype(np.float32)
    tb, hb = pair(0, 1, g, [(37,)])
    tv, hv = th(None, tb).wait(), hh(None, hb).wait()
    simple[name] = (diff(tv, hv), str(hv.dtype), hv is hb.buffer() or hv.data_ptr() == hb.buffer().data_ptr())
out["simple"] = simple
g = rs.randn(5).astype(np.float32); tb, hb = pair(0, 1, g, [(5,)])
out["noop"] = HN.noop_hook(None, hb).value() is hb.buffer()

# -- PowerSGD: several iterations, two buckets; state dicts compared after every call
shapes = [[(8, 6), (6,), (4, 3, 2), (5,)], [(6, 5), (6, 5), (3,)]]
configs = {"r1": dict(matrix_approximation_rank=1, start_powerSGD_iter=2),
           "r2_nows": dict(matrix_approximation_rank=2, start_powerSGD_iter=2, warm_start=False, min_compression_rate=1),
           "r3_qr": dict(matrix_approximation_rank=3, start_powerSGD_iter=2, min_compression_rate=1),
           "batch_noef": dict(matrix_approximation_rank=1, start_powerSGD_iter=3, batch_tensors_with_same_shape=True,
                              use_error_feedback=False, random_seed=7)}
psgd = {}
for cname, kw in configs.items():
    ts, hs = TP.PowerSGDState(None, **kw), HP.PowerSGDState(None, **kw)
    worst, ident = 0.0, 0.0
    for it in range(5):
        for b in range(2):
            n = sum(int(np.prod(s)) for s in shapes[b])
            g = rs.randn(n).astype(np.float32)
            tb, hb = pair(b, 2, g, shapes[b])
            old_err = hs.error_dict[b].numpy().copy() if b in hs.error_dict else 0
            tv, hv = TP.powerSGD_hook(ts, tb).wait(), HP.powerSGD_hook(hs, hb).wait()
            worst = max(worst, diff(tv, hv))
            for d in ("error_dict", "p_memory_dict", "q_memory_dict"):
                td, hd_ = getattr(ts, d), getattr(hs, d)
                assert sorted(td) == sorted(hd_), (cname, d, sorted(td), sorted(hd_))
                for k in td:
                    worst = max(worst, diff(td[k], hd_[k]))
            if hs.use_error_feedback and it >= kw["start_powerSGD_iter"]:
                ident = max(ident, float(np.abs(hv.numpy() + hs.error_dict[b].numpy() - (g + old_err)).max()))
    psgd[cname] = dict(worst=worst, ident=ident, iter=(ts.iter, hs.iter),
                       stats=(ts.compression_stats(), hs.compression_stats()))
out["psgd"] = psgd

# fp16 wrapper around PowerSGD (Gram-Schmidt in half precision: looser)
ts, hs = TP.PowerSGDState(None, start_powerSGD_iter=2), HP.PowerSGDState(None, start_powerSGD_iter=2)
tw, hw = TD.fp16_compress_wrapper(TP.powerSGD_hook), HD.fp16_compress_wrapper(HP.powerSGD_hook)
w16 = 0.0
for it in range(4):
    g = rs.randn(83).astype(np.float32)
    tb, hb = pair(0, 1, g, shapes[0])
    w16 = max(w16, diff(tw(ts, tb).wait(), hw(hs, hb).wait()))
out["psgd_fp16w"] = w16

# batched PowerSGD: torch 2.13 passes a 2-D Q to _orthogonalize (AssertionError); the oracle orthogonalises it as
# a batch of one, which is what hookgrad does
_orig = TP._orthogonalize
TP._orthogonalize = lambda m, epsilon=0: _orig(m.unsqueeze(0) if m.dim() == 2 else m, epsilon)
ts, hs = TP.PowerSGDState(None, start_powerSGD_iter=2), HP.PowerSGDState(None, start_powerSGD_iter=2)
bw = 0.0
for it in range(5):
    g = rs.randn(40).astype(np.float32)
    tb, hb = pair(0, 1, g, [(40,)])
    tv, hv = TP.batched_powerSGD_hook(ts, tb).wait(), HP.batched_powerSGD_hook(hs, hb).wait()
    bw = max(bw, diff(tv, hv), diff(ts.error_dict.get(0, torch.zeros(1)), hs.error_dict.get(0, hg.zeros(1))))
    bw = max(bw, float(hv.shape[0] != 40))
out["batched"] = bw
TP._orthogonalize = _orig

# state pickling: process group dropped, restored as the default group
import pickle, logging
logging.disable(logging.WARNING)
st = pickle.loads(pickle.dumps(hs))
out["pickle"] = (st.process_group is hdist.group.WORLD, st.iter, sorted(st.error_dict))

# -- quantization: torch's callbacks fail under gloo (all_gather's future holds a flat list), so the oracle is
# PyTorch's observers and (de)quantization functions applied to every rank's bucket
from torch.ao.quantization import MinMaxObserver, PerChannelMinMaxObserver
g = (rs.randn(1100) * (RANK + 1)).astype(np.float32)
tg = torch.tensor(g)
allg = [torch.zeros(1100) for _ in range(WORLD)]; tdist.all_gather(allg, tg)
ref = torch.zeros(1100)
for x in allg:
    o = MinMaxObserver(); o(x); s, z = o.calculate_qparams()
    ref += TQ._dequantize_per_tensor_backend(TQ._quantize_per_tensor_backend(x, s[0], z[0].float()), s[0], z[0].float())
ref /= WORLD
_, hb = pair(0, 1, g, [(1100,)])
out["qtensor"] = diff(ref, HQ.quantization_pertensor_hook(None, hb).wait())
ref = torch.zeros(3, 512)
for x in allg:
    xc = torch.nn.functional.pad(x, (0, 512 - 1100 % 512)).view(-1, 512)
    o = PerChannelMinMaxObserver(); o(xc); s, z = o.calculate_qparams()
    ref += TQ._dequantize_per_channel_backend(TQ._quantize_per_channel_backend(xc, s, z.float()), s, z.float())
ref = ref.flatten()[:1100] / WORLD
_, hb = pair(0, 1, g, [(1100,)])
out["qchannel"] = diff(ref, HQ.quantization_perchannel_hook(None, hb).wait())

# ---- through DDP (hookgrad's beside PyTorch's)
from hookgrad.nn.parallel import DistributedDataParallel as HDDP
from torch.nn.parallel import DistributedDataParallel as TDDP
from hookgrad.distributed.algorithms import ddp_comm_hooks as HH
import logging; logging.disable(logging.WARNING)

def model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(12, 10), lib.nn.Tanh(), lib.nn.Linear(10, 6), lib.nn.Tanh(), lib.nn.Linear(6, 3))

def data(lib, it):
    rs = np.random.RandomState(1000 * it + RANK)
    return lib.tensor(rs.randn(8, 12).astype(np.float32)), lib.tensor(rs.randn(8, 3).astype(np.float32))

def train(lib, ddp_cls, hook, state, steps, register=None):
    m = ddp_cls(model(lib))
    if register is not None:
        register(m)
    elif hook is not None:
        m.register_comm_hook(state, hook)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    for it in range(steps):
        x, y = data(lib, it)
        opt.zero_grad()
        ((m(x) - y) ** 2).mean().backward()
        opt.step()
    return [p.detach().numpy().copy() for p in m.parameters()]

def maxdiff(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))

# the same trajectory as PyTorch's DDP (gloo), same seed and data
same = {}
for name, th, hh, ts, hs in [
        ("none", None, None, None, None),
        ("allreduce", TD.allreduce_hook, HD.allreduce_hook, None, None),
        ("fp16", TD.fp16_compress_hook, HD.fp16_compress_hook, None, None),
        ("powerSGD", TP.powerSGD_hook, HP.powerSGD_hook, lambda: TP.PowerSGDState(None, start_powerSGD_iter=2,
          min_compression_rate=1), lambda: HP.PowerSGDState(None, start_powerSGD_iter=2, min_compression_rate=1))]:
    tp = train(torch, TDDP, th, ts() if ts else None, 6)
    hp = train(hg, HDDP, hh, hs() if hs else None, 6)
    same[name] = maxdiff(tp, hp)
out["same"] = same

# >= 100 iterations with every built-in hook: finite, and the ranks hold the same parameters
drift = {}
for t in HH.DDPCommHookType:
    if t.name.endswith("RANK2") or t.name == "NOOP":
        continue    # the same hooks with rank 2; noop_hook communicates nothing, so ranks drift by design
    state = None
    def reg(m, t=t):
        HH.register_ddp_comm_hook(t, m, None)
    if t.name.startswith(("POWER", "BATCHED")):
        def reg(m, t=t):
            t.value.func(model=m, state=None, comm_hook=t.value.keywords["comm_hook"],
                         matrix_approximation_rank=t.value.keywords["matrix_approximation_rank"], start_powerSGD_iter=10)
    ps = train(hg, HDDP, None, None, 100, register=reg)
    flat = hg.tensor(np.concatenate([p.ravel() for p in ps]))
    other = flat.clone(); hdist.broadcast(other, src=0)
    drift[t.name] = (bool(np.isfinite(flat.numpy()).all()), float((flat - other).abs().max()))
out["drift"] = drift
report(out)
'''


@pytest.fixture(scope="module")
def res(tmp_path_factory):
    r = launch(tmp_path_factory.mktemp("comm_hooks"), WORKER, timeout=170)
    return r.ranks


def test_default_hooks_equal_torch(res):
    for rank in res:
        assert rank["simple"] == {"allreduce": (0.0, "torch.float32", True), "fp16": (0.0, "torch.float32", True),
                                  "bf16": (0.0, "torch.float32", True), "fp16w": (0.0, "torch.float16", True),
                                  "bf16w": (0.0, "torch.bfloat16", True)}
        assert rank["noop"] is True


@pytest.mark.parametrize("config", ["r1", "r2_nows", "r3_qr", "batch_noef"])
def test_powerSGD_equal_torch(res, config):
    for rank in res:
        r = rank["psgd"][config]
        assert r["worst"] < 1e-5, r             # the hook's values and P, Q, error dicts after every call
        assert r["iter"] == (5, 5)
        assert r["stats"][0] == pytest.approx(r["stats"][1])


def test_powerSGD_error_feedback_identity(res):
    # compressed result + new error == input + old error, on each rank
    for rank in res:
        for config in ("r1", "r2_nows", "r3_qr"):
            assert rank["psgd"][config]["ident"] < 1e-5


def test_powerSGD_wrapped_and_batched(res):
    for rank in res:
        assert rank["psgd_fp16w"] < 1e-2        # Gram-Schmidt in float16
        assert rank["batched"] < 1e-5


def test_powerSGD_state_pickles_without_group(res):
    for rank in res:
        assert rank["pickle"] == (True, 5, [0])


def test_quantization_hooks_equal_torch_observers(res):
    for rank in res:
        assert rank["qtensor"] < 1e-6 and rank["qchannel"] < 1e-6


@pytest.mark.parametrize("hook", ["none", "allreduce", "fp16", "powerSGD"])
def test_ddp_trajectory_equals_torch(res, hook):
    for rank in res:
        assert rank["same"][hook] < 1e-5


def test_ddp_100_iterations_no_drift(res):
    for rank in res:
        assert set(rank["drift"]) == {"ALLREDUCE", "FP16_COMPRESS", "BF16_COMPRESS", "QUANTIZE_PER_TENSOR",
                                      "QUANTIZE_PER_CHANNEL", "POWER_SGD", "BATCHED_POWER_SGD"}
        for name, (finite, gap) in rank["drift"].items():
            assert finite and gap == 0.0, name
