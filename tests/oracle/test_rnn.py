"""nn.RNN / LSTM / GRU, the cells and torch.lstm & co. against torch: parameters and their initialisation,
values, every gradient (first and second order, float64), grad_fn names, dropout draws, hook event sequences and
PyTorch's errors."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import check, events, to_np

LIBS = (torch, hookgrad)
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _weights(mode, inp, hid, layers=1, bidirectional=False, bias=True, proj=0, seed=0):
    """The flat weight list of torch.<mode> (PyTorch's order), as float64 arrays."""
    rng = np.random.default_rng(seed)
    g, dirs, real = GATES[mode] * hid, 2 if bidirectional else 1, proj or hid
    out = []
    for layer in range(layers):
        for _ in range(dirs):
            shapes = [(g, inp if layer == 0 else real * dirs), (g, real)] + ([(g,), (g,)] if bias else [])
            out += [rng.uniform(-0.6, 0.6, s) for s in shapes + ([(proj, hid)] if proj else [])]
    return out


def _arr(*shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape)


# ------------------------------------------------------------------ torch.lstm & co.: values and gradients
@pytest.mark.parametrize("mode,layers,bidirectional,bias,batch_first,proj", [
    ("lstm", 1, False, True, False, 0),
    ("lstm", 2, True, True, True, 2),
    ("lstm", 1, True, False, False, 0),
    ("gru", 2, True, True, False, 0),
    ("gru", 1, False, False, True, 0),
    ("rnn_tanh", 2, True, True, False, 0),
    ("rnn_relu", 1, False, True, True, 0),
])
def test_layer_function_values_and_gradients(mode, layers, bidirectional, bias, batch_first, proj):
    inp, hid, T, B = 3, 3, 3, 2
    dirs = 2 if bidirectional else 1
    ws = _weights(mode, inp, hid, layers, bidirectional, bias, proj)
    x = _arr(B, T, inp) if batch_first else _arr(T, B, inp)
    h0 = _arr(layers * dirs, B, proj or hid, seed=2)
    c0 = _arr(layers * dirs, B, hid, seed=3)

    def fn(lib, x, h0, c0, *ws):
        hx = (h0, c0) if mode == "lstm" else h0
        return getattr(lib, mode)(x, hx, list(ws), bias, layers, 0.0, False, bidirectional, batch_first)

    t_out, h_out = check(fn, x, h0, c0, *ws, second=True)
    for a, b in zip(t_out, h_out):
        assert a.grad_fn.name() == b.grad_fn.name()


@pytest.mark.parametrize("p", [0.4, 1.0])
def test_layer_function_dropout_draws_and_gradients(p):
    ws = _weights("gru", 3, 3, 3)
    x, h0 = _arr(3, 2, 3), _arr(3, 2, 3, seed=2)

    def fn(lib, x, h0, *ws):
        lib.manual_seed(4)
        return lib.gru(x, h0, list(ws), True, 3, p, True, False, False)

    check(fn, x, h0, *ws, second=True)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_cell_functions(mode):
    g = GATES[mode] * 3
    rng = np.random.default_rng(0)
    w = [rng.uniform(-0.6, 0.6, s) for s in [(g, 4), (g, 3), (g,), (g,)]]
    x, h, c = _arr(2, 4), _arr(2, 3, seed=2), _arr(2, 3, seed=3)

    def fn(lib, x, h, c, *w):
        return getattr(lib, mode + "_cell")(x, (h, c) if mode == "lstm" else h, *w)

    t_out, h_out = check(fn, x, h, c, *w, second=True)
    assert [o.grad_fn.name() for o in t_out] == [o.grad_fn.name() for o in h_out]
    check(lambda lib, x, h, c, wi, wh: fn(lib, x, h, c, wi, wh), x, h, c, *w[:2])       # no biases


@pytest.mark.parametrize("args,msg", [
    (((2, 5), (2, 3), (2, 3)), "input has inconsistent input_size: got 5 expected 4"),
    (((2, 4), (3, 3), (2, 3)), "Input batch size 2 doesn't match hidden0 batch size 3"),
    (((2, 4), (2, 3), (2, 2)), "hidden1 has inconsistent hidden_size: got 2, expected 3"),
])
def test_cell_function_errors(args, msg):
    for lib in LIBS:
        x, h, c = (lib.zeros(*s) for s in args)
        with pytest.raises(RuntimeError, match=msg):
            lib.lstm_cell(x, (h, c), lib.zeros(12, 4), lib.zeros(12, 3))
        with pytest.raises(RuntimeError, match="lstm_cell expects two hidden states"):
            lib.lstm_cell(lib.zeros(2, 4), (lib.zeros(2, 3),), lib.zeros(12, 4), lib.zeros(12, 3))


# ------------------------------------------------------------------------------------ the modules
def _pair(name, *args, **kwargs):
    """The same module under torch and hookgrad, both built after manual_seed(0) (so equal weights if hookgrad
    initialises as PyTorch)."""
    out = []
    for lib in LIBS:
        lib.manual_seed(0)
        out.append(getattr(lib.nn, name)(*args, **kwargs))
    return out


CONFIGS = [
    ("RNN", (3, 4), {}),
    ("RNN", (3, 4, 2), {"nonlinearity": "relu", "bias": False, "batch_first": True}),
    ("RNN", (3, 4, 2, "relu"), {"dropout": 0.25, "bidirectional": True}),
    ("LSTM", (3, 4), {}),
    ("LSTM", (3, 4), {"num_layers": 2, "proj_size": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", (3, 4, 3, False), {"dropout": 0.5}),
    ("GRU", (3, 4), {"bidirectional": True}),
    ("GRU", (3, 4, 2), {"batch_first": True, "bias": False}),
    ("RNNCell", (3, 4), {}),
    ("RNNCell", (3, 4, False, "relu"), {}),
    ("LSTMCell", (3, 4), {}),
    ("GRUCell", (3, 4), {"bias": False}),
]


@pytest.mark.parametrize("name,args,kwargs", CONFIGS)
def test_parameters_init_and_repr(name, args, kwargs):
    tm, hm = _pair(name, *args, **kwargs)
    ts, hs = tm.state_dict(), hm.state_dict()
    assert list(ts) == list(hs)
    for k in ts:
        np.testing.assert_array_equal(to_np(hs[k]), to_np(ts[k]), err_msg=k)
        assert str(ts[k].dtype) == str(hs[k].dtype)
    assert [n for n, _ in tm.named_parameters()] == [n for n, _ in hm.named_parameters()]
    assert repr(tm) == repr(hm)
    if "Cell" not in name:
        assert tm._flat_weights_names == hm._flat_weights_names
        assert [[tuple(w.shape) for w in ws] for ws in tm.all_weights] == \
            [[tuple(w.shape) for w in ws] for ws in hm.all_weights]
        assert hm.flatten_parameters() is None
        assert type(hm).__mro__[1].__name__ == "RNNBase"
        # state_dicts move both ways
        hm.load_state_dict({k: hookgrad.tensor(to_np(v) * 2) for k, v in ts.items()})
        tm.load_state_dict({k: torch.tensor(to_np(v)) for k, v in hm.state_dict().items()})
        np.testing.assert_array_equal(to_np(tm._flat_weights[0]), to_np(ts[tm._flat_weights_names[0]]))
        assert hm._flat_weights[0] is hm.weight_ih_l0


def _run_module(lib, m, x, hx, train=False, seed=3):
    m.train(train)
    lib.manual_seed(seed)
    xt = lib.tensor(x, requires_grad=True)
    hxt = None if hx is None else (tuple(lib.tensor(h, requires_grad=True) for h in hx) if isinstance(hx, tuple)
                                   else lib.tensor(hx, requires_grad=True))
    r = m(xt, hxt)              # (output, h_n), (output, (h_n, c_n)), a cell's (h, c) or h
    outs = [r] if not isinstance(r, tuple) else [t for o in r for t in (o if isinstance(o, tuple) else (o,))]
    seeds = [np.random.default_rng(i).standard_normal(o.shape) for i, o in enumerate(outs)]
    sum((o * lib.tensor(s)).sum() for o, s in zip(outs, seeds)).backward()
    leaves = [xt] + (list(hxt) if isinstance(hxt, tuple) else [] if hxt is None else [hxt])
    return outs, [t.grad for t in leaves], {n: p.grad for n, p in m.named_parameters()}


def _compare_modules(tm, hm, x, hx=None, train=False):
    t, h = _run_module(torch, tm, x, hx, train), _run_module(hookgrad, hm, x, hx, train)
    for i, (a, b) in enumerate(zip(t[0], h[0])):
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-9, atol=1e-10, err_msg=f"output {i}")
        assert tuple(a.shape) == tuple(b.shape)
        if a.dtype != torch.float32 or not isinstance(tm, torch.nn.LSTM):   # PyTorch's float32 LSTM is MKL-DNN's
            assert a.grad_fn.name() == b.grad_fn.name(), i
    for i, (a, b) in enumerate(zip(t[1], h[1])):
        np.testing.assert_allclose(to_np(b), to_np(a), rtol=1e-9, atol=1e-10, err_msg=f"grad of input {i}")
    assert list(t[2]) == list(h[2])
    for k in t[2]:
        np.testing.assert_allclose(to_np(h[2][k]), to_np(t[2][k]), rtol=1e-9, atol=1e-10, err_msg=k)


@pytest.mark.parametrize("name,args,kwargs", CONFIGS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_module_forward_backward(name, args, kwargs, batched, with_state):
    tm, hm = _pair_double(name, *args, **kwargs)
    cell = "Cell" in name
    bf = kwargs.get("batch_first", False)
    B, T = 2, 3
    x = (_arr(B, 3) if batched else _arr(3)) if cell else \
        (_arr(*((B, T) if bf else (T, B)), 3) if batched else _arr(T, 3))
    hx = None
    if with_state:
        lead = () if cell else (tm.num_layers * (2 if tm.bidirectional else 1),)
        bdim = (B,) if batched else ()
        hsz = getattr(tm, "proj_size", 0) or 4
        hx = _arr(*lead, *bdim, hsz, seed=5)
        if "LSTM" in name:
            hx = (hx, _arr(*lead, *bdim, 4, seed=6))
    _compare_modules(tm, hm, x, hx, train=not cell and tm.dropout > 0)


def _pair_double(name, *args, **kwargs):
    tm, hm = _pair(name, *args, **kwargs)
    return tm.double(), hm.double()


def test_dropout_draws_as_torch_float32_lstm():
    # PyTorch's float32 LSTM runs MKL-DNN's kernel; its dropout masks are still drawn as at::dropout's
    tm, hm = _pair("LSTM", 3, 5, num_layers=3, dropout=0.5, bidirectional=True)
    x = _arr(4, 2, 3).astype(np.float32)
    outs = []
    for lib, m in zip(LIBS, (tm, hm)):
        lib.manual_seed(7)
        outs.append(to_np(m(lib.tensor(x))[0]))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(to_np(hm.eval()(hookgrad.tensor(x))[0]), outs[1])   # eval: no dropout


def test_hidden_permutations_and_flat_weight_updates():
    tm, hm = _pair_double("GRU", 3, 4)
    for m, lib in ((tm, torch), (hm, hookgrad)):
        m.weight_hh_l0 = lib.nn.Parameter(m.weight_hh_l0.detach() * 0.5)
    assert hm._flat_weights[1] is hm.weight_hh_l0
    _compare_modules(tm, hm, _arr(3, 2, 3))
    hm2 = pickle.loads(pickle.dumps(hm))
    assert hm2._flat_weights_names == hm._flat_weights_names and hm2._flat_weights[0] is hm2.weight_ih_l0
    np.testing.assert_array_equal(to_np(hm2(hookgrad.tensor(_arr(3, 2, 3)))[0]),
                                  to_np(hm(hookgrad.tensor(_arr(3, 2, 3)))[0]))


# ----------------------------------------------------------------------------------------- hooks
def _hook_scenario(name):
    def scenario(lib, log):
        lib.manual_seed(0)
        m = getattr(lib.nn, name)(3, 2, dtype=lib.float64)
        m.register_forward_pre_hook(lambda mod, args: log("pre", args))
        m.register_forward_hook(lambda mod, args, out: log("fwd", out))
        m.register_full_backward_pre_hook(lambda mod, go: log("bwd_pre", go))
        m.register_full_backward_hook(lambda mod, gi, go: log("bwd", gi, go))
        x = lib.tensor(_arr(3, 2, 3), requires_grad=True)
        h0 = lib.tensor(_arr(1, 2, 2, seed=2), requires_grad=True)
        hx = (h0, lib.tensor(_arr(1, 2, 2, seed=3))) if name == "LSTM" else h0
        out, h = m(x, hx)
        hn = h[0] if name == "LSTM" else h
        hn.register_hook(lambda g: log("h_n", g))
        loss = (out * 2).sum() + (hn * 3).sum() + ((h[1] * h[1]).sum() if name == "LSTM" else 0)
        loss.backward()
        log("grads", x.grad, h0.grad, m.weight_hh_l0.grad)
    return scenario


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_module_hook_events(name):
    ev = events(_hook_scenario(name))
    assert {"pre", "fwd", "h_n", "bwd_pre", "bwd", "grads"} == {e[0] for e in ev}


def test_cell_hook_events_tuple_output():
    def scenario(lib, log):
        lib.manual_seed(0)
        m = lib.nn.LSTMCell(3, 2, dtype=lib.float64)
        m.register_forward_hook(lambda mod, args, out: log("fwd", out))
        m.register_full_backward_hook(lambda mod, gi, go: log("bwd", gi, go))
        x = lib.tensor(_arr(2, 3), requires_grad=True)
        h, c = m(x)
        h.register_hook(lambda g: log("h", g))
        (h.sum() + (c * c).sum()).backward()
    events(scenario)


# ----------------------------------------------------------------------------------------- errors
def _raises(fn, exc=None, match=None):
    """fn(lib) raises the same exception type under both libraries (and the message ``match`` in hookgrad)."""
    got = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            fn(lib)
        got.append(info.type)
        if lib is hookgrad and match:
            assert match in str(info.value), str(info.value)
    assert got[0] is got[1], got
    assert exc is None or got[0] is exc


@pytest.mark.parametrize("fn,exc,match", [
    (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(5, 2, 4)), RuntimeError,
     "input.size(-1) must be equal to input_size. Expected 3, got 4"),
    (lambda lib: lib.nn.GRU(3, 4)(lib.zeros(5, 2, 3), lib.zeros(1, 3, 4)), RuntimeError,
     "Expected hidden size (1, 2, 4), got [1, 3, 4]"),
    (lambda lib: lib.nn.LSTM(3, 4, proj_size=2)(lib.zeros(5, 2, 3), (lib.zeros(1, 2, 4), lib.zeros(1, 2, 4))),
     RuntimeError, "Expected hidden[0] size (1, 2, 2), got [1, 2, 4]"),
    (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(5, 2, 3), (lib.zeros(1, 2, 4), lib.zeros(1, 2, 3))), RuntimeError,
     "Expected hidden[1] size (1, 2, 4), got [1, 2, 3]"),
    (lambda lib: lib.nn.RNN(3, 4)(lib.zeros(5, 2, 3, 1)), ValueError, "RNN: Expected input to be 2D or 3D, got 4D"),
    (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(3)), ValueError, "LSTM: Expected input to be 2D or 3D, got 1D instead"),
    (lambda lib: lib.nn.GRU(3, 4)(lib.zeros(5, 2, 3), lib.zeros(2, 4)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    (lambda lib: lib.nn.RNN(3, 4)(lib.zeros(5, 3), lib.zeros(1, 1, 4)), RuntimeError,
     "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(5, 3), (lib.zeros(1, 4), lib.zeros(1, 1, 4))), RuntimeError,
     "For unbatched 2-D input, hx and cx should also be 2-D but got (2-D, 3-D) tensors"),
    (lambda lib: lib.nn.LSTM(3, 4)(lib.zeros(5, 2, 3, dtype=lib.float64)), ValueError,
     "RNN input dtype (torch.float64) does not match weight dtype (torch.float32)"),
    (lambda lib: lib.nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda lib: lib.nn.GRU(3, 4, proj_size=2), ValueError, "proj_size argument is only supported for LSTM"),
    (lambda lib: lib.nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError, "Unknown nonlinearity 'sigmoid'"),
    (lambda lib: lib.nn.LSTM(3, 4, dropout=1.5), ValueError, "dropout should be a number in range [0, 1]"),
    (lambda lib: lib.nn.LSTM(3, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda lib: lib.nn.LSTM(3, 4, num_layers=0), ValueError, "num_layers must be greater than zero"),
    (lambda lib: lib.nn.LSTM(3.0, 4), TypeError, "input_size should be of type int, got: float"),
    (lambda lib: lib.nn.LSTM(3, 4, bias=1), TypeError, "bias should be of type bool, got: int"),
    (lambda lib: lib.nn.LSTMCell(3, 4)(lib.zeros(2, 2, 3)), ValueError,
     "LSTMCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda lib: lib.nn.GRUCell(3, 4)(lib.zeros(2, 3), lib.zeros(1, 2, 4)), ValueError,
     "GRUCell: Expected hidden to be 1D or 2D, got 3D instead"),
    (lambda lib: lib.nn.LSTMCell(3, 4)(lib.zeros(2, 3), (lib.zeros(2, 4), lib.zeros(1, 2, 4))), ValueError,
     "LSTMCell: Expected hx[1] to be 1D or 2D, got 3D instead"),
    (lambda lib: lib.nn.RNNCell(3, 4)(lib.zeros(2, 5)), RuntimeError,
     "input has inconsistent input_size: got 5 expected 3"),
    (lambda lib: lib.nn.GRUCell(3, 4)(lib.zeros(2, 3), lib.zeros(3, 4)), RuntimeError,
     "Input batch size 2 doesn't match hidden0 batch size 3"),
])
def test_errors(fn, exc, match):
    _raises(fn, exc, match)


def test_dropout_warning_and_state_after_error():
    for lib in LIBS:
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
            lib.nn.LSTM(3, 4, dropout=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = hookgrad.nn.GRU(3, 4)
    with pytest.raises(RuntimeError):
        m(hookgrad.zeros(5, 2, 2))
    assert m(hookgrad.zeros(5, 2, 3))[0].shape == (5, 2, 4)
