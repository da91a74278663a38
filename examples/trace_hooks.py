"""Trace every hook point of a forward and backward pass and draw it (hookgrad.tools.trace).

Writes trace.html (module tree with the forward flow in blue and the backward flow in orange, the
user's hooks marked in red, the grad_fn graph of the loss and the event table) and prints its path.
Usage: python examples/trace_hooks.py [OUT.html]   (default: trace.html in the temp directory)
"""
import os
import sys
import tempfile

import hookgrad as torch
import hookgrad.nn as nn
from hookgrad.tools.trace import trace


class Encoder(nn.Module):
    """Applies the same block twice (a module called more than once)."""

    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(8, 8), nn.Tanh())

    def forward(self, x):
        return self.block(self.block(x)) + x


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), Encoder(), nn.Linear(8, 3))


def standardize(module, args):                      # a user forward pre-hook that changes the input
    x = args[0]
    return ((x - x.mean()) / (x.std() + 1e-5),)


def clip_grad_input(module, grad_input, grad_output):   # a user full backward hook
    return tuple(None if g is None else g.clamp(-1, 1) for g in grad_input)


model[3].register_forward_pre_hook(standardize)
model[2].register_full_backward_hook(clip_grad_input)

x = torch.randn(5, 4, requires_grad=True)
with trace(model, params=True) as t:
    loss = model(x).pow(2).mean()
    t.watch(loss, "loss")
    loss.backward()

print(t.format())
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.gettempdir(), "trace.html")
t.to_html(out, grad_fn=loss, title="hookgrad trace: Linear > ReLU > Encoder(block twice) > Linear")
print(f"{len(t.events)} events; wrote {os.path.abspath(out)}")
