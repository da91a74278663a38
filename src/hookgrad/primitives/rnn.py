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
Where PyTorch's CPU LSTM runs oneDNN (a padded float32 input, no projection), one MkldnnRnnLayer node per layer
and direction runs the whole sequence on arrays, as PyTorch's MkldnnRnnLayerBackward0.
"""
import numpy as np

from .._tensor import Tensor
from .._creation import empty_like
from ..autograd.node import Node
from .. import _dtype as _D
from .._array import array_module
from ..autograd.formulas import TENSORS, ARRAYS
from .linalg import addmm, mm, matmul, _product
from .join import stack, cat, unsafe_chunk
from .._jit import fast, kernel, wide
from ._kernels import exp32, _f32

_float32 = _D.float32

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
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
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


# ------------------------------------------------------------------ the float32 LSTM as oneDNN runs it
@wide
def _lstm_step_kernel(gt, hw, num, shift, c, ct, tc, ht):
    """One step of the forward recurrence's elementwise part (the array path's, compiled): the gates' scaled
    preactivations gt (B, 4H) plus the hidden state's product hw, activated in place (num / (1 + exp(gt + hw)) -
    shift), then c_t = f c + i g, tanh(c_t) (by exp, as the g gate: within ~1e-7 of np.tanh) and h_t = o tanh(c_t)."""
    hh = c.shape[1]
    for b in range(c.shape[0]):
        gb, hb = gt[b], hw[b]
        for q in range(4 * hh):
            gb[q] = num[q] / (_f32(1) + exp32(gb[q] + hb[q])) - shift[q]
        for j in range(hh):
            v = gb[hh + j] * c[b, j] + gb[j] * gb[2 * hh + j]
            ct[b, j] = v
            t = _f32(2) / (_f32(1) + exp32(_f32(-2) * v)) - _f32(1)     # tanh, as the g gate's (vectorised)
            tc[b, j] = t
            ht[b, j] = gb[3 * hh + j] * t


@kernel
def _lstm_grad_step_kernel(gy, dh, dc, gates, ct, tc, cp, da):
    """One step of the backward recurrence's elementwise part (the array path's, compiled), from the step's
    activated gates (B, 4H: i, f, g, o), c_t, tanh(c_t) and the previous c: dh_t = gy + dh,
    dc += dh_t o (1 - tanh(c_t)^2), da = (dc g i (1 - i), dc c_prev f (1 - f), dc i (1 - g^2), dh_t tanh(c_t) o (1 - o)),
    then dc *= f (dc updated in place). Row by row, one short loop per result over 1-d slices, dh_t and dc in
    scratch rows: one loop writing all of them (or rewriting a row in place) reads and writes too many arrays for
    LLVM's alias checks, and ran unvectorised (2x slower)."""
    hh = dc.shape[1]
    one = _f32(1)
    dht, dcn = np.empty(hh, dc.dtype), np.empty(hh, dc.dtype)
    for b in range(dc.shape[0]):
        gyb, dhb, dcb, tcb, cpb, gb, db = gy[b], dh[b], dc[b], tc[b], cp[b], gates[b], da[b]
        i, f, g, o = gb[:hh], gb[hh:2 * hh], gb[2 * hh:3 * hh], gb[3 * hh:]
        d0, d1, d2, d3 = db[0], db[1], db[2], db[3]
        for j in range(hh):
            dht[j] = gyb[j] + dhb[j]
        for j in range(hh):
            t = tcb[j]
            dcn[j] = dcb[j] + dht[j] * (o[j] * (one - t * t))
        for j in range(hh):
            d0[j] = g[j] * i[j] * (one - i[j]) * dcn[j]
        for j in range(hh):
            d1[j] = cpb[j] * f[j] * (one - f[j]) * dcn[j]
        for j in range(hh):
            d2[j] = i[j] * (one - g[j] * g[j]) * dcn[j]
        for j in range(hh):
            d3[j] = tcb[j] * o[j] * (one - o[j]) * dht[j]
        for j in range(hh):
            dcb[j] = dcn[j] * f[j]


class MkldnnRnnLayer(Node, name="MkldnnRnnLayerBackward0"):
    """PyTorch's ``mkldnn_rnn_layer``: one LSTM layer and direction over a whole padded, time-major sequence
    (input T x B x I; hx, cx B x H) in one node, as PyTorch's CPU float32 LSTM runs it (oneDNN). Outputs
    (output T x B x H, hy, cy); edges input, weight0..3 (w_ih, w_hh, b_ih, b_hh), hx_, cx_.

    Forward on arrays: one matrix product projects the whole sequence; per step one (B, H) x (H, 4H) product and
    the gate maths, written into preallocated buffers (the activated gates and the cell states are kept: the
    workspace). Backward: on arrays (a plain backward) per step only the gate gradients, then one matrix
    product each for the input gradient, dW_ih and dW_hh over all steps, the bias gradients as sums. Under
    create_graph, as PyTorch (``mkldnn_rnn_layer_differentiable_backward``), the gradient recomputes the layer
    from the saved inputs with differentiable ops, so double backward differentiates through the gates."""
    save = (0, 1, 2, 3, 4, 5, 6, -1, -2, -3)
    saved_names = ("input", "weight0", "weight1", "weight2", "weight3", "hx_", "cx_", "result0", "result1",
                   "result2")
    saved_attrs = ("reverse", "mode=2", "hidden_size", "num_layers", "has_biases", "bidirectional", "batch_first",
                   "train", "batch_sizes=()")

    def forward(self, x, w_ih, w_hh, b_ih, b_hh, hx, cx):
        xp = array_module(x)
        T, B, I = x.shape
        H = w_hh.shape[1]
        dt = x.dtype
        # one exp for all four gates: sigmoid(a) = 1 / (1 + exp(-a)), tanh(a) = 2 / (1 + exp(-2a)) - 1, the
        # factors -1 / -2 folded into the weights and the biases once
        sc = xp.full((4 * H,), -1, dt)
        sc[2 * H:3 * H] = -2
        num = -sc                            # 1 for a sigmoid, 2 for tanh
        shift = num - 1                      # 0 for a sigmoid, 1 for tanh
        G = (x.reshape(T * B, I) @ (w_ih.T * sc)).reshape(T, B, 4 * H)
        if self.has_biases:
            G += (b_ih + b_hh) * sc
        whh = (w_hh * sc[:, None]).T        # (H, 4H), a transposed view: _product takes (whh^T h^T)^T for few rows
        out = xp.empty((T, B, H), dt)
        cs = xp.empty((T, B, H), dt)        # c_t
        tcs = xp.empty((T, B, H), dt)       # tanh(c_t)
        h, c = hx, cx
        compiled = fast(G, whh, h, c)
        if compiled:        # the hidden product into one buffer that the step's kernel adds (5% faster)
            whh, hw = np.ascontiguousarray(whh), np.empty((B, 4 * H), dt)
        with np.errstate(over="ignore"):    # exp(-a) = inf for a very negative a: the gate is 0 (or -1), exactly
            for t in (range(T - 1, -1, -1) if self.reverse else range(T)):
                gt = G[t]
                if compiled:
                    _lstm_step_kernel(gt, np.matmul(h, whh, out=hw), num, shift, c, cs[t], tcs[t], out[t])
                    h, c = out[t], cs[t]
                    continue
                gt += _product(h, whh, True)
                np.exp(gt, out=gt)
                gt += 1
                np.divide(num, gt, out=gt)
                gt -= shift                     # i, f, g, o activated, in place
                ct, tc, ht = cs[t], tcs[t], out[t]
                np.multiply(gt[:, H:2 * H], c, out=ct)
                ct += gt[:, :H] * gt[:, 2 * H:3 * H]
                np.tanh(ct, out=tc)
                np.multiply(gt[:, 3 * H:], tc, out=ht)
                h, c = ht, ct
        self._ws = (G, cs, tcs)
        return out, h.copy(), c.copy()

    def _shifted(self, seq, first):
        """The previous step's state at each step (processing order), from the per-step states ``seq``."""
        prev = array_module(seq).empty(seq.shape, seq.dtype)
        if self.reverse:
            prev[:-1] = seq[1:]
            prev[-1] = first
        else:
            prev[1:] = seq[:-1]
            prev[0] = first
        return prev

    def backward(self, gy, ghy, gcy, F=TENSORS):
        x, w_ih, w_hh, b_ih, b_hh, hx, cx, out, _, _ = F.saved(self)
        if F is not ARRAYS:
            return self._differentiable_backward(x, w_ih, w_hh, b_ih, b_hh, hx, cx, gy, ghy, gcy)
        G, cs, tcs = self._ws
        T, B, I = x.shape
        H = w_hh.shape[1]
        da = array_module(G).empty((T, B, 4, H), G.dtype)
        dh, dc = ghy, gcy
        order = range(T) if self.reverse else range(T - 1, -1, -1)
        wh = array_module(w_hh).ascontiguousarray(w_hh.T).T     # w_hh as a transposed view, for _product (as forward)
        cprev = self._shifted(cs, cx)       # each step's previous cell state
        if fast(gy, dh, dc, G, cs, tcs, cx):
            dc = dc.copy()
            for t in order:     # the gates' gradients from the step's workspace, one pass per step
                _lstm_grad_step_kernel(gy[t], dh, dc, G[t], cs[t], tcs[t], cprev[t], da[t])
                dh = _product(da[t].reshape(B, 4 * H), wh, True)
        else:
            G4 = G.reshape(T, B, 4, H)
            i, f, g, o = G4[:, :, 0], G4[:, :, 1], G4[:, :, 2], G4[:, :, 3]
            # what does not depend on the recurrence, for all steps at once: da = K * (dc, dc, dc, dh)
            K = array_module(G).empty((T, B, 4, H), G.dtype)
            K[:, :, 0] = g * i * (1 - i)
            K[:, :, 1] = cprev * f * (1 - f)
            K[:, :, 2] = i * (1 - g * g)
            K[:, :, 3] = tcs * o * (1 - o)
            A = o * (1 - tcs * tcs)
            for t in order:
                dht = gy[t] + dh
                dc = dc + dht * A[t]
                np.multiply(K[t, :, :3], dc[:, None], out=da[t, :, :3])
                np.multiply(K[t, :, 3], dht, out=da[t, :, 3])
                dc = dc * f[t]
                dh = _product(da[t].reshape(B, 4 * H), wh, True)
        da2 = da.reshape(T * B, 4 * H)
        nf = self.next_functions
        dx = (da2 @ w_ih).reshape(T, B, I) if nf[0][0] is not None else None
        dwi = da2.T @ x.reshape(T * B, I) if nf[1][0] is not None else None
        dwh = da2.T @ self._shifted(out, hx).reshape(T * B, H) if nf[2][0] is not None else None
        db = da2.sum(0) if nf[3][0] is not None or nf[4][0] is not None else None
        return dx, dwi, dwh, db, db, dh, dc

    def _differentiable_backward(self, x, w_ih, w_hh, b_ih, b_hh, hx, cx, gy, ghy, gcy):
        """PyTorch's mkldnn_rnn_layer_differentiable_backward: the layer recomputed with differentiable ops, then
        the same gradient formula as the array branch on Tensors (a create_graph pass records it)."""
        T = x.shape[0]
        order = range(T - 1, -1, -1) if self.reverse else range(T)
        xw = matmul(x, w_ih.t())
        if self.has_biases:
            xw = xw + (b_ih + b_hh)
        h, c = hx, cx
        steps = [None] * T
        for t in order:
            i, f, g, o = (xw[t] + h.mm(w_hh.t())).chunk(4, 1)
            i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
            cy = f * c + i * g
            tc = cy.tanh()
            steps[t] = (i, f, g, o, h, c, tc)
            h, c = o * tc, cy
        dh, dc = ghy, gcy
        da = [None] * T
        for t in reversed(order):
            i, f, g, o, hp, cp, tc = steps[t]
            dht = gy[t] + dh
            dc = dc + dht * o * (1 - tc * tc)
            da[t] = cat([dc * g * i * (1 - i), dc * cp * f * (1 - f), dc * i * (1 - g * g), dht * tc * o * (1 - o)], 1)
            dc = dc * f
            dh = da[t].mm(w_hh)
        DA = stack(da, 0).flatten(0, 1)
        hp = stack([s[4] for s in steps], 0).flatten(0, 1)
        db = DA.sum(0) if self.has_biases else None
        return (DA.mm(w_ih).view(x.shape), DA.t().mm(x.flatten(0, 1)), DA.t().mm(hp), db, db, dh, dc)


def _use_mkldnn(input, params, has_proj):
    """Where PyTorch's CPU LSTM runs oneDNN (aten/src/ATen/native/RNN.cpp, use_mkldnn): a padded float32 input
    that is not empty, float32 weights and states, no projection."""
    return (not has_proj and input.dtype == _float32 and input.numel() != 0
            and all(p.dtype == _float32 for p in params))


def _mkldnn_lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """PyTorch's mkldnn_rnn: the layers in turn, one MkldnnRnnLayer node per layer and direction (both directions
    read the same input), outputs concatenated, dropout between layers in training, the final states stacked."""
    dirs = 2 if bidirectional else 1
    x = (input.transpose(0, 1) if batch_first else input).contiguous()
    h0, c0 = hx[0].contiguous(), hx[1].contiguous()
    ps = _group_params(params, has_biases, False, num_layers * dirs)
    hys, cys = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            p = ps[k]
            b_ih, b_hh = (p.b_ih, p.b_hh) if has_biases else (p.w_ih.new_zeros(p.w_ih.shape),
                                                               p.w_hh.new_zeros(p.w_hh.shape))
            o, hy, cy = MkldnnRnnLayer.apply(x, p.w_ih, p.w_hh, b_ih, b_hh, h0[k], c0[k], reverse=d == 1,
                                             hidden_size=p.w_hh.shape[1], num_layers=num_layers,
                                             has_biases=bool(has_biases), bidirectional=bool(bidirectional),
                                             batch_first=bool(batch_first), train=bool(train))
            outs.append(o)
            hys.append(hy)
            cys.append(cy)
        x = outs[0] if dirs == 1 else cat(outs, -1)
        if dropout != 0 and train and layer < num_layers - 1:
            x = _dropout(x, dropout)
    if batch_first:
        x = x.transpose(0, 1)
    return x, stack(hys, 0), stack(cys, 0)


def _layers(mode, a, data, batch_sizes):
    """The two ATen overloads: (input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) and the packed (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional), the latter by keyword or by position (its batch_sizes, lstm, or hx, the others, is a Tensor
    where the padded form has the (h, c) pair or the weights)."""
    if data is None and isinstance(a[1] if mode == "lstm" else a[2], Tensor):
        data, batch_sizes, a = a[0], a[1], (None,) + a[2:] + (None,)
    input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = a
    if mode == "lstm":
        hx = tuple(hx)
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        has_proj = hx[0].shape[2] != hx[1].shape[2]
    else:
        has_proj = False
    if mode == "lstm" and data is None and _use_mkldnn(input, params := list(params), has_proj):
        return _mkldnn_lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    common = (params, has_biases, num_layers, dropout, train, bidirectional, has_proj)
    if data is not None:
        out, h = _run(mode, data, batch_sizes, hx, *common)
    else:
        x = input.transpose(0, 1) if batch_first else input
        out, h = _run(mode, x, None, hx, *common)
        if batch_first:             # PyTorch: a view for lstm, an in-place transpose_ (TransposeBackward1) else
            out = out.transpose(0, 1) if mode == "lstm" else out.transpose_(0, 1)
    return (out,) + h if mode == "lstm" else (out, h)


def lstm(input=None, hx=None, params=None, has_biases=None, num_layers=None, dropout=None, train=None,
         bidirectional=None, batch_first=None, *, data=None, batch_sizes=None):
    """torch.lstm: (output, h_n, c_n); also lstm(data, batch_sizes, hx, params, ...) on a packed batch."""
    return _layers("lstm", (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first),
                   data, batch_sizes)


def gru(input=None, hx=None, params=None, has_biases=None, num_layers=None, dropout=None, train=None,
        bidirectional=None, batch_first=None, *, data=None, batch_sizes=None):
    """torch.gru: (output, h_n); also gru(data, batch_sizes, hx, params, ...) on a packed batch."""
    return _layers("gru", (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first),
                   data, batch_sizes)


def rnn_tanh(input=None, hx=None, params=None, has_biases=None, num_layers=None, dropout=None, train=None,
             bidirectional=None, batch_first=None, *, data=None, batch_sizes=None):
    """torch.rnn_tanh: (output, h_n); also rnn_tanh(data, batch_sizes, hx, params, ...) on a packed batch."""
    return _layers("rnn_tanh", (input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                                batch_first), data, batch_sizes)


def rnn_relu(input=None, hx=None, params=None, has_biases=None, num_layers=None, dropout=None, train=None,
             bidirectional=None, batch_first=None, *, data=None, batch_sizes=None):
    """torch.rnn_relu: (output, h_n); also rnn_relu(data, batch_sizes, hx, params, ...) on a packed batch."""
    return _layers("rnn_relu", (input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                                batch_first), data, batch_sizes)


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
