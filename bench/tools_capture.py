"""Cost of capturing every module's output, against the plain forward (hookgrad only, no torch).

    python bench/tools_capture.py

Model: ``Sequential`` of 32 x ``Linear(16, 16)``, input batch 8, grad mode on. Timed: ``model(x)``
plain, and ``model(x)`` inside ``capture(model, "*")`` (33 modules: the root and the 32 layers, default
"detach" policy; the cache is cleared each step so it does not grow). Each time is the best of many
chunks of 50 steps, plain and captured chunks alternating. Target (issue "hookgrad.tools", item 3): ratio <= 1.3.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

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
    main()
