"""hookgrad.distributions: parameterizable probability distributions and sampling (as torch.distributions).

The ``Distribution`` base class (batch/event shapes, argument validation, sample/rsample/log_prob/entropy/
mean/variance, expand), ``ExponentialFamily``, the common distributions with differentiable ``log_prob`` and
reparameterised ``rsample``, ``TransformedDistribution`` with the common transforms, the constraints they use,
and ``kl_divergence``/``register_kl`` for the pairs PyTorch registers among them. Samples are PyTorch's numbers
under the same ``manual_seed`` (the same generator calls in the same order) except those of Gamma (and so
Beta, Dirichlet, Chi2, StudentT), Poisson and Binomial, whose samplers are hookgrad's own (see
docs/differences.md); Wishart's samples too. The rest of PyTorch's package (LKJCholesky, VonMises, ...) is not
here: reading one raises an AttributeError that says so.
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform, IndependentTransform,
                         PowerTransform, SigmoidTransform, SoftmaxTransform, StickBreakingTransform, TanhTransform,
                         Transform, identity_transform)
from .uniform import Uniform
from .wishart import Wishart

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "Dirichlet", "Distribution", "ExpTransform", "Exponential", "ExponentialFamily",
           "Gamma", "Geometric", "Gumbel", "HalfNormal", "Independent", "IndependentTransform", "Laplace",
           "LogNormal", "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson", "PowerTransform",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "SigmoidTransform", "SoftmaxTransform",
           "StickBreakingTransform", "StudentT", "TanhTransform", "Transform", "TransformedDistribution", "Uniform",
           "Wishart", "identity_transform", "kl_divergence", "register_kl"]

from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.distributions")
