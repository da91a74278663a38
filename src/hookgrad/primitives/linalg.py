"""Matrix products: matmul (mm/mv/dot/bmm/broadcast), addmm, outer, einsum."""
import math

import numpy as np

from .._tensor import Tensor
from ..autograd import graph as _G
from ..autograd.graph import Node
from ..autograd.grad_mode import _state
from .._errors import broadcast_error
from . import shape as _shape

_new = object.__new__


def _grad_rhs(a, g, b_t):
    """a.T @ g, laid out like ``b``: when b is a transposed view (``b_t``, nn.Linear's weight.t()),
    compute (g.T @ a).T so that the gradient that reaches the weight through TBackward0 is
    C-contiguous (no transposing copy when it is accumulated, and a fast optimizer step)."""
    if b_t:
        return (g.T @ a).T
    return a.T @ g


def _is_t(b):
    """Is ``b`` laid out as a transposed matrix? (kept by forward: b itself is saved only if the
    other operand needs a gradient, as PyTorch)"""
    f = b.flags
    return f.f_contiguous and not f.c_contiguous


def _check_dtypes(name, a, b):
    da, db = a._data.dtype, b._data.dtype
    if da == db and da.kind == "b" and name in ("mm", "matmul", "addmm"):
        from .._errors import not_implemented_for
        raise not_implemented_for("addmm_impl_cpu_", da)
    if da != db:
        if name == "bmm":
            raise RuntimeError(f"expected scalar type {_scalar_name(da)} but found {_scalar_name(db)}")
        if name == "mv":
            raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_scalar_name(db)}, "
                               f"{_scalar_name(da)}, and {_scalar_name(db)}")
        if name == "dot":
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_scalar_name(da)} and "
                               f"{_scalar_name(db)}")
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_long(a)} != {_long(b)}"
                           if name in ("mm", "matmul", "addmm") else
                           f"{name}: expected both inputs to have the same dtype, but got {_long(a)} and {_long(b)}")


def _long(t):
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}[t._data.dtype.name]


class Mm(Node, name="MmBackward0"):
    save = (0, 1)
    saved_names = ("self", "mat2")
    save_if = ((1,), (0,))          # self for the gradient of mat2, mat2 for that of self

    def forward(self, a, b):
        self._bt = _is_t(b)
        return a @ b

    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        gb = a.t().mm(g) if nf[1][0] is not None else None     # mat2 before self (alphabetical, as PyTorch)
        return (g.mm(b.t()) if nf[0][0] is not None else None), gb

    def backward_np(self, g):
        a, b = self.saved_arrays()
        nf = self.next_functions
        return (g @ b.T if nf[0][0] is not None else None,
                _grad_rhs(a, g, self._bt) if nf[1][0] is not None else None)


class Matmul(Node, name="MatmulBackward0"):
    """The gradient shared by mv, dot and bmm (operands of any rank >= 1). matmul itself is composed
    of these, as in PyTorch (see ``matmul``)."""
    save = (0, 1)
    saved_names = ("self", "other")
    save_if = ((1,), (0,))

    _rhs_first = False

    def forward(self, a, b):
        return np.matmul(a, b)

    def _ranks1(self, a, b):
        """Are the operands vectors? (an operand is None when it was not saved: its shape is in _in_meta)"""
        m = self._in_meta
        return (len(m[0][0]) if a is None else a.ndim) == 1, (len(m[1][0]) if b is None else b.ndim) == 1

    def backward(self, g):
        a, b = self.saved_tensors
        nf = self.next_functions
        ga = gb = None
        a1, b1 = self._ranks1(a, b)
        aa = a if a is None or not a1 else a.unsqueeze(0)
        bb = b if b is None or not b1 else b.unsqueeze(-1)
        gg = g
        if a1:
            gg = gg.unsqueeze(-2)
        if b1:
            gg = gg.unsqueeze(-1)
        # PyTorch computes the formulas in alphabetical order of the inputs' names: bmm's mat2 before self
        for k in ((1, 0) if self._rhs_first else (0, 1)):
            if k == 0 and nf[0][0] is not None:
                ga = gg.matmul(bb.transpose(-1, -2))
                if a1:
                    ga = ga.squeeze(-2)
                sa = self._in_meta[0][0]
                ga = ga.sum_to_size(sa) if ga.shape != sa else ga
            if k == 1 and nf[1][0] is not None:
                gb = aa.transpose(-1, -2).matmul(gg)
                if b1:
                    gb = gb.squeeze(-1)
                sb = self._in_meta[1][0]
                gb = gb.sum_to_size(sb) if gb.shape != sb else gb
        return ga, gb

    def backward_np(self, g):
        a, b = self.saved_arrays()
        nf = self.next_functions
        a1, b1 = self._ranks1(a, b)
        aa = a if a is None or not a1 else a[None]
        bb = b if b is None or not b1 else b[:, None]
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
    _rhs_first = True


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
    """PyTorch's composite matmul (aten _matmul_impl): dot / mv / mm, or the batch of the larger operand
    folded into mm / mv, or expand + reshape + bmm, so that the graph has PyTorch's nodes at every level."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    da, db = input._data.ndim, other._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 2 and db == 2:
        return mm(input, other)
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return _mv(input, other)
    if da == 1 and db == 2:
        return _squeeze_(mm(input.unsqueeze(0), other), 0)
    if _should_fold(input, other):
        transpose = db > da
        t1 = other.mT if transpose else input
        t2 = (input.t() if da == 2 else input) if transpose else other
        s1 = t1._data.shape
        out_shape = s1[:-1]
        t1f = t1.reshape(math.prod(out_shape), s1[-1])
        if t2._data.ndim == 2:
            out = _unsafe_view(mm(t1f, t2), out_shape + (t2._data.shape[1],))
            return out.mT.contiguous() if transpose else out
        return _unsafe_view(_mv(t1f, t2), out_shape)
    sa, sb = input._data.shape, other._data.shape
    n = sa[-2] if da > 1 else 1
    m1 = sa[-1]
    ba = sa[:max(da - 2, 0)]
    m2 = sb[-2] if db > 1 else sb[0]
    p = sb[-1] if db > 1 else 1
    bb = sb[:max(db - 2, 0)]
    if da == 3 and db == 3 and ba[0] != bb[0]:
        # PyTorch folds a broadcast batch of 1 that requires grad (no batch-sized gradient to sum)
        if ba[0] == 1 and input.requires_grad:
            return matmul(input.squeeze(0), other)
        if bb[0] == 1 and other.requires_grad:
            return matmul(input, other.squeeze(0))
    batch = _infer_size(ba, bb)
    nb = math.prod(batch)
    a3 = input.expand(batch + (n, m1)).reshape(nb, n, m1)
    if db == 1:
        b3 = other.expand(batch + (m2,)).reshape(nb, m2).unsqueeze(2)
    else:
        b3 = other.expand(batch + (m2, p)).reshape(nb, m2, p)
    out_shape = batch + ((n,) if da > 1 else ()) + ((p,) if db > 1 else ())
    out = bmm(a3, b3)
    if db == 1:
        out = out.squeeze(-1)
    return _unsafe_view(out, out_shape)


def _should_fold(a, b):
    """PyTorch's should_fold: fold the larger operand's batch into mm/mv rows?"""
    da, db = a._data.ndim, b._data.ndim
    a_larger = da >= db
    d1, d2 = (da, db) if a_larger else (db, da)
    if not (d1 >= 3 and d2 <= 2):
        return False
    if (b if a_larger else a).requires_grad:
        return True             # the smaller operand's gradient is one mm, not a batch summed afterwards
    if da == 2:
        return False
    x = a._data if a_larger else np.swapaxes(b._data, -1, -2)
    if x.size == 0:
        return True
    shp, st = x.shape, x.strides
    return all(st[i] == st[i + 1] * shp[i + 1] for i in range(d1 - 2))


def _infer_size(a, b):
    """Broadcast two batch shapes (PyTorch's infer_size, with its message)."""
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        raise broadcast_error(a, b, detail=False) from None


def _unsafe_view(t, shape):
    return _shape.UnsafeView.apply(t, shape=shape)


def _squeeze_(t, dim):
    """PyTorch's in-place squeeze_ of a fresh result (SqueezeBackward4; the result is not a view)."""
    return _shape.SqueezeInplace.apply(t, shape=t._data.shape[:dim] + t._data.shape[dim + 1:])


def _mv(input, vec):
    _check_dtypes("mv", input, vec)
    if input._data.shape[1] != vec._data.shape[0]:
        raise _shape_err(input, vec)
    return Mv.apply(input, vec)


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
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input._data.ndim}, {vec._data.ndim}")
    return _mv(input, vec)


def dot(input, other):
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input._data.ndim}D and {other._data.ndim}D tensors")
    _check_dtypes("dot", input, other)
    if input._data.shape[0] != other._data.shape[0]:
        raise _shape_err(input, other)
    return Dot.apply(input, other)


inner = dot


class Addmm(Node, name="AddmmBackward0"):
    save = (1, 2)
    saved_names = ("mat1", "mat2")
    save_if = ((2,), (1,))          # mat1 for the gradient of mat2, mat2 for that of mat1
    beta = 1
    alpha = 1

    def forward(self, bias, a, b):
        self._bt = _is_t(b)
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
        ga = gb = gbias = None
        if nf[1][0] is not None:        # mat1, mat2, self (alphabetical, as PyTorch)
            ga = g.mm(b.t())
            if self.alpha != 1:
                ga = ga * self.alpha
        if nf[2][0] is not None:
            gb = a.t().mm(g)
            if self.alpha != 1:
                gb = gb * self.alpha
        if nf[0][0] is not None:
            gbias = g if self.beta == 1 else g * self.beta
        return gbias, ga, gb

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
            gb = _grad_rhs(a, g, self._bt)
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
        if _state.enabled and (input._requires_grad or mat1._requires_grad or mat2._requires_grad
                               or input.requires_grad or mat1.requires_grad or mat2.requires_grad):
            return node._record((input, mat1, mat2), out)       # (the slots first: the property is slower)
        return Tensor._make(out)
    if a.dtype != b.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_scalar_name(a.dtype)} and "
                           f"{_scalar_name(b.dtype)}")
    if input._data.dtype != b.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_scalar_name(input._data.dtype)} and "
                           f"{_scalar_name(b.dtype)}")
    if beta == 1 and alpha == 1:
        return Addmm.apply(input, mat1, mat2)
    return Addmm.apply(input, mat1, mat2, beta=beta, alpha=alpha)


def outer(input, vec2):
    for name, t in (("self", input), ("vec2", vec2)):
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.dim()}-D")
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
