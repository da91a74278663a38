"""torch.nn.modules.rnn: the recurrent layers (RNNBase, RNN, LSTM, GRU and the cells) come in issue 12.

The module exists so that `import torch.nn.modules.rnn` works; reading one of its names raises
NotImplementedName (an AttributeError) naming the PyTorch class.
"""
from ... import _missing

__all__ = []
_LATER = ("RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell")


def __getattr__(name):
    if name in _LATER:
        raise _missing.NotImplementedName(_missing.message("torch.nn", name), name=name,
                                          torch_name=f"torch.nn.{name}", category=_missing.category("torch.nn", name))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
