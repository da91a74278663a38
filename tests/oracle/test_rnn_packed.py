"""PackedSequence through every recurrent layer, and the nn.utils.rnn helpers, against torch: the packed output
(data, batch_sizes, sorted/unsorted indices), the final states in the caller's order, every gradient (second order
through torch.lstm & co.'s packed form) and hook-visible grad_fn names."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check, to_np

LIBS = (torch, hookgrad)
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _arr(*shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape)


def _same(a, b, what):
    assert (a is None) == (b is None), what
    if a is None:
        return
    assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape), what
    np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-9, atol=1e-10, err_msg=what)


# ----------------------------------------------------------------------------- the helpers themselves
@pytest.mark.parametrize("lengths,enforce_sorted", [([4, 3, 3, 1], True), ([2, 4, 1, 3], False), ([3], True)])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_pad_roundtrip(lengths, enforce_sorted, batch_first):
    B, T = len(lengths), max(lengths)
    x = _arr(B, T, 2) if batch_first else _arr(T, B, 2)

    def fn(lib, x):
        p = lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor(lengths), batch_first, enforce_sorted)
        padded, lens = lib.nn.utils.rnn.pad_packed_sequence(p, batch_first, padding_value=-1.0, total_length=T + 1)
        return p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices, padded, lens

    check(fn, x, second=True)


def test_pack_sequence_and_unpack():
    seqs = [_arr(3, 2), _arr(1, 2, seed=2), _arr(2, 2, seed=3)]

    def fn(lib, a, b, c):
        p = lib.nn.utils.rnn.pack_sequence([a, b, c], enforce_sorted=False)
        return [p.data, p.batch_sizes] + lib.nn.utils.rnn.unpack_sequence(p)

    check(fn, *seqs)
    for lib in LIBS:
        with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
            lib.nn.utils.rnn.pack_sequence([lib.zeros(1, 2), lib.zeros(2, 2)])


# ------------------------------------------------------------------------- packed input through the layers
def _pair(name, *args, **kwargs):
    out = []
    for lib in LIBS:
        lib.manual_seed(0)
        out.append(getattr(lib.nn, name)(*args, **kwargs).double())
    return out


def _run_packed(lib, m, x, lengths, enforce_sorted, hx, batch_first):
    xt = lib.tensor(x, requires_grad=True)
    hxt = None if hx is None else (tuple(lib.tensor(h, requires_grad=True) for h in hx) if isinstance(hx, tuple)
                                   else lib.tensor(hx, requires_grad=True))
    packed = lib.nn.utils.rnn.pack_padded_sequence(xt, lib.tensor(lengths), batch_first, enforce_sorted)
    out, h = m(packed, hxt)
    assert type(out).__name__ == "PackedSequence"
    padded, lens = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first)
    hs = list(h) if isinstance(h, tuple) else [h]
    loss = sum((o * lib.tensor(_arr(*o.shape, seed=9 + i))).sum() for i, o in enumerate([padded] + hs))
    loss.backward()
    leaves = [xt] + (list(hxt) if isinstance(hxt, tuple) else [] if hxt is None else [hxt])
    return ([out.data, out.batch_sizes, out.sorted_indices, out.unsorted_indices, padded, lens] + hs,
            [t.grad for t in leaves], {n: p.grad for n, p in m.named_parameters()},
            [out.data.grad_fn.name()] + [t.grad_fn.name() for t in hs])


@pytest.mark.parametrize("name,kwargs", [
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
    ("GRU", {"bidirectional": True}),
    ("GRU", {"num_layers": 2, "batch_first": True}),
    ("RNN", {"nonlinearity": "relu", "bidirectional": True, "bias": False}),
    ("RNN", {"num_layers": 2}),
])
@pytest.mark.parametrize("lengths,enforce_sorted", [([4, 4, 2, 1], True), ([2, 4, 1, 3], False)])
@pytest.mark.parametrize("with_state", [False, True])
def test_packed_through_layer(name, kwargs, lengths, enforce_sorted, with_state):
    tm, hm = _pair(name, 3, 4, **kwargs)
    bf = kwargs.get("batch_first", False)
    B, T = len(lengths), max(lengths)
    x = _arr(B, T, 3) if bf else _arr(T, B, 3)
    hx = None
    if with_state:
        n = tm.num_layers * (2 if tm.bidirectional else 1)
        hx = _arr(n, B, getattr(tm, "proj_size", 0) or 4, seed=4)
        if name == "LSTM":
            hx = (hx, _arr(n, B, 4, seed=5))
    t = _run_packed(torch, tm, x, lengths, enforce_sorted, hx, bf)
    h = _run_packed(hookgrad, hm, x, lengths, enforce_sorted, hx, bf)
    for i, (a, b) in enumerate(zip(t[0], h[0])):
        _same(a, b, f"output {i}")
    for i, (a, b) in enumerate(zip(t[1], h[1])):
        _same(a, b, f"grad of input {i}")
    assert list(t[2]) == list(h[2])
    for k in t[2]:
        _same(t[2][k], h[2][k], k)
    assert t[3] == h[3]


@pytest.mark.parametrize("mode,layers,bidirectional,proj", [
    ("lstm", 2, True, 2), ("gru", 1, True, 0), ("rnn_tanh", 2, False, 0), ("rnn_relu", 1, True, 0)])
def test_packed_function_second_order(mode, layers, bidirectional, proj):
    rng = np.random.default_rng(0)
    hid, inp, dirs = 3, 2, 2 if bidirectional else 1
    g = GATES[mode] * hid
    ws = []
    for layer in range(layers):
        for _ in range(dirs):
            shapes = [(g, inp if layer == 0 else (proj or hid) * dirs), (g, proj or hid), (g,), (g,)]
            ws += [rng.uniform(-0.6, 0.6, s) for s in shapes + ([(proj, hid)] if proj else [])]
    batch_sizes = np.array([3, 2, 2, 1], np.int64)
    data = _arr(int(batch_sizes.sum()), inp)
    h0, c0 = _arr(layers * dirs, 3, proj or hid, seed=2), _arr(layers * dirs, 3, hid, seed=3)

    def fn(lib, data, bs, h0, c0, *ws):
        hx = (h0, c0) if mode == "lstm" else h0
        return getattr(lib, mode)(data, bs, hx, list(ws), True, layers, 0.0, False, bidirectional)

    t_out, h_out = check(fn, data, batch_sizes, h0, c0, *ws, second=True)
    assert [o.grad_fn.name() for o in t_out] == [o.grad_fn.name() for o in h_out]


def test_packed_dropout_between_layers_matches_torch():
    tm, hm = _pair("GRU", 3, 4, num_layers=2, dropout=0.5)
    x = _arr(4, 3, 3)
    outs = []
    for lib, m in zip(LIBS, (tm, hm)):
        p = lib.nn.utils.rnn.pack_padded_sequence(lib.tensor(x), lib.tensor([4, 2, 1]))
        lib.manual_seed(5)
        outs.append(to_np(m(p)[0].data))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-9, atol=1e-10)


def test_packed_hidden_size_error():
    for lib in LIBS:
        m = lib.nn.GRU(3, 4)
        p = lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(4, 3, 3), lib.tensor([4, 2, 1]))
        with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 3, 4\), got \[1, 2, 4\]"):
            m(p, lib.zeros(1, 2, 4))
        with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
            lib.nn.GRU(2, 4)(p)
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(7x3 and 2x16\)"):
            lib.nn.LSTM(2, 4)(p)        # PyTorch's LSTM checks no sizes of a packed input
