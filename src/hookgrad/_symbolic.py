"""torch.SymInt / SymFloat / SymBool and the ``torch.sym_*`` functions.

PyTorch's symbolic sizes exist only while torch.compile or export traces a program. hookgrad never traces
symbolically, so no value is ever symbolic: the classes exist for ``isinstance`` checks (which are False
for every concrete number, as they are in eager PyTorch), and the ``sym_*`` functions compute on concrete
numbers, as PyTorch's do when given plain ints and floats.
"""
import builtins
import math


class _NoSymbolicValues:
    def __init__(self, node=None):
        raise TypeError(f"torch.{type(self).__name__} values exist only under symbolic tracing, which hookgrad does "
                        "not do (plain ints, floats and bools are used instead)")


class SymInt(_NoSymbolicValues):
    """A symbolic int (never made by hookgrad)."""


class SymFloat(_NoSymbolicValues):
    """A symbolic float (never made by hookgrad)."""


class SymBool(_NoSymbolicValues):
    """A symbolic bool (never made by hookgrad)."""


def sym_float(a):
    return a if isinstance(a, float) else float(a)


def sym_int(a):
    """Truncation towards zero, as PyTorch's sym_int of a float."""
    return a if isinstance(a, int) else int(math.trunc(a))


def sym_max(a, b):
    return builtins.max(a, b)


def sym_min(a, b):
    return builtins.min(a, b)


def sym_not(a):
    return not a


def sym_ite(b, t, f):
    return t if b else f


def sym_sqrt(a):
    return math.sqrt(a)


def sym_sum(args):
    return builtins.sum(args)


def sym_fresh_size(expr):
    return expr


def sym_constrain_range(a, *, min=None, max=None):
    pass


def sym_constrain_range_for_size(a, *, min=None, max=None):
    pass
