"""glibc allocator settings for a NumPy-backed training loop.

Every hookgrad array is NumPy memory from ``malloc``. With glibc's defaults, a training step that
allocates a few MB of activations and frees them at the end of backward hands that memory back to
the kernel (heap trimming; mmap for blocks above a threshold that starts at 128 KiB), and the next
step page-faults all of it in again. Measured on the small CNN of bench/run.py (2-core VM): ~2000
minor page faults per step, and the mean step 2.1x slower than with the settings below (PyTorch in
the same process: ~370 faults per step, 1.6x slower).

``tune()`` raises the mmap threshold to 32 MiB (glibc's own dynamic maximum) and the trim threshold
to 256 MiB: freed activations stay in the heap for the next step. It is process-wide, as any
allocator choice is (PyTorch users get the same from jemalloc or tcmalloc via LD_PRELOAD); set
HOOKGRAD_MALLOC_TUNING=0 to leave glibc's defaults alone. Not glibc (macOS, musl): nothing to do.
"""
import ctypes
import os
import platform

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20

tuned = False


def tune():
    """Apply the settings once; returns whether they are in effect."""
    global tuned
    if tuned or os.environ.get("HOOKGRAD_MALLOC_TUNING", "1") == "0" or platform.libc_ver()[0] != "glibc":
        return tuned
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    tuned = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) & bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return tuned
