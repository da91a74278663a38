"""torch.func's smaller names: replace_all_batch_norm_modules_, functionalize, debug_unwrap."""
import functools

from ._batched import BatchedTensor

__all__ = ["replace_all_batch_norm_modules_", "functionalize", "debug_unwrap"]


def _without_running_stats(module):
    from ..nn.modules.batchnorm import _BatchNorm
    if isinstance(module, _BatchNorm) and module.track_running_stats:
        module.running_mean = None
        module.running_var = None
        module.num_batches_tracked = None
        module.track_running_stats = False


def replace_all_batch_norm_modules_(root):
    """In place: every BatchNorm module of ``root`` stops tracking running stats (so that it can be vmapped)."""
    _without_running_stats(root)
    for m in root.modules():
        _without_running_stats(m)
    return root


def functionalize(func, *, remove="mutations"):
    """``func`` itself: hookgrad runs programs eagerly and has no functionalization pass; the values (and the
    mutations of the inputs) are those of the functionalized program."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators {view} "
                           "will be replaced with their non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapped


def debug_unwrap(tensor, *, recurse=True):
    """The tensor under a vmap's BatchedTensor (all of them with ``recurse``); any other value as it is."""
    if type(tensor) is not BatchedTensor:
        return tensor
    return debug_unwrap(tensor._value) if recurse else tensor._value
