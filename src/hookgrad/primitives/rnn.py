"""The recurrences behind nn.RNN / nn.LSTM / nn.GRU and their cells: PyTorch's ATen functions ``torch.lstm``,
``torch.gru``, ``torch.rnn_tanh``, ``torch.rnn_relu`` and ``torch.lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``,
``rnn_relu_cell``, with their signatures.

Laid out as PyTorch's CPU kernels (aten/src/ATen/native/RNN.cpp) lay it out, from differentiable ops (addmm,
sigmoid, tanh, unsafe_chunk, stack, cat...): the input projection of a whole sequence is one matrix product per
layer and direction; each time step adds the hidden projection and runs the cell; a layer's outputs are stacked
(StackBackward0), two directions concatenated (CatBackward0), the final states stacked; a packed batch narrows
the hidden state as sequences end. So gradients, second derivatives and the grad_fn names users see on the
outputs are PyTorch's, and dropout between layers draws as PyTorch's (``empty_like(x).bernoulli_(1 - p)``), so
``manual_seed`` gives PyTorch's masks. One primitive: inside the LSTM layers, a step's pointwise part is one
fused node (LstmCell, PyTorch's fused-cell grad_fn name), for speed; the cell functions keep PyTorch's CPU ops.
"""
import numpy as np

from .._tensor import Tensor
from .._creation import empty_like
from ..autograd.node import Node
from ..autograd.formulas import TENSORS
from .linalg import addmm, mm, matmul
from .join import stack, cat, unsafe_chunk

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]


# ------------------------------------------------------------------------------------------- the cells
def _linear(x, w, b):
    """at::linear: addmm for a 2-D input with a bias, else a matrix product (and a broadcast bias)."""
    if x.dim() == 2:
        return addmm(b, x, w.t()) if b is not None else mm(x, w.t())
    if x.dim() > 2 and b is not None:
        return addmm(b, x.reshape(-1, x.shape[-1]), w.t()).view(*x.shape[:-1], w.shape[0])
    out = matmul(x, w.t())
    return out + b if b is not None else out


class _Params:
    """One layer and direction's weights, as ATen's CellParams: w_ih, w_hh, b_ih, b_hh, w_hr (None if absent).
    With ``fold``, the input projection of the whole sequence carries both biases, and a step's gates are one
    addmm (the layers' inner loop: one node less per step)."""
    __slots__ = ("w_ih", "w_hh", "b_ih", "b_hh", "w_hr", "fold")

    def __init__(self, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, fold=False):
        self.w_ih, self.w_hh, self.b_ih, self.b_hh, self.w_hr = w_ih, w_hh, b_ih, b_hh, w_hr
        self.fold = fold

    def linear_ih(self, x):
        xw = _linear(x, self.w_ih, self.b_ih)
        return xw + self.b_hh if self.fold and self.b_hh is not None else xw

    def linear_hh(self, h):
        return _linear(h, self.w_hh, self.b_hh)

    def gates(self, xw, h):
        """linear_hh(h) + xw: PyTorch's order, or one addmm when the biases are folded into ``xw``."""
        return addmm(xw, h, self.w_hh.t()) if self.fold else self.linear_hh(h) + xw


def _simple_step(act):
    def step(xw, h, p):
        return act(p.linear_hh(h) + xw)
    return step


def _sigmoid(x):
    return 0.5 + 0.5 * np.tanh(0.5 * x)         # never overflows


class LstmCell(Node, name="ThnnFusedLstmCellBackward0"):
    """The pointwise part of an LSTM step, fused (PyTorch's fused LSTM cell kernel): from the pre-activation
    gates i, f, g, o and the cell state c, c' = sigmoid(f) c + sigmoid(i) tanh(g) and h' = sigmoid(o) tanh(c').
    One node instead of ten per time step inside the layers; the formula recomputes the activations from the
    saved gates, so double backward differentiates it."""
    save = (0, 1, 2, 3, 4, -2)
    saved_names = ("i", "f", "g", "o", "cx", "cy")

    def forward(self, i, f, g, o, cx):
        cy = _sigmoid(f) * cx + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(cy), cy

    def backward(self, ghy, gcy, F=TENSORS):
        i, f, g, o, cx, cy = F.saved(self)
        i, f, g, o, tc = F.sigmoid(i), F.sigmoid(f), F.tanh(g), F.sigmoid(o), F.tanh(cy)
        gc = gcy + ghy * o * (1 - tc * tc)
        return gc * g * i * (1 - i), gc * cx * f * (1 - f), gc * i * (1 - g * g), ghy * tc * o * (1 - o), gc * f


def _lstm_step(xw, hc, p):
    """One LSTM step on the projected input ``xw``: gates i, f, g, o; c' = f c + i g; h' = o tanh(c')
    (then h' W_hr^T with a projection). As PyTorch's CPU cell: each activation its own op."""
    hx, cx = hc
    i, f, g, o = unsafe_chunk(p.linear_hh(hx) + xw, 4, 1)
    cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
    hy = o.sigmoid() * cy.tanh()
    if p.w_hr is not None:
        hy = matmul(hy, p.w_hr.t())
    return hy, cy


def _fused_lstm_step(xw, hc, p):
    """_lstm_step with the pointwise part as one LstmCell node (the layers' inner loop)."""
    hy, cy = LstmCell.apply(*unsafe_chunk(p.gates(xw, hc[0]), 4, 1), hc[1])
    if p.w_hr is not None:
        hy = matmul(hy, p.w_hr.t())
    return hy, cy


def _gru_step(xw, h, p):
    """One GRU step: r, z from the summed projections; n = tanh(x_n + r (W_hn h + b_hn)); h' = (h - n) z + n."""
    ir, iz, in_ = unsafe_chunk(xw, 3, 1)
    hr, hz, hn = unsafe_chunk(p.linear_hh(h), 3, 1)
    r = (hr + ir).sigmoid()
    z = (hz + iz).sigmoid()
    n = (in_ + hn * r).tanh()
    return (h - n) * z + n


_STEPS = {"lstm": _lstm_step, "gru": _gru_step,
          "rnn_tanh": _simple_step(lambda t: t.tanh()), "rnn_relu": _simple_step(lambda t: t.relu())}


# ---------------------------------------------------------------------------- hidden states as pytrees
def _out(h):
    return h[0] if isinstance(h, tuple) else h


def _narrow(h, start, length):
    return tuple(t.narrow(0, start, length) for t in h) if isinstance(h, tuple) else h.narrow(0, start, length)


def _concat(hs):
    return tuple(cat(list(ts), 0) for ts in zip(*hs)) if isinstance(hs[0], tuple) else cat(hs, 0)


# ------------------------------------------------------------------------------- a layer over the time
def _full_layer(step, x, h, p, reverse):
    """A padded, time-major sequence (T x B x I) through one layer and direction: (T x B x H, last state)."""
    xs = p.linear_ih(x).unbind(0)
    outs = [None] * len(xs)
    for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        h = step(xs[t], h, p)
        outs[t] = _out(h)
    return stack(outs, 0), h


def _packed_layer(step, x, batch_sizes, h0, p, reverse):
    """A packed sequence (data N x I, batch sizes per step) through one layer and direction. Forward in time,
    the state of the sequences that end is set aside as the batch shrinks; backward in time, the state grows
    with the initial states of the sequences that start."""
    xw = p.linear_ih(x)
    outs, n = [], len(batch_sizes)
    if not reverse:
        finals, off, last, h = [], 0, batch_sizes[0], h0
        for b in batch_sizes:
            if b < last:
                finals.append(_narrow(h, b, last - b))
                h = _narrow(h, 0, b)
            h = step(xw.narrow(0, off, b), h, p)
            outs.append(_out(h))
            off, last = off + b, b
        finals.append(h)
        return cat(outs, 0), _concat(finals[::-1])
    off, last = x.shape[0], batch_sizes[-1]
    h = _narrow(h0, 0, last)
    for i in range(n - 1, -1, -1):
        b = batch_sizes[i]
        if b > last:
            h = _concat([h, _narrow(h0, last, b - last)])
        off -= b
        h = step(xw.narrow(0, off, b), h, p)
        outs.append(_out(h))
        last = b
    return cat(outs[::-1], 0), h


def _dropout(x, p):
    """at::dropout(x, p, train=True) on the CPU: x * (bernoulli(1 - p) / (1 - p)), grad_fn MulBackward0."""
    if p == 1:
        return x * x.new_zeros(())
    noise = empty_like(x).bernoulli_(1 - p)
    noise.div_(1 - p)
    return x * noise


def _group_params(params, has_biases, has_proj, n, fold=False):
    per = 2 + 2 * bool(has_biases) + bool(has_proj)
    params = list(params)
    if len(params) != per * n:
        raise RuntimeError(f"the number of weights ({len(params)}) does not match {n} layers x directions of {per} "
                           f"(has_biases={bool(has_biases)}, proj={bool(has_proj)})")
    out = []
    for k in range(n):
        w = params[k * per:(k + 1) * per]
        b = (w[2], w[3]) if has_biases else (None, None)
        out.append(_Params(w[0], w[1], *b, w[-1] if has_proj else None, fold))
    return out


def _stack_states(hs):
    return tuple(stack(list(ts), 0) for ts in zip(*hs)) if isinstance(hs[0], tuple) else stack(hs, 0)


def _run(mode, x, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional, has_proj=False):
    """ATen's _rnn_impl: the layers in turn (both directions of a layer read the same input), dropout between
    layers in training; returns (output, final states stacked layer-major)."""
    step = _fused_lstm_step if mode == "lstm" else _STEPS[mode]
    dirs = 2 if bidirectional else 1
    ps = _group_params(params, has_biases, has_proj, num_layers * dirs, fold=mode == "lstm")
    if batch_sizes is not None:
        batch_sizes = [int(b) for b in batch_sizes.tolist()]
    finals = []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            h0 = tuple(t[k] for t in hx) if isinstance(hx, tuple) else hx[k]
            if batch_sizes is None:
                o, h = _full_layer(step, x, h0, ps[k], d == 1)
            else:
                o, h = _packed_layer(step, x, batch_sizes, h0, ps[k], d == 1)
            outs.append(o)
            finals.append(h)
        x = outs[0] if dirs == 1 else cat(outs, outs[0].dim() - 1)
        if dropout != 0 and train and layer < num_layers - 1:
            x = _dropout(x, dropout)
    return x, _stack_states(finals)


def _layers(mode, args, kwargs):
    """The two ATen overloads: (input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) and the packed (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional)."""
    names = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional",
             "batch_first")
    if mode == "lstm":      # the packed form's second argument is batch_sizes, the padded form's the (h, c) pair
        packed = "batch_sizes" in kwargs or (len(args) > 1 and isinstance(args[1], Tensor))
    else:                   # the packed form's third argument is hx, the padded form's the weights
        packed = "batch_sizes" in kwargs or (len(args) > 2 and isinstance(args[2], Tensor))
    if packed:
        names = ("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout", "train",
                 "bidirectional")
    a = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in a:
            raise TypeError(f"{mode}() got an unexpected keyword argument or a repeated argument {k!r}")
        a[k] = v
    missing = [n for n in names if n not in a]
    if missing:
        raise TypeError(f"{mode}() missing required argument {missing[0]!r}")
    hx = a["hx"]
    if mode == "lstm":
        hx = tuple(hx)
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        has_proj = hx[0].shape[2] != hx[1].shape[2]
    else:
        has_proj = False
    common = (a["params"], a["has_biases"], a["num_layers"], a["dropout"], a["train"], a["bidirectional"], has_proj)
    if packed:
        out, h = _run(mode, a["data"], a["batch_sizes"], hx, *common)
    else:
        x = a["input"].transpose(0, 1) if a["batch_first"] else a["input"]
        out, h = _run(mode, x, None, hx, *common)
        if a["batch_first"]:        # PyTorch: a view for lstm, an in-place transpose_ (TransposeBackward1) else
            out = out.transpose(0, 1) if mode == "lstm" else out.transpose_(0, 1)
    return (out,) + h if mode == "lstm" else (out, h)


def lstm(*args, **kwargs):
    """torch.lstm: (output, h_n, c_n)."""
    return _layers("lstm", args, kwargs)


def gru(*args, **kwargs):
    """torch.gru: (output, h_n)."""
    return _layers("gru", args, kwargs)


def rnn_tanh(*args, **kwargs):
    """torch.rnn_tanh: (output, h_n)."""
    return _layers("rnn_tanh", args, kwargs)


def rnn_relu(*args, **kwargs):
    """torch.rnn_relu: (output, h_n)."""
    return _layers("rnn_relu", args, kwargs)


# ------------------------------------------------------------------------------ the cell functions
def _check_cell(input, hxs, w_ih, w_hh):
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {w_ih.shape[1]}")
    for k, h in enumerate(hxs):
        if input.shape[0] != h.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} batch size {h.shape[0]}")
        if h.shape[1] != w_hh.shape[1]:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, expected {w_hh.shape[1]}")


def _cell(mode, input, hx, w_ih, w_hh, b_ih, b_hh):
    hxs = tuple(hx) if mode == "lstm" else (hx,)
    if mode == "lstm" and len(hxs) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    for t in (input,) + hxs:
        if t.dim() < 2:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{max(t.dim(), 1)}, "
                             f"{max(t.dim(), 1) - 1}], but got 1)")
    _check_cell(input, hxs, w_ih, w_hh)
    p = _Params(w_ih, w_hh, b_ih, b_hh)
    return _STEPS[mode](p.linear_ih(input), hxs if mode == "lstm" else hx, p)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.lstm_cell: one LSTM step, (h', c')."""
    return _cell("lstm", input, hx, w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.gru_cell: one GRU step, h'."""
    return _cell("gru", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_tanh_cell: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _cell("rnn_tanh", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_relu_cell: relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _cell("rnn_relu", input, hx, w_ih, w_hh, b_ih, b_hh)
