"""torch.nn.modules.rnn: the recurrent layers (RNNBase, RNN, LSTM, GRU and the cells) come in issue 12.

The module exists so that ``from torch.nn.modules.rnn import LSTM`` works as it does for ``nn.LSTM``: the
name is the same placeholder class (see ``_missing``), which raises NotImplementedError when built.
"""
from ... import _missing

__all__ = []
_LATER = ("RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell")


def __getattr__(name):
    if name in _LATER:
        obj = _missing.placeholder("hookgrad.nn", "torch.nn", name)
        if obj is not None:
            return obj
        raise _missing.missing(None, "torch.nn", name, f"module {__name__!r} has no attribute {name!r}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
