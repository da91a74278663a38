"""Work that advances only while someone calls it: MPI's non-blocking collectives make no progress during
NumPy work unless a process calls into MPI. Whoever starts such work appends an object to ``pending``; the
autograd engine calls :func:`tick` between nodes while the list is not empty (a list truth test per node
otherwise), and blocking waits call :func:`poll` in their loop.

An item has ``poll()``, which advances it and returns True once it has finished (finished items leave the
list), ``wait()``, which blocks until it has (a Future's ``wait`` drives the items this way), and
``inflight``: True while it only waits for its data to move. One call into MPI moves every outstanding
operation, so a poll tests the first item in flight and skips the others in flight behind it (they are tested
once the ones before them are done); items that still have a step to start are always advanced.
"""
import time

pending = []

INTERVAL = 20e-6        # the engine polls at most this often (seconds): a poll costs about a microsecond per item
_last = [0.0]


def tick():
    """The engine's call between nodes: :func:`poll`, at most every ``INTERVAL`` seconds."""
    now = time.perf_counter()
    if now - _last[0] >= INTERVAL:
        _last[0] = now
        poll()


def poll():
    """Advance the pending items once; drop those that finished. An item's error propagates to the caller
    (the item has left the list)."""
    i = 0
    waiting = False         # an item in flight was tested: the later ones in flight move with it
    while i < len(pending):
        item = pending[i]
        if waiting and item.inflight:
            i += 1
            continue
        try:
            done = item.poll()
        except BaseException:
            pending.remove(item)
            raise
        if done:
            # NOTE: the item's completion may have run callbacks that polled (a then-callback that waits on
            # another collective, as PyTorch's PowerSGD hook does) and changed the list under us
            if i < len(pending) and pending[i] is item:
                del pending[i]
            elif item in pending:
                pending.remove(item)
        else:
            waiting = waiting or item.inflight
            i += 1
