"""Cost of op-level hooks: the 10x(mul, add, relu) 8x8 chain + sum + backward, plain vs with an empty
OpHook registered (issue target: hooked <= 2x plain). Also reports the ready-made tools for context.

    python bench/tools_ophooks.py [--repeat 3] [--number 300] [--rounds 5]

Times are the best of ``repeat`` chunks of ``number`` steps, over ``rounds`` turns of the four
variants (plain, empty OpHook, OpTimer, detect_nonfinite).
"""
import argparse
import contextlib
import sys
import time

import numpy as np

import hookgrad
from hookgrad.autograd.graph import OpHook
from hookgrad.tools.nan import detect_nonfinite
from hookgrad.tools.ophooks import OpTimer


def make_step():
    rng = np.random.default_rng(0)
    a = hookgrad.tensor(rng.standard_normal((8, 8)).astype(np.float32), requires_grad=True)
    b = hookgrad.tensor(rng.standard_normal((8, 8)).astype(np.float32))

    def step():
        x = a
        for _ in range(10):
            x = (x * b + b).relu()
        x.sum().backward()
    return step


def best(step, repeat, number):
    for _ in range(max(3, number // 10)):
        step()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            step()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--number", type=int, default=300)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    step = make_step()
    tools = [("plain", contextlib.nullcontext), ("empty OpHook", OpHook), ("OpTimer", OpTimer),
             ("detect_nonfinite", detect_nonfinite)]
    times = {name: float("inf") for name, _ in tools}
    for _ in range(args.rounds):        # turns, as in run.py: the machine's speed comes and goes
        for name, tool in tools:
            with tool():
                times[name] = min(times[name], best(step, args.repeat, args.number))
    plain = times["plain"]
    print(f"{'chain 10x(mul,add,relu) 8x8 + sum + backward':<46}{'us/step':>10}{'x plain':>10}")
    for name, t in times.items():
        print(f"  {name:<44}{t * 1e6:>10.1f}{t / plain:>10.2f}")
    ratio = times["empty OpHook"] / plain
    print(f"empty OpHook ratio {ratio:.2f} (target <= 2.0): {'OK' if ratio <= 2.0 else 'MISSED'}")
    return ratio


if __name__ == "__main__":
    sys.exit(0 if main() <= 2.0 else 1)
