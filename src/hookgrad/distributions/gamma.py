"""The gamma distribution (shape ``concentration``, inverse scale ``rate``)."""
import hookgrad
from . import constraints
from ._samplers import standard_gamma
from .exp_family import ExponentialFamily
from .utils import _Number, broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution with ``concentration`` (shape) and ``rate`` (inverse scale). Samples are reparameterised
    (implicit gradients) but are not PyTorch's numbers for a seed: see docs/differences.md."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, _Number) and isinstance(rate, _Number):
            batch_shape = hookgrad.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = hookgrad.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=hookgrad.Size()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=hookgrad.finfo(value.dtype).tiny)
        return value

    def log_prob(self, value):
        value = hookgrad.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (hookgrad.xlogy(self.concentration, self.rate) + hookgrad.xlogy(self.concentration - 1, value)
                - self.rate * value - hookgrad.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - hookgrad.log(self.rate) + hookgrad.lgamma(self.concentration)
                + (1.0 - self.concentration) * hookgrad.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return hookgrad.lgamma(x + 1) + (x + 1) * hookgrad.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return hookgrad.special.gammainc(self.concentration, self.rate * value)
