"""Weight normalisation: ``w = v * g / ||v||``, the norm taken over every dim but ``dim`` (PyTorch's
``torch._weight_norm`` and ``torch.norm_except_dim``), which ``nn.utils.weight_norm`` and
``nn.utils.parametrizations.weight_norm`` compute on every forward.

As in PyTorch, ``dim`` 0 or the last dim runs one fused op (``WeightNormInterfaceBackward0``); any other
dim (``None`` is -1: one norm over the whole tensor) is composed of the norm, a division and a product.
"""
from ..autograd.node import Node
from .._array import array_module


def _other_dims(ndim, dim):
    return tuple(d for d in range(ndim) if d != dim)


class WeightNormInterface(Node, name="WeightNormInterfaceBackward0"):
    """w = v * (g / norm), the norm over every dim but ``self.dim`` (0 or the last), kept as size-1 dims."""
    save = (0, 1)
    saved_names = ("v", "g")
    saved_attrs = ("dim",)

    def forward(self, v, g):
        xp = array_module(v)
        n = xp.sqrt((v * v).sum(axis=_other_dims(v.ndim, self.dim), keepdims=True))
        return (v * (g / n)).astype(v.dtype, copy=False)

    def backward(self, gw):
        # with n = |v| (per slice along dim) and s = sum(gw * v) over the other dims:
        #   dL/dg = s / n,   dL/dv = (g / n) * (gw - v * s / n^2)
        # PyTorch saves the norms as a second output whose gradient its formula ignores, so under
        # create_graph n is a constant: detached here, for the same second derivatives
        v, g = self.saved_values
        other = _other_dims(v.dim(), self.dim)
        n = (v * v).sum(other, keepdim=True).sqrt().detach() if other else v.abs().detach()
        s = (gw * v).sum(other, keepdim=True) if other else gw * v
        gv = (g / n) * (gw - v * (s / (n * n))) if self.next_functions[0][0] is not None else None
        gg = s / n if self.next_functions[1][0] is not None else None
        return gv, gg


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, shaped for broadcasting against ``v`` (size 1
    elsewhere); ``dim=-1`` is the norm of the whole tensor, a 0-d tensor."""
    if dim == -1:
        return v.norm(pow)
    nd = v.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    dim %= nd
    return v.norm(pow, _other_dims(nd, dim), keepdim=True)


def _weight_norm(v, g, dim=0):
    """``v * (g / norm_except_dim(v, 2, dim))``: one fused node for dim 0 or the last dim, as PyTorch."""
    if dim == 0 or dim == v.dim() - 1:
        return WeightNormInterface.apply(v, g, dim=dim)
    return v * (g / norm_except_dim(v, 2, dim))
