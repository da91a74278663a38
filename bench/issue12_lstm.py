"""Issue 12's LSTM language-model training step, under torch and hookgrad (PyTorch's bench convention:
``setup(lib) -> step``). Embedding(1000, 256) -> LSTM(256, 256, num_layers=2) -> Linear(256, 1000), batch 32,
35 time steps, cross-entropy, SGD step.

    .venv/bin/python bench/issue12_lstm.py      # prints torch, hookgrad and the ratio (target <= 1.5)
"""
import os
import sys

import numpy as np

VOCAB, EMB, HIDDEN, LAYERS, BATCH, STEPS = 1000, 256, 256, 2, 32, 35


def lstm_lm(lib):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, EMB)
            self.lstm = nn.LSTM(EMB, HIDDEN, num_layers=LAYERS)
            self.out = nn.Linear(HIDDEN, VOCAB)

        def forward(self, tokens):
            h, _ = self.lstm(self.embed(tokens))
            return self.out(h)

    lib.manual_seed(0)
    model = LM()
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    tokens = lib.tensor(rng.integers(0, VOCAB, (STEPS, BATCH)))
    targets = lib.tensor(rng.integers(0, VOCAB, (STEPS * BATCH,)))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(tokens).reshape(-1, VOCAB), targets)
        loss.backward()
        opt.step()
    return step


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import hookgrad
    from run import _time_pair
    tt, th = _time_pair(lstm_lm(torch), lstm_lm(hookgrad))
    print(f"LSTM LM training step: torch {tt * 1e3:.1f} ms, hookgrad {th * 1e3:.1f} ms, ratio {th / tt:.2f} "
          f"(target <= 1.5)")
