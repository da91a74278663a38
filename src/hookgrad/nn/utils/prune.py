"""torch.nn.utils.prune: prune a module's tensor by masking it.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, registers the buffer ``<name>_mask`` and
a forward pre-hook (the pruning method itself) that recomputes ``module.<name> = <name>_mask * <name>_orig``
before every forward. Pruning the same tensor again combines the methods in a ``PruningContainer`` (each new
method acts on the entries the previous ones kept); ``remove`` makes the pruning permanent. The masks are
PyTorch's under the same seed: the random methods draw with ``rand_like`` / ``rand`` in PyTorch's order, and
ties in ``topk`` / ``kthvalue`` resolve as PyTorch's.

>>> m = hookgrad.nn.Linear(4, 3)
>>> l1_unstructured(m, "weight", amount=0.5)              # doctest: +SKIP
>>> sorted(n for n, _ in m.named_buffers())
['weight_mask']
"""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ..._creation import ones_like, zeros_like, rand_like, rand
from ...primitives.reduce import topk, kthvalue, norm
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


def _pruning_hooks(module, name=None):
    """(key, method) of the pruning methods among ``module``'s forward pre-hooks (for ``name`` only, if given)."""
    return [(k, h) for k, h in module._forward_pre_hooks.items()
            if isinstance(h, BasePruningMethod) and (name is None or h._tensor_name == name)]


class BasePruningMethod(ABC):
    """A way to compute a mask for a tensor (``compute_mask``); an instance is also the forward pre-hook that
    applies the mask before each forward."""
    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for ``t``, starting from ``default_mask`` (entries already pruned stay pruned)."""

    def apply_mask(self, module):
        """``<name>_mask * <name>_orig`` of ``module``."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def _combined_with_existing(cls, module, name, *args, **kwargs):
        """This method, or a PruningContainer of the method already on ``module.<name>`` and this one (the old
        hook is taken off the module)."""
        found = _pruning_hooks(module, name)
        if len(found) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                 f"{module}. Use a PruningContainer.")
        for k, _ in found:
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if found:
            old = found[0][1]
            if isinstance(old, PruningContainer):
                old.add_pruning_method(method)
                return old
            container = PruningContainer(old)
            container.add_pruning_method(method)
            return container
        return method

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with this method (combined with earlier pruning) and return the method."""
        method = cls._combined_with_existing(module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                     f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:       # the parameter moves to <name>_orig; <name> becomes a plain attribute
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:   # leave the module as it was
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times its mask (nothing is registered anywhere)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                     f"{importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: ``<name>`` becomes a parameter again holding the pruned values, and
        ``<name>_orig`` and ``<name>_mask`` go away (the caller removes the hook)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """Successive pruning methods of one tensor; the last one acts on what the others kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask computed on the part of ``t`` still unpruned: the entries (unstructured),
        the channels with a kept entry along its ``dim`` (structured), or everything (global)."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                                     '`dim` defined.')
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple(keep_channel if d == dim else slice(None) for d in range(n_dims))
        elif kind == "global":
            slc = (slice(None),) * len(t.shape)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing (the mask is all ones)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _mask_entries(default_mask, indices):
    """A copy of ``default_mask`` with the flat ``indices`` set to 0."""
    mask = default_mask.clone()
    mask.view(-1)[indices] = 0
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` (a fraction, or a count) of the entries, drawn at random."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _checked_count(self.amount, t.nelement())
        if k == 0:
            return default_mask.clone()
        return _mask_entries(default_mask, topk(rand_like(t).view(-1), k=k).indices)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes ``amount`` of the entries with the smallest absolute values."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _checked_count(self.amount, t.nelement())
        if k == 0:
            return default_mask.clone()
        return _mask_entries(default_mask, topk(t.abs().view(-1), k=k, largest=False).indices)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t, dim, channels):
    """Zeros like ``t`` with ones in the ``channels`` (a boolean mask or indices) along ``dim``."""
    mask = zeros_like(t)
    mask[tuple(channels if d == dim or d == dim + t.dim() else slice(None) for d in range(t.dim()))] = 1
    return mask


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim``, drawn at random."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        n = t.shape[self.dim]
        k = _checked_count(self.amount, n)
        if k == 0:
            return default_mask
        prob = rand(n)
        mask = _channel_mask(t, self.dim, prob > kthvalue(prob, k=k).values)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim`` with the smallest L``n`` norm."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _checked_count(self.amount, size)
        kept = topk(_compute_norm(t, self.n, self.dim), k=size - k, largest=True)
        if k == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, kept.indices)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Prune nothing, but reparametrise ``module.<name>`` as ``<name>_orig`` and a mask of ones."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` (fraction or count) of ``module.<name>``'s entries at random."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune ``amount`` of ``module.<name>``'s entries with the smallest absolute value (of
    ``importance_scores`` if given)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` of ``module.<name>``'s channels along ``dim`` at random."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune ``amount`` of ``module.<name>``'s channels along ``dim`` with the smallest L``n`` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the ``(module, name)`` tensors of ``parameters`` together, as one vector, with the unstructured
    ``pruning_method(**kwargs)``; each gets its part of the mask as a CustomFromMask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n)) for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask", ones_like(getattr(m, n))) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for m, n in parameters:
        param = getattr(m, n)
        custom_from_mask(m, n, mask=final_mask[start:start + param.numel()].view_as(param))
        start += param.numel()


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` with ``mask``."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent and take its hook off."""
    for k, hook in _pruning_hooks(module, name)[:1]:
        hook.remove(module)
        del module._forward_pre_hooks[k]
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether ``module`` or a submodule has a pruning hook."""
    return any(_pruning_hooks(sub) for _, sub in module.named_modules())


def _validate_pruning_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured_pruning(t):
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    """A count as is; a fraction of ``tensor_size``, rounded."""
    return amount if isinstance(amount, numbers.Integral) else round(amount * tensor_size)


def _checked_count(amount, tensor_size):
    k = _compute_nparams_toprune(amount, tensor_size)
    _validate_pruning_amount(k, tensor_size)
    return k


def _validate_pruning_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    """The L``n`` norm of ``t`` over every dimension but ``dim``."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    return norm(t, p=n, dim=dims)


