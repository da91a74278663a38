"""Matrix products: matmul (mm/mv/dot/bmm/broadcast), addmm, outer, einsum."""
import math

import numpy as np

from .._tensor import Tensor
from ..autograd.forward_ad import linear_jvp, multilinear_jvp, tsum, scaled  # noqa: F401  (forward AD)
from ..autograd import op_hooks as _G
from ..autograd.node import Node
from ..autograd.formulas import TENSORS
from ..autograd.grad_mode import _state
from .._errors import broadcast_error
from . import shape as _shape
from .._array import array_module
from .. import _parallel
from .._jit import fast, kernel, rows

_new = object.__new__


def _is_t(b):
    """Is ``b`` laid out as a transposed matrix? (kept by forward: b itself is saved only if the
    other operand needs a gradient, as PyTorch)"""
    f = b.flags
    return f.f_contiguous and not f.c_contiguous


def _product(a, b, bt):
    """a @ b for 2-d a, b (``bt``: b is a transposed matrix, _is_t). Few rows times a transposed matrix (nn.Linear's
    x @ W.T at a small batch) goes as (W x^T)^T and a copy back: OpenBLAS packs a transposed B slowly for a short A
    (1.7-2x for 16 rows, 13-26% for 40-48; even at 64)."""
    if bt and a.shape[0] <= 48 and b.shape[0] * b.shape[1] >= 1 << 16 and type(a) is np.ndarray \
            and type(b) is np.ndarray:
        return np.ascontiguousarray(np.matmul(b.T, a.T).T)
    return a @ b


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
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}[t._data.dtype.name]


class Mm(Node, name="MmBackward0"):
    opmath = "forward"     # bfloat16: computed in float32, rounded once; backward: products (_dtype.opmath)
    save = (0, 1)
    saved_names = ("self", "mat2")
    save_if = ((1,), (0,))          # self for the gradient of mat2, mat2 for that of self
    saved_attrs = ("self_sym_sizes=input_sizes(0)", "self_sym_strides=input_strides(0)", "mat2_sym_sizes=input_sizes(1)", "mat2_sym_strides=input_strides(1)")

    _cx = False         # complex operands: the formula conjugates them (grad_a = g b^H, grad_b = a^H g)

    jvp = multilinear_jvp

    def forward(self, a, b):
        self._bt = _is_t(b)
        if a.dtype.kind == "c":
            self._cx = True
        return _product(a, b, self._bt)

    def backward(self, g, F=TENSORS):
        a, b = F.saved(self)
        if self._cx:
            a, b = F.conj(a), F.conj(b)
        nf = self.next_functions
        gb = F.t_mm(a, g, self._bt) if nf[1][0] is not None else None     # mat2 before self (alphabetical, as PyTorch)
        return (F.mm(g, F.t(b)) if nf[0][0] is not None else None), gb


def batched_matmul(a, b):
    """np.matmul; a batch of products of NumPy float arrays (bmm's [n, i, k] @ [n, k, j]) is split over the
    pool (``_parallel``), each chunk one np.matmul into its slice of the result: the same products, on every
    core (BLAS runs a small product on one thread)."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 3 == b.ndim and a.dtype == b.dtype \
            and a.dtype.kind == "f" and a.shape[0] == b.shape[0] > 1:
        n, i, k = a.shape
        j = b.shape[2]
        grain = max(1, (1 << 21) // max(1, 2 * i * k * j))       # ~2 MFLOP (~100 us) per chunk at least
        if _parallel.chunks(n, grain) > 1 and b.shape[1] == k:
            out = np.empty((n, i, j), a.dtype)
            _parallel.parallel_for(n, lambda lo, hi: np.matmul(a[lo:hi], b[lo:hi], out=out[lo:hi]), grain)
            return out
    return np.matmul(a, b)


class Matmul(Node, name="MatmulBackward0"):
    """The gradient shared by mv, dot and bmm (operands of any rank >= 1). matmul itself is composed
    of these, as in PyTorch (see ``matmul``)."""
    opmath = "forward"     # bfloat16: computed in float32, rounded once; backward: products (_dtype.opmath)
    save = (0, 1)
    saved_names = ("self", "other")
    save_if = ((1,), (0,))

    _rhs_first = False
    _cx = False         # complex operands: the formula conjugates them (grad_a = g b^H, grad_b = a^H g)

    jvp = multilinear_jvp

    def forward(self, a, b):
        if a.dtype.kind == "c":
            self._cx = True
        return batched_matmul(a, b)

    def _ranks1(self, a, b):
        """Are the operands vectors? (an operand is None when it was not saved: its shape is in _in_meta)"""
        m = self._in_meta
        return (len(m[0][0]) if a is None else a.ndim) == 1, (len(m[1][0]) if b is None else b.ndim) == 1

    def backward(self, g, F=TENSORS):
        a, b = F.saved(self)
        if self._cx:
            a, b = F.conj(a), F.conj(b)
        nf = self.next_functions
        ga = gb = None
        a1, b1 = self._ranks1(a, b)
        aa = a if a is None or not a1 else F.unsqueeze(a, 0)
        bb = b if b is None or not b1 else F.unsqueeze(b, -1)
        gg = g
        if a1:
            gg = F.unsqueeze(gg, -2)
        if b1:
            gg = F.unsqueeze(gg, -1)
        # PyTorch computes the formulas in alphabetical order of the inputs' names: bmm's mat2 before self;
        # each is summed over broadcast batch dims before the next is computed (a create_graph graph's order)
        matmul_ = batched_matmul if type(g) is np.ndarray else F.matmul     # arrays: on the pool
        for k in ((1, 0) if self._rhs_first else (0, 1)):
            if k == 0 and nf[0][0] is not None:
                ga = matmul_(gg, F.transpose(bb, -1, -2))
                if a1:
                    ga = F.squeeze(ga, -2)
                ga = F.sum_to(ga, self._in_meta[0][0])
            if k == 1 and nf[1][0] is not None:
                gb = matmul_(F.transpose(aa, -1, -2), gg)
                if b1:
                    gb = F.squeeze(gb, -1)
                gb = F.sum_to(gb, self._in_meta[1][0])
        return ga, gb


class Dot(Matmul, name="DotBackward0"):
    saved_names = ("self", "tensor")

    def backward(self, g):
        a, b = self.saved_values
        nf = self.next_functions
        if self._cx:
            a, b = a.conj() if a is not None else a, b.conj() if b is not None else b
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
    if _G._op_hooks and _G.composite_open("matmul"):     # the profiler's aten::matmul range
        return _G.run_composite("matmul", matmul, (input, other))
    if _G._input_cast[0] is not None:   # autocast casts aten::matmul's arguments
        input, other = _G.cast_composite("matmul", (input, other))
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
    batch = ba if ba == bb else _infer_size(ba, bb)
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
    if _G._input_cast[0] is not None:   # autocast casts aten::mm's arguments
        input, mat2 = _G.cast_composite("mm", (input, mat2))
    if input._data.ndim != 2:
        raise RuntimeError(f"self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix")
    _check_dtypes("mm", input, mat2)
    if input._data.shape[1] != mat2._data.shape[0]:
        raise _shape_err(input, mat2)
    return Mm.apply(input, mat2)


def bmm(input, mat2):
    if _G._input_cast[0] is not None:   # autocast casts aten::bmm's arguments
        input, mat2 = _G.cast_composite("bmm", (input, mat2))
    _batch_check(input, mat2)
    return Bmm.apply(input, mat2)


def mv(input, vec):
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input._data.ndim}, {vec._data.ndim}")
    return _mv(input, vec)


def dot(input, tensor):
    if input._data.ndim != 1 or tensor._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input._data.ndim}D and {tensor._data.ndim}D tensors")
    _check_dtypes("dot", input, tensor)
    if input._data.shape[0] != tensor._data.shape[0]:
        raise _shape_err(input, tensor)
    return Dot.apply(input, tensor)


def inner(input, other, *, out=None):
    """The sum of products over the last dims (a number multiplies): tensordot over the last dims, as PyTorch."""
    if not isinstance(other, Tensor):
        raise TypeError(f"inner(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if input._data.ndim == 0 or other._data.ndim == 0:
        from .elementwise import mul
        return mul(input, other)
    if input._data.shape[-1] != other._data.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input._data.shape)} and {list(other._data.shape)}")
    return tensordot(input, other, dims=([-1], [-1]))



@kernel
def _add_row_kernel(x, b):
    """x (rows, n) += b (n,) in place, row by row (NumPy's broadcasting add pays its inner loop's start per row:
    2-3x slower for nn.Linear's bias on 384-wide rows)."""
    for r in range(x.shape[0]):
        xr = x[r]
        for c in range(b.shape[0]):
            xr[c] += b[c]


class Addmm(Node, name="AddmmBackward0"):
    opmath = "forward"     # bfloat16: computed in float32, rounded once; backward: products (_dtype.opmath)
    save = (1, 2)
    saved_names = ("mat1", "mat2")
    save_if = ((2,), (1,))          # mat1 for the gradient of mat2, mat2 for that of mat1
    saved_attrs = ("alpha", "beta", "mat1_sym_sizes=input_sizes(1)", "mat1_sym_strides=input_strides(1)", "mat2_sym_sizes=input_sizes(2)", "mat2_sym_strides=input_strides(2)")
    beta = 1
    alpha = 1

    def jvp(self, p, t, out):
        prod = tsum(None if t[1] is None else t[1].mm(p[2]), None if t[2] is None else p[1].mm(t[2]))
        return tsum(scaled(t[0], self.beta), scaled(prod, self.alpha))

    def forward(self, bias, a, b):
        self._bt = _is_t(b)
        if a.dtype.kind == "c":
            self._cx = True
        out = _product(a, b, self._bt)
        if self.alpha != 1:
            out *= self.alpha
        if self.beta == 1:
            if out.size >= 1 << 14 and bias.ndim == 1 and out.ndim == 2 and out.shape[1] == bias.shape[0] \
                    and out.flags.c_contiguous and fast(out, bias):     # (few rows: NumPy's add costs less to call;
                rows(_add_row_kernel, out, bias, grain_elems=1 << 18)  # chunks of 2^18: the pool's start costs more)
            else:
                _parallel.ufunc(np.add, out, bias, out=out)
        elif self.beta != 0:
            out += self.beta * bias
        return out

    _cx = False         # complex operands: the formula conjugates them

    def backward(self, g, F=TENSORS):
        a, b = F.saved(self)
        if self._cx:
            a, b = F.conj(a), F.conj(b)
        nf = self.next_functions
        ga = gb = gbias = None
        if nf[1][0] is not None:        # mat1, mat2, self (alphabetical, as PyTorch)
            ga = F.mm(g, F.t(b))
            if self.alpha != 1:
                ga = ga * self.alpha
        if nf[2][0] is not None:
            gb = F.t_mm(a, g, self._bt)
            if self.alpha != 1:
                gb = gb * self.alpha
        if nf[0][0] is not None:        # a bias of the batch's row shape is summed by Node._run_backward
            gbias = g if self.beta == 1 else g * self.beta
        return gbias, ga, gb


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    if _G._input_cast[0] is not None:   # autocast casts aten::addmm's arguments
        input, mat1, mat2 = _G.cast_composite("addmm", (input, mat1, mat2))
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
    opmath = "forward"     # bfloat16: computed in float32, rounded once; backward: einsums (_dtype.opmath)

    jvp = multilinear_jvp

    def forward(self, *xs):
        return array_module(xs[0]).asarray(np.einsum(self.eq, *xs, optimize=len(xs) > 2))

    def backward(self, g):
        xs = self.saved_values
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
            others = [x.conj() if x.is_complex() else x for j, x in enumerate(xs) if j != k]
            gk = einsum(",".join([out] + subs) + "->" + tk, g, *others)
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


# ------------------------------------------------------------ more products
def _expand_check(shape, target):
    """PyTorch's expand error when ``shape`` (an input added to a product) does not broadcast to ``target``."""
    shape, target = tuple(shape), tuple(target)
    lead = len(target) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(target)}): the number of sizes "
                           f"provided ({len(target)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({len(shape)})")
    for i, s in enumerate(shape):
        if s != 1 and s != target[i + lead]:
            raise RuntimeError(f"The expanded size of the tensor ({target[i + lead]}) must match the existing size "
                               f"({s}) at non-singleton dimension {i + lead}.  Target sizes: {list(target)}.  "
                               f"Tensor sizes: {list(shape)}")


class _AddProduct(Node):
    """beta * input + alpha * product(a, b): addmv, addr, baddbmm, addbmm (one node each, as PyTorch)."""
    opmath = "forward"     # bfloat16: computed in float32, rounded once; backward: products (_dtype.opmath)
    save = (1, 2)
    save_if = ((2,), (1,))
    beta = 1
    alpha = 1

    def forward(self, bias, a, b):
        xp = array_module(a)
        out = xp.asarray(self._product(a, b))
        if self.alpha != 1:
            out = out * self.alpha
        if self.beta != 0:
            out = out + (bias if self.beta == 1 else bias * self.beta)
        elif out.shape != bias.shape:
            out = np.broadcast_to(out, np.broadcast_shapes(out.shape, bias.shape))
        return xp.ascontiguousarray(out.astype(a.dtype, copy=False))

    def backward(self, g):
        a, b = self.saved_values
        nf = self.next_functions
        if g.is_complex():      # complex operands: the formulas take their conjugates
            a, b = a.conj() if a is not None else a, b.conj() if b is not None else b
        gbias = (g if self.beta == 1 else g * self.beta) if nf[0][0] is not None else None
        ga = self._grad_a(g, b) if nf[1][0] is not None else None
        gb = self._grad_b(g, a) if nf[2][0] is not None else None
        if self.alpha != 1:
            ga = ga * self.alpha if ga is not None else None
            gb = gb * self.alpha if gb is not None else None
        return gbias, ga, gb


class Addmv(_AddProduct, name="AddmvBackward0"):
    saved_names = ("mat", "vec")
    saved_attrs = ("alpha", "beta")
    _product = staticmethod(np.matmul)

    def _grad_a(self, g, vec):
        return g.unsqueeze(1) * vec

    def _grad_b(self, g, mat):
        return mat.t().mv(g)


class Addr(_AddProduct, name="AddrBackward0"):
    saved_names = ("vec1", "vec2")
    saved_attrs = ("alpha", "beta")
    _product = staticmethod(np.outer)

    def _grad_a(self, g, vec2):
        return g.mv(vec2)

    def _grad_b(self, g, vec1):
        return g.t().mv(vec1)


class Baddbmm(_AddProduct, name="BaddbmmBackward0"):
    saved_names = ("batch1", "batch2")
    saved_attrs = ("alpha", "beta")
    _product = staticmethod(np.matmul)

    def _grad_a(self, g, b2):
        return g.bmm(b2.transpose(1, 2))

    def _grad_b(self, g, b1):
        return b1.transpose(1, 2).bmm(g)


class Addbmm(_AddProduct, name="AddbmmBackward0"):
    saved_names = ("batch1", "batch2")
    saved_attrs = ("alpha", "beta", "batch1_sym_argsize_0=b1_shape[0]", "batch1_sym_argsize_1=b1_shape[1]",
                   "batch2_sym_argsize_2=b2_shape[2]")

    def forward(self, bias, a, b):
        self.b1_shape, self.b2_shape = a.shape, b.shape
        return _AddProduct.forward(self, bias, a, b)

    @staticmethod
    def _product(a, b):
        return np.matmul(a, b).sum(0)

    def _grad_a(self, g, b2):
        return g.unsqueeze(0).expand(b2.shape[0], *g.shape).bmm(b2.transpose(1, 2))

    def _grad_b(self, g, b1):
        return b1.transpose(1, 2).bmm(g.unsqueeze(0).expand(b1.shape[0], *g.shape))


def _add_product(cls, input, a, b, out_shape, beta, alpha, dtype_name):
    for t in (input, a, b):
        if not isinstance(t, Tensor):
            raise TypeError(f"{dtype_name}(): argument must be Tensor, not {type(t).__name__}")
    _expand_check(input._data.shape, out_shape)
    kw = {}
    if beta != 1:
        kw["beta"] = beta
    if alpha != 1:
        kw["alpha"] = alpha
    return cls.apply(input, a, b, **kw)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat @ vec)."""
    if mat._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input._data.ndim}, {mat._data.ndim}, "
                           f"{vec._data.ndim}")
    dts = (input._data.dtype, mat._data.dtype, vec._data.dtype)
    if len(set(dts)) > 1:
        raise RuntimeError("addmv input tensors must have the same dtype, but got "
                           f"{_scalar_name(dts[0])}, {_scalar_name(dts[1])}, and {_scalar_name(dts[2])}")
    n, m = mat._data.shape
    ins = input._data.shape
    if m != vec._data.shape[0] or not (ins in ((n,), (1,), ()) ):
        raise RuntimeError(f"size mismatch, got input ({ins[0] if ins else 1}), mat ({n}x{m}), vec "
                           f"({vec._data.shape[0]})")
    return _finish_out(_add_product(Addmv, input, mat, vec, (n,), beta, alpha, "addmv"), out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2)."""
    for name, t in (("vec1", vec1), ("vec2", vec2)):
        if t._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {t._data.ndim}-D")
    from .. import _dtype as D
    dt = D.result_type_of([input, vec1, vec2])
    if dt.np != input._data.dtype or dt.np != vec1._data.dtype or dt.np != vec2._data.dtype:
        input, vec1, vec2 = (t.to(dt) for t in (input, vec1, vec2))
    shape = (vec1._data.shape[0], vec2._data.shape[0])
    return _finish_out(_add_product(Addr, input, vec1, vec2, shape, beta, alpha, "addr"), out)


def _batch_check(b1, b2):
    if b1._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    sa, sb = b1._data.shape, b2._data.shape
    if sa[0] != sb[0] or sa[2] != sb[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] but "
                           f"got: [{sb[0]}, {sb[1]}].")
    _check_dtypes("bmm", b1, b2)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * bmm(batch1, batch2)."""
    if _G._input_cast[0] is not None:   # autocast casts aten::baddbmm's arguments
        input, batch1, batch2 = _G.cast_composite("baddbmm", (input, batch1, batch2))
    _batch_check(batch1, batch2)
    shape = batch1._data.shape[:2] + batch2._data.shape[2:]
    return _finish_out(_add_product(Baddbmm, input, batch1, batch2, shape, beta, alpha, "baddbmm"), out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (the sum over the batch of batch1[i] @ batch2[i])."""
    if _G._input_cast[0] is not None:   # autocast casts aten::addbmm's arguments
        input, batch1, batch2 = _G.cast_composite("addbmm", (input, batch1, batch2))
    _batch_check(batch1, batch2)
    shape = (batch1._data.shape[1], batch2._data.shape[2])
    return _finish_out(_add_product(Addbmm, input, batch1, batch2, shape, beta, alpha, "addbmm"), out)


def _finish_out(r, out):
    if out is not None:
        out.copy_(r)
        return out
    return r


class Vdot(Dot, name="VdotBackward0"):
    """sum(conj(a) * b): grad_a = conj(g) b, grad_b = g a (PyTorch's formulas)."""
    saved_names = ("self", "other")

    def forward(self, a, b):
        if a.dtype.kind == "c":
            self._cx = True
            return np.matmul(np.conjugate(a), b)
        return np.matmul(a, b)

    def backward(self, g):
        a, b = self.saved_values
        nf = self.next_functions
        if not self._cx:
            return (g * b if nf[0][0] is not None else None), (g * a if nf[1][0] is not None else None)
        return (g.conj() * b if nf[0][0] is not None else None), (g * a if nf[1][0] is not None else None)


def vdot(input, other, *, out=None):
    """The dot product of two 1-D tensors (real tensors: the same as dot)."""
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input._data.ndim}D and {other._data.ndim}D tensors")
    _check_dtypes("dot", input, other)
    if input._data.shape[0] != other._data.shape[0]:
        raise _shape_err(input, other)
    return _finish_out(Vdot.apply(input, other), out)


def chain_matmul(*matrices, out=None):
    """Deprecated: the product of the matrices (linalg.multi_dot's order: left to right here)."""
    from .._warnings import warn_once
    warn_once("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
              "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
              "parameters.")
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        if t._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t._data.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return _finish_out(matrices[0].clone(), out)
    r = matrices[0]
    for t in matrices[1:]:
        r = mm(r, t)
    return _finish_out(r, out)


def tensordot(a, b, dims=2, out=None):
    """Contract the last ``dims`` dims of a with the first of b (or the listed pairs): permute, reshape, mm."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a._data.ndim or dims > b._data.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da = list(range(-dims, 0))
        db = list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError(f"both dimension lists should have same length")
    na, nb = a._data.ndim, b._data.ndim
    from ._dispatch import wrap_dim
    ca = [wrap_dim(d, na) for d in da]
    cb = [wrap_dim(d, nb) for d in db]
    sa, sb = a._data.shape, b._data.shape
    for x, y, ox, oy in zip(ca, cb, da, db):
        if sa[x] != sb[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa[x]} in dim {ox} and "
                               f"second has size {sb[y]} in dim {oy}")
    fa = [d for d in range(na) if d not in ca]
    fb = [d for d in range(nb) if d not in cb]
    k = math.prod(sa[d] for d in ca)
    m = math.prod(sa[d] for d in fa)
    n = math.prod(sb[d] for d in fb)
    am = a.permute(fa + ca).reshape(m, k)
    bm = b.permute(cb + fb).reshape(k, n)
    r = mm(am, bm).view(tuple(sa[d] for d in fa) + tuple(sb[d] for d in fb))
    return _finish_out(r, out)


def kron(input, other, *, out=None):
    """The Kronecker product: every element of input times all of other, as blocks."""
    na, nb = input._data.ndim, other._data.ndim
    nd = max(na, nb)
    a = input.reshape((1,) * (nd - na) + input._data.shape)
    b = other.reshape((1,) * (nd - nb) + other._data.shape)
    sa, sb = a._data.shape, b._data.shape
    a = a.reshape(tuple(v for s in sa for v in (s, 1)))
    b = b.reshape(tuple(v for s in sb for v in (1, s)))
    r = a * b
    return _finish_out(_unsafe_view(r, tuple(x * y for x, y in zip(sa, sb))), out)


class LinalgCross(Node, name="LinalgCrossBackward0"):
    save = (0, 1)
    saved_names = ("self", "other")
    save_if = ((1,), (0,))

    def forward(self, a, b):
        return np.cross(a, b, axis=self.dim)

    def backward(self, g):
        a, b = self.saved_values
        nf = self.next_functions
        ga = LinalgCross.apply(b, g, dim=self.dim) if nf[0][0] is not None else None
        gb = LinalgCross.apply(g, a, dim=self.dim) if nf[1][0] is not None else None
        return ga, gb


_CROSS_WARNING = ("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                  "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree with "
                  "that of linalg.cross in a future release.")


def cross(input, other, dim=None, *, out=None):
    """The cross product of 3-vectors along dim (default: the first dim of size 3, with PyTorch's warning)."""
    from ._dispatch import wrap_dim
    from .._warnings import warn_once
    if input._data.ndim != other._data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if dim is None:
        warn_once(_CROSS_WARNING)
        shape = np.broadcast_shapes(input._data.shape, other._data.shape)
        d = next((i for i, s in enumerate(shape) if s == 3), None)
        if d is None:
            raise RuntimeError("no dimension of size 3 in input")
    else:
        d = wrap_dim(dim, input._data.ndim)
    sa, sb = input._data.shape, other._data.shape
    if sa[d] != 3 or sb[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim if dim is not None else d} must have length 3. "
                           f"Got {sa[d]} and {sb[d]}")
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(input._data.dtype)} but found "
                           f"{_scalar_name(other._data.dtype)}")
    try:
        np.broadcast_shapes(sa, sb)
    except ValueError:
        raise broadcast_error(sa, sb) from None
    return _finish_out(LinalgCross.apply(input, other, dim=d), out)
