"""torch.nn.utils.memory_format: give the convolution weights of a module tree a memory format."""
__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, names):
    from .. import modules
    kinds = tuple(getattr(modules, n) for n in names if isinstance(getattr(modules, n, None), type))
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, names)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Copy the weight of every Conv2d and ConvTranspose2d in ``module`` to ``memory_format``."""
    return _convert(module, memory_format, ("Conv2d", "ConvTranspose2d"))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Copy the weight of every Conv3d and ConvTranspose3d in ``module`` to ``memory_format``."""
    return _convert(module, memory_format, ("Conv3d", "ConvTranspose3d"))
