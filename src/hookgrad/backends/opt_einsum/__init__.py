"""torch.backends.opt_einsum: whether the opt_einsum package would order einsum's contractions, as PyTorch decides it
(the package importable); hookgrad's einsum lets NumPy order them, so the flags are recorded only."""
import importlib.util

from .._flags import flag_module, scoped_flags, swap_flags

_opt_einsum = None


def is_available():
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    """The opt_einsum package if it is installed, else None."""
    global _opt_einsum
    if _opt_einsum is None and is_available():
        import opt_einsum
        _opt_einsum = opt_einsum
    return _opt_einsum


_values = {"enabled": is_available(), "strategy": "auto" if is_available() else None}


def _check_strategy(strategy):
    if not is_available():
        raise ValueError(f"opt_einsum is not available, so setting `strategy` will not take effect. Please install "
                         f"opt_einsum to set the strategy.")
    if strategy not in ("auto", "greedy", "optimal"):
        raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but got {strategy}")


def set_flags(_enabled=None, _strategy=None):
    if _strategy is not None:
        _check_strategy(_strategy)
    return swap_flags(_values, {"enabled": _enabled, "strategy": _strategy})


def flags(enabled=None, strategy=None):
    return scoped_flags(_values, set_flags, dict(_enabled=enabled, _strategy=strategy))


flag_module(__name__, _values, "OptEinsumModule")
