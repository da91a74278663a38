"""nn.modules: Module (with every module hook), containers and layers, in PyTorch's file layout."""
from .module import *          # noqa: F401,F403  Module and the global module hooks
from .container import *       # noqa: F401,F403  Sequential, ModuleList, ModuleDict, ParameterList/Dict
from .linear import *          # noqa: F401,F403
from .conv import *            # noqa: F401,F403
from .pooling import *         # noqa: F401,F403
from .batchnorm import *       # noqa: F401,F403
from .normalization import *   # noqa: F401,F403
from .activation import *      # noqa: F401,F403
from .dropout import *         # noqa: F401,F403
from .sparse import *          # noqa: F401,F403
from .loss import *            # noqa: F401,F403
from .linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: F401
from .transformer import *     # noqa: F401,F403
from .flatten import *         # noqa: F401,F403
from .upsampling import *      # noqa: F401,F403
from .padding import *         # noqa: F401,F403
from .pixelshuffle import *    # noqa: F401,F403
from .channelshuffle import *  # noqa: F401,F403
from .fold import *            # noqa: F401,F403  Fold, Unfold
from .instancenorm import *    # noqa: F401,F403
from .distance import *       # noqa: F401,F403  CosineSimilarity, PairwiseDistance
from .rnn import *             # noqa: F401,F403  (the recurrent layers come in issue 12)
from .lazy import *            # noqa: F401,F403  LazyModuleMixin
from .adaptive import *        # noqa: F401,F403  AdaptiveLogSoftmaxWithLoss

# `from .modules import *` in nn/__init__ takes the layers, not the submodules (nn.utils is not modules.utils)
import types as _types  # noqa: E402
__all__ = [_n for _n, _v in list(globals().items()) if not _n.startswith("_") and not isinstance(_v, _types.ModuleType)]
