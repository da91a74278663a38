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
