"""The Laplace (double exponential) distribution."""
import hookgrad
from . import constraints
from .distribution import Distribution
from .utils import _LocScale

__all__ = ["Laplace"]


class Laplace(_LocScale, Distribution):
    """Laplace distribution with location ``loc`` and scale ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=hookgrad.Size()):
        shape = self._extended_shape(sample_shape)
        finfo = hookgrad.finfo(self.loc.dtype)
        u = self.loc.new(shape).uniform_(finfo.eps - 1, 1)
        return self.loc - self.scale * u.sign() * hookgrad.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -hookgrad.log(2 * self.scale) - hookgrad.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * hookgrad.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * (term).sign() * hookgrad.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + hookgrad.log(2 * self.scale)
