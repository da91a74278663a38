"""torch.cpu: the CPU as a device module (is_available, device_count, synchronize, streams)."""
import contextlib

__all__ = ["is_available", "synchronize", "current_device", "current_stream", "stream", "set_device",
           "device_count", "Stream", "StreamContext", "Event"]


def is_available():
    return True


def is_initialized():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def set_device(device):
    """Does nothing: the CPU is the only device."""


def synchronize(device=None):
    """Does nothing: CPU ops finish before they return."""


def get_capabilities():
    return {}


class Stream:
    """The CPU's (only, synchronous) stream."""

    def __init__(self, priority=-1):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self):
        pass

    def wait_event(self, event):
        pass


class Event:
    def query(self):
        return True

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass


_current_stream = Stream()


def current_stream(device=None):
    return _current_stream


class StreamContext(contextlib.AbstractContextManager):
    def __init__(self, stream):
        self.stream = stream

    def __exit__(self, *exc):
        return False


def stream(stream):
    return StreamContext(stream)


from . import amp  # noqa: E402,F401  (torch.cpu.amp: the deprecated aliases of torch.amp)
