"""Matrix products: matmul (mm/mv/dot/bmm/broadcast), addmm, outer, einsum."""
import numpy as np

from .._tensor import Tensor
from ..autograd import graph as _G
from ..autograd.graph import Node
from ..autograd.grad_mode import _state
from .. import _dtype as D

_new = object.__new__


def _grad_rhs(a, g, b):
    """a.T @ g, laid out like ``b``: when b is a transposed view (nn.Linear's weight.t()), compute
    (g.T @ a).T so that the gradient that reaches the weight through TBackward0 is C-contiguous
    (no transposing copy when it is accumulated, and a fast optimizer step)."""
    if b.flags.f_contiguous and not b.flags.c_contiguous:
        return (g.T @ a).T
    return a.T @ g


def _check_dtypes(name, a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_long(a)} != {_long(b)}"
                           if name in ("mm", "matmul", "addmm", "bmm") else
                           f"{name}: expected both inputs to have the same dtype, but got {_long(a)} and {_long(b)}")


def _long(t):
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}[t._data.dtype.name]


class Mm(Node, name="MmBackward0"):
    save = (0, 1)
    saved_names = ("self", "mat2")

    def forward(self, a, b):
        return a @ b

    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        return (g.mm(b.t()) if nf[0][0] is not None else None,
                a.t().mm(g) if nf[1][0] is not None else None)

    def backward_np(self, g):
        a, b = self.saved_arrays()
        nf = self.next_functions
        return (g @ b.T if nf[0][0] is not None else None,
                _grad_rhs(a, g, b) if nf[1][0] is not None else None)


class Matmul(Node, name="UnsafeViewBackward0"):
    """Batched / broadcast matmul (any ranks >= 1)."""
    save = (0, 1)
    saved_names = ("self", "other")

    def forward(self, a, b):
        return np.matmul(a, b)

    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        ga = gb = None
        a1, b1 = a.dim() == 1, b.dim() == 1
        aa = a.unsqueeze(0) if a1 else a
        bb = b.unsqueeze(-1) if b1 else b
        gg = g
        if a1:
            gg = gg.unsqueeze(-2)
        if b1:
            gg = gg.unsqueeze(-1)
        if nf[0][0] is not None:
            ga = gg.matmul(bb.transpose(-1, -2))
            if a1:
                ga = ga.squeeze(-2)
            ga = ga.sum_to_size(a.shape) if ga.shape != a.shape else ga
        if nf[1][0] is not None:
            gb = aa.transpose(-1, -2).matmul(gg)
            if b1:
                gb = gb.squeeze(-1)
            gb = gb.sum_to_size(b.shape) if gb.shape != b.shape else gb
        return ga, gb

    def backward_np(self, g):
        a, b = self.saved_arrays()
        nf = self.next_functions
        a1, b1 = a.ndim == 1, b.ndim == 1
        aa = a[None] if a1 else a
        bb = b[:, None] if b1 else b
        gg = g
        if a1:
            gg = gg[..., None, :]
        if b1:
            gg = gg[..., None]
        ga = gb = None
        if nf[0][0] is not None:
            ga = np.matmul(gg, np.swapaxes(bb, -1, -2))
            if a1:
                ga = ga[..., 0, :]
        if nf[1][0] is not None:
            gb = np.matmul(np.swapaxes(aa, -1, -2), gg)
            if b1:
                gb = gb[..., 0]
        return ga, gb        # broadcast batch dims are summed away by the caller


class Dot(Matmul, name="DotBackward0"):
    saved_names = ("self", "tensor")

    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        return (g * b if nf[0][0] is not None else None), (g * a if nf[1][0] is not None else None)


class Mv(Matmul, name="MvBackward0"):
    saved_names = ("self", "vec")


class Bmm(Matmul, name="BmmBackward0"):
    saved_names = ("self", "mat2")


def _shape_err(a, b):
    sa, sb = a._data.shape, b._data.shape
    if len(sa) == 1 and len(sb) == 1:
        return RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have the same "
                            "number of elements, but got {0} and {1} elements respectively".format(sa[0], sb[0]))
    if len(sa) == 2 and len(sb) == 1:
        return RuntimeError(f"size mismatch, got input ({sa[0]}), mat ({sa[0]}x{sa[1]}), vec ({sb[0]})")
    if len(sa) == 2 and len(sb) == 2:
        return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{sa[1]} and {sb[0]}x{sb[1]})")
    return RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: {list(sb)} but got: "
                        f"{list(sb)}. (hookgrad: matmul of shapes {list(sa)} and {list(sb)} is not defined)")


def matmul(input, other):
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    da, db = input._data.ndim, other._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    _check_dtypes("matmul", input, other)
    ka = input._data.shape[-1]
    kb = other._data.shape[-2] if db > 1 else other._data.shape[0]
    if ka != kb:
        raise _shape_err(input, other)
    if da == 2 and db == 2:
        return Mm.apply(input, other)
    if da == 1 and db == 1:
        return Dot.apply(input, other)
    if da == 2 and db == 1:
        return Mv.apply(input, other)
    try:
        np.broadcast_shapes(input._data.shape[:-2], other._data.shape[:-2])
    except ValueError:
        raise RuntimeError(f"The size of tensor a must match the size of tensor b at a non-singleton dimension "
                           f"(hookgrad: matmul batch shapes {list(input.shape[:-2])} and {list(other.shape[:-2])} "
                           "do not broadcast)") from None
    return Matmul.apply(input, other)


def mm(input, mat2):
    if input._data.ndim != 2:
        raise RuntimeError(f"self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix")
    _check_dtypes("mm", input, mat2)
    if input._data.shape[1] != mat2._data.shape[0]:
        raise _shape_err(input, mat2)
    return Mm.apply(input, mat2)


def bmm(input, mat2):
    if input._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    sa, sb = input._data.shape, mat2._data.shape
    if sa[0] != sb[0] or sa[2] != sb[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] but got: "
                           f"[{sb[0]}, {sb[1]}].")
    _check_dtypes("bmm", input, mat2)
    return Bmm.apply(input, mat2)


def mv(input, vec):
    return matmul(input, vec)


def dot(input, other):
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input._data.ndim}D and {other._data.ndim}D tensors")
    return matmul(input, other)


inner = dot


class Addmm(Node, name="AddmmBackward0"):
    save = (1, 2)
    saved_names = ("mat1", "mat2")
    beta = 1
    alpha = 1

    def forward(self, bias, a, b):
        out = a @ b
        if self.alpha != 1:
            out *= self.alpha
        if self.beta == 1:
            out += bias
        elif self.beta != 0:
            out += self.beta * bias
        return out

    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        gbias = g if self.beta == 1 else g * self.beta
        ga = gb = None
        if nf[1][0] is not None:
            ga = g.mm(b.t())
            if self.alpha != 1:
                ga = ga * self.alpha
        if nf[2][0] is not None:
            gb = a.t().mm(g)
            if self.alpha != 1:
                gb = gb * self.alpha
        return (gbias if nf[0][0] is not None else None), ga, gb

    def backward_np(self, g):
        a, b = self._saved_pair()
        nf = self.next_functions
        al = self.alpha
        if nf[0][0] is not None and self.beta == 1 and len(self._in_meta[0][0]) == 1:
            gbias = g.sum(0)            # the nn.Linear bias: summed over the batch here directly
        else:
            gbias = g if self.beta == 1 else g * self.beta
        gb = None
        if nf[2][0] is not None:
            gb = _grad_rhs(a, g, b)
            if al != 1:
                gb = gb * al
        return (gbias if nf[0][0] is not None else None,
                ((g @ b.T) if al == 1 else (g @ b.T) * al) if nf[1][0] is not None else None,
                gb)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    a, b = mat1._data, mat2._data
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError("mat1 must be a matrix" if a.ndim != 2 else "mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise _shape_err(mat1, mat2)
    bs = input._data.shape
    n, m = a.shape[0], b.shape[1]
    if len(bs) > 2 or (bs and bs[-1] not in (1, m)) or (len(bs) == 2 and bs[0] not in (1, n)):
        raise RuntimeError(f"The expanded size of the tensor ({mat2._data.shape[1]}) must match the existing size "
                           f"({input._data.shape[-1]}) at non-singleton dimension 1 (hookgrad: bias of shape "
                           f"{list(bs)} for a result of shape [{n}, {m}])")
    if beta == 1 and alpha == 1 and not _G._op_hooks and input._data.dtype is a.dtype is b.dtype:
        # the common case (nn.Linear), without apply's generic argument handling
        node = _new(Addmm)
        out = node.forward(input._data, a, b)
        if (input.requires_grad or mat1.requires_grad or mat2.requires_grad) and _state.enabled:
            return node._record((input, mat1, mat2), out)
        return Tensor._make(out)
    if beta == 1 and alpha == 1:
        return Addmm.apply(input, mat1, mat2)
    return Addmm.apply(input, mat1, mat2, beta=beta, alpha=alpha)


def outer(input, vec2):
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


# ------------------------------------------------------------------------------------ einsum
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class Einsum(Node, name="ViewBackward0"):
    """np.einsum forward; the gradient of each operand is another einsum (of g and the other operands)."""

    def forward(self, *xs):
        return np.asarray(np.einsum(self.eq, *xs, optimize=len(xs) > 2))

    def backward(self, g):
        xs = self.saved_tensors
        ins, out = self.ins, self.out
        nf = self.next_functions
        grads = []
        for k, target in enumerate(ins):
            if nf[k][0] is None:
                grads.append(None)
                continue
            if len(set(target)) != len(target):
                raise NotImplementedError(f"hookgrad: einsum backward with a repeated subscript in one operand "
                                          f"('{target}') is not supported")
            subs = [s for j, s in enumerate(ins) if j != k]
            avail = set(out).union(*subs)
            tk = "".join(c for c in target if c in avail)
            gk = einsum(",".join([out] + subs) + "->" + tk, g, *[x for j, x in enumerate(xs) if j != k])
            if tk != target:
                for i, c in enumerate(target):
                    if c not in avail:
                        gk = gk.unsqueeze(i)
                gk = gk.expand(xs[k].shape)
            grads.append(gk)
        return tuple(grads)


def einsum(equation, *operands):
    """Einstein summation over the operands (NumPy's einsum; ellipsis broadcasting supported)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(ins) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    dt = operands[0]._data.dtype
    for t in operands[1:]:
        if t._data.dtype != dt:
            raise RuntimeError(f"expected scalar type {_scalar_name(dt)} but found {_scalar_name(t._data.dtype)}")
    # make the ellipsis explicit so that every operand has one letter per dim
    used = set(eq)
    free = [c for c in _LETTERS if c not in used]
    ell = max((t._data.ndim - len(s.replace("...", "")) for s, t in zip(ins, operands) if "..." in s), default=0)
    ell_letters = "".join(free[:ell])
    new_ins, ops, sizes = [], [], {}
    for k, (s, t) in enumerate(zip(ins, operands)):
        if "..." in s:
            n = t._data.ndim - len(s.replace("...", ""))
            s = s.replace("...", ell_letters[ell - n:] if n else "")
        if len(s) != t._data.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match the "
                               f"number of dimensions ({t._data.ndim}) for operand {k} and no ellipsis was given")
        for c, n in zip(s, t._data.shape):
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = n
            elif n != prev and n != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which does not broadcast "
                                   f"with previously seen size {prev}")
        new_ins.append(s)
        ops.append(t)
    ops = [t if all(sizes[c] == n for c, n in zip(s, t._data.shape)) else t.expand(tuple(sizes[c] for c in s))
           for s, t in zip(new_ins, ops)]
    if arrow:
        out = rhs.replace("...", ell_letters)
        for c in out:
            if c not in sizes:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   "operand")
    else:
        letters = "".join(new_ins)
        out = ell_letters + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell_letters))
    full = ",".join(new_ins) + "->" + out
    return Einsum.apply(*ops, eq=full, ins=new_ins, out=out, save=tuple(range(len(ops))))


def _scalar_name(npdt):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "bool": "Bool"}.get(npdt.name, npdt.name)
