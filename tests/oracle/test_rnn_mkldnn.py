"""The float32 LSTM as PyTorch runs it on the CPU (oneDNN): one MkldnnRnnLayerBackward0 node per layer and
direction. Values, every gradient (first and second order, float32 tolerance), the graph's structure and saved
values, module and tensor hooks, dropout draws, and where PyTorch keeps its composite path."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import check, events, to_np

LIBS = (torch, hookgrad)
f32 = np.float32


def _arr(*shape, seed=1, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(f32)


def _weights(inp, hid, layers, dirs, bias, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for layer in range(layers):
        for _ in range(dirs):
            shapes = [(4 * hid, inp if layer == 0 else hid * dirs), (4 * hid, hid)] + ([(4 * hid,)] * 2 if bias else [])
            out += [rng.uniform(-0.6, 0.6, s).astype(f32) for s in shapes]
    return out


CONFIGS = [  # layers, bidirectional, bias, batch_first
    (1, False, True, False),
    (1, False, True, True),
    (1, True, False, False),
    (2, False, True, False),
    (2, True, True, True),
]


@pytest.mark.parametrize("layers,bidirectional,bias,batch_first", CONFIGS)
def test_lstm_function_values_and_gradients(layers, bidirectional, bias, batch_first, path):
    """On both paths: the compiled step kernels (forward gates, backward recurrence) and NumPy's."""
    inp, hid, T, B = 3, 4, 4, 2
    dirs = 2 if bidirectional else 1
    ws = _weights(inp, hid, layers, dirs, bias)
    x = _arr(B, T, inp) if batch_first else _arr(T, B, inp)
    h0, c0 = _arr(layers * dirs, B, hid, seed=2), _arr(layers * dirs, B, hid, seed=3)

    def fn(lib, x, h0, c0, *ws):
        return lib.lstm(x, (h0, c0), list(ws), bias, layers, 0.0, True, bidirectional, batch_first)

    t_out, h_out = check(fn, x, h0, c0, *ws, second=layers == 1, tol=(2e-4, 2e-5))
    for a, b in zip(t_out, h_out):
        assert b.grad_fn.name() == a.grad_fn.name()
    assert "MkldnnRnnLayerBackward0" in {f.name() for f, _ in h_out[1].grad_fn.next_functions}


def _graph(lib, batch_first=False, bias=True):
    lib.manual_seed(0)
    m = lib.nn.LSTM(3, 4, num_layers=2, bias=bias, batch_first=batch_first)
    x = lib.tensor(_arr(2, 5, 3) if batch_first else _arr(5, 2, 3), requires_grad=True)
    h0 = lib.tensor(_arr(2, 2, 4, seed=2), requires_grad=True)
    c0 = lib.tensor(_arr(2, 2, 4, seed=3), requires_grad=True)
    return m(x, (h0, c0))


def _describe(fn, depth=3):
    if fn is None:
        return None
    if depth == 0 or fn.name().endswith("AccumulateGrad"):
        return fn.name().split("::")[-1]
    return (fn.name(), tuple((_describe(f, depth - 1), k) for f, k in fn.next_functions))


@pytest.mark.parametrize("batch_first,bias", [(True, True), (False, False)])
def test_graph_structure_and_saved_values(batch_first, bias):
    (to, (th, tc)), (ho, (hh, hc)) = (_graph(lib, batch_first, bias) for lib in LIBS)
    for a, b in ((to, ho), (th, hh), (tc, hc)):
        assert _describe(b.grad_fn, 4) == _describe(a.grad_fn, 4)
    tn, hn = th.grad_fn.next_functions[1][0], hh.grad_fn.next_functions[1][0]     # the second layer's node
    assert hn.name() == tn.name() == "MkldnnRnnLayerBackward0"
    for name in ("reverse", "mode", "hidden_size", "num_layers", "has_biases", "bidirectional", "batch_first",
                 "train", "batch_sizes"):
        assert getattr(hn, "_saved_" + name) == getattr(tn, "_saved_" + name), name
    for name in ("input", "weight0", "weight1", "weight2", "hx_", "cx_", "result0", "result1", "result2"):
        a, b = getattr(tn, "_saved_" + name), getattr(hn, "_saved_" + name)
        assert tuple(b.shape) == tuple(a.shape), name
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-5, atol=1e-6, err_msg=name)


def test_module_training_step_and_retain_graph():
    outs = []
    for lib in LIBS:
        lib.manual_seed(0)
        m = lib.nn.LSTM(5, 6, num_layers=2, bidirectional=True)
        x = lib.tensor(_arr(7, 3, 5), requires_grad=True)
        out, (h, c) = m(x)
        loss = (out * out).sum() + h.sum() + (c * 2).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
        with lib.no_grad():
            nograd = m(x)[0]
        outs.append([out, h, c, nograd, x.grad] + [p.grad for p in m.parameters()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-4, atol=2e-5)


def test_dropout_draws_and_gradients():
    outs = []
    for lib in LIBS:
        lib.manual_seed(0)
        m = lib.nn.LSTM(3, 4, num_layers=3, dropout=0.4)
        x = lib.tensor(_arr(5, 2, 3), requires_grad=True)
        lib.manual_seed(3)
        out, (h, c) = m(x)
        (out.sum() + h.sum() + c.sum()).backward()
        outs.append([out, h, c, x.grad] + [p.grad for p in m.parameters()])
        assert out.grad_fn.next_functions[0][0].name() == "MulBackward0"
    for a, b in zip(*outs):
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-4, atol=2e-5)


def test_module_and_tensor_hook_events():
    def scenario(lib, log):
        lib.manual_seed(0)
        m = lib.nn.LSTM(3, 2, num_layers=2)
        m.register_forward_pre_hook(lambda mod, args: log("pre", args))
        m.register_forward_hook(lambda mod, args, out: log("fwd", out))
        m.register_full_backward_pre_hook(lambda mod, go: log("bwd_pre", go))
        m.register_full_backward_hook(lambda mod, gi, go: log("bwd", gi, go))
        x = lib.tensor(_arr(3, 2, 3, scale=0.4), requires_grad=True)
        h0 = lib.tensor(_arr(2, 2, 2, seed=2, scale=0.5), requires_grad=True)
        out, (hn, cn) = m(x, (h0, lib.tensor(_arr(2, 2, 2, seed=3, scale=0.5))))
        out.register_hook(lambda g: log("out", g))
        hn.register_hook(lambda g: log("h_n", g))
        out.grad_fn.register_prehook(lambda go: log("node_pre", go))
        ((out * 2).sum() + (hn * 3).sum() + (cn * cn).sum()).backward()
        log("grads", x.grad, h0.grad, m.weight_hh_l0.grad)
    ev = events(scenario)
    assert {"pre", "fwd", "out", "h_n", "node_pre", "bwd_pre", "bwd", "grads"} == {e[0] for e in ev}


def test_paths_pytorch_keeps_composite():
    """float64, a projection, a packed batch, an empty input: no oneDNN node, as PyTorch."""
    def run(lib, dtype, proj=0, packed=False):
        lib.manual_seed(0)
        m = lib.nn.LSTM(3, 4, proj_size=proj).to(dtype)
        x = lib.tensor(_arr(4, 2, 3), requires_grad=True).to(dtype)
        if packed:
            x = lib.nn.utils.rnn.pack_padded_sequence(x, [4, 2])
        out, (h, c) = m(x)
        out = out.data if packed else out
        return {f.name() for f, _ in out.grad_fn.next_functions if f is not None} | {out.grad_fn.name()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in ((torch.float64,), (torch.float32, 2), (torch.float32, 0, True)):
            names = run(torch, *args)
            ours = run(hookgrad, getattr(hookgrad, str(args[0]).split(".")[1]), *args[1:])
            assert "MkldnnRnnLayerBackward0" not in names | ours
            assert ours >= names - {"MulBackward0"}     # (hookgrad's composite step: one fused cell node)
