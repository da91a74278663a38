"""Look inside recurrent and attention layers with hooks: an LSTM's gates, a decoder's cross-attention.

Gates: an LSTM computes its four gates inside the call and returns only the new state, so a forward hook
on an nn.LSTMCell, which receives the step's input and the previous state, recomputes them from the
module's own weights (and checks them against the state the cell returned). A forward hook on a whole
nn.LSTM sees (output, (h_n, c_n)); a tensor hook on h_n sees its gradient.
Cross-attention: nn.TransformerDecoderLayer calls its `multihead_attn` with need_weights=False, so a
forward pre-hook with kwargs turns the weights on (per head), and a forward hook keeps them.
"""
import hookgrad as torch
import hookgrad.nn as nn

torch.manual_seed(0)

# ---------------------------------------------------------------- the gates of an LSTM cell, step by step
cell = nn.LSTMCell(input_size=8, hidden_size=16)
gates = []


def capture_gates(module, args, output):
    x, (h, c) = args
    z = x @ module.weight_ih.T + module.bias_ih + h @ module.weight_hh.T + module.bias_hh
    i, f, g, o = z.chunk(4, dim=1)                      # PyTorch's gate order: input, forget, cell, output
    step = {"input": i.sigmoid(), "forget": f.sigmoid(), "cell": g.tanh(), "output": o.sigmoid()}
    c_new = step["forget"] * c + step["input"] * step["cell"]
    step["matches the cell"] = torch.allclose(c_new, output[1], atol=1e-6)
    gates.append({k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in step.items()})


handle = cell.register_forward_hook(capture_gates)
x = torch.randn(5, 3, 8)                                 # (time, batch, features)
h = c = torch.zeros(3, 16)
with torch.no_grad():
    for t in range(x.shape[0]):
        h, c = cell(x[t], (h, c))
handle.remove()
print(f"captured the gates of {len(gates)} steps, each {tuple(gates[0]['forget'].shape)}")
print("recomputed cell state equals the cell's own:", all(g["matches the cell"] for g in gates))
print("mean forget gate per step:", [round(g["forget"].mean().item(), 3) for g in gates])

# ---------------------------------------------------------------- a whole LSTM: its final state and gradient
lstm = nn.LSTM(input_size=8, hidden_size=16, num_layers=2, batch_first=True)
seen = {}
lstm.register_forward_hook(lambda module, args, out: seen.update(output=out[0], h_n=out[1][0], c_n=out[1][1]))
out, (h_n, c_n) = lstm(torch.randn(3, 5, 8))
h_n.register_hook(lambda grad: seen.update(h_n_grad=grad))
(out.sum() + h_n[0].sum()).backward()                   # the loss uses the first layer's final state
print("nn.LSTM forward hook:", {k: tuple(v.shape) for k, v in seen.items() if k != "h_n_grad"})
print("gradient at h_n, summed per layer:", [round(v, 1) for v in seen["h_n_grad"].sum((1, 2)).tolist()])

# ---------------------------------------------------------------- cross-attention of a Transformer decoder
model = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=64,
                       dropout=0.0, batch_first=True).eval()
cross = {}


def need_weights(module, args, kwargs):
    kwargs["need_weights"] = True
    kwargs["average_attn_weights"] = False               # one map per head
    return args, kwargs


def keep(name):
    def hook(module, args, output):
        cross[name] = output[1].detach()
    return hook


handles = []
for i, layer in enumerate(model.decoder.layers):
    handles.append(layer.multihead_attn.register_forward_pre_hook(need_weights, with_kwargs=True))
    handles.append(layer.multihead_attn.register_forward_hook(keep(f"decoder.layers.{i}.multihead_attn")))
src, tgt = torch.randn(2, 7, 32), torch.randn(2, 5, 32)
with torch.no_grad():
    model(src, tgt, tgt_mask=nn.Transformer.generate_square_subsequent_mask(5))
for h in handles:
    h.remove()
for name, w in cross.items():
    print(f"{name}: weights {tuple(w.shape)} (batch, heads, target, source), rows sum to 1:",
          torch.allclose(w.sum(-1), torch.ones(2, 4, 5), atol=1e-5))
print("most attended source position per target position (batch 0, head 0):",
      cross["decoder.layers.1.multihead_attn"][0, 0].argmax(-1).tolist())
