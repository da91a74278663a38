"""Checkpoints: hookgrad.save/load in PyTorch's zip format, both directions, safety and robustness."""
import collections
import io
import os
import pickle
import re
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
import torch

import hookgrad
import hookgrad.serialization as S


def _torch_objects():
    torch.manual_seed(0)
    base = torch.arange(24.).reshape(4, 6)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    p = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam(net.parameters(), lr=0.01, amsgrad=True)
    for _ in range(2):
        net(torch.randn(5, 3)).sum().backward()
        opt.step()
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 1, 3])
    return {
        "tensor": torch.randn(3, 4),
        "dtypes": {str(d): torch.arange(6).to(d) for d in (torch.float16, torch.float32, torch.float64, torch.int8,
                                                          torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool)},
        "views": {"base": base, "row": base[2], "col": base[:, 1], "t": base.t(), "exp": torch.ones(3).expand(2, 3),
                  "scalar": base[1, 1]},
        "module": net.state_dict(),
        "optim": opt.state_dict(),
        "sched": sched.state_dict(),
        "nested": {"a": [1, 2.5, "x", None, True, (1, (2,))], "b": {"c": torch.ones(2, requires_grad=True)},
                   "size": torch.Size([2, 3]), "dt": torch.float64, "set": {1, 2}, "bytes": b"ab\x00", "p": p, "p2": p,
                   "empty": torch.zeros(0, 3), "dev": torch.device("cpu"), "inf": float("inf"), "cplx": 1 + 2j},
    }


def _assert_equal(a, b, path="obj"):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), path
        assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad, path
        assert torch.equal(a.detach(), b.detach()), path
    elif isinstance(a, dict):
        assert type(a) is type(b) and list(a) == list(b), (path, list(a), list(b))
        assert getattr(a, "_metadata", None) == getattr(b, "_metadata", None), path
        for k in a:
            _assert_equal(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_equal(x, y, f"{path}[{i}]")
    else:
        assert type(a) is type(b) and a == b, (path, a, b)


_NO_TORCH = textwrap.dedent("""
    import sys, json
    sys.modules["torch"] = None            # any `import torch` now raises ImportError
    import hookgrad
    out = {}
    for src, dst in zip(sys.argv[1::2], sys.argv[2::2]):
        obj = hookgrad.load(src)
        hookgrad.save(obj, dst)
        if src.endswith("views.pt"):
            obj["base"][2, 1] = -1.0       # views share the loaded buffer
            out["views"] = [float(obj["row"][1]), float(obj["col"][2]), float(obj["t"][1, 2])]
    assert "torch" not in sys.modules or sys.modules["torch"] is None
    print(json.dumps(out))
""")


def test_torch_files_load_without_torch_and_round_trip(tmp_path):
    objs = _torch_objects()
    args = []
    for name, obj in objs.items():
        torch.save(obj, tmp_path / f"{name}.pt")
        args += [str(tmp_path / f"{name}.pt"), str(tmp_path / f"{name}.hg.pt")]
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(hookgrad.__file__), ".."))
    r = subprocess.run([sys.executable, "-c", _NO_TORCH, *args], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith('{"views": [-1.0, -1.0, -1.0]}')
    for name, obj in objs.items():
        back = torch.load(tmp_path / f"{name}.hg.pt", weights_only=True)
        _assert_equal(obj, back, name)
    back = torch.load(tmp_path / "nested.hg.pt", weights_only=True)
    assert back["p"] is back["p2"]


def test_loaded_values_types_and_sharing(tmp_path):
    objs = _torch_objects()
    torch.save(objs, tmp_path / "all.pt")
    h = hookgrad.load(tmp_path / "all.pt", map_location="cpu", weights_only=True)
    assert type(h["module"]) is collections.OrderedDict and h["module"]._metadata == objs["module"]._metadata
    for k, v in objs["dtypes"].items():
        assert str(h["dtypes"][k].dtype) == k and h["dtypes"][k].tolist() == v.tolist()
    n = h["nested"]
    assert isinstance(n["p"], hookgrad.nn.Parameter) and n["p"] is n["p2"] and n["p"].requires_grad
    assert n["b"]["c"].requires_grad and n["b"]["c"].is_leaf
    assert n["size"] == (2, 3) and type(n["size"]) is hookgrad.Size and n["dt"] is hookgrad.float64
    assert n["set"] == {1, 2} and n["bytes"] == b"ab\x00" and n["empty"].shape == (0, 3)
    assert h["optim"]["state"][0]["step"].dtype == hookgrad.float32
    assert isinstance(h["sched"]["milestones"], collections.Counter)
    v = h["views"]
    np.testing.assert_array_equal(v["t"].numpy(), objs["views"]["t"].numpy())
    with pytest.raises(RuntimeError):
        v["exp"].add_(1)     # an expanded tensor refuses in-place writes, as in torch
    v["base"].add_(1)
    assert v["row"].tolist() == (objs["views"]["row"] + 1).tolist()


def test_hookgrad_optimizer_checkpoint_resumes_in_torch(tmp_path):
    rng = np.random.default_rng(0)
    w0, grads = rng.standard_normal((3, 2)), [rng.standard_normal((3, 2)) for _ in range(4)]
    hp = hookgrad.nn.Parameter(hookgrad.tensor(w0))
    hopt = hookgrad.optim.SGD([hp], lr=0.1, momentum=0.9)
    for g in grads[:2]:
        hp.grad = hookgrad.tensor(g)
        hopt.step()
    hookgrad.save({"w": hp, "opt": hopt.state_dict()}, tmp_path / "ck.pt")
    ck = torch.load(tmp_path / "ck.pt", weights_only=True)
    tp = ck["w"]
    assert isinstance(tp, torch.nn.Parameter)
    topt = torch.optim.SGD([tp], lr=1.0, momentum=0.9)
    topt.load_state_dict(ck["opt"])
    for g in grads[2:]:
        hp.grad, tp.grad = hookgrad.tensor(g), torch.tensor(g)
        hopt.step()
        topt.step()
    np.testing.assert_allclose(hp.detach().numpy(), tp.detach().numpy(), rtol=1e-12)


def test_hookgrad_views_and_noncontiguous_load_in_torch():
    base = hookgrad.arange(12.).reshape(3, 4)
    obj = {"base": base, "row": base[1], "t": base.t(), "neg": hookgrad.tensor(np.arange(5.)[::-1].copy())[1:],
           "flip": hookgrad.Tensor._make(np.arange(4.)[::-1]), "i": hookgrad.arange(3), "b": hookgrad.tensor([True])}
    buf = io.BytesIO()
    hookgrad.save(obj, buf)
    t = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    for k, v in obj.items():
        assert t[k].tolist() == v.tolist() and str(t[k].dtype) == str(v.dtype), k
    t["base"][1, 2] = 100
    assert t["row"][2] == 100 and t["t"][2, 1] == 100      # saved as views of one storage
    assert hookgrad.load(io.BytesIO(buf.getvalue()))["row"].tolist() == obj["row"].tolist()


def _zip_with(pkl, extra=None, name="archive"):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(f"{name}/data.pkl", pkl)
        for k, v in (extra or {}).items():
            z.writestr(f"{name}/{k}", v)
        z.writestr(f"{name}/version", "3\n")
    return buf.getvalue()


@pytest.mark.parametrize("glob", ["os\nsystem", "posix\nsystem", "builtins\neval", "subprocess\ncall", "torch\nload"])
def test_malicious_pickle_is_refused(tmp_path, glob):
    marker = tmp_path / "pwned"
    pkl = b"c" + glob.encode() + b"\n(V" + f"touch {marker}".encode() + b"\ntR."
    f = tmp_path / "evil.pt"
    f.write_bytes(_zip_with(pkl))
    with pytest.raises(pickle.UnpicklingError) as want:
        torch.load(f)
    with pytest.raises(pickle.UnpicklingError) as got:
        hookgrad.load(f)
    key = re.search(r"GLOBAL \S+ (was not an allowed global|whose module \S+ is blocked)", str(want.value)).group(0)
    assert key in str(got.value)
    assert not marker.exists()


def test_reduce_of_plain_object_refused():
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo hi",))
    pkl = pickle.dumps({"x": Evil()}, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="Trying to load unsupported GLOBAL (posix|os).system whose module "
                       "(posix|os) is blocked"):
        torch.load(io.BytesIO(_zip_with(pkl)))
    with pytest.raises(pickle.UnpicklingError, match="Trying to load unsupported GLOBAL (posix|os).system whose module "
                       "(posix|os) is blocked"):
        hookgrad.load(io.BytesIO(_zip_with(pkl)))


def test_corrupt_and_truncated_files(tmp_path):
    f = tmp_path / "ok.pt"
    torch.save({"w": torch.arange(100.)}, f)
    raw = f.read_bytes()
    pkl, storage = zipfile.ZipFile(f).read("ok/data.pkl"), zipfile.ZipFile(f).read("ok/data/0")
    cases = {
        "truncated": (raw[: len(raw) // 2], RuntimeError, "failed reading zip archive"),
        "empty": (b"", EOFError, "empty"),                                   # torch's types (issue 26)
        "garbage": (b"hello world", KeyError, "not a zip archive|legacy-format"),
        "not_legacy": (pickle.dumps({"a": 1}, protocol=2), RuntimeError, "Invalid magic number"),
        "pkl_cut": (_zip_with(pkl[:-10], {"data/0": storage}), pickle.UnpicklingError, "truncated|corrupt"),
        "no_pkl": (_zip_with(b"N.").replace(b"archive/data.pkl", b"archive/data.pkX"), RuntimeError,
                   "data.pkl: file not found"),
        "no_storage": (_zip_with(pkl), RuntimeError, "data/0: file not found"),
        "short_storage": (_zip_with(pkl, {"data/0": storage[:12]}), RuntimeError, "truncated"),
    }
    off = raw.index(np.arange(100.).astype(np.float32).tobytes())   # flip one byte of the storage: bad CRC
    cases["bad_crc"] = (raw[:off + 5] + bytes([raw[off + 5] ^ 0xFF]) + raw[off + 6:], RuntimeError, "corrupted")
    for name, (data, exc, msg) in cases.items():
        p = tmp_path / f"{name}.pt"
        p.write_bytes(data)
        with pytest.raises(exc, match=msg):
            hookgrad.load(p)


def test_save_is_atomic(tmp_path, monkeypatch):
    f = tmp_path / "ck.pt"
    hookgrad.save({"v": hookgrad.tensor([1.0, 2.0])}, f)
    calls = []
    real = S._record

    def failing(zf, name, data):
        calls.append(name)
        if "data/" in name:
            raise OSError("disk full")
        real(zf, name, data)
    monkeypatch.setattr(S, "_record", failing)
    with pytest.raises(OSError, match="disk full"):
        hookgrad.save({"v": hookgrad.tensor([9.0, 9.0])}, f)
    monkeypatch.setattr(S, "_record", real)
    with pytest.raises(Exception):
        hookgrad.save({"f": lambda: 0}, f)          # a pickling failure, too
    assert calls and hookgrad.load(f)["v"].tolist() == [1.0, 2.0]
    assert os.listdir(tmp_path) == ["ck.pt"]        # no temp file left behind
    hookgrad.save({"v": hookgrad.tensor([3.0])}, str(f))
    assert torch.load(f, weights_only=True)["v"].tolist() == [3.0]


def test_map_location_and_hooks_warning():
    buf = io.BytesIO()
    t = hookgrad.ones(2, requires_grad=True)
    t.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="will not be serialized"):
        hookgrad.save(t, buf)
    for ml in ("cpu", hookgrad.device("cpu"), {"cuda:0": "cpu"}, lambda s, loc: s):
        assert hookgrad.load(io.BytesIO(buf.getvalue()), map_location=ml).requires_grad
    with pytest.raises(RuntimeError, match="CPU only"):
        hookgrad.load(io.BytesIO(buf.getvalue()), map_location="cuda")


def test_safetensors_round_trip(tmp_path):
    pytest.importorskip("safetensors")
    from safetensors.torch import load_file, save_file
    d = {"w": hookgrad.randn(3, 4), "i": hookgrad.arange(5), "h": hookgrad.ones(2, dtype=hookgrad.float16)}
    hookgrad.serialization.save_safetensors(d, tmp_path / "a.safetensors", metadata={"k": "v"})
    t = load_file(tmp_path / "a.safetensors")
    for k in d:
        assert t[k].tolist() == d[k].tolist() and str(t[k].dtype) == str(d[k].dtype)
    save_file({"x": torch.arange(6.).reshape(2, 3)}, tmp_path / "b.safetensors")
    h = hookgrad.load(tmp_path / "b.safetensors")
    assert h["x"].tolist() == [[0, 1, 2], [3, 4, 5]]
    h["x"].add_(1)   # writable


def test_module_state_dict_between_libraries():
    m = hookgrad.nn.Linear(3, 2)
    buf = io.BytesIO()
    hookgrad.save(m.state_dict(), buf)
    sd = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    assert type(sd) is collections.OrderedDict and sd._metadata == m.state_dict()._metadata
    t = torch.nn.Linear(3, 2)
    t.load_state_dict(sd)
    buf2 = io.BytesIO()
    torch.save(t.state_dict(), buf2)
    m2 = hookgrad.nn.Linear(3, 2)
    m2.load_state_dict(hookgrad.load(io.BytesIO(buf2.getvalue())))
    np.testing.assert_array_equal(m2.weight.detach().numpy(), m.weight.detach().numpy())
