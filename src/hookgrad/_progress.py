"""Work that advances only while someone calls it: MPI's non-blocking collectives make no progress during
NumPy work unless a process calls into MPI. Whoever starts such work appends an object with a ``poll()``
method to ``pending``; the autograd engine calls :func:`poll` between nodes while the list is not empty (a
list truth test per node otherwise), and blocking waits call it in their loop.

``poll()`` on an item advances it and returns True once it has finished; finished items leave the list.
"""
pending = []


def poll():
    """Advance every pending item once; drop those that finished. An item's error propagates to the caller
    (the item has left the list)."""
    i = 0
    while i < len(pending):
        item = pending[i]
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
            i += 1
