"""torch.autograd.forward_ad: hookgrad implements reverse mode only. The names exist so that imports
work; using forward-mode AD raises NotImplementedError (use torch.autograd.functional.jvp, which
hookgrad computes with the double-backward trick)."""

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_MSG = ("torch.autograd.forward_ad.{} is not implemented in hookgrad: forward-mode AD (dual tensors) is not "
        "supported; torch.autograd.functional.jvp computes Jacobian-vector products in reverse mode")


def _unsupported(name):
    raise NotImplementedError(_MSG.format(name))


def enter_dual_level():
    _unsupported("enter_dual_level")


def exit_dual_level(*, level=None):
    _unsupported("exit_dual_level")


def make_dual(tensor, tangent, *, level=None):
    _unsupported("make_dual")


def unpack_dual(tensor, *, level=None):
    _unsupported("unpack_dual")


class UnpackedDualTensor(tuple):
    """``(primal, tangent)`` as PyTorch's namedtuple; never produced by hookgrad."""
    __slots__ = ()

    def __new__(cls, primal, tangent):
        return tuple.__new__(cls, (primal, tangent))

    primal = property(lambda self: self[0])
    tangent = property(lambda self: self[1])


class dual_level:
    """``with dual_level():`` raises NotImplementedError: hookgrad has no forward-mode AD."""

    def __enter__(self):
        _unsupported("dual_level")

    def __exit__(self, exc_type, exc_value, traceback):
        return False
