"""The modules clients import at load time (issue 10, part B), differential against torch where observable:
torch.jit, torch.futures, torch.multiprocessing, torch.nn.parallel, torch.hub, torch.__future__, the
nn.modules file layout and torch.nn.utils.rnn."""
import importlib
import os
import pickle
import threading

import numpy as np
import pytest
import torch

import hookgrad
from oracle import assert_same, to_np


def _both(fn):
    """fn(lib) under both libraries -> (torch result, hookgrad result)."""
    return fn(torch), fn(hookgrad)


def _error(fn):
    try:
        fn()
    except BaseException as e:  # noqa: BLE001
        return e
    return None


def _same_error(fn_t, fn_h, key=None):
    et, eh = _error(fn_t), _error(fn_h)
    assert et is not None and eh is not None, (et, eh)
    assert type(et).__name__ == type(eh).__name__, (et, eh)
    text = key if key is not None else str(et).split("\n")[0]
    assert text in str(eh), (str(et), str(eh))


# ---------------------------------------------------------------- nn.modules layout
LAYOUT = {
    "batchnorm": ["_NormBase", "_BatchNorm", "BatchNorm1d", "BatchNorm2d"],
    "conv": ["_ConvNd", "_ConvTransposeNd", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"],
    "linear": ["Identity", "Linear", "Bilinear"],
    "activation": ["ReLU", "GELU", "Softmax", "MultiheadAttention"],
    "pooling": ["_MaxPoolNd", "_AvgPoolNd", "_AdaptiveAvgPoolNd", "_AdaptiveMaxPoolNd", "MaxPool2d", "AvgPool1d",
                "AdaptiveAvgPool2d", "AdaptiveMaxPool1d"],
    "normalization": ["LayerNorm", "GroupNorm"],
    "loss": ["_Loss", "_WeightedLoss", "MSELoss", "CrossEntropyLoss"],
    "container": ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"],
    "module": ["Module", "register_module_forward_hook"],
    "dropout": ["_DropoutNd", "Dropout", "Dropout2d"],
    "sparse": ["Embedding"],
    "flatten": ["Flatten", "Unflatten"],
    "padding": ["ZeroPad2d", "ConstantPad1d", "ReflectionPad2d", "ReplicationPad1d", "CircularPad2d",
                "_ConstantPadNd", "_ReflectionPadNd"],
    "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "instancenorm": ["_InstanceNorm", "InstanceNorm1d", "InstanceNorm2d"],
    "upsampling": ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"],
    "transformer": ["TransformerEncoder", "TransformerEncoderLayer"],
    "utils": ["_single", "_pair", "_triple", "_quadruple", "_ntuple", "_reverse_repeat_tuple",
              "consume_prefix_in_state_dict_if_present"],
    "rnn": [],
}


@pytest.mark.parametrize("mod", sorted(LAYOUT))
def test_module_files_hold_pytorchs_classes_with_pytorchs_bases(mod):
    tm = importlib.import_module(f"torch.nn.modules.{mod}")
    hm = importlib.import_module(f"hookgrad.nn.modules.{mod}")
    for name in LAYOUT[mod]:
        t, h = getattr(tm, name), getattr(hm, name)
        if isinstance(t, type) and mod != "activation":  # (activation.py's internals: issue 10 part F)
            # the class hierarchy by name, up to Module
            tb = [c.__name__ for c in t.__mro__ if c.__name__ not in ("Generic", "object")]
            hb = [c.__name__ for c in h.__mro__ if c.__name__ not in ("Generic", "object")]
            assert tb == hb, (name, tb, hb)
            # and the public layer is the one nn exports
            if not name.startswith("_") and hasattr(torch.nn, name):
                assert getattr(hookgrad.nn, name) is h


def test_tools_isinstance_checks():
    from hookgrad.nn.modules.batchnorm import _BatchNorm
    from hookgrad.nn.modules.conv import _ConvNd
    assert isinstance(hookgrad.nn.BatchNorm1d(3), _BatchNorm)
    assert isinstance(hookgrad.nn.ConvTranspose2d(2, 2, 3), _ConvNd)
    assert isinstance(hookgrad.nn.InstanceNorm2d(3), hookgrad.nn.modules.batchnorm._NormBase)
    assert not isinstance(hookgrad.nn.InstanceNorm2d(3), _BatchNorm)
    assert hookgrad.nn.utils is importlib.import_module("hookgrad.nn.utils")


@pytest.mark.parametrize("x", [3, (1, 2), [4, 5, 6], range(2)])
def test_ntuple_helpers(x):
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        t = getattr(torch.nn.modules.utils, name)(x)
        h = getattr(hookgrad.nn.modules.utils, name)(x)
        assert t == h
    assert torch.nn.modules.utils._reverse_repeat_tuple((1, 2), 2) == \
        hookgrad.nn.modules.utils._reverse_repeat_tuple((1, 2), 2)


LAYERS = [
    ("ZeroPad2d", (1,), (2, 3, 4, 4)), ("ZeroPad2d", ((1, 2, 0, 3),), (1, 2, 3, 3)),
    ("ConstantPad1d", ((2, 1), 3.5), (2, 3, 4)), ("ConstantPad2d", (1, -1.0), (1, 2, 3, 3)),
    ("ReflectionPad1d", (2,), (2, 3, 5)), ("ReflectionPad2d", ((1, 0, 2, 1),), (1, 2, 4, 4)),
    ("ReplicationPad1d", (3,), (2, 3, 4)), ("ReplicationPad2d", (1,), (1, 2, 3, 3)),
    ("CircularPad1d", (1,), (2, 3, 4)), ("CircularPad2d", ((1, 1, 2, 0),), (1, 2, 3, 3)),
    ("ZeroPad1d", (2,), (2, 3)),
    ("InstanceNorm1d", (3,), (2, 3, 5)), ("InstanceNorm2d", (3,), (2, 3, 4, 4)),
    ("InstanceNorm2d", (3, 1e-5, 0.1, True), (2, 3, 4, 4)), ("InstanceNorm1d", (3,), (3, 5)),
    ("AvgPool1d", (2,), (2, 3, 6)), ("AdaptiveMaxPool2d", ((2, 2),), (1, 2, 5, 5)),
    ("Flatten", (), (2, 3, 4)), ("Upsample", (None, 2.0), (1, 2, 3, 3)), ("BatchNorm1d", (3,), (4, 3)),
]


@pytest.mark.parametrize("name,args,shape", LAYERS, ids=[f"{n}{a}" for n, a, _ in LAYERS])
def test_layers_from_the_new_files_match_torch(name, args, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)

    def run(lib):
        m = getattr(lib.nn, name)(*args)
        inp = lib.tensor(x, requires_grad=True)
        out = m(inp)
        out.backward(lib.ones_like(out))
        return m, out, inp.grad
    (mt, ot, gt), (mh, oh, gh) = _both(run)
    assert repr(mt) == repr(mh)
    assert_same(ot, oh)
    assert_same(gt, gh, "input grad")
    assert sorted(mt.state_dict()) == sorted(mh.state_dict())


def test_layer_errors_match_torch():
    _same_error(lambda: torch.nn.InstanceNorm2d(3)(torch.ones(3, 4)), lambda: hookgrad.nn.InstanceNorm2d(3)(
        hookgrad.ones(3, 4)))
    _same_error(lambda: torch.nn.InstanceNorm1d(3, affine=True)(torch.ones(2, 4, 5)),
                lambda: hookgrad.nn.InstanceNorm1d(3, affine=True)(hookgrad.ones(2, 4, 5)))


def test_rnn_module_names():
    # torch.nn.modules.rnn holds the recurrent layers nn exports (tests/oracle/test_rnn.py tests them)
    import hookgrad.nn.modules.rnn as r
    assert r.LSTM is hookgrad.nn.LSTM and r.GRU is hookgrad.nn.GRU and r.RNNBase is hookgrad.nn.RNNBase
    assert sorted(r.__all__) == sorted(torch.nn.modules.rnn.__all__)
    with pytest.raises(AttributeError):
        r.NotATorchName


# ---------------------------------------------------------------- jit
def test_jit_eager_no_ops_match_torch_results():
    def body(lib):
        m = lib.nn.Linear(3, 2)
        calls = []
        m.register_forward_hook(lambda *a: calls.append("hook"))
        x = lib.ones(4, 3)
        traced = lib.jit.trace(m, x)
        n_trace_calls = len(calls)
        out = traced(x)
        fut = lib.jit.fork(lambda a, b: a * b, x, 2.0)
        return (n_trace_calls >= 1, lib.jit.is_scripting(), lib.jit.is_tracing(), lib.jit.wait(fut).sum().item(),
                lib.jit.annotate(int, 3), isinstance(m, lib.jit.ScriptModule), tuple(out.shape))
    t, h = _both(body)
    assert t == h


def test_jit_decorators_mark_and_return_the_function():
    for name in ("ignore", "unused", "export", "_overload_method"):
        def f(x):
            return x
        assert getattr(hookgrad.jit, name)(f) is f
        tf = getattr(torch.jit, name)
        if name != "_overload_method":
            def g(x):
                return x
            assert getattr(tf(g), "_torchscript_modifier", None) == getattr(f, "_torchscript_modifier", None)

    class M(hookgrad.nn.Module):
        @hookgrad.jit.ignore
        def helper(self, x):
            return x + 1

        @hookgrad.jit.unused
        def other(self, x):
            return x

        def forward(self, x):
            if hookgrad.jit.is_scripting():
                return x
            return self.helper(x)
    m = hookgrad.jit.script(M())
    assert isinstance(m, M) and m(hookgrad.ones(1)).item() == 2.0
    with pytest.warns(FutureWarning, match="ignore\\(True\\) has been deprecated"):
        hookgrad.jit.ignore(drop=True)
    _same_error(lambda: torch.jit.ignore(3), lambda: hookgrad.jit.ignore(3))
    assert hookgrad.jit.Final is torch.jit.Final
    assert hookgrad.jit.Future is hookgrad.futures.Future


def test_jit_save_load_raise_clearly(tmp_path):
    _same_error(lambda: torch.jit.load(str(tmp_path / "none.pt")), lambda: hookgrad.jit.load(str(tmp_path / "none.pt")))
    _same_error(lambda: torch.jit.save(torch.nn.Linear(1, 1), str(tmp_path / "m.pt")),
                lambda: hookgrad.jit.save(hookgrad.nn.Linear(1, 1), str(tmp_path / "m.pt")),
                key="'Linear' object has no attribute 'save'")
    p = tmp_path / "w.pt"
    p.write_bytes(b"x")
    with pytest.raises(RuntimeError, match="TorchScript"):
        hookgrad.jit.load(str(p))
    with pytest.raises(RuntimeError):
        hookgrad.jit.ScriptModule()


# ---------------------------------------------------------------- futures
def _future_story(lib):
    F = lib.futures
    log = []
    f = F.Future()
    log.append(f.done())
    child = f.then(lambda fut: fut.value() + 1)
    grand = child.then(lambda fut: fut.wait() * 10)
    f.add_done_callback(lambda fut: log.append(("cb", fut.value())))
    f.set_result(1)
    log += [f.done(), f.wait(), child.value(), grand.wait(), isinstance(child, lib.Future),
            isinstance(child, F.Future), isinstance(f, lib.Future)]
    # inline callbacks on a completed future, in registration order
    order = []
    f.then(lambda fut: order.append(1))
    f.add_done_callback(lambda fut: order.append(2))
    log.append(order)
    # errors: set_exception, propagation through then, callback raising
    g = F.Future()
    g_child = g.then(lambda fut: fut.wait())
    g.set_exception(ValueError("boom"))
    for call in (g.wait, g.value, g_child.wait, lambda: f.set_result(2), lambda: F.Future().set_exception(3),
                 lambda: pickle.dumps(F.Future())):
        e = _error(call)
        log.append((type(e).__name__, str(e).split("\n")[0]))
    k = F.Future()
    k_child = k.then(lambda fut: 1 / 0)
    k.set_result(0)
    e = _error(k_child.wait)
    log.append((type(e).__name__, str(e).split("\n")[0]))
    # collect_all / wait_all
    a, b = F.Future(), F.Future()
    both = F.collect_all([a, b])
    a.set_result("a")
    log.append(both.done())
    b.set_result("b")
    log += [both.done(), [x.value() for x in both.wait()], F.wait_all([a, b]), F.collect_all([]).value()]
    c = F.Future()
    c.set_exception(KeyError("k"))
    e = _error(lambda: F.wait_all([a, c]))
    log.append((type(e).__name__, str(e)))
    return log


def test_future_semantics_match_torch():
    t, h = _both(_future_story)
    assert t == h


def test_future_generic_and_threads():
    assert hookgrad.futures.Future[hookgrad.Tensor] is not None
    f = hookgrad.futures.Future()
    got = []
    f.then(lambda fut: got.append(threading.current_thread().name))
    th = threading.Thread(target=lambda: f.set_result(hookgrad.ones(2)), name="setter")
    waiter = threading.Thread(target=lambda: got.append(f.wait().sum().item()))
    waiter.start()
    th.start()
    th.join()
    waiter.join(5)
    assert sorted(map(str, got)) == ["2.0", "setter"]


def test_future_value_before_done_raises_runtimeerror():
    _same_error(lambda: torch.futures.Future().value(), lambda: hookgrad.futures.Future().value(),
                key="completed() INTERNAL ASSERT FAILED")


# ---------------------------------------------------------------- multiprocessing
def _square_into(i, q):
    q.put((i, (hookgrad.ones(2) * i).sum().item()))


def _fail(i):
    raise ValueError(f"child {i} failed")


def test_multiprocessing_names_match_torch():
    missing = {n for n in dir(torch.multiprocessing) if not n.startswith("_")} - set(dir(hookgrad.multiprocessing))
    assert missing <= {"torch", "reductions", "init_reductions", "ENV_VAR_PARALLEL_START"}, missing
    assert hookgrad.multiprocessing.get_sharing_strategy() == torch.multiprocessing.get_sharing_strategy()
    assert hookgrad.multiprocessing.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()
    t = hookgrad.randn(2, 3, requires_grad=True)
    t2 = pickle.loads(pickle.dumps(t))
    assert np.array_equal(to_np(t2), to_np(t)) and t2.requires_grad


def _put_or_fail(i, q):
    if i == 1:
        raise ValueError(f"child {i} failed")
    _square_into(i, q)


def test_multiprocessing_start_processes_and_errors():
    # start_processes is spawn()'s engine; "fork" keeps the test fast (spawn re-imports hookgrad per child)
    mp = hookgrad.multiprocessing
    q = mp.get_context("fork").SimpleQueue()
    mp.start_processes(_square_into, args=(q,), nprocs=2, start_method="fork")
    assert sorted(q.get() for _ in range(2)) == [(0, 0.0), (1, 2.0)]
    with pytest.raises(mp.ProcessRaisedException, match="child 1 failed") as info:
        mp.start_processes(_put_or_fail, args=(q,), nprocs=2, start_method="fork")
    assert info.value.error_index == 1 and "-- Process 1 terminated with the following error:" in str(info.value)
    ctx = mp.start_processes(_square_into, args=(q,), nprocs=1, join=False, start_method="fork")
    assert isinstance(ctx, mp.ProcessContext)
    while not ctx.join():
        pass


# ---------------------------------------------------------------- nn.parallel
def test_data_parallel_is_a_pass_through_like_torchs_on_cpu():
    def body(lib):
        lib.manual_seed(0)
        inner = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.ReLU())
        dp = lib.nn.DataParallel(inner)
        events = []
        inner[0].register_forward_hook(lambda m, i, o: events.append("inner fwd"))
        dp.register_forward_hook(lambda m, i, o: events.append("dp fwd"))
        x = lib.ones(4, 3)
        out = dp(x)
        out.sum().backward()
        return (repr(dp), list(dp.state_dict()), dp.device_ids, dp.module is inner, events, to_np(out),
                to_np(inner[0].weight.grad), isinstance(dp, lib.nn.Module))
    t, h = _both(body)
    for a, b in zip(t, h):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(b, a, rtol=1e-6)
        else:
            assert a == b


def test_parallel_names_and_errors():
    assert set(torch.nn.parallel.__all__) <= set(dir(hookgrad.nn.parallel))
    _same_error(lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2)),
                lambda: hookgrad.nn.parallel.DistributedDataParallel(hookgrad.nn.Linear(2, 2)))
    _same_error(lambda: torch.nn.parallel.data_parallel(torch.nn.Linear(2, 2), torch.ones(1, 2)),
                lambda: hookgrad.nn.parallel.data_parallel(hookgrad.nn.Linear(2, 2), hookgrad.ones(1, 2)))
    _same_error(lambda: torch.nn.parallel.scatter_gather.gather([torch.ones(1)], "cpu"),
                lambda: hookgrad.nn.parallel.scatter_gather.gather([hookgrad.ones(1)], "cpu"))
    parts = hookgrad.nn.parallel.scatter(hookgrad.arange(6), [0, 1])
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5]]
    assert isinstance(hookgrad.nn.DataParallel(hookgrad.nn.Linear(1, 1)), hookgrad.nn.DataParallel)


def test_consume_prefix_of_a_data_parallel_state_dict():
    def body(lib):
        lib.manual_seed(0)
        sd = lib.nn.DataParallel(lib.nn.Linear(2, 2)).state_dict()
        lib.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.")
        m = lib.nn.Linear(2, 2)
        m.load_state_dict(sd)
        return list(sd), list(sd._metadata)
    t, h = _both(body)
    assert t == h


# ---------------------------------------------------------------- hub
HUBCONF = '''
dependencies = ["numpy"]
import torch


def tiny(n=2, bias=True):
    """A tiny linear model."""
    return torch.nn.Linear(n, 1, bias=bias)


def _helper():
    pass
'''


def test_hub_local_load_list_help(tmp_path, monkeypatch):
    (tmp_path / "hubconf.py").write_text(HUBCONF.replace("import torch", "import hookgrad as torch"))
    m = hookgrad.hub.load(str(tmp_path), "tiny", 3, source="local", bias=False)
    assert isinstance(m, hookgrad.nn.Linear) and m.in_features == 3 and m.bias is None
    _same_error(lambda: torch.hub.load(str(tmp_path), "nope", source="local"),
                lambda: hookgrad.hub.load(str(tmp_path), "nope", source="local"))
    _same_error(lambda: torch.hub.load(str(tmp_path), "tiny", source="ftp"),
                lambda: hookgrad.hub.load(str(tmp_path), "tiny", source="ftp"))
    old_t, old_h = torch.hub.get_dir(), hookgrad.hub.get_dir()
    assert old_t == old_h
    try:
        for lib in (torch, hookgrad):
            lib.hub.set_dir(str(tmp_path / "hub"))
        cached = tmp_path / "hub" / "owner_repo_main"
        cached.mkdir(parents=True)
        (cached / "hubconf.py").write_text(HUBCONF.replace("import torch", "import hookgrad as torch"))
        assert hookgrad.hub.list("owner/repo") == ["tiny"]
        assert hookgrad.hub.help("owner/repo", "tiny") == "A tiny linear model."
        e = _error(lambda: hookgrad.hub.load("owner/other", "tiny"))
        assert isinstance(e, RuntimeError) and "no internet connection" in str(e)
    finally:
        torch.hub.set_dir(old_t)
        hookgrad.hub.set_dir(old_h)


def test_hub_state_dict_from_the_cache(tmp_path):
    old = hookgrad.hub.get_dir()
    try:
        hookgrad.hub.set_dir(str(tmp_path))
        os.makedirs(tmp_path / "checkpoints")
        sd = {"w": torch.arange(3.0)}
        torch.save(sd, tmp_path / "checkpoints" / "model-abc.pth")
        got = hookgrad.hub.load_state_dict_from_url("https://example.com/x/model-abc.pth")
        assert list(got) == ["w"] and got["w"].tolist() == [0.0, 1.0, 2.0]
        from urllib.error import URLError
        with pytest.raises(URLError, match="network"):
            hookgrad.hub.load_state_dict_from_url("https://example.com/x/other.pth")
        src = tmp_path / "src.bin"
        src.write_bytes(b"abc")
        hookgrad.hub.download_url_to_file(src.as_uri(), str(tmp_path / "dst.bin"))
        assert (tmp_path / "dst.bin").read_bytes() == b"abc"
    finally:
        hookgrad.hub.set_dir(old)


# ---------------------------------------------------------------- __future__
def test_future_flags_match_torch():
    names = [n for n in dir(torch.__future__) if n.startswith(("get_", "set_"))]
    assert names == [n for n in dir(hookgrad.__future__) if n.startswith(("get_", "set_"))]
    for flag in ("overwrite_module_params_on_conversion", "swap_module_params_on_conversion"):
        for lib in (torch, hookgrad):
            get, set_ = getattr(lib.__future__, "get_" + flag), getattr(lib.__future__, "set_" + flag)
            assert get() is False
            set_(True)
            assert get() is True
            set_(False)


def test_top_level_names():
    assert hookgrad.Future is not hookgrad.futures.Future
    assert issubclass(hookgrad.futures.Future, hookgrad.Future)
    for name in ("jit", "futures", "multiprocessing", "hub", "__future__"):
        assert hasattr(hookgrad, name)


# ---------------------------------------------------------------- nn.utils.rnn
def _rnn_story(lib):
    R = lib.nn.utils.rnn
    a = lib.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    b = lib.tensor(np.arange(4.0).reshape(2, 2) + 10, requires_grad=True)
    c = lib.tensor([[7.0, 8.0]], requires_grad=True)
    p = R.pad_sequence([a, b, c])
    out = [p, R.pad_sequence([b, a, c], batch_first=True, padding_side="left", padding_value=-1)]
    pk = R.pack_padded_sequence(p, [3, 2, 1])
    out += [pk.data, pk.batch_sizes]
    pk2 = R.pack_padded_sequence(p.index_select(1, lib.tensor([2, 0, 1])), lib.tensor([1, 3, 2]), enforce_sorted=False)
    out += list(pk2)
    o, lens = R.pad_packed_sequence(pk2, batch_first=True, total_length=4)
    out += [o, lens, R.pack_padded_sequence(p.transpose(0, 1), [3, 2, 1], batch_first=True).data]
    out += list(R.pack_sequence([b, a], enforce_sorted=False))
    out += R.unpack_sequence(pk2) + R.unpad_sequence(p, lib.tensor([3, 2, 1]))
    total = sum((x * lib.arange(x.numel()).reshape(x.shape)).sum() for x in out if x.dtype.is_floating_point)
    total.backward()
    names = [type(x.grad_fn).__name__ for x in (p, pk.data, o)]
    return out + [a.grad, b.grad, c.grad], names + [type(pk).__name__, pk._fields, isinstance(pk, tuple)]


def test_rnn_utils_match_torch():
    (t, tn), (h, hn) = _both(_rnn_story)
    assert tn == hn
    assert len(t) == len(h)
    for i, (x, y) in enumerate(zip(t, h)):
        assert_same(x, y, f"item {i}")


def test_rnn_utils_errors_match_torch():
    for lib_t, lib_h in [(torch, hookgrad)]:
        _same_error(lambda: lib_t.nn.utils.rnn.pack_padded_sequence(lib_t.zeros(3, 3), [1, 3, 2]),
                    lambda: lib_h.nn.utils.rnn.pack_padded_sequence(lib_h.zeros(3, 3), [1, 3, 2]))
        _same_error(lambda: lib_t.nn.utils.rnn.pack_padded_sequence(lib_t.zeros(3, 3), [3, 2, 0]),
                    lambda: lib_h.nn.utils.rnn.pack_padded_sequence(lib_h.zeros(3, 3), [3, 2, 0]))
        _same_error(lambda: lib_t.nn.utils.rnn.pad_sequence([]), lambda: lib_h.nn.utils.rnn.pad_sequence([]))
        _same_error(lambda: lib_t.nn.utils.rnn.pad_sequence([lib_t.ones(2)], padding_side="middle"),
                    lambda: lib_h.nn.utils.rnn.pad_sequence([lib_h.ones(2)], padding_side="middle"))


def test_jit_deprecation_warnings_match_torch():
    import warnings

    def f(x):
        return x

    def record(lib):
        out = []
        for call in (lambda: lib.jit.script(f), lambda: lib.jit.trace(f, lib.ones(1)),
                     lambda: lib.jit.wait(lib.jit.fork(f, 1)), lambda: lib.jit.ignore(f)):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                call()
            out.append(sorted({(x.category.__name__, str(x.message)) for x in w}))
        return out
    t, h = _both(record)
    assert t == h
