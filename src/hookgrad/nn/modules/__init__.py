"""nn.modules: Module (with every module hook), containers and layers."""
from .module import *          # noqa: F401,F403  Module and the global module hooks
from .container import *       # noqa: F401,F403  Sequential, ModuleList, ModuleDict, ParameterList/Dict
from .linear import *          # noqa: F401,F403
from .conv import *            # noqa: F401,F403
from .pooling import *         # noqa: F401,F403
from .normalization import *   # noqa: F401,F403
from .activation import *      # noqa: F401,F403
from .dropout import *         # noqa: F401,F403
from .sparse import *          # noqa: F401,F403
from .loss import *            # noqa: F401,F403
from .transformer import *     # noqa: F401,F403
from .misc import *            # noqa: F401,F403  Flatten, Unflatten, Upsample, Identity
