"""torch.distributed.GradBucket: what a DDP communication hook receives, one bucket of gradients."""

__all__ = ["GradBucket"]


class GradBucket:
    """One bucket of DDP's gradients: ``buffer()`` is the flat buffer (the gradients of ``parameters()``, in
    that order), ``gradients()`` views of it shaped like the parameters, ``index()`` the bucket's index,
    ``is_last()`` whether it is the last bucket of the iteration (index 0: buckets run in reverse order)."""

    def __init__(self, index, bucket_count, tensor, offsets, lengths, sizes_vec, parameters,
                 sparse_grad_indices=None):
        self._index = int(index)
        self._count = int(bucket_count)
        self._buffer = tensor
        self._offsets = list(offsets)
        self._lengths = list(lengths)
        self._sizes = [tuple(s) for s in sizes_vec]
        self._parameters = list(parameters)

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def gradients(self):
        """The parameters' gradients as views of ``buffer()``."""
        flat = self._buffer
        return [flat[o:o + n].view(s) for o, n, s in zip(self._offsets, self._lengths, self._sizes)]

    def parameters(self):
        return list(self._parameters)

    def is_last(self):
        return self._index == self._count - 1

    def set_buffer(self, buffer):
        """Replace the bucket's buffer (a hook that compresses in place may hand DDP another tensor)."""
        self._buffer = buffer

    def __repr__(self):
        return f"<hookgrad.distributed.GradBucket index={self._index} of {self._count}>"
