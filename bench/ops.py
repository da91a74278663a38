"""Per-op times of the real models, hookgrad's OpTimer beside torch's profiler, in one process (issue 23).

    python bench/ops.py                 # ResNet-18 inference (batch 8, 224) and training step (batch 16, 112),
                                        # the small CNN's training step (x 10) and the LSTM's
    python bench/ops.py --threads 1     # both libraries on one thread

Each model runs a few warm-up steps, then ``--steps`` profiled steps in each library (taking turns); a row is
the op's time per step, the best of the profiled steps: for hookgrad the primitive's forward (``forward_pre``
-> ``forward_post``) and its backward node, for torch the aten op's total CPU time (its children included)
and its backward op's. The issue's target is hookgrad at most 2x torch for each row.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (bench/run.py: torch beside torchvision's shim, the thread setting)
import models  # noqa: E402

import hookgrad  # noqa: E402
import torch  # noqa: E402
from hookgrad.tools.ophooks import OpTimer  # noqa: E402

# row: (hookgrad op name and phase, torch aten names whose total CPU times add up)
ROWS = [
    ("convolution forward", ("Convolution", "forward"), ("aten::convolution",)),
    ("convolution backward", ("Convolution", "backward"), ("aten::convolution_backward",)),
    ("max-pool forward", ("MaxPool2DWithIndices", "forward"), ("aten::max_pool2d",)),
    ("max-pool backward", ("MaxPool2DWithIndices", "backward"), ("aten::max_pool2d_with_indices_backward",)),
    ("batch norm forward", ("NativeBatchNorm", "forward"), ("aten::batch_norm",)),
    ("batch norm backward", ("NativeBatchNorm", "backward"), ("aten::native_batch_norm_backward",)),
    ("ReLU forward", ("Relu", "forward"), ("aten::relu", "aten::relu_")),
    ("ReLU backward", ("Relu", "backward"), ("aten::threshold_backward",)),
    ("add forward", ("Add", "forward"), ("aten::add", "aten::add_")),
    ("linear (addmm) forward", ("Addmm", "forward"), ("aten::addmm",)),
    ("log-softmax forward", ("LogSoftmax", "forward"), ("aten::_log_softmax",)),
    ("LSTM layer forward", ("MkldnnRnnLayer", "forward"), ("aten::mkldnn_rnn_layer",)),
    ("LSTM layer backward", ("MkldnnRnnLayer", "backward"), ("aten::mkldnn_rnn_layer_backward",)),
]
# the ops the 2x target names (the others are shown for the small CNN's and the LSTM's steps)
TARGETED = {"convolution forward", "convolution backward", "max-pool forward", "max-pool backward",
            "batch norm forward", "batch norm backward", "ReLU forward", "ReLU backward", "add forward"}


def _workloads():
    x8 = np.random.default_rng(0).standard_normal((8, 3, 224, 224)).astype(np.float32)
    x16 = np.random.default_rng(1).standard_normal((16, 3, 112, 112)).astype(np.float32)

    def infer(lib):
        model, x = models.resnet18(lib), lib.tensor(x8)

        def step():
            with lib.no_grad():
                model(x)
        return step

    def train(lib):
        model, x = models.resnet18(lib).train(), lib.tensor(x16)

        def step():
            model.zero_grad()
            model(x).sum().backward()
        return step

    def steps(make, k):         # k steps of a small workload of bench/run.py as one profiled step
        def setup(lib):
            one = make(lib)
            return lambda: [one() for _ in range(k)]
        return setup

    return [("ResNet-18 inference, batch 8, 3x224x224", infer), ("ResNet-18 training step, batch 16, 3x112x112", train),
            ("small CNN training step x 10, batch 32, 1x28x28", steps(run.cnn_train, 10)),
            ("LSTM language model training step, 2x256, batch 32, 35 steps", steps(run.lstm_lm, 1))]


def _hookgrad_ops(step):
    with OpTimer() as t:
        step()
    ops = t.report()["ops"]
    return {name: ops.get(op, {}).get(phase + "_time", 0.0) for name, (op, phase), _ in ROWS}


def _torch_ops(step):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    total = {e.key: e.cpu_time_total * 1e-6 for e in prof.key_averages()}
    return {name: sum(total.get(a, 0.0) for a in aten) for name, _, aten in ROWS}


def main(steps=3):
    print(f"torch {torch.__version__}, hookgrad {hookgrad.__version__}; threads: torch {torch.get_num_threads()}, "
          f"hookgrad {hookgrad.get_num_threads()}")
    for title, make in _workloads():
        st, sh = make(torch), make(hookgrad)
        for _ in range(2):
            st()
            sh()
        best_t, best_h = {}, {}
        for _ in range(steps):
            for best, ops in ((best_t, _torch_ops(st)), (best_h, _hookgrad_ops(sh))):
                for k, v in ops.items():
                    best[k] = min(best.get(k, float("inf")), v)
        print(f"\n{title}: time per step\n{'op':24s} {'hookgrad':>10s} {'torch':>10s} {'ratio':>7s} {'target':>7s}")
        for name, _, _ in ROWS:
            h, t = best_h[name], best_t[name]
            if not t and not h:
                continue
            ratio = h / t if t else float("inf")
            mark = f"{'<=2.0':>7s} {'ok' if ratio <= 2 else 'MISS'}" if name in TARGETED else ""
            print(f"{name:24s} {h * 1e3:8.1f}ms {t * 1e3:8.1f}ms {ratio:7.2f} {mark}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--threads" in args:
        run.set_threads(int(args[args.index("--threads") + 1]))
    main(int(args[args.index("--steps") + 1]) if "--steps" in args else 3)
