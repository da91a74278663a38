"""hookgrad.distributions: parameterizable probability distributions and sampling (as torch.distributions).

A minimal part of PyTorch's package: the ``Distribution`` base class (batch/event shapes, argument
validation, sample/rsample/log_prob/entropy/mean/variance, expand), ``ExponentialFamily``, ``Bernoulli``,
``Categorical``, ``Normal`` and ``Uniform`` with differentiable ``log_prob``/``rsample``, the constraints
they use, and ``kl_divergence``/``register_kl`` for their pairs. Samples are PyTorch's numbers under the same
``manual_seed`` (the same generator calls in the same order). The other distributions and
transforms come later (issue 12): reading one raises an AttributeError that says so.
"""
from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .kl import kl_divergence, register_kl
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "ExponentialFamily", "Normal", "Uniform",
           "kl_divergence", "register_kl"]

from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.distributions")
