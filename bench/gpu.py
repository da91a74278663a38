"""hookgrad on a CUDA device (CuPy) beside torch CUDA in one process: the issue's speed rows, as ratios.

    PYTHONPATH=src python bench/gpu.py            # on a machine with a GPU, CuPy and torch CUDA
    HOOKGRAD_FAKE_CUDA=cupylike PYTHONPATH=src python bench/gpu.py --small    # shakes the script out on a CPU

Rows (targets from issue 24): a small elementwise op (x * 2 on 1,024 floats) against CuPy's own time for the
same op (<= 1.3x); the 4096x4096 matmul forward and backward (<= 1.05x torch); the MLP 784-256-128-10 training
step at batch 64 with SGD momentum (<= 1.5x torch); ResNet-18 inference at batch 32 x 224 (<= 1.5x torch);
MiniLM-sized BERT (6 layers, 384 wide, 12 heads, eager attention) inference at batch 64 x 128 with random weights
(<= 1.5x torch); each fused kernel of src/hookgrad/_cuda_kernels.py against the same op unfused (>= 3x faster).
TF32 is off on both sides. The torch models are hookgrad.models' own source run on torch, with
hookgrad's weights copied in, so the two compute the same network (the row prints the largest difference).
Each row runs on its own: an error is printed and the next row runs.
"""
import argparse
import os
import sys
import time
import traceback
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("HOOKGRAD_JIT", "0")     # the CPU's numba kernels play no part here: no compile time spent
FAKE = os.environ.get("HOOKGRAD_FAKE_CUDA") == "cupylike"
if FAKE:            # the tests' CuPy stand-in as hookgrad's "cuda"; torch on the CPU
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from backend import cupylike as cp_mod
    cp_mod.use_as_cuda()
    cp = cp_mod.xp
else:
    import cupy as cp

import torch  # noqa: E402

import hookgrad  # noqa: E402

TDEV = "cpu" if FAKE else "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def t_sync():
    if TDEV == "cuda":
        torch.cuda.synchronize()


def h_sync():
    hookgrad.cuda.synchronize()


def c_sync():
    if not FAKE:
        cp.cuda.Device().synchronize()


def timeit(fn, sync, n, warm=3, repeat=3):
    """The best of ``repeat`` means over ``n`` calls, in ms (the device synchronised around each run)."""
    for _ in range(warm):
        fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e3


ROWS = []


def row(name, h_ms, ref_ms, ref_name, target, note=""):
    r = h_ms / ref_ms
    ok = "ok" if r <= target else "MISSED"
    line = (f"{name:<46} hookgrad {h_ms:9.3f} ms   {ref_name} {ref_ms:9.3f} ms   ratio {r:5.2f}x "
            f"(target <= {target}x: {ok}) {note}")
    ROWS.append(line)
    print(line, flush=True)


def torch_copy_of(source_file, names):
    """hookgrad.models' source run on torch: the same network, built from torch's modules."""
    src = open(os.path.join(os.path.dirname(hookgrad.__file__), "models", source_file)).read()
    for a, b in (("from .. import nn", "from torch import nn"),
                 ("from .._creation import arange, tensor, zeros, zeros_like",
                  "from torch import arange, tensor, zeros, zeros_like"),
                 ("from ..autograd.grad_mode import no_grad", "from torch import no_grad"),
                 ("from ..nn import functional as F", "from torch.nn import functional as F"),
                 ("from ..primitives.join import cat", "from torch import cat")):
        src = src.replace(a, b)
    m = types.ModuleType(f"torch_{source_file[:-3]}")
    m.__file__ = source_file
    exec(compile(src, f"torch:{source_file}", "exec"), m.__dict__)
    return [getattr(m, n) for n in names]


def copy_weights(hm, tm):
    sd = {k: torch.from_numpy(v.detach().cpu().numpy().copy()) for k, v in hm.state_dict().items()}
    tm.load_state_dict(sd)
    return tm


def bench_small_op(a):
    n = 2000 if not a.small else 200
    x = hookgrad.randn(1024, device="cuda")
    xc = cp.asarray(np.random.default_rng(0).standard_normal(1024).astype(np.float32))
    xt = torch.randn(1024, device=TDEV)
    h = timeit(lambda: x * 2, h_sync, n)
    c = timeit(lambda: xc * 2, c_sync, n)
    t = timeit(lambda: xt * 2, t_sync, n)
    row("x * 2 (1,024 floats) vs CuPy", h, c, "cupy ", 1.3, f"(torch {t:.4f} ms)")


def bench_matmul(a):
    n = 4096 if not a.small else 512
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    G = np.ones((n, n), np.float32)
    res = {}
    for L, dev, sync in ((hookgrad, "cuda", h_sync), (torch, TDEV, t_sync)):
        x = L.tensor(A, device=dev, requires_grad=True)
        y = L.tensor(B, device=dev, requires_grad=True)
        g = L.tensor(G, device=dev)

        def step():
            x.grad = y.grad = None
            (x @ y).backward(g)
        res[L] = timeit(step, sync, 10 if not a.small else 3)
    row(f"matmul {n}x{n} forward + backward", res[hookgrad], res[torch], "torch", 1.05)


def bench_mlp(a):
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((64, 784)).astype(np.float32), rng.integers(0, 10, 64)
    hookgrad.manual_seed(0)
    hm = hookgrad.nn.Sequential(hookgrad.nn.Linear(784, 256), hookgrad.nn.ReLU(), hookgrad.nn.Linear(256, 128),
                                hookgrad.nn.ReLU(), hookgrad.nn.Linear(128, 10))
    tm = copy_weights(hm, torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                              torch.nn.ReLU(), torch.nn.Linear(128, 10)))
    res = {}
    for L, m, dev, sync in ((hookgrad, hm, "cuda", h_sync), (torch, tm, TDEV, t_sync)):
        m.to(dev)
        opt = L.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        x, y = L.tensor(xs, device=dev), L.tensor(ys, device=dev)

        def step():
            opt.zero_grad()
            L.nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
        res[L] = timeit(step, sync, 100 if not a.small else 10)
    d = max(float(np.abs(p.detach().cpu().numpy() - q.detach().cpu().numpy()).max())
            for p, q in zip(hm.parameters(), tm.parameters()))
    row("MLP 784-256-128-10 SGD-momentum step, batch 64", res[hookgrad], res[torch], "torch", 1.5,
        f"(weights after equal steps differ by {d:.1e})")


def bench_resnet(a):
    from hookgrad.models import resnet18
    (t_resnet18,) = torch_copy_of("resnet.py", ["resnet18"])
    b, s = (32, 224) if not a.small else (2, 64)
    hookgrad.manual_seed(0)
    hm = resnet18().eval()
    tm = copy_weights(hm, t_resnet18().eval())
    xs = np.random.default_rng(0).standard_normal((b, 3, s, s)).astype(np.float32)
    res, outs = {}, {}
    for L, m, dev, sync in ((hookgrad, hm, "cuda", h_sync), (torch, tm, TDEV, t_sync)):
        m.to(dev)
        x = L.tensor(xs, device=dev)
        with L.no_grad():
            outs[L] = m(x).cpu().numpy()
            res[L] = timeit(lambda: m(x), sync, 20 if not a.small else 2)
    d = float(np.abs(outs[hookgrad] - outs[torch]).max())
    row(f"ResNet-18 inference {b}x3x{s}x{s}", res[hookgrad], res[torch], "torch", 1.5, f"(max |diff| {d:.1e})")


def bench_bert(a):
    from hookgrad.models.bert import BertConfig, BertModel
    TConfig, TModel = torch_copy_of("bert.py", ["BertConfig", "BertModel"])
    b, s = (64, 128) if not a.small else (4, 32)
    kw = dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
    hookgrad.manual_seed(0)
    hm = BertModel(BertConfig(**kw)).eval()
    tm = copy_weights(hm, TModel(TConfig(**kw)).eval())
    rng = np.random.default_rng(0)
    ids, mask = rng.integers(0, 30522, (b, s)), np.ones((b, s), np.int64)
    res, outs = {}, {}
    for L, m, dev, sync in ((hookgrad, hm, "cuda", h_sync), (torch, tm, TDEV, t_sync)):
        m.to(dev)
        i, k = L.tensor(ids, device=dev), L.tensor(mask, device=dev)
        with L.no_grad():
            outs[L] = m(i, k).last_hidden_state.cpu().numpy()
            res[L] = timeit(lambda: m(i, k), sync, 20 if not a.small else 2)
    d = float(np.abs(outs[hookgrad] - outs[torch]).max())
    row(f"BERT 6x384 (MiniLM-sized) inference {b}x{s}", res[hookgrad], res[torch], "torch", 1.5,
        f"(max |diff| {d:.1e})")


def bench_fused(a):
    """Each fused kernel (src/hookgrad/_cuda_kernels.py) against the same op with fusion off (the chain of CuPy
    calls it replaces), in hookgrad, same shapes: target >= 3x faster (ratio fused / unfused <= 0.34)."""
    from hookgrad import _cuda_kernels
    F = hookgrad.nn.functional
    shape = (256, 1024) if not a.small else (16, 64)
    n = 200 if not a.small else 5
    rng = np.random.default_rng(0)
    xs, gs = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    w = hookgrad.linspace(0.5, 1.5, shape[-1], device="cuda")
    b = hookgrad.linspace(-1, 1, shape[-1], device="cuda")
    ops = {"gelu": F.gelu, "gelu tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
           "sigmoid": hookgrad.sigmoid, "tanh": hookgrad.tanh, "softplus": F.softplus, "elu": F.elu,
           "leaky_relu": F.leaky_relu, "softmax": lambda x: x.softmax(-1), "log_softmax": lambda x: x.log_softmax(-1),
           "layer_norm": lambda x: F.layer_norm(x, shape[-1:], w, b)}

    def both(name, make_step):
        times = []
        for on in (True, False):
            _cuda_kernels.ENABLED[0] = on
            try:
                step = make_step()
                times.append(timeit(step, h_sync, n))
            finally:
                _cuda_kernels.ENABLED[0] = True
        row(f"fused {name}", times[0], times[1], "unfused", 0.34, f"({times[1] / times[0]:.1f}x faster)")

    x = hookgrad.tensor(xs, device="cuda", requires_grad=True)
    g = hookgrad.tensor(gs, device="cuda")
    for name, f in ops.items():
        if name != "tanh":          # (tanh's forward is one CuPy call: only its gradient is fused)
            def fwd(f=f):
                def step():
                    with hookgrad.no_grad():
                        f(x)
                return step
            both(f"{name} forward {shape}", fwd)

        def bwd(f=f):
            y = f(x)
            return lambda: hookgrad.autograd.grad(y, x, g, retain_graph=True)
        both(f"{name} backward {shape}", bwd)

    for name, make in (("SGD momentum", lambda ps: hookgrad.optim.SGD(ps, lr=0.01, momentum=0.9)),
                       ("Adam", lambda ps: hookgrad.optim.Adam(ps, lr=1e-3)),
                       ("AdamW", lambda ps: hookgrad.optim.AdamW(ps, lr=1e-3))):
        def opt_step(make=make):
            p = hookgrad.tensor(np.tile(xs, (4, 1)), device="cuda", requires_grad=True)
            p.grad = hookgrad.tensor(np.tile(gs, (4, 1)), device="cuda")
            o = make([p])
            o.step()
            return o.step
        both(f"{name} step ({4 * shape[0]}, {shape[1]})", opt_step)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="small shapes (a CPU shake-out run)")
    p.add_argument("--only", default="", help="comma-separated row names: small,matmul,mlp,resnet,bert,fused")
    a = p.parse_args()
    dev = "the cupylike stand-in (no GPU), torch on the CPU" if FAKE else torch.cuda.get_device_name()
    print(f"device: {dev}; torch {torch.__version__}; CuPy {getattr(cp, '__version__', '-')}", flush=True)
    benches = {"small": bench_small_op, "matmul": bench_matmul, "mlp": bench_mlp, "resnet": bench_resnet,
               "bert": bench_bert, "fused": bench_fused}
    for name, fn in benches.items():
        if a.only and name not in a.only.split(","):
            continue
        try:
            fn(a)
        except Exception:
            print(f"{name}: FAILED", flush=True)
            traceback.print_exc()
            sys.stdout.flush()
    print("\nsummary:")
    for r in ROWS:
        print("  " + r)


if __name__ == "__main__":
    main()
