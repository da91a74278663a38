"""The real models of the bench, built by the same module code under either library.

``resnet18(lib)``: hookgrad.models' ResNet-18 (torchvision's architecture); under torch, the same source
file runs with ``nn`` bound to ``torch.nn`` (torchvision has no wheel here), and the weights are copied
from the hookgrad model so that both compute the same thing.
"""
import os
import types

import numpy as np

import hookgrad
import hookgrad.models.resnet as _hg_resnet


def _module_under(lib, hg_module):
    """The source of a hookgrad.models file executed with ``nn`` = ``lib.nn``."""
    if lib is hookgrad:
        return hg_module
    path = hg_module.__file__
    src = open(path).read().replace("from .. import nn\n", "")
    mod = types.ModuleType(f"bench_{os.path.basename(path)[:-3]}_torch")
    mod.__dict__["nn"] = lib.nn
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def resnet18(lib):
    """ResNet-18 in eval mode with the same weights in both libraries (hookgrad's init, seed 0)."""
    hookgrad.manual_seed(0)
    ref = _hg_resnet.resnet18()
    if lib is hookgrad:
        return ref.eval()
    model = _module_under(lib, _hg_resnet).resnet18()
    if lib is not hookgrad:
        model.load_state_dict({k: lib.tensor(np.ascontiguousarray(v.numpy())) for k, v in ref.state_dict().items()})
    return model.eval()


def minilm(lib):
    """all-MiniLM-L6-v2's BERT with its pretrained weights: hookgrad.models.bert under hookgrad, Hugging Face
    transformers' BertModel with eager attention under torch (both read the same model directory)."""
    from hookgrad.models import bert
    path = bert.default_model_dir()
    if lib is hookgrad:
        return bert.BertModel.from_pretrained(path)
    import transformers
    transformers.utils.logging.disable_progress_bar()
    return transformers.BertModel.from_pretrained(path, attn_implementation="eager").eval()


def plain_bert(lib):
    """A BERT written plainly in the torch API, as a user would write it (Linear layers, attention as matmul and
    softmax, F.gelu, LayerNorm), the same source under either library, loaded with all-MiniLM-L6-v2's weights
    (read through hookgrad.models.bert, copied as arrays). Speed must not depend on whose model code runs."""
    from hookgrad.models import bert
    nn, F = lib.nn, lib.nn.functional

    class Layer(nn.Module):
        def __init__(self, d, heads, ff):
            super().__init__()
            self.heads = heads
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
            self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

        def forward(self, x, bias):
            b, t, d = x.shape
            h = self.heads

            def split(y):
                return y.view(b, t, h, d // h).transpose(1, 2)
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            att = (q @ k.transpose(-1, -2)) / (d // h) ** 0.5 + bias
            ctx = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))

    class Bert(nn.Module):
        def __init__(self, vocab=30522, d=384, layers=6, heads=12, ff=1536, positions=512):
            super().__init__()
            self.tok, self.pos, self.typ = nn.Embedding(vocab, d), nn.Embedding(positions, d), nn.Embedding(2, d)
            self.ln = nn.LayerNorm(d, eps=1e-12)
            self.layers = nn.ModuleList(Layer(d, heads, ff) for _ in range(layers))

        def forward(self, ids, mask):
            t = ids.shape[1]
            x = self.ln(self.tok(ids) + self.pos(lib.arange(t))[None] + self.typ.weight[0])
            bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -1e4
            for layer in self.layers:
                x = layer(x, bias)
            return x

    ref = bert.BertModel.from_pretrained(bert.default_model_dir()).state_dict()
    names = {"tok": "embeddings.word_embeddings", "pos": "embeddings.position_embeddings",
             "typ": "embeddings.token_type_embeddings", "ln": "embeddings.LayerNorm"}
    parts = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "o": "attention.output.dense", "ln1": "attention.output.LayerNorm", "ff1": "intermediate.dense",
             "ff2": "output.dense", "ln2": "output.LayerNorm"}
    model = Bert()
    state = {}
    for key in model.state_dict():
        head, _, leaf = key.rpartition(".")
        if head.startswith("layers."):
            _, i, part = head.split(".")
            src = f"encoder.layer.{i}.{parts[part]}.{leaf}"
        else:
            src = f"{names[head]}.{leaf}"
        state[key] = lib.tensor(np.ascontiguousarray(ref[src].numpy()))
    model.load_state_dict(state)
    return model.eval()
