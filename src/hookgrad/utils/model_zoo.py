"""torch.utils.model_zoo: PyTorch's old name for ``torch.hub.load_state_dict_from_url`` (``load_url``)."""
from ..hub import load_state_dict_from_url as load_url  # noqa: F401

try:
    from tqdm import tqdm  # noqa: F401  (torch.hub's progress bar: tqdm's when it is installed)
except ImportError:
    class tqdm:
        """A silent stand-in for tqdm's progress bar (torch.hub's fallback when tqdm is not installed)."""

        def __init__(self, total=None, disable=False, unit=None, unit_scale=None, unit_divisor=None, **kwargs):
            self.total, self.n = total, 0

        def update(self, n):
            self.n += n

        def close(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
