"""noop_hook: a hook that communicates nothing (headroom analysis of the allreduce)."""
from ....futures import Future

__all__ = ["noop_hook"]


def noop_hook(_, bucket):
    """A Future already holding the bucket's buffer: no communication at all. Use it only to measure how much
    of a step the allreduce costs, never to train.

    Example::
        >>> ddp_model.register_comm_hook(None, noop_hook)
    """
    fut = Future()
    fut.set_result(bucket.buffer())
    return fut
