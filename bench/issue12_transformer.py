"""Issue 12's Transformer encoder-decoder training step, under torch and hookgrad (bench/run.py's convention:
``setup(lib) -> step``). nn.Transformer(d_model=256, nhead=4, 3 + 3 layers, dim_feedforward=1024,
batch_first=True), batch 16, 32 source and 32 target tokens, a causal target mask, MSE loss, Adam step.

    .venv/bin/python bench/issue12_transformer.py      # prints torch, hookgrad and the ratio (target <= 1.5)
"""
import os
import sys
import warnings

import numpy as np

D_MODEL, NHEAD, LAYERS, FF, BATCH, TOKENS = 256, 4, 3, 1024, 16, 32


def transformer_step(lib):
    lib.manual_seed(0)
    with warnings.catch_warnings():         # enable_nested_tensor with norm_first=False, batch_first: no warning;
        warnings.simplefilter("ignore")     # kept quiet for other settings
        model = lib.nn.Transformer(d_model=D_MODEL, nhead=NHEAD, num_encoder_layers=LAYERS,
                                   num_decoder_layers=LAYERS, dim_feedforward=FF, batch_first=True)
    opt = lib.optim.Adam(model.parameters(), lr=1e-4)
    rng = np.random.default_rng(0)
    src = lib.tensor(rng.standard_normal((BATCH, TOKENS, D_MODEL)).astype(np.float32))
    tgt = lib.tensor(rng.standard_normal((BATCH, TOKENS, D_MODEL)).astype(np.float32))
    target = lib.tensor(rng.standard_normal((BATCH, TOKENS, D_MODEL)).astype(np.float32))
    mask = lib.nn.Transformer.generate_square_subsequent_mask(TOKENS)
    loss_fn = lib.nn.MSELoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(src, tgt, tgt_mask=mask, tgt_is_causal=True), target)
        loss.backward()
        opt.step()
    return step


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import hookgrad  # noqa: F401
    from run import _time_pair
    tt, th = _time_pair(transformer_step(torch), transformer_step(hookgrad))
    print(f"Transformer training step: torch {tt * 1e3:.1f} ms, hookgrad {th * 1e3:.1f} ms, ratio {th / tt:.2f} "
          f"(target <= 1.5)")
