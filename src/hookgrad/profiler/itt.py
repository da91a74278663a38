"""torch.profiler.itt: Intel ITT (VTune) ranges; hookgrad has no ITT backend, so ranges do nothing."""
from contextlib import contextmanager

__all__ = ["is_available", "range_push", "range_pop", "mark", "range"]


def is_available():
    return False


def range_push(msg):
    pass


def range_pop():
    pass


def mark(msg):
    pass


@contextmanager
def range(msg, *args, **kwargs):
    yield
