"""The Wishart distribution over positive-definite matrices: ``df`` degrees of freedom and a scale given as
``covariance_matrix``, ``precision_matrix`` or its Cholesky factor ``scale_tril``. Samples come from the
Bartlett decomposition (chi-squared diagonal, standard normal below it) drawn with hookgrad's samplers, so they
are not PyTorch's random numbers; log_prob, entropy, mean, mode and variance are PyTorch's formulas."""
import math
import warnings
from numbers import Number

import hookgrad
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]
_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    return hookgrad.digamma(x.unsqueeze(-1) - hookgrad.arange(p, dtype=x.dtype).div(2).expand(x.shape + (-1,))).sum(-1)


def _clamp_above_eps(x):
    return x.clamp(min=hookgrad.finfo(x.dtype).eps)


class Wishart(ExponentialFamily):
    """Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None): exactly one scale argument."""
    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                       "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = param.shape[:-2]
            self.df = hookgrad.tensor(df, dtype=param.dtype)
        else:
            batch_shape = hookgrad.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if bool(self.df.le(event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        else:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        self.arg_constraints = dict(type(self).arg_constraints, df=constraints.greater_than(event_shape[-1] - 1))
        if self.df.lt(event_shape[-1]).any():
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.")
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = hookgrad.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        p = event_shape[-1]
        self._dist_chi2 = Chi2(df=self.df.unsqueeze(-1) - hookgrad.arange(p, dtype=self.df.dtype)
                               .expand(batch_shape + (-1,)))

    def expand(self, batch_shape, _instance=None):
        batch_shape = hookgrad.Size(batch_shape)
        new = self._get_checked_instance(Wishart, _instance)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        new._dist_chi2 = Chi2(df=new.df.unsqueeze(-1) - hookgrad.arange(self.event_shape[-1], dtype=new.df.dtype)
                              .expand(batch_shape + (-1,)))
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new.arg_constraints = self.arg_constraints
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        Id = hookgrad.eye(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return hookgrad.cholesky_solve(Id, self._unbroadcasted_scale_tril).expand(self._batch_shape
                                                                                  + self._event_shape)

    @property
    def mean(self):
        return self.df.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = factor.masked_fill(factor <= 0, float("nan"))
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.view(self._batch_shape + (1, 1)) * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=hookgrad.Size()):
        """L A A^T L^T with A lower triangular: sqrt(chi2(df - i)) on the diagonal, standard normal below."""
        p = self._event_shape[-1]
        noise = _clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt()).diag_embed(dim1=-2, dim2=-1)
        i, j = hookgrad.tril_indices(p, p, offset=-1)
        below = hookgrad.randn(self._extended_shape(sample_shape)[:-2] + (p * (p - 1) // 2,), dtype=noise.dtype)
        noise = _put_below(noise, i, j, below)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=hookgrad.Size(), max_try_correction=None):
        """A sample (redrawn where it came out singular, up to ``max_try_correction`` times: 3 by default)."""
        if max_try_correction is None:
            max_try_correction = 3
        sample_shape = hookgrad.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = self.support.check(sample).logical_not()
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if bool(is_singular.any()):
            for _ in range(max_try_correction):
                if not bool(is_singular.any()):
                    break
                redraw = self._bartlett_sampling(sample_shape)
                keep = is_singular.view(is_singular.shape + (1,) * (sample.dim() - is_singular.dim()))
                sample = hookgrad.where(keep, redraw, sample)
                is_singular = self.support.check(sample).logical_not()
                if self._batch_shape:
                    is_singular = is_singular.amax(self._batch_dims)
            else:
                warnings.warn(f"Singular samples occurred after {max_try_correction} rounds of correction.")
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - hookgrad.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * hookgrad.linalg.slogdet(value).logabsdet
                - hookgrad.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + hookgrad.mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-hookgrad.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p) \
            + hookgrad.mvlgamma(y + (p + 1) / 2, p=p)


def _put_below(noise, i, j, below):
    """``noise`` with ``below`` written at the strictly-lower positions (i, j) of its last two dims."""
    p = noise.shape[-1]
    flat = noise.reshape(noise.shape[:-2] + (p * p,))
    idx = (i * p + j).expand(below.shape)
    return flat.scatter(-1, idx, below).reshape(noise.shape)
