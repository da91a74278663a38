"""torch.__config__: how this library was built, described honestly for hookgrad (Python over NumPy, no C++ build)."""
import os
import platform


def _numpy_blas():
    """The BLAS/LAPACK NumPy was built against, as NumPy reports it (its build configuration)."""
    import numpy as np
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        return f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    except Exception:       # NumPy < 1.26 has no dict mode; the text form is all it has
        return "unknown"


def show():
    """A string describing the build, in PyTorch's layout. hookgrad is pure Python: there is no C++ compiler,
    MKL, MKL-DNN, OpenMP or CUDA in it (``USE_MKL=OFF`` and the like are stated as PyTorch states them)."""
    import numpy as np
    from . import __version__
    from .torch_version import __version__ as torch_version
    return (f"hookgrad {__version__} (PyTorch {torch_version} API) built with:\n"
            f"  - Python {platform.python_version()} ({platform.python_implementation()})\n"
            f"  - NumPy {np.__version__} (BLAS: {_numpy_blas()})\n"
            f"  - LAPACK is enabled (NumPy's)\n"
            f"  - CPU capability usage: DEFAULT\n"
            f"  - Build settings: BLAS_INFO=numpy, BUILD_TYPE=Release, USE_CUDA=OFF, USE_CUDNN=OFF, USE_MKL=OFF, "
            f"USE_MKLDNN=OFF, USE_MPI={'ON' if _has('mpi4py') else 'OFF'}, USE_NNPACK=OFF, USE_OPENMP=OFF, "
            f"USE_ROCM=OFF, USE_XPU=OFF\n")


def _has(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None


def parallel_info():
    """The parallel settings, in PyTorch's layout: hookgrad's own thread pool (``torch.set_num_threads``) and
    NumPy's BLAS threads."""
    from ._parallel import get_num_threads
    from ._misc import get_num_interop_threads
    env = "\n".join(f"\t{v} : {os.environ.get(v, '[not set]')}" for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"))
    return (f"ATen/Parallel:\n\tat::get_num_threads() : {get_num_threads()}\n"
            f"\tat::get_num_interop_threads() : {get_num_interop_threads()}\n"
            f"hookgrad thread pool (hookgrad._parallel), NumPy BLAS: {_numpy_blas()}\n"
            f"std::thread::hardware_concurrency() : {os.cpu_count()}\n"
            f"Environment variables:\n{env}\n"
            f"ATen parallel backend: native thread pool\n")


def _cxx_flags():
    """The C++ flags of the build: hookgrad has no C++."""
    return ""
