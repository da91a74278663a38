"""Helpers shared by the distributions (``torch.distributions.utils``)."""
from functools import update_wrapper

import hookgrad
from ..nn import functional as F

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property"]

euler_constant = 0.57721566490153286060     # Euler Mascheroni Constant
_Number = (int, float, bool)


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers become tensors of the first tensor's dtype (or the
    default dtype when all are numbers)."""
    if not all(isinstance(v, (hookgrad.Tensor,) + _Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, hookgrad.Tensor) for v in values):
        options = dict(dtype=hookgrad.get_default_dtype())
        for value in values:
            if isinstance(value, hookgrad.Tensor):
                options = dict(dtype=value.dtype, device=value.device)
                break
        values = [v if isinstance(v, hookgrad.Tensor) else hookgrad.tensor(v, **options) for v in values]
    return hookgrad.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return hookgrad.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid of log-odds (binary), else softmax over the last dim."""
    if is_binary:
        return hookgrad.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp probabilities into ``[eps, 1 - eps]``, eps the dtype's machine epsilon."""
    eps = hookgrad.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities: log-odds (binary), else log of the clamped probabilities."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return hookgrad.log(ps_clamped) - hookgrad.log1p(-ps_clamped)
    return hookgrad.log(ps_clamped)


class lazy_property:
    """A non-data descriptor computing the value on first read (with grad enabled), then storing it on the
    instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with hookgrad.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """Read on the class: both a lazy_property (for argument validation) and a property (for docs)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _one_of_probs_logits(probs, logits):
    """PyTorch's check for a distribution given by probs or logits: exactly one of them."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _expand_probs_logits(src, new, shape):
    """For ``expand``: into ``new``, whichever of ``probs`` and ``logits`` ``src`` holds, expanded to ``shape``
    (and ``_param``, the parameter given, where the class keeps one)."""
    for name in ("probs", "logits"):
        if name in src.__dict__:
            setattr(new, name, getattr(src, name).expand(shape))
            if "_param" in src.__dict__:
                new._param = getattr(new, name)


class _LocScale:
    """``loc`` and ``scale`` broadcast together, and ``expand`` of both: the constructor and ``expand`` that
    Normal, Laplace and Cauchy share (PyTorch writes them in each class). The class that lists this mixin
    first is the one ``expand`` checks a subclass against, as PyTorch's per-class ``expand`` does."""

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, _Number) and isinstance(scale, _Number):
            batch_shape = hookgrad.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        cls = next(c for c in type(self).__mro__ if _LocScale in c.__bases__)
        new = self._get_checked_instance(cls, _instance)
        batch_shape = hookgrad.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(_LocScale, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new


class _BinaryProbsLogits:
    """``probs`` and ``logits`` of the distributions of one success probability (Bernoulli, Binomial, Geometric,
    LogitRelaxedBernoulli): the one not given is derived on first read (PyTorch writes the pair in each class)."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)
