"""tools.hooknames: canonical (TransformerLens) hook names on native GPT-2-style, BERT and ViT layouts, on
hookgrad and torch models of the same weights: every name resolves, the values obey the residual-stream
identities, add_hook replaces a value, unresolved names come with a reason."""
import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.tools.hooknames import add_hook, detect_layout, hook_names, resolve, unresolved

torch.set_num_threads(1)
LIBS = pytest.mark.parametrize("lib", [torch, hookgrad], ids=["torch", "hookgrad"])
D, H, L = 8, 2, 3


def gpt(lib):
    """GPT-2's module tree (Hugging Face names), small."""
    nn = lib.nn

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj, self.attn_dropout = nn.Linear(D, 3 * D), nn.Linear(D, D), nn.Dropout(0.0)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = [t.reshape(b, s, H, D // H).transpose(1, 2) for t in self.c_attn(x).split(D, -1)]
            scores = q @ k.transpose(2, 3) / (D // H) ** 0.5
            scores = scores.masked_fill(lib.ones(s, s).triu(1).bool(), float("-inf"))
            p = self.attn_dropout(scores.softmax(-1))
            return self.c_proj((p @ v).transpose(1, 2).reshape(b, s, D)), p

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc, self.act, self.c_proj = nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D)

        def forward(self, x):
            return self.c_proj(self.act(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2, self.mlp = nn.LayerNorm(D), Attn(), nn.LayerNorm(D), MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))[0]
            return (x + self.mlp(self.ln_2(x)),)

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(13, D), nn.Embedding(16, D)
            self.h = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(D)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(lib.arange(idx.shape[1]))
            for blk in self.h:
                x = blk(x)[0]
            return self.ln_f(x)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer, self.lm_head = Body(), nn.Linear(D, 13)

        def forward(self, idx):
            return self.lm_head(self.transformer(idx))
    return LM()


def pair():
    torch.manual_seed(0)
    t, h = gpt(torch), gpt(hookgrad)
    h.load_state_dict({k: hookgrad.tensor(v.detach().numpy().copy()) for k, v in t.state_dict().items()})
    return t, h


IDX = np.random.RandomState(0).randint(0, 13, (2, 5))


def record(lib, model, names):
    acts, hs = {}, []
    for n in names:
        hs.append(add_hook(model, n, lambda a, hook: acts.__setitem__(hook.name, a.detach().numpy().copy())))
    out = model(lib.tensor(IDX)).detach().numpy()
    for h in hs:
        h.remove()
    return acts, out


def test_gpt2_names_resolve_and_agree_across_libraries():
    t, h = pair()
    res = []
    for lib, m in ((torch, t), (hookgrad, h)):
        assert detect_layout(m) == ("gpt2", "transformer.")
        names = hook_names(m)
        assert len(names) == 3 + 11 * L
        assert repr(names["blocks.1.attn.hook_pattern"]) == \
            "HookSite('blocks.1.attn.hook_pattern' = input 0 of 'transformer.h.1.attn.attn_dropout')"
        res.append(record(lib, m, list(names)))
    (ta, tout), (ha, hout) = res
    np.testing.assert_allclose(hout, tout, rtol=1e-5, atol=1e-5)
    assert sorted(ta) == sorted(ha)
    for k in ta:
        np.testing.assert_allclose(ha[k], ta[k], rtol=1e-5, atol=1e-5, err_msg=k)


@LIBS
def test_residual_stream_identities(lib):
    m = pair()[0] if lib is torch else pair()[1]
    a, _ = record(lib, m, list(hook_names(m)))
    for i in range(L):
        b = f"blocks.{i}."
        np.testing.assert_allclose(a[b + "hook_resid_mid"], a[b + "hook_resid_pre"] + a[b + "hook_attn_out"], atol=1e-5)
        np.testing.assert_allclose(a[b + "hook_resid_post"], a[b + "hook_resid_mid"] + a[b + "hook_mlp_out"], atol=1e-5)
        if i + 1 < L:
            assert np.array_equal(a[b + "hook_resid_post"], a[f"blocks.{i + 1}.hook_resid_pre"])
        p = a[b + "attn.hook_pattern"]
        assert p.shape == (2, H, 5, 5) and np.allclose(p.sum(-1), 1) and np.all(np.triu(p, 1) == 0)
        assert a[b + "attn.hook_z"].shape == (2, 5, D) and a[b + "mlp.hook_post"].shape == (2, 5, 4 * D)
    np.testing.assert_allclose(a["blocks.0.hook_resid_pre"], a["hook_embed"] + a["hook_pos_embed"], atol=1e-6)


@LIBS
def test_add_hook_replaces_the_value(lib):
    m = pair()[0] if lib is torch else pair()[1]
    _, base = record(lib, m, [])
    h = add_hook(m, "blocks.1.hook_mlp_out", lambda act, hook: act * 0)
    a, ablated = record(lib, m, ["blocks.1.hook_resid_mid", "blocks.1.hook_resid_post"])
    h.remove()
    assert not np.allclose(ablated, base)
    assert np.array_equal(a["blocks.1.hook_resid_post"], a["blocks.1.hook_resid_mid"])   # the MLP adds nothing now
    h = add_hook(m, "blocks.2.hook_resid_pre", lambda act, hook: act)                   # in0 pass-through
    _, same = record(lib, m, [])
    h.remove()
    assert np.array_equal(same, base)


@LIBS
def test_unresolved_names_say_why(lib):
    m = pair()[0] if lib is torch else pair()[1]
    why = dict(unresolved(m, ["blocks.0.attn.hook_q", "blocks.7.hook_resid_pre", "blocks.0.attn.hook_pattrn",
                              "blocks.0.attn.hook_attn_scores"]))
    assert "one projection (h.0.attn.c_attn)" in why["blocks.0.attn.hook_q"]
    assert why["blocks.7.hook_resid_pre"] == "the model has 3 blocks (0..2)"
    assert why["blocks.0.attn.hook_pattrn"].startswith("not a canonical name of the gpt2 layout")
    assert "pre-softmax" in why["blocks.0.attn.hook_attn_scores"]
    with pytest.raises(KeyError, match="hook_q.*c_attn"):
        resolve(m, "blocks.0.attn.hook_q")
    assert len(unresolved(m)) == 4 * L                 # every table name: only the 4 per block without a site
    with pytest.raises(ValueError, match="none of the known layouts"):
        hook_names(lib.nn.Linear(2, 2))


def test_bert_layout_on_hookgrads_bert():
    from hookgrad.models import bert as hb
    hookgrad.manual_seed(0)
    m = hb.BertModel(hb.BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    m.eval()
    assert detect_layout(m) == ("bert", "")
    names = hook_names(m)
    assert len(names) == 2 + 14 * 2
    acts, hs = {}, []
    for n in names:
        hs.append(add_hook(m, n, lambda a, hook: acts.__setitem__(hook.name, a.detach().numpy().copy())))
    m(hookgrad.tensor([[1, 4, 5, 2]]))
    for h in hs:
        h.remove()
    p = acts["blocks.0.attn.hook_pattern"]
    assert p.shape == (1, 2, 4, 4) and np.allclose(p.sum(-1), 1)
    assert np.array_equal(acts["blocks.0.hook_resid_post"], acts["blocks.1.hook_resid_pre"])
    assert np.array_equal(acts["blocks.0.ln1.hook_normalized"], acts["blocks.0.hook_resid_mid"])   # post-LN
    assert np.array_equal(acts["blocks.1.ln2.hook_normalized"], acts["blocks.1.hook_resid_post"])
    assert dict(unresolved(m, ["ln_final.hook_normalized"]))["ln_final.hook_normalized"].startswith("BERT is post-LN")


@LIBS
def test_vit_layout_is_recognised(lib):
    nn = lib.nn

    def tree(**kids):
        m = nn.Module()
        for k, v in kids.items():
            m.add_module(k, v)
        return m
    layer = tree(layernorm_before=nn.LayerNorm(4), layernorm_after=nn.LayerNorm(4),
                 attention=tree(attention=tree(query=nn.Linear(4, 4), key=nn.Linear(4, 4), value=nn.Linear(4, 4),
                                               dropout=nn.Dropout(0.0)), output=tree(dense=nn.Linear(4, 4))),
                 intermediate=tree(dense=nn.Linear(4, 8), intermediate_act_fn=nn.GELU()),
                 output=tree(dense=nn.Linear(8, 4)))
    vit = tree(vit=tree(embeddings=tree(patch_embeddings=nn.Conv2d(3, 4, 2)),
                        encoder=tree(layer=nn.ModuleList([layer])), layernorm=nn.LayerNorm(4)))
    assert detect_layout(vit) == ("vit", "vit.")
    names = hook_names(vit)
    assert names["blocks.0.attn.hook_pattern"].path == "vit.encoder.layer.0.attention.attention.dropout"
    assert names["ln_final.hook_normalized"].path == "vit.layernorm" and len(names) == 2 + 14
    assert [n for n, _ in unresolved(vit)] == ["hook_pos_embed", "blocks.0.attn.hook_attn_scores"]
