"""hookgrad.backends: the flags PyTorch scripts set (they have no effect on NumPy)."""
import types

cudnn = types.SimpleNamespace(deterministic=False, benchmark=False, enabled=True, allow_tf32=True,
                              is_available=lambda: False)
mps = types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cuda = types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False))
