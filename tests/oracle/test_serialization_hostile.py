"""Hostile checkpoints: crafted data.pkl opcodes and storage records, each loaded by torch.load (the oracle) and
hookgrad.load. Same outcome (value, or exception type and PyTorch's key text), and after every file the
library's state is unchanged: no file can poison the process. Plus the weights_only=False opt-in for whole
modules and saving over files that cannot be written."""
import collections
import io
import os
import pickle
import re
import struct
import tempfile
import warnings
import zipfile

import numpy as np
import pytest
import torch

import hookgrad
import hookgrad.serialization as S
from hookgrad import _dtype as D


# ------------------------------------------------------------------------------------- a tiny pickle assembler
def G(mod, name):
    return b"c" + mod.encode() + b"\n" + name.encode() + b"\n"


def Str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def I(n):
    if 0 <= n < 256:
        return b"K" + bytes([n])
    if -2 ** 31 <= n < 2 ** 31:
        return b"J" + struct.pack("<i", n)
    enc = pickle.encode_long(n)
    return b"\x8a" + bytes([len(enc)]) + enc


def T(*items):
    return b"(" + b"".join(items) + b"t"


def tup(*ns):
    return T(*[I(n) for n in ns])


P = b"\x80\x02"
OD = G("collections", "OrderedDict") + b")R"


def storage(key, numel, stype="FloatStorage"):
    return T(Str("storage"), G("torch", stype), Str(key), Str("cpu"), I(numel)) + b"Q"


def tensor(st, off, size, stride, rg=False):
    return G("torch._utils", "_rebuild_tensor_v2") + T(st, I(off), size, stride, b"\x88" if rg else b"\x89", OD) + b"R"


T4 = tensor(storage("0", 4), 0, tup(4), tup(1))
F4 = np.arange(4, dtype=np.float32).tobytes()


def zipit(pkl, records=None, compress=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        for k, v in ({"data/0": F4} if records is None else records).items():
            z.writestr(f"archive/{k}", v)
        z.writestr("archive/version", "3\n")
    return buf.getvalue()


def setattr_on(glob, attr, value=b"\x89"):
    """BUILD on an allow-listed global itself, with a dict state and with a (None, slotstate) state."""
    return [P + glob + b"}" + Str(attr) + value + b"sb.", P + glob + b"N}" + Str(attr) + value + b"s\x86b."]


CASES = {
    # BUILD on allow-listed globals (dtypes, classes, storage types): the process-wide poisoning of the issue
    **{f"build_{n}_{i}": c for n, g, a, v in [
        ("float32", G("torch", "float32"), "is_floating_point", b"\x89"),
        ("itemsize", G("torch", "float32"), "itemsize", I(0)),
        ("storagetype", G("torch", "FloatStorage"), "dtype", I(0)),
        ("size", G("torch", "Size"), "numel", I(0)),
        ("device", G("torch", "device"), "__eq__", I(0)),
        ("counter", G("collections", "Counter"), "most_common", I(0)),
        ("odict", G("collections", "OrderedDict"), "keys", I(0)),
        ("tensor_marker", G("torch", "Tensor"), "parameter", b"\x88"),
        ("param_marker", G("torch.nn.parameter", "Parameter"), "parameter", b"\x89"),
        ("rebuild_fn", G("torch._utils", "_rebuild_tensor_v2"), "__defaults__", I(0)),
        ("set", G("builtins", "set"), "x", I(0)),
    ] for i, c in enumerate(setattr_on(g, a, v))},
    # BUILD on instances: allowed on Tensor, Parameter, OrderedDict (_metadata) and allow-listed classes' instances
    "build_od_metadata": P + OD + b"}" + Str("_metadata") + b"}" + Str("") + b"}" + Str("version") + I(1) + b"sss" + b"b.",
    "build_od_slotstate": P + OD + b"N}" + Str("x") + I(1) + b"s\x86b.",
    "build_counter_inst": P + G("collections", "Counter") + b")R}" + Str("x") + I(1) + b"sb.",
    "build_size_inst": P + G("torch", "Size") + tup(1, 2) + b"\x85R}" + Str("x") + I(1) + b"sb.",
    "build_device_inst": P + G("torch", "device") + T(Str("cpu")) + b"R}" + Str("x") + I(1) + b"sb.",
    "build_list": P + b"]}" + Str("x") + I(1) + b"sb.",
    "build_dict": P + b"}}" + Str("x") + I(1) + b"sb.",
    "build_tensor_dict": P + T4 + b"}" + Str("foo") + I(1) + b"sb.",
    "build_tensor_set_": P + T4 + T(storage("0", 4), I(1), tup(2), tup(1)) + b"b.",
    "build_storage": P + storage("0", 4) + b"}" + Str("x") + I(1) + b"sb.",
    # SETITEM(S) / APPEND(S) on anything but a fresh dict / list
    "setitem_class": P + G("collections", "Counter") + Str("x") + I(1) + b"s.",
    "setitems_class": P + G("collections", "OrderedDict") + b"(" + Str("x") + I(1) + b"u.",
    "setitem_set": P + G("builtins", "set") + b"]\x85R" + Str("x") + I(1) + b"s.",
    "setitem_storage_type": P + G("torch", "FloatStorage") + Str("dtype") + I(1) + b"s.",
    "append_tuple": P + b")" + I(1) + b"a.",
    "append_global": P + G("torch", "Size") + I(1) + b"a.",
    "appends_set": P + G("builtins", "set") + b"]\x85R(" + I(1) + b"e.",
    "setitem_counter_ok": P + G("collections", "Counter") + b")R" + Str("x") + I(2) + b"s.",
    # calls
    "newobj_size": P + G("torch", "Size") + T(tup(1, 2)) + b"\x81.",
    "newobj_function": P + G("torch._utils", "_rebuild_tensor_v2") + b")\x81.",
    "newobj_dtype": P + G("torch", "float32") + b")\x81.",
    "reduce_dtype": P + G("torch", "float32") + b")R.",
    "reduce_codecs_rot13": P + G("_codecs", "encode") + T(Str("abc"), Str("latin1")) + b"R.",
    "fromtype_odict": P + G("torch._tensor", "_rebuild_from_type_v2") + T(G("collections", "OrderedDict"),
                                                                          G("torch", "Tensor"), b")", b"}") + b"R.",
    "fromtype_attr": P + G("torch._tensor", "_rebuild_from_type_v2") + T(G("torch._utils", "_rebuild_tensor_v2"),
                                                                         G("torch", "Tensor"), T(storage("0", 4), I(0), tup(4), tup(1), b"\x89", OD),
                                                                         b"}" + Str("foo") + I(3) + b"s") + b"R.",
    "param_nontensor": P + G("torch._utils", "_rebuild_parameter") + T(I(3), b"\x88", OD) + b"R.",
    "param_rg_str": P + G("torch._utils", "_rebuild_parameter") + T(T4, Str("yes"), OD) + b"R.",
    "param_ok": P + G("torch._utils", "_rebuild_parameter") + T(T4, b"\x88", OD) + b"R.",
    "frozenset": pickle.dumps(frozenset([1]), protocol=2),
    "newobj_param_1": P + G("torch.nn.parameter", "Parameter") + T(T4) + b"\x81.",
    "newobj_param_2": P + G("torch.nn.parameter", "Parameter") + T(T4, b"\x89") + b"\x81.",
    "newobj_param_int": P + G("torch.nn.parameter", "Parameter") + T(I(3)) + b"\x81.",
    "build_param_state3": P + G("torch.nn.parameter", "Parameter") + T(T4) + b"\x81" + T(b"\x89", b"N", OD) + b"b.",
    "build_param_state_bad": P + G("torch.nn.parameter", "Parameter") + T(T4) + b"\x81" + T(I(1), I(2)) + b"b.",
    "build_param_dict": P + G("torch.nn.parameter", "Parameter") + T(T4) + b"\x81}" + Str("_data") + I(1) + b"sb.",
    "rg_flag_int": P + G("torch._utils", "_rebuild_tensor_v2") + T(storage("0", 4), I(0), tup(4), tup(1), I(1), OD) + b"R.",
    "long_binput_get": P + b"}r\x00\x01\x00\x00" + b"j\x00\x01\x00\x00" + b"\x86.",
    "short_binstring": P + b"U\x03abc.",
    "setitems_odd": P + b"}(" + Str("a") + I(1) + Str("b") + b"u.",
    "mark_unmatched": P + b"t.",
    "tuple2_underflow": P + I(1) + b"\x86.",
    "binput_empty": P + b"q\x00.",
    "build_od_list": P + OD + b"]" + I(1) + b"ab.",
    # globals and opcodes outside the weights-only set
    "global_sys": P + G("sys", "exit") + b").",
    "global_os": P + G("os", "system") + b").",
    "global_eval": P + G("builtins", "eval") + b").",
    "global_getattr": P + G("__builtin__", "getattr") + b").",
    "global_module": P + G("hookgrad.nn.modules.linear", "Linear") + b").",
    "proto4": pickle.dumps({"a": 1}, protocol=4),
    "stack_global": P + Str("collections") + Str("OrderedDict") + b"\x93)R.",
    "inst": P + b"(icollections\nOrderedDict\n.",
    "obj": P + b"(" + G("collections", "OrderedDict") + b"o.",
    "ext1": P + b"\x82\x01.",
    "persid_text": P + b"P0\n.",
    "persid_module": P + T(Str("module"), I(1)) + b"Q.",
    "persid_int": P + I(3) + b"Q.",
    "persid_short": P + T(Str("storage"), G("torch", "FloatStorage"), Str("0")) + b"Q.",
    "persid_dtype_not_storage": P + T(Str("storage"), G("torch", "float32"), Str("0"), Str("cpu"), I(4)) + b"Q.",
    "persid_location": P + T(Str("storage"), G("torch", "FloatStorage"), Str("0"), Str("tpu"), I(4)) + b"Q.",
    # broken streams
    "empty_pickle": b"",
    "truncated": P + b"}",
    "stop_on_empty_stack": P + b".",
    "bad_memo": P + b"h\x05.",
    # storage records
    "ok": P + T4 + b".",
    "missing_record": P + tensor(storage("9", 4), 0, tup(4), tup(1)) + b".",
    "numel_larger_than_record": P + tensor(storage("0", 400), 0, tup(4), tup(1)) + b".",
    "numel_smaller_than_record": P + tensor(storage("0", 2), 0, tup(2), tup(1)) + b".",
    "numel_negative": P + tensor(storage("0", -4), 0, tup(4), tup(1)) + b".",
    "numel_huge": P + tensor(storage("0", 2 ** 62), 0, tup(4), tup(1)) + b".",
    "numel_float": P + T(Str("storage"), G("torch", "FloatStorage"), Str("0"), Str("cpu"),
                         b"G" + struct.pack(">d", 4.0)) + b"Q.",
    "same_key_two_dtypes": P + T(T4, tensor(storage("0", 2, "DoubleStorage"), 0, tup(2), tup(1))) + b".",
    "same_key_two_numels": P + T(T4, tensor(storage("0", 400), 0, tup(4), tup(1))) + b".",
    "rg_on_integers": P + tensor(storage("0", 2, "LongStorage"), 0, tup(2), tup(1), rg=True) + b".",
    # tensor geometry
    "offset_beyond": P + tensor(storage("0", 4), 10, tup(4), tup(1)) + b".",
    "offset_negative": P + tensor(storage("0", 4), -1, tup(1), tup(1)) + b".",
    "offset_huge": P + tensor(storage("0", 4), 2 ** 62, tup(1), tup(1)) + b".",
    "size_beyond": P + tensor(storage("0", 4), 0, tup(5), tup(1)) + b".",
    "size_huge_numel": P + tensor(storage("0", 4), 0, tup(2 ** 40, 2 ** 40), tup(0, 0)) + b".",
    "size_huge_then_zero": P + tensor(storage("0", 4), 0, tup(2 ** 40, 2 ** 40, 0), tup(1, 1, 1)) + b".",
    "size_negative": P + tensor(storage("0", 4), 0, tup(-1), tup(1)) + b".",
    "stride_negative": P + tensor(storage("0", 4), 3, tup(4), T(I(-1))) + b".",
    "stride_huge": P + tensor(storage("0", 4), 0, tup(2), tup(2 ** 61)) + b".",
    "size_list": P + tensor(storage("0", 4), 0, b"](" + I(4) + b"e", tup(1)) + b".",
    "size_int": P + tensor(storage("0", 4), 0, I(4), tup(1)) + b".",
    "size_str": P + tensor(storage("0", 4), 0, Str("ab"), tup(1)) + b".",
    "size_float": P + tensor(storage("0", 4), 0, T(b"G" + struct.pack(">d", 4.0)), tup(1)) + b".",
    "size_bool": P + tensor(storage("0", 4), 0, T(b"\x88"), tup(1)) + b".",
    "size_stride_lengths": P + tensor(storage("0", 4), 0, tup(2, 2), tup(1)) + b".",
    "empty_tensor_far_offset": P + tensor(storage("0", 4), 100, tup(0), tup(1)) + b".",
    "storage_not_storage": P + G("torch._utils", "_rebuild_tensor_v2") + T(I(3), I(0), tup(1), tup(1), b"\x89", b"}") + b"R.",
}


# torch sets attributes on a storage object; a hookgrad storage is a NumPy buffer, and BUILD on it is refused
STRICTER = {"build_storage"}


def _state():
    """Everything a crafted file could try to change: allow-listed objects and the classes loading touches."""
    snap = {}
    for cls in (hookgrad.Size, hookgrad.device, collections.Counter, collections.OrderedDict, hookgrad.Tensor,
                hookgrad.nn.Parameter, D.dtype, set, bytearray, complex, list, dict):
        snap[cls.__qualname__] = dict(vars(cls))
    for d in D.ALL:
        snap[d.name] = {a: getattr(d, a) for a in type(d).__slots__}
    allowed = S._allowed()
    snap["allowed"] = dict(allowed)
    snap["markers"] = {k: (getattr(v, "parameter", None), getattr(v, "name", None), getattr(v, "dtype", None),
                           getattr(v, "__dict__", None) and dict(v.__dict__), getattr(v, "__defaults__", None))
                       for k, v in allowed.items()}
    snap["safe_globals"] = S.get_safe_globals()
    return snap


def _outcome(load, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return load(io.BytesIO(data)), None
        except Exception as e:  # noqa: BLE001 - the outcome is compared
            return None, e


def _key_text(msg):
    """PyTorch's own sentence in an error: the weights-only wrapper removed, cut before object names."""
    msg = msg.split("WeightsUnpickler error: ")[-1].replace(torch.serialization.UNSAFE_MESSAGE, "")
    msg = msg.replace("Weights only load failed.", "")
    msg = msg.split("Check the documentation of torch.load")[0].strip()
    return re.split(r"but got|<class|\[enforce fail| This is an internal miniz error", msg)[0].strip()


def _same_value(a, b, path="obj"):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, hookgrad.Tensor) and str(a.dtype) == str(b.dtype), path
        assert a.tolist() == b.tolist() and a.requires_grad == b.requires_grad, path
        assert isinstance(a, torch.nn.Parameter) == isinstance(b, hookgrad.nn.Parameter), path
        assert getattr(a, "foo", None) == getattr(b, "foo", None), path
    elif isinstance(a, dict):
        assert type(a).__name__ == type(b).__name__ and list(a) == list(b), path
        assert getattr(a, "_metadata", None) == getattr(b, "_metadata", None), path
        for k in a:
            _same_value(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a).__name__ == type(b).__name__ and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same_value(x, y, f"{path}[{i}]")
    else:
        assert repr(a) == repr(b), (path, a, b)


@pytest.fixture(scope="module")
def baseline():
    return _state()


@pytest.mark.parametrize("name", list(CASES))
def test_crafted_file_behaves_as_in_torch_and_leaves_no_trace(name, baseline):
    data = zipit(CASES[name])
    want, want_err = _outcome(lambda f: torch.load(f, weights_only=True), data)
    got, got_err = _outcome(hookgrad.load, data)
    if name in STRICTER:
        assert want_err is None and isinstance(got_err, pickle.UnpicklingError), (want_err, got_err)
    elif want_err is None:
        assert got_err is None, f"torch loads it, hookgrad raised {got_err!r}"
        _same_value(want, got)
    else:
        assert got_err is not None, f"torch raised {want_err!r}, hookgrad loaded {got!r}"
        assert isinstance(got_err, type(want_err)), (want_err, got_err)
        if isinstance(want_err, (RuntimeError, pickle.UnpicklingError)) and type(want_err) in (
                RuntimeError, pickle.UnpicklingError) and not isinstance(got_err, (TypeError, AttributeError)):
            key = _key_text(str(want_err))
            if "torch." not in key and not key.startswith("set_()"):
                assert key in str(got_err), (key, str(got_err))
    assert _state() == baseline
    assert hookgrad.load(io.BytesIO(zipit(P + T4 + b"."))).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert hookgrad.float32.is_floating_point and hookgrad.float32.itemsize == 4


def test_metadata_and_counter_state_still_load():
    sd = torch.nn.Linear(2, 3).state_dict()
    c = collections.Counter({"a": 2})
    buf = io.BytesIO()
    torch.save({"sd": sd, "c": c}, buf)
    got = hookgrad.load(io.BytesIO(buf.getvalue()))
    assert got["sd"]._metadata == sd._metadata and got["c"] == c


def test_storage_size_checked_before_reading(monkeypatch):
    """A record far larger than declared (a zip bomb: 16 MB that deflate to ~16 KB) is refused before any byte
    of it is decompressed."""
    data = zipit(P + T4 + b".", {"data/0": bytes(16_000_000)}, compress=zipfile.ZIP_DEFLATED)
    assert len(data) < 100_000
    with pytest.raises(RuntimeError) as want:
        torch.load(io.BytesIO(data), weights_only=True)
    read = []
    real = S._Reader.record
    monkeypatch.setattr(S._Reader, "record", lambda self, name: read.append(name) or real(self, name))
    with pytest.raises(RuntimeError) as got:
        hookgrad.load(io.BytesIO(data))
    assert _key_text(str(want.value)) in str(got.value) and "data/0" not in read
    # the same record declared at its size loads, as in torch
    ok = zipit(P + tensor(storage("0", 4_000_000), 0, tup(3), tup(1)) + b".", {"data/0": bytes(16_000_000)},
               compress=zipfile.ZIP_DEFLATED)
    assert hookgrad.load(io.BytesIO(ok)).tolist() == torch.load(io.BytesIO(ok), weights_only=True).tolist()


def test_archive_layout():
    def archive(names):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z, warnings.catch_warnings():
            warnings.simplefilter("ignore")     # the duplicate name
            for n, v in names:
                z.writestr(n, v)
        return buf.getvalue()
    other = archive([("archive/data.pkl", P + T4 + b"."), ("other/data/0", F4), ("archive/version", "3\n")])
    dup = archive([("archive/data.pkl", P + T4 + b"."), ("archive/data/0", F4),
                   ("archive/data/0", np.ones(4, np.float32).tobytes()), ("archive/version", "3\n")])
    for data in (other, dup):
        want, want_err = _outcome(lambda f: torch.load(f, weights_only=True), data)
        got, got_err = _outcome(hookgrad.load, data)
        assert type(want_err) is type(got_err)
        if want_err is None:
            assert want.tolist() == got.tolist()
        else:
            assert _key_text(str(want_err)) in str(got_err)


def _module_file(lib):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    buf = io.BytesIO()
    lib.save(m, buf)
    return m, buf.getvalue()


def test_whole_module_needs_the_opt_in():
    _, tdata = _module_file(torch)
    _, hdata = _module_file(hookgrad)
    with pytest.raises(pickle.UnpicklingError) as want:
        torch.load(io.BytesIO(tdata))
    # a torch module names torch classes: PyTorch's text, word for word, then what to do in hookgrad
    with pytest.raises(pickle.UnpicklingError) as got:
        hookgrad.load(io.BytesIO(tdata))
    w, g = str(want.value), str(got.value)
    head = w.split(" context manager to allowlist this global if you trust this class/function.")[0]
    assert g.startswith(head) and g.endswith(w[len(head):].split("\n\nCheck")[-1])
    with pytest.raises(pickle.UnpicklingError) as got:
        hookgrad.load(io.BytesIO(hdata))
    g = str(got.value)
    assert "Weights only load failed" in g and "hookgrad.nn.modules.container.Sequential" in g
    assert "state_dict()" in g and "weights_only=False" in g and torch.serialization.UNSAFE_MESSAGE in g
    # torch classes cannot be loaded even with the opt-in (hookgrad never imports torch): a clear refusal
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.container.Sequential.*state_dict"):
        hookgrad.load(io.BytesIO(tdata), weights_only=False)


def test_whole_module_with_the_opt_in(tmp_path):
    m, data = _module_file(hookgrad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # torch.load(weights_only=False) warns nothing either
        _, tdata = _module_file(torch)
        torch.load(io.BytesIO(tdata), weights_only=False)
        m2 = hookgrad.load(io.BytesIO(data), weights_only=False)
    assert type(m2) is type(m) and m2 is not m
    sd, sd2 = m.state_dict(), m2.state_dict()
    assert list(sd) == list(sd2) and all(np.array_equal(sd[k].numpy(), sd2[k].numpy()) for k in sd)
    x = hookgrad.randn(5, 3)
    np.testing.assert_array_equal(m(x).detach().numpy(), m2(x).detach().numpy())
    m2(x).sum().backward()
    assert m2[0].weight.grad is not None and m[0].weight.grad is None
    assert isinstance(m2[0].weight, hookgrad.nn.Parameter)
    # a pickle_module without weights_only means a full load too, as in torch; with weights_only=True it refuses
    assert type(hookgrad.load(io.BytesIO(data), pickle_module=pickle)) is type(m)
    for lib, d in ((torch, tdata), (hookgrad, data)):
        with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
            lib.load(io.BytesIO(d), pickle_module=pickle, weights_only=True)
    # add_safe_globals lets weights-only load a module, as in torch
    with hookgrad.serialization.safe_globals([hookgrad.nn.Sequential, hookgrad.nn.Linear, hookgrad.nn.ReLU, set]):
        m3 = hookgrad.load(io.BytesIO(data))
    assert type(m3) is type(m) and S.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        hookgrad.load(io.BytesIO(data))


def test_pickle_load_args_warn_with_weights_only():
    data = zipit(P + T4 + b".")
    for lib in (torch, hookgrad):
        with pytest.warns(UserWarning, match=r"pickle_load_args only works if `weights_only=False`"):
            lib.load(io.BytesIO(data), weights_only=True, encoding="utf-8")


def _as_nobody(fn):
    """Run fn() in a child process without root's right to write anything; return what it printed."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # pragma: no cover - the child
        os.close(r)
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            try:
                fn()
                out = "OK"
            except Exception as e:  # noqa: BLE001
                out = f"{type(e).__name__}|{isinstance(e, OSError)}|{e}"
            os.write(w, out.encode())
        finally:
            os._exit(0)
    os.close(w)
    out = b""
    while chunk := os.read(r, 65536):
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return out.decode()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_save_over_unwritable_files():
    folder = tempfile.mkdtemp()
    os.chmod(folder, 0o777)
    try:
        ro = os.path.join(folder, "ro.pt")
        with open(ro, "wb") as fh:
            fh.write(b"original")
        os.chmod(ro, 0o444)
        cases = {"read-only file": ro, "a folder": folder, "missing folder": os.path.join(folder, "nope", "x.pt")}
        for what, path in cases.items():
            want = _as_nobody(lambda: torch.save({"a": torch.ones(1)}, path))
            got = _as_nobody(lambda: hookgrad.save({"a": hookgrad.ones(1)}, path))
            wt, _, wm = want.partition("|")
            gt, gosp, gm = got.partition("|")
            assert wt == gt == "RuntimeError", (what, want, got)
            key = wm.split("] . ")[-1].split("|", 1)[-1]
            assert key.replace(folder, "") in gm.replace(folder, ""), (what, want, got)
        assert open(ro, "rb").read() == b"original" and sorted(os.listdir(folder)) == ["ro.pt"]
        assert _as_nobody(lambda: hookgrad.save({"a": 1}, ro)).split("|")[1] == "True"   # also a PermissionError
        # a writable file in a folder that refuses new files: torch writes it in place, so does hookgrad
        rw = os.path.join(folder, "rw.pt")
        with open(rw, "wb") as fh:
            fh.write(b"x")
        os.chmod(rw, 0o666)
        os.chmod(folder, 0o555)
        assert _as_nobody(lambda: torch.save({"a": torch.ones(1)}, rw)) == "OK"
        assert _as_nobody(lambda: hookgrad.save({"a": hookgrad.arange(3.)}, rw)) == "OK"
        assert hookgrad.load(rw)["a"].tolist() == [0.0, 1.0, 2.0]
        new = os.path.join(folder, "new.pt")
        want = _as_nobody(lambda: torch.save({"a": torch.ones(1)}, new))
        got = _as_nobody(lambda: hookgrad.save({"a": hookgrad.ones(1)}, new))
        assert want.split("|")[0] == got.split("|")[0] == "RuntimeError" and "Permission denied" in got
        assert sorted(os.listdir(folder)) == ["ro.pt", "rw.pt"]
    finally:
        os.chmod(folder, 0o777)
        for n in os.listdir(folder):
            os.unlink(os.path.join(folder, n))
        os.rmdir(folder)


def test_big_endian_records_and_shared_storage():
    be = np.arange(4, dtype=">f4").tobytes()
    pkl = P + T(T4, tensor(storage("0", 4), 1, tup(2), tup(1))) + b"."
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "big")
        z.writestr("archive/data/0", be)
        z.writestr("archive/version", "3\n")
    want = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    got = hookgrad.load(io.BytesIO(buf.getvalue()))
    _same_value(want, got)
    want[0].add_(1)
    got[0].add_(1)
    assert want[1].tolist() == got[1].tolist()      # one storage, seen by both tensors
