"""torch.fx.passes.infra."""
from . import pass_base  # noqa: F401
