"""Per-thread state of the tools: one list per thread, made on first use."""


def thread_list(tls, name):
    """The calling thread's list ``tls.<name>`` (a ``threading.local``), empty on the thread's first call."""
    st = getattr(tls, name, None)
    if st is None:
        st = []
        setattr(tls, name, st)
    return st
