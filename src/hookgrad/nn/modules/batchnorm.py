"""BatchNorm layers and their bases _NormBase, _BatchNorm (torch.nn.modules.batchnorm)."""
import numpy as np

from ..parameter import Parameter, UninitializedParameter, UninitializedBuffer
from .. import functional as F, init
from ... import _creation as C
from ..._tensor import Tensor
from ..._array import default_module
from .module import Module
from .lazy import LazyModuleMixin
from ._sync_batchnorm import SyncBatchNorm as sync_batch_norm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "SyncBatchNorm"]


def _count0():
    """A new ``num_batches_tracked`` (torch.tensor(0): a long scalar, in the default array module)."""
    return Tensor._make(default_module().asarray(0, np.int64))


class _NormBase(Module):
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(C.empty(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(C.empty(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", C.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", C.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", _count0())
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                    else _count0()
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        running_mean, running_var, bn_training, eaf = self._step_stats()
        return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training, eaf, self.eps)

    def _step_stats(self):
        """One forward's (running_mean, running_var, bn_training, exponential average factor), after counting
        the batch in ``num_batches_tracked`` (PyTorch's _BatchNorm.forward preamble)."""
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            nbt = self.num_batches_tracked
            if hasattr(nbt, "_data"):
                nbt._data += 1
                nbt._vc[0] += 1
            else:                       # a vmap's BatchedTensor (hookgrad.func: stacked ensembles): PyTorch's add_
                nbt.add_(1)
            eaf = 1.0 / float(nbt._data if hasattr(nbt, "_data") else nbt) if self.momentum is None else self.momentum
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_buf = not self.training or self.track_running_stats
        return (self.running_mean if use_buf else None, self.running_var if use_buf else None, bn_training, eaf)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input) (hookgrad: in {self!r}, input of "
                             f"shape {list(input.shape)})")
        if input.shape[1] != self.num_features:
            raise RuntimeError(f"running_mean should contain {input.shape[1]} elements not {self.num_features} "
                               f"(hookgrad: in {self!r}, input of shape {list(input.shape)})")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input) (hookgrad: in {self!r}, input of shape "
                             f"{list(input.shape)})")
        if input.shape[1] != self.num_features:
            raise RuntimeError(f"running_mean should contain {input.shape[1]} elements not {self.num_features} "
                               f"(hookgrad: in {self!r}, input of shape {list(input.shape)})")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input) (hookgrad: in {self!r}, input of shape "
                             f"{list(input.shape)})")
        if input.shape[1] != self.num_features:
            raise RuntimeError(f"running_mean should contain {input.shape[1]} elements not {self.num_features} "
                               f"(hookgrad: in {self!r}, input of shape {list(input.shape)})")


def _sync_group(process_group):
    """(the process group SyncBatchNorm synchronises over, its size), or (None, 1) when not distributed."""
    import sys
    dist = sys.modules.get("hookgrad.distributed")     # no process group can exist before it is imported
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None, 1
    group = process_group if process_group else dist.group.WORLD
    return group, dist.get_world_size(group)


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose training statistics are those of the whole batch over every rank of ``process_group``
    (the default group when None): mean and variance are all-gathered in forward, the input gradient's sums
    all-reduced in backward. In eval mode, or on one process, it is BatchNorm over any input of at least 2 dims.
    NOTE: unlike PyTorch, CPU tensors are accepted (hookgrad's process groups run on MPI, on the CPU)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        running_mean, running_var, bn_training, eaf = self._step_stats()
        world_size = 1
        if bn_training and self.training:       # eval mode never synchronises
            process_group, world_size = _sync_group(self.process_group)
        if world_size <= 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training, eaf, self.eps)
        return sync_batch_norm.apply(input, self.weight, self.bias, running_mean, running_var, self.eps, eaf,
                                     process_group, world_size)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*D layer replaced by a SyncBatchNorm sharing its parameters and
        buffers (PyTorch's classmethod, recursively over the children)."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                          module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                module_output.weight = module.weight
                module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """The lazy norms: ``num_features`` is inferred from the first input's dim 1."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _count0()

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                if not isinstance(self.weight, UninitializedParameter):
                    raise AssertionError("self.weight must be an UninitializedParameter")
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    if not isinstance(self.bias, UninitializedParameter):
                        raise AssertionError("self.bias must be an UninitializedParameter")
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm1d

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm2d

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm3d

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")
