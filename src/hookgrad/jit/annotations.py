"""torch.jit.annotations: the TorchScript type names packages annotate with. ``BroadcastingList2[float]`` (an
argument given as one number or a list of N) is accepted in annotations and means nothing to Python, as in
PyTorch (subscripting it gives None)."""
from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: F401

from . import Final  # noqa: F401


class BroadcastingListCls:
    def __getitem__(self, types):
        return None


BroadcastingList1 = BroadcastingListCls()
BroadcastingList2 = BroadcastingList3 = BroadcastingList4 = BroadcastingList5 = BroadcastingList6 = BroadcastingList1
