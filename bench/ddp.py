"""DistributedDataParallel: weak scaling, overlap and bookkeeping, hookgrad (MPI) beside PyTorch (gloo).

    python bench/ddp.py                  # the table (starts its own 1- and 2-process jobs)
    python bench/ddp.py --steps 40       # more timed steps per measurement

Every process runs on one thread (as torchrun sets OMP_NUM_THREADS=1), both libraries in the same processes,
taking turns. Rows:

- weak scaling: 2 processes, each doing the single-process batch. Efficiency = time of a step in 1 process
  (no DDP) / time of a step in 2 processes with DDP (1.0: perfect; the ratio column is hookgrad's efficiency
  over PyTorch's, higher is better here);
- overlap (small buckets, so that there is something to overlap): how much of the allreduce time backward hid
  (``_get_ddp_logging_data``: overlap / comm time), and the DDP step against allreduce-after-backward (one
  flat all_reduce once backward is done), hookgrad only (target: ratio <= 1);
- bookkeeping: DDP on 1 process minus the plain step, per step, against the target 2 us per parameter plus
  30 us per bucket.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------------------------------------
# the workloads (the same as bench/run.py's MLP and CNN training steps, and a many-parameter MLP)

def _data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def mlp(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    return model, lib.tensor(_data(64, 784)), lib.tensor(np.random.default_rng(0).integers(0, 10, 64))


def cnn(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
    return model, lib.tensor(_data(32, 1, 28, 28)), lib.tensor(np.random.default_rng(0).integers(0, 10, 32))


def deep(lib):
    """64 parameters of 32x32: DDP's per-parameter cost shows."""
    nn = lib.nn
    lib.manual_seed(0)
    layers = []
    for _ in range(32):
        layers += [nn.Linear(32, 32), nn.Tanh()]
    model = nn.Sequential(*layers, nn.Linear(32, 10))
    return model, lib.tensor(_data(16, 32)), lib.tensor(np.random.default_rng(0).integers(0, 10, 16))


WORKLOADS = {"MLP 784-256-128-10, batch 64": mlp, "small CNN, batch 32": cnn, "MLP 32 x Linear(32,32), batch 16": deep}


def make_step(lib, name, wrap=None, after=None):
    model, x, y = WORKLOADS[name](lib)
    if wrap is not None:
        model = wrap(model)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        if after is not None:
            after(model)
        opt.step()
    return step, model


def timed(step, steps, barrier=None):
    """Median seconds per step (after warm-up; ranks start each step together when ``barrier`` is given)."""
    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        if barrier is not None:
            barrier()
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


# ------------------------------------------------------------------------------------------------
# inside the jobs

def _libs():
    import torch
    import hookgrad
    torch.set_num_threads(1)
    hookgrad.set_num_threads(1)
    return torch, hookgrad


def best_of(fns, steps):
    """Seconds per step of each function, taking turns in chunks of 5 steps; the best chunk counts (a
    difference of two such times is DDP's own cost, with the machine's noise mostly left out)."""
    for f in fns:
        for _ in range(5):
            f()
    best = [float("inf")] * len(fns)
    for _ in range(max(steps // 5, 4)):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            for _ in range(5):
                f()
            best[i] = min(best[i], (time.perf_counter() - t) / 5)
    return best


def job_single(steps):
    """1 process: the plain step of each library, and hookgrad's DDP step on a world of 1 (bookkeeping)."""
    torch, hookgrad = _libs()
    import hookgrad.distributed as hd
    import torch.distributed as td
    hd.init_process_group("mpi")
    td.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["HG_PORT"], rank=0, world_size=1)
    out = {}
    for name in WORKLOADS:
        plain_t = timed(make_step(torch, name)[0], steps)
        # PyTorch's own DDP cost on one process, for reference (its copies into and out of the bucket included)
        pt, dt = best_of([make_step(torch, name)[0], make_step(torch, name, torch.nn.parallel.DistributedDataParallel)[0]],
                         steps)
        plain_h = make_step(hookgrad, name)[0]
        out[name] = {"plain_torch": plain_t, "plain_hookgrad_median": timed(plain_h, steps), "ddp1_torch_cost": dt - pt}
        ddps = {key: make_step(hookgrad, name, lambda m, cap=cap: hookgrad.nn.parallel.DistributedDataParallel(
            m, bucket_cap_mb=cap)) for key, cap in (("ddp1", None), ("ddp1_small", 0.01))}
        times = best_of([plain_h] + [step for step, _ in ddps.values()], steps)
        out[name]["plain_hookgrad"] = times[0]
        for (key, (_, ddp)), t in zip(ddps.items(), times[1:]):
            out[name][key] = t
            out[name][key + "_buckets"] = len(ddp.reducer.buckets)
        out[name]["params"] = sum(1 for p in ddp.parameters() if p.requires_grad)
    return out


def _flat_allreduce(hookgrad, hd):
    """Allreduce after backward: every gradient into one flat buffer, one blocking all_reduce, back."""
    def after(model):
        grads = [p.grad for p in model.parameters()]
        flat = hookgrad.cat([g.reshape(-1) for g in grads]) / hd.get_world_size()
        hd.all_reduce(flat)
        at = 0
        for g in grads:
            n = g.numel()
            g.copy_(flat[at:at + n].view_as(g))
            at += n
    return after


def job_pair(steps):
    """2 processes: each library's DDP step, hookgrad's overlap data, and allreduce-after-backward."""
    torch, hookgrad = _libs()
    import torch.distributed as td
    import hookgrad.distributed as hd
    rank = int(os.environ["RANK"])
    td.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["HG_PORT"], rank=rank,
                          world_size=int(os.environ["WORLD_SIZE"]))
    hd.init_process_group("mpi")
    out = {}
    for name in WORKLOADS:
        step_t, _ = make_step(torch, name, torch.nn.parallel.DistributedDataParallel)
        step_h, ddp = make_step(hookgrad, name, hookgrad.nn.parallel.DistributedDataParallel)
        step_a, _ = make_step(hookgrad, name, after=_flat_allreduce(hookgrad, hd))
        # overlap needs more than one bucket: small buckets (the last layers' gradients go first)
        step_o, small = make_step(hookgrad, name, lambda m: hookgrad.nn.parallel.DistributedDataParallel(
            m, bucket_cap_mb=0.01))
        ddp_t = timed(step_t, steps, td.barrier)
        ddp_h = timed(step_h, steps, hd.barrier)
        after_h = timed(step_a, steps, hd.barrier)
        small_h = timed(step_o, steps, hd.barrier)
        log = small._get_ddp_logging_data()
        out[name] = {"ddp2_torch": ddp_t, "ddp2_hookgrad": ddp_h, "after2_hookgrad": after_h,
                     "small2_hookgrad": small_h, "small_buckets": len(small.reducer.buckets),
                     "comm": log.get("avg_backward_comm_time", 0),
                     "overlap": log.get("avg_backward_compute_comm_overlap_time", 0),
                     "compute": log.get("avg_backward_compute_time", 0)}
    td.destroy_process_group()
    return out


# ------------------------------------------------------------------------------------------------
# the driver

def _launch(n, what, steps):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, OMP_NUM_THREADS="1", HG_PORT=str(port))
    cmd = [sys.executable, "-m", "hookgrad.distributed.run", "--nproc-per-node", str(n), os.path.abspath(__file__),
           "--job", what, "--steps", str(steps)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"the {n}-process job failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")


def _us(t):
    return f"{t * 1e6:.0f}us" if t < 0.01 else f"{t * 1e3:.2f}ms"


def main(steps):
    single = _launch(1, "single", steps)
    pair = _launch(2, "pair", steps)
    print("DDP, 2 processes on this machine, one thread each (hookgrad: MPI; torch: gloo)\n")
    print(f"{'weak scaling (efficiency = 1-process step / 2-process DDP step)':70s} {'torch':>8s} {'hookgrad':>9s} "
          f"{'ratio':>6s}")
    for name in WORKLOADS:
        s, p = single[name], pair[name]
        et = s["plain_torch"] / p["ddp2_torch"]
        eh = s["plain_hookgrad_median"] / p["ddp2_hookgrad"]
        print(f"  {name:68s} {et:8.2f} {eh:9.2f} {eh / et:6.2f}   (steps: torch {_us(s['plain_torch'])} -> "
              f"{_us(p['ddp2_torch'])}, hookgrad {_us(s['plain_hookgrad_median'])} -> {_us(p['ddp2_hookgrad'])})")
    print(f"\n{'overlap (hookgrad, 2 processes, bucket_cap_mb=0.01)':52s} {'buckets':>7s} {'hidden':>7s} "
          f"{'DDP step':>9s} {'after-backward':>15s} {'ratio':>6s}")
    for name in WORKLOADS:
        p = pair[name]
        hidden = p["overlap"] / p["comm"] if p["comm"] else 0.0
        print(f"  {name:50s} {p['small_buckets']:7d} {hidden:7.0%} {_us(p['small2_hookgrad']):>9s} "
              f"{_us(p['after2_hookgrad']):>15s} {p['small2_hookgrad'] / p['after2_hookgrad']:6.2f}")
    print(f"\n{'bookkeeping (hookgrad DDP on 1 process - plain step)':58s} {'params':>6s} {'buckets':>7s} "
          f"{'per step':>9s} {'target':>8s} {'ratio':>6s} {'torch DDP':>10s}")
    for name in WORKLOADS:
        s = single[name]
        for key in ("ddp1", "ddp1_small"):
            cost = s[key] - s["plain_hookgrad"]
            buckets = s[key + "_buckets"]
            target = (2 * s["params"] + 30 * buckets) * 1e-6
            ref = _us(s["ddp1_torch_cost"]) if key == "ddp1" else ""
            print(f"  {name:56s} {s['params']:6d} {buckets:7d} {_us(cost):>9s} {_us(target):>8s} "
                  f"{cost / target:6.2f} {ref:>10s}")
    return single, pair


if __name__ == "__main__":
    args = sys.argv[1:]
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 25
    if "--job" in args:
        what = args[args.index("--job") + 1]
        result = job_single(steps) if what == "single" else job_pair(steps)
        if int(os.environ.get("RANK", "0")) == 0:
            print("RESULT " + json.dumps(result), flush=True)
    else:
        main(steps)
