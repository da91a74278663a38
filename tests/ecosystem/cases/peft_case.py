"""peft: LoRA on a small transformers BERT: trainable parameters, forward, backward, merge."""


def run(torch, rec, weights):
    import transformers
    from peft import LoraConfig, get_peft_model
    from transformers import BertConfig, BertModel
    transformers.logging.set_verbosity_error()
    cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    base = weights("base", BertModel(cfg))
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"],
                                            lora_dropout=0.0, init_lora_weights="gaussian"))
    weights("lora", model)
    model.eval()
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    rec("trainable", trainable)
    ids = torch.randint(0, 100, (2, 10))
    out = model(input_ids=ids).last_hidden_state
    rec("out", out)
    out.pow(2).mean().backward()
    rec("lora_grad", model.base_model.model.encoder.layer[0].attention.self.query.lora_A["default"].weight.grad)
    merged = model.merge_and_unload()
    rec("merged", merged(input_ids=ids).last_hidden_state)
