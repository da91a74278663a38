"""torch.nn.utils.rnn: padding and packing variable-length sequences.

PackedSequence holds the time-major concatenation of the sequences (``data``), the batch size at each
step (``batch_sizes``) and the permutation that sorted them by length; nn.RNN, nn.LSTM and nn.GRU take one and
return one (primitives/rnn.py runs the packed recurrence).
"""
from collections import namedtuple

import numpy as np

from ..._tensor import Tensor
from ..._array import default_module
from ... import _array
from ...primitives.nn import PackPaddedSequence as _PackNode

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]

PackedSequence_ = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])
PackedSequence_.__annotations__ = {}


def _long(values):
    return Tensor._make(default_module().asarray(values, np.int64))


class PackedSequence(PackedSequence_):
    """Data and batch sizes of a packed batch of variable-length sequences (made by pack_padded_sequence /
    pack_sequence, never by hand)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                                 "created manually. They should be instantiated by functions like pack_sequence and "
                                 "pack_padded_sequences in nn.utils.rnn. "
                                 "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise AssertionError(f"Expected data to be a list or tuple of length 2, but got {data!r}")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def _map_data(self, fn):
        return type(self)(fn(self.data), self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cuda(self, *args, **kwargs):
        return self._map_data(lambda d: d.cuda(*args, **kwargs))

    def cpu(self, *args, **kwargs):
        return self._map_data(lambda d: d.cpu(*args, **kwargs))

    def pin_memory(self):
        return self

    def double(self):
        return self._map_data(lambda d: d.double())

    def float(self):
        return self._map_data(lambda d: d.float())

    def half(self):
        return self._map_data(lambda d: d.half())

    def long(self):
        return self._map_data(lambda d: d.long())

    def int(self):
        return self._map_data(lambda d: d.int())

    def short(self):
        return self._map_data(lambda d: d.short())

    def char(self):
        return self._map_data(lambda d: d.char())

    def byte(self):
        return self._map_data(lambda d: d.byte())

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    """The inverse of a permutation (None for None)."""
    if permutation is None:
        return None
    from ..._creation import empty_like, arange
    output = empty_like(permutation)
    output.scatter_(0, permutation, arange(0, permutation.numel()))
    return output


def _lengths_array(lengths):
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                               f"{str(lengths.dtype).replace('torch.', '')} tensor")
        return _array.to_host(lengths._data).astype(np.int64)
    return np.asarray(list(lengths), np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T x B x * or B x T x *) of sequences with the given lengths."""
    lens = _lengths_array(lengths)
    if enforce_sorted:
        sorted_indices = None
        if lens.size > 1 and np.any(np.diff(lens) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = _long(order)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if lens.size and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that is "
                           "<= 0")
    steps = input.shape[1 if batch_first else 0]
    if lens.size and lens[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a length is {int(lens[0])} but the input has only {steps} time "
                           f"steps (hookgrad checks this; PyTorch reads past the end)")
    batch_sizes = np.array([(lens > t).sum() for t in range(int(lens[0]) if lens.size else 0)], np.int64)
    data = _PackNode.apply(input, batch_sizes=batch_sizes, batch_first=batch_first)
    return PackedSequence(data, _long(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded batch, lengths)."""
    from ..._creation import full
    bs = _array.to_host(sequence.batch_sizes._data).astype(np.int64)
    max_seq_length = len(bs)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    batch = int(bs[0]) if len(bs) else 0
    out = full((max_seq_length, batch) + tuple(data.shape[1:]), padding_value, dtype=data.dtype)
    off = 0
    for t, b in enumerate(bs):
        out[t, :int(b)] = data[off:off + int(b)]
        off += int(b)
    lengths = np.array([(bs > i).sum() for i in range(batch)], np.int64)
    if batch_first:
        out = out.transpose(0, 1)
    lengths_t = _long(lengths)
    if sequence.unsorted_indices is not None:
        out = out.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths_t = _long(lengths[_array.to_host(sequence.unsorted_indices._data)])
    return out, lengths_t


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack a list of variable-length tensors (L_i x *) into one padded tensor (T x B x * or B x T x *)."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    from ..._creation import full
    max_len = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    dtype = sequences[0].dtype
    # PyTorch's kernel fills a batch-first tensor and transposes it in place (grad_fn TransposeBackward1)
    out = full((len(sequences), max_len) + trailing, padding_value, dtype=dtype)
    for i, s in enumerate(sequences):
        n = s.shape[0]
        out[i, slice(max_len - n, max_len) if padding_side == "left" else slice(0, n)] = s
    return out if batch_first else out.transpose_(0, 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into its list of variable-length tensors."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)  # in place, as PyTorch's unpad_sequence does
    from ..._creation import arange
    max_length = padded_sequences.shape[1]
    idx = arange(max_length)
    lens = _lengths_array(lengths)
    return [seq[idx < int(length)] for seq, length in zip(padded_sequences, lens)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of variable-length tensors (sorted by decreasing length unless enforce_sorted=False)."""
    lengths = _long([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of variable-length tensors of a PackedSequence."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
