"""torch.random: the default CPU generator's seed and state, and ``fork_rng``."""
import contextlib

from ._creation import default_generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state  # noqa: F401

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng",
           "thread_safe_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Forks the RNG: on exit the CPU generator's state is what it was on entry.

    hookgrad has no accelerator, so ``devices`` must name none (``None`` or an empty list), as on a
    PyTorch build without CUDA.
    """
    if device_type == "meta" or not enabled:
        yield
        return
    devices = [] if devices is None else list(devices)
    if devices:
        from ._errors import no_device
        raise no_device(f"cuda:{devices[0]}")  # PyTorch without CUDA: "Torch not compiled with CUDA enabled"
    cpu_rng_state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(cpu_rng_state)


def thread_safe_generator():
    """The generator of the current thread-based DataLoader worker; None elsewhere (hookgrad loads in-process)."""
    return None
