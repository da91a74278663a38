"""Issue 26: the last corners where hookgrad raised another exception type than PyTorch (or let an internal one
through). Every case runs under torch and hookgrad; the types must agree (hookgrad's error is an instance of
torch's type, with its name), and the message where it matters.

- custom Functions: ``ctx.save_for_backward`` of a non-tensor;
- optimizer steps after a gradient of the wrong shape (``p.grad.data = ...``) or ``load_state_dict`` of state of
  the wrong shape, for every optimizer, foreach or not, on the compiled (fused kernel) and the NumPy path; a
  gradient that broadcasts to the parameter steps as in PyTorch;
- layer_norm / group_norm with a weight of the wrong shape (their compiled kernels index it by position);
- checkpoint files: empty, random bytes, random bytes after a zip header, an unknown byte order, bfloat16 storages,
  the legacy (pre-1.6) format, local objects, unwritable places, a full disk.
"""
import errno
import io
import os
import pickle
import pathlib
import random
import shutil
import stat
import tempfile
import threading
import zipfile

import numpy as np
import pytest
import torch

import hookgrad
import hookgrad.serialization as S
from hookgrad import _jit
from test_serialization_hostile import _as_nobody


def outcome(fn):
    """(torch's exception, hookgrad's exception) of fn(lib), None where it ran."""
    res = []
    for lib in (torch, hookgrad):
        try:
            fn(lib)
        except Exception as e:  # noqa: BLE001 - the exception is what we compare
            res.append(e)
        else:
            res.append(None)
    return res


def same_type(te, he):
    assert te is not None and he is not None, (te, he)
    assert type(he).__name__ == type(te).__name__ and isinstance(he, type(te)), \
        f"torch {type(te).__name__}: {te} / hookgrad {type(he).__mro__}: {he}"


def same_error(fn, prefix=True):
    """Same type; with ``prefix``, hookgrad's message starts with torch's first line."""
    te, he = outcome(fn)
    same_type(te, he)
    if prefix:
        tmsg = str(te).split("\n")[0]
        assert str(he).startswith(tmsg), f"\ntorch:    {tmsg}\nhookgrad: {he}"
    return te, he


# ============================================================================== custom Functions
@pytest.mark.parametrize("bad", [3, [1], "x"])
@pytest.mark.parametrize("rg", [True, False])
def test_save_for_backward_of_a_non_tensor(bad, rg):
    def run(L):
        class F(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None, bad)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g
        return F.apply(L.ones(3, requires_grad=rg))
    if rg:
        te, he = same_error(run)
        assert str(he) == str(te)       # "... argument 2 is of type int" (no ambiguous Tensor truth value)
    else:                               # PyTorch checks only when it records the graph
        assert outcome(run) == [None, None]


# ============================================================================== optimizers
OPTS = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)), ("SGD", dict(lr=0.1, weight_decay=0.1)),
        ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)), ("Adam", {}), ("Adam", dict(weight_decay=0.1)),
        ("Adam", dict(amsgrad=True)), ("AdamW", {}), ("RMSprop", dict(momentum=0.5, centered=True)),
        ("Adagrad", {}), ("Adamax", {}), ("Adadelta", {}), ("Adafactor", {}), ("NAdam", {}), ("RAdam", {}),
        ("Rprop", {}), ("ASGD", {}), ("LBFGS", {})]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in OPTS]


def _opt(L, name, kw, foreach, p):
    kw = dict(kw)
    if name != "LBFGS":
        kw["foreach"] = foreach
    return getattr(L.optim, name)([p], **kw)


def _step(L, name, opt):
    return opt.step((lambda: L.tensor(1.0)) if name == "LBFGS" else None)


@pytest.mark.parametrize("foreach,jit", [(None, True), (None, False), (True, True)],
                         ids=["compiled", "numpy", "foreach"])
@pytest.mark.parametrize("gshape", [(4,), (2, 5), (5, 1)], ids=str)
@pytest.mark.parametrize("name,kw", OPTS, ids=IDS)
def test_step_after_a_gradient_of_the_wrong_shape(name, kw, gshape, foreach, jit):
    seen = {}

    def run(L):
        p = L.nn.Parameter(L.linspace(1, 2, 5))
        p.grad = L.ones(5)
        p.grad.data = L.ones(gshape)
        opt = _opt(L, name, kw, foreach, p)
        seen[L] = p
        _step(L, name, opt)
    with _jit.disabled() if not jit else _nullcontext():
        if name == "LBFGS" and gshape != (4,):       # a gradient of the parameter's numel: both step
            assert outcome(run) == [None, None]
            return
        te, he = same_error(run, prefix=foreach is None)
    assert "NumPy" not in str(he)
    # nothing was stepped with a gradient read past its end (the fused kernels index by flat position)
    assert np.array_equal(seen[hookgrad].detach().numpy(), np.linspace(1, 2, 5, dtype=np.float32))


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("name,kw", [o for o in OPTS if o[0] not in ("Rprop", "LBFGS")],
                         ids=[i for i, o in zip(IDS, OPTS) if o[0] not in ("Rprop", "LBFGS")])
def test_a_gradient_that_broadcasts_steps_as_in_torch(name, kw, jit):
    out = []
    for L in (torch, hookgrad):
        p = L.nn.Parameter(L.linspace(1, 2, 5))
        p.grad = L.ones(5)
        p.grad.data = L.full((1,), 0.5)
        opt = _opt(L, name, kw, None, p)
        with _jit.disabled() if not jit else _nullcontext():
            for _ in range(3):
                _step(L, name, opt)
        out.append(p.detach().numpy().copy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-5, atol=1e-6)


def test_rprop_refuses_a_broadcast_gradient_as_torch():
    def run(L):
        p = L.nn.Parameter(L.ones(5))
        p.grad = L.ones(5)
        p.grad.data = L.ones(1)
        L.optim.Rprop([p]).step()
    same_error(run)


@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("bad", [(4,), (1,)], ids=str)
@pytest.mark.parametrize("name,kw", [o for o in OPTS if o[0] != "LBFGS" and o != OPTS[0] and o != OPTS[2]],
                         ids=[i for i, o in zip(IDS, OPTS) if o[0] != "LBFGS" and o != OPTS[0] and o != OPTS[2]])
def test_step_after_loading_state_of_the_wrong_shape(name, kw, bad, jit):
    def run(L):
        p = L.nn.Parameter(L.ones(5))
        p.grad = L.ones(5)
        o = _opt(L, name, kw, None, p)
        o.step()
        sd = o.state_dict()
        for k, v in sd["state"][0].items():
            if isinstance(v, L.Tensor) and v.dim() > 0:
                sd["state"][0][k] = L.ones(bad)
        q = L.nn.Parameter(L.ones(5))
        q.grad = L.ones(5)
        o2 = _opt(L, name, kw, None, q)
        o2.load_state_dict(sd)
        o2.step()
    with _jit.disabled() if not jit else _nullcontext():
        te, he = same_error(run)
    assert "NumPy" not in str(he)


def test_assigning_a_gradient_of_the_wrong_size():
    def run(L):
        L.nn.Parameter(L.ones(5)).grad = L.ones(4)
    te, he = same_error(run)
    assert str(he) == str(te)


# ============================================================================== norms (compiled kernels)
@pytest.mark.parametrize("case", [
    lambda L, x: L.nn.functional.layer_norm(x, (5,), L.ones(1), L.zeros(5)),
    lambda L, x: L.nn.functional.layer_norm(x, (5,), L.ones(1, 5)),
    lambda L, x: L.nn.functional.layer_norm(x, (5,), L.ones(5), L.zeros(4)),
    lambda L, x: L.nn.functional.layer_norm(x, (3, 5), L.ones(15)),
    lambda L, x: L.nn.functional.group_norm(x, 3, L.ones(1)),
    lambda L, x: L.nn.functional.group_norm(x, 3, L.ones(3, 1)),
])
@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
def test_norm_weights_of_the_wrong_shape(case, jit):
    x = np.random.default_rng(0).random((4, 3, 5)).astype(np.float32)
    with _jit.disabled() if not jit else _nullcontext():
        te, he = same_error(lambda L: case(L, L.tensor(x)))
    assert str(he) == str(te)


# ============================================================================== checkpoints: loading
RND = bytes(random.Random(26).getrandbits(8) for _ in range(300))


def _load(data, path=None, **kw):
    def run(L):
        if path is None:
            return L.load(io.BytesIO(data), **kw)
        with open(path, "wb") as fh:
            fh.write(data)
        return L.load(path, **kw)
    return run


@pytest.mark.parametrize("as_path", [True, False], ids=["path", "fileobj"])
def test_empty_file(tmp_path, as_path):
    te, he = same_error(_load(b"", tmp_path / "e.pt" if as_path else None), prefix=False)
    assert isinstance(he, EOFError) and "empty" in str(he)
    if as_path:
        assert "e.pt" in str(he)


@pytest.mark.parametrize("as_path", [True, False], ids=["path", "fileobj"])
def test_random_bytes(tmp_path, as_path):
    path = tmp_path / "r.pt" if as_path else None
    data = b"\x07" + RND
    te, he = same_error(_load(data, path))
    assert isinstance(he, pickle.UnpicklingError) and str(he).startswith("Weights only load failed")
    assert repr(data[:4]) in str(he) and "not a zip archive" in str(he)       # hookgrad's: what the file starts with
    if as_path:
        assert "r.pt" in str(he)
    same_error(_load(data, path, weights_only=False))                         # pickle's "invalid load key"
    same_error(_load(b"hello world", path), prefix=False)                     # a KeyError, from BINGET


@pytest.mark.parametrize("n", [10, 100, 1000, 5000, 9000, 30000, 80000])
@pytest.mark.parametrize("as_path", [True, False], ids=["path", "fileobj"])
def test_random_bytes_after_a_zip_header(tmp_path, n, as_path):
    """PyTorch's reader (miniz) searches backwards for the end record and, between 4 KiB and ~68 KiB, seeks before
    the start of the file: OSError from a file, ValueError from BytesIO; RuntimeError otherwise."""
    data = b"PK\x03\x04" + random.Random(n).randbytes(n)
    te, he = same_error(_load(data, tmp_path / "z.pt" if as_path else None), prefix=False)
    assert ("z.pt" if as_path else "<file object>") in str(he)
    if 4096 < n < 60000:
        assert isinstance(he, OSError if as_path else ValueError) and not isinstance(he, RuntimeError)


def _zip(byteorder=None, pkl=b"\x80\x02}q\x00.", records=()):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        if byteorder is not None:
            z.writestr("archive/byteorder", byteorder)
        for k, v in records:
            z.writestr(f"archive/{k}", v)
        z.writestr("archive/version", "3\n")
    return buf.getvalue()


@pytest.mark.parametrize("weights_only", [True, False])
def test_unknown_byte_order(weights_only):
    te, he = same_error(_load(_zip("middle"), weights_only=weights_only))
    assert str(te) == "Unknown endianness type: middle" and isinstance(he, ValueError)


@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_bfloat16_storage_loads_and_numpy_refuses_as_in_torch(byteorder):
    b = io.BytesIO()
    torch.save({"x": torch.tensor([0.5, -2.0, 3.0, 1e30]).to(torch.bfloat16), "y": torch.arange(3)}, b)
    data = b.getvalue()
    if byteorder == "big":          # the same checkpoint written by a big-endian machine
        z = zipfile.ZipFile(io.BytesIO(data))
        recs = {i.filename.split("/", 1)[1]: z.read(i) for i in z.infolist()}
        recs["byteorder"] = b"big"
        del recs["version"]         # (_zip writes it)
        for k, dt in (("data/0", ">u2"), ("data/1", ">i8")):
            recs[k] = np.frombuffer(recs[k], dt[0].replace(">", "<") + dt[1:]).astype(dt).tobytes()
        data = _zip(None, recs.pop("data.pkl"), recs.items())
    t, h = torch.load(io.BytesIO(data)), hookgrad.load(io.BytesIO(data))
    assert h["x"].dtype is hookgrad.bfloat16 and h["x"].float().tolist() == t["x"].float().tolist()
    assert h["y"].tolist() == [0, 1, 2]
    te, he = outcome(lambda L: (t if L is torch else h)["x"].numpy())
    same_type(te, he)
    assert str(he) == str(te) == "Got unsupported ScalarType BFloat16"
    b = io.BytesIO()                # and back: hookgrad's bfloat16 checkpoint loads in torch
    hookgrad.save(h, b)
    assert torch.load(io.BytesIO(b.getvalue()))["x"].float().tolist() == t["x"].float().tolist()


class Thing:                        # a module-level class: the weights-only load refuses it
    def __init__(self):
        self.a = 1


def _legacy(obj):
    b = io.BytesIO()
    torch.save(obj, b, _use_new_zipfile_serialization=False)
    return b.getvalue()


@pytest.mark.parametrize("weights_only", [True, False])
def test_legacy_format_loads(weights_only):
    base = torch.arange(12.).reshape(3, 4)
    obj = {"w": base, "v": base[1:], "t": base.t(), "i": torch.tensor([1, 2], dtype=torch.int32),
           "p": torch.nn.Parameter(torch.ones(2)), "n": [1, 2.5, "s"]}
    h = hookgrad.load(io.BytesIO(_legacy(obj)), weights_only=weights_only)
    for k in ("w", "v", "t", "i", "p"):
        assert h[k].tolist() == obj[k].tolist() and str(h[k].dtype) == str(obj[k].dtype), k
    assert type(h["p"]).__name__ == "Parameter" and h["n"] == [1, 2.5, "s"]
    h["w"][0, 0] = 7.0                                  # views share the storage, as in torch
    assert h["t"][0, 0].item() == 7.0


def test_legacy_format_errors_as_in_torch():
    te, he = same_error(_load(_legacy({"x": Thing()})))                        # weights-only refuses the class
    assert isinstance(he, pickle.UnpicklingError) and "Unsupported global" in str(he)
    te, he = same_error(_load(pickle.dumps({"a": 1}, protocol=2)))            # not the legacy magic number
    assert str(te) == "Invalid magic number; corrupt file?"
    data = _legacy({"x": torch.arange(4.)})
    same_error(_load(data[:-6]), prefix=False)                                 # a truncated storage


# ============================================================================== checkpoints: saving
def _local_objects():
    def f():
        return 0

    class C:
        pass
    return {"lambda": (lambda: 0), "function": f, "instance": C(), "class": C}


@pytest.mark.parametrize("what", ["lambda", "function", "instance", "class"])
@pytest.mark.parametrize("as_path", [True, False], ids=["path", "fileobj"])
def test_saving_a_local_object(tmp_path, what, as_path):
    obj = {"x": _local_objects()[what]}
    te, he = same_error(lambda L: L.save(obj, tmp_path / "l.pt" if as_path else io.BytesIO()))
    assert str(te).startswith("Can't pickle local object") and isinstance(he, AttributeError)


def test_saving_where_root_cannot_write():
    """/sys refuses even root (EACCES), /proc has no such file (ENOENT): torch's RuntimeError, and hookgrad's error
    is also the OSError that says which."""
    for path, kind in (("/sys/hookgrad_26.pt", PermissionError), ("/proc/hookgrad_26.pt", FileNotFoundError)):
        te, he = same_error(lambda L: L.save({"a": L.ones(1)}, path), prefix=False)
        assert isinstance(he, RuntimeError) and isinstance(he, kind) and he.filename == path
        assert "open file failed with strerror" in str(te) and "open file failed with strerror" in str(he)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_saving_into_a_read_only_folder_or_file():
    top = tempfile.mkdtemp()            # (pytest's tmp_path is root's only: nobody could not reach it)
    os.chmod(top, 0o777)
    folder = pathlib.Path(top) / "ro"
    folder.mkdir()
    ro = folder / "ro.pt"
    ro.write_bytes(b"original")
    os.chmod(ro, 0o444)
    os.chmod(folder, 0o555)
    try:
        for path in (str(ro), str(folder / "new.pt")):
            want = _as_nobody(lambda: torch.save({"a": torch.ones(1)}, path))
            got = _as_nobody(lambda: hookgrad.save({"a": hookgrad.ones(1)}, path))
            assert want.split("|")[0] == got.split("|")[0] == "RuntimeError", (want, got)
            assert got.split("|")[1] == "True" and "Permission denied" in got        # also a PermissionError
        assert ro.read_bytes() == b"original" and sorted(os.listdir(folder)) == ["ro.pt"]
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(top)


def test_saving_when_the_disk_fills(tmp_path, monkeypatch):
    """torch writing /dev/full (ENOSPC) raises RuntimeError; hookgrad with its writer failing the same way midway
    raises a RuntimeError that is also the OSError (errno ENOSPC), and leaves the previous file as it was."""
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    with pytest.raises(RuntimeError):
        torch.save({"a": torch.ones(1000)}, "/dev/full")
    f = tmp_path / "ck.pt"
    hookgrad.save({"v": hookgrad.tensor([1.0])}, f)
    real = S._record

    def failing(zf, name, data):
        if "data/" in name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(zf, name, data)
    monkeypatch.setattr(S, "_record", failing)
    with pytest.raises(RuntimeError) as info:
        hookgrad.save({"v": hookgrad.ones(1000)}, f)
    e = info.value
    assert isinstance(e, OSError) and e.errno == errno.ENOSPC and "ck.pt" in str(e) and "left as it was" in str(e)
    monkeypatch.setattr(S, "_record", real)
    assert hookgrad.load(f)["v"].tolist() == [1.0] and os.listdir(tmp_path) == ["ck.pt"]


@pytest.mark.parametrize("room", [100, 0])
def test_saving_to_a_file_object_that_fills(room):
    """Full midway: torch's RuntimeError; full at once, torch lets the OSError through: hookgrad's error is both."""
    class Full(io.RawIOBase):
        def __init__(self):
            self.n = 0

        def writable(self):
            return True

        def write(self, b):
            self.n += len(b)
            if self.n > room:
                raise OSError(errno.ENOSPC, "No space left on device")
            return len(b)
    te, he = outcome(lambda L: L.save({"a": L.ones(1000)}, Full()))
    assert type(te) is (RuntimeError if room else OSError) and isinstance(he, type(te))
    assert isinstance(he, RuntimeError) and isinstance(he, OSError) and he.errno == errno.ENOSPC


def test_saving_to_a_pipe_or_a_link_writes_through_it(tmp_path):
    """A path that is not a regular file is written in place (as PyTorch opens it), never replaced by a file: the
    atomic rename is for regular files only, and a symbolic link keeps pointing at its target."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    hookgrad.save({"a": hookgrad.arange(3.)}, fifo)
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the pipe was replaced by a file"
    assert torch.load(io.BytesIO(got[0]))["a"].tolist() == [0.0, 1.0, 2.0]
    target = tmp_path / "target.pt"
    link = tmp_path / "link.pt"
    target.write_bytes(b"old")
    os.symlink(target, link)
    for L in (torch, hookgrad):
        L.save({"a": L.ones(2)}, link)
        assert os.path.islink(link) and torch.load(target)["a"].tolist() == [1.0, 1.0]
        target.write_bytes(b"old")


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "Adadelta", "NAdam", "RAdam",
                                  "Rprop", "ASGD", "Adafactor"])
def test_state_with_python_numbers_loads_as_in_torch(name):
    """Checkpoints of PyTorch < 1.12 keep ``step`` (and ASGD's eta/mu, NAdam's mu_product) as Python numbers:
    PyTorch makes them 0-dim tensors when the state is loaded, and so does hookgrad (no internal error)."""
    out = []
    for L in (torch, hookgrad):
        p = L.nn.Parameter(L.linspace(1, 2, 5))
        p.grad = L.full((5,), 0.5)
        o = getattr(L.optim, name)([p])
        o.step()
        sd = o.state_dict()
        for k in ("step", "eta", "mu", "mu_product"):
            if k in sd["state"][0]:
                sd["state"][0][k] = sd["state"][0][k].item() if k != "step" else int(sd["state"][0][k].item())
        o2 = getattr(L.optim, name)([p])
        o2.load_state_dict(sd)
        o2.step()
        out.append((p.detach().numpy().copy(), isinstance(o2.state[p]["step"], L.Tensor)))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-6)
    assert out[0][1] and out[1][1]


@pytest.mark.parametrize("gdt", ["float64", "float16", "int64"])
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", {}), ("AdamW", {}),
                                     ("RMSprop", dict(centered=True)), ("Adagrad", {}), ("Adamax", {}),
                                     ("Adadelta", {}), ("NAdam", {}), ("RAdam", {}), ("ASGD", {}), ("Adafactor", {})])
def test_a_gradient_of_another_dtype(name, kw, gdt):
    """A gradient assigned through ``.data`` with another dtype: PyTorch's lerp_ refuses it (the Adam family),
    the other algorithms step (in the parameter's dtype)."""
    seen = {}

    def run(L):
        p = L.nn.Parameter(L.linspace(1, 2, 5))
        p.grad = L.ones(5)
        p.grad.data = L.full((5,), 2 if gdt == "int64" else 0.5, dtype=getattr(L, gdt))
        seen[L] = p
        getattr(L.optim, name)([p], **kw).step()
    te, he = outcome(run)
    if te is None:
        assert he is None, he
        np.testing.assert_allclose(seen[hookgrad].detach().numpy(), seen[torch].detach().numpy(), rtol=1e-5)
    else:
        same_error(run)
