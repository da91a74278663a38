"""torch.func's differentiating transforms, on hookgrad's one autograd engine.

- ``grad``/``vjp`` make each differentiated input a fresh node of the graph (a new leaf, or a view of an
  input that already requires grad, so that an outer transform differentiates through), run ``f`` under
  enable_grad and call ``autograd.grad``. Under an outer transform (or when an input requires grad) the
  backward runs with create_graph, which is how ``grad(grad(f))`` and ``jacrev(jacrev(f))`` compose; at the
  top level the results are plain tensors, as torch.func's unwrapped ones.
- ``jvp`` (and ``jacfwd`` on it) computes J t in ``_jvp_core``, the one place: the transpose of the transpose
  (g = J^T u for a u requiring grad, then J t = d<g, t>/du).
- Under ``vmap`` the differentiated inputs are expanded to every active vmap level, so that each sample has
  its own copy and the engine's one backward gives per-sample gradients; a cotangent batched at a level
  the forward did not see (``vmap(vjp_fn)``, jacrev's basis) is run one sample at a time.
"""
import threading

from ..utils._pytree import tree_flatten, tree_unflatten, tree_map, treespec_pprint
from . import _batched
from ._batched import BatchedTensor, active_levels, level_info

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]


class _Depth(threading.local):
    n = 0


_depth = _Depth()
_batched.transform_depth[0] = lambda: _depth.n      # (functorch numbers vmap levels among all transforms)


def _torch():
    import hookgrad
    return hookgrad


def _is_tensor(x):
    from .._tensor import Tensor
    return isinstance(x, (Tensor, BatchedTensor))


# ------------------------------------------------------------------ physical layout of batched tensors
def _peel(x):
    """The plain tensor under ``x`` and the vmap levels of its batch dims, in their physical order."""
    levels = []
    while type(x) is BatchedTensor:
        levels.append(x._level)
        x = x._value
    return x, levels[::-1]


def _build(p, levels):
    for level in levels:
        p = BatchedTensor(p, level)
    return p


def _to_full(x, levels):
    """The plain tensor of ``x`` with one batch dim per level of ``levels`` in front (expanded where ``x`` is
    not batched at a level)."""
    p, have = _peel(x)
    extra = [lv for lv in have if lv not in levels]
    if extra:
        raise RuntimeError("torch.func: a tensor batched by a vmap that was not active when the transform began "
                           "reached it")
    if have == levels:
        return p
    for i, lv in enumerate(levels):
        if lv not in have:
            p = p.unsqueeze(i)
    sizes = [level_info(lv)[1] for lv in levels]
    return p.expand(*sizes, *p.shape[len(levels):])


def _make_diff(x, levels):
    if not _is_tensor(x):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    p = _to_full(x, levels)
    leaf = p.view_as(p) if p.requires_grad else p.detach().requires_grad_()
    return _build(leaf, levels), leaf, p.requires_grad


def _detach(tree):
    return tree_map(lambda t: t.detach() if _is_tensor(t) else t, tree)


def _split_aux(out, has_aux, api):
    """``(output, aux)`` of f's result ``out`` under ``has_aux`` (``(out, None)`` without), with PyTorch's checks:
    a pair, whose ``aux`` functorch unwraps from the transform's level (every leaf must be a tensor)."""
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    for leaf in tree_flatten(out[1])[0]:
        if leaf is not None and not _is_tensor(leaf):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return out


def _reaches_outer(roots, leaves):
    """True if the graph of the plain ``roots`` reaches a tensor requiring grad other than the transform's own
    ``leaves`` (a parameter captured by ``f``, say): then, as torch.func's results, ours keep their graph."""
    own = {id(leaf) for leaf in leaves}
    stack = [r.grad_fn for r in roots if r.grad_fn is not None]
    if any(r.grad_fn is None and r.requires_grad and id(r) not in own for r in roots):
        return True
    seen = set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            if id(var) not in own:
                return True
            continue
        stack.extend(nf for nf, _ in fn.next_functions)
    return False


def _zeros(leaf):
    return _torch().zeros_like(leaf)


def _autograd_grad(outs, leaves, cots, retain, create):
    """autograd.grad of the plain ``outs`` with zeros for the leaves they do not reach (functorch's)."""
    pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
    if not pairs:
        return [_zeros(leaf) for leaf in leaves]
    gs = _torch().autograd.grad([o for o, _ in pairs], leaves, [c for _, c in pairs], retain_graph=retain,
                                create_graph=create, allow_unused=True)
    return [_zeros(leaf) if g is None else g for g, leaf in zip(gs, leaves)]


def _backward(outs, leaves, cots, levels, retain, create):
    """The vector-Jacobian products of ``outs`` (made under the vmap ``levels``) with ``cots`` for ``leaves``."""
    extra = sorted({lv for c in cots if _is_tensor(c) for lv in _peel(c)[1]} - set(levels))
    if extra:
        top = extra[-1]
        size = level_info(top)[1]
        rows = []
        for b in range(size):
            cb = [c._value.select(0, b) if type(c) is BatchedTensor and c._level == top else c for c in cots]
            rows.append(_backward(outs, leaves, cb, levels, True, create))
        stack = _torch().stack
        return [BatchedTensor(stack([r[i] for r in rows]), top) for i in range(len(leaves))]
    full_outs = [_to_full(o, levels) for o in outs]
    full_cots = [_to_full(c, levels) for c in cots]
    for i, (o, c) in enumerate(zip(full_outs, full_cots)):
        if tuple(o.shape) != tuple(c.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {c.shape[len(levels):]} and "
                               f"output[{i}] has a shape of {o.shape[len(levels):]}.")
    grads = _autograd_grad(full_outs, leaves, full_cots, retain, create)
    return [_build(g, levels) for g in grads]


def _jvp_core(outs, leaves, tangents, levels, create):
    """J t for each output: the one place jvp is computed (double vjp: J t = d/du <J^T u, t>)."""
    torch = _torch()
    full_outs = [_to_full(o, levels) for o in outs]
    full_tangents = [_to_full(t, levels) for t in tangents]
    diff = [i for i, o in enumerate(full_outs) if o.requires_grad]
    result = [None] * len(outs)
    if diff:
        us = [torch.zeros_like(full_outs[i]).requires_grad_() for i in diff]
        gs = torch.autograd.grad([full_outs[i] for i in diff], leaves, us, create_graph=True, allow_unused=True)
        pairs = [(g, t) for g, t in zip(gs, full_tangents) if g is not None and g.requires_grad]
        if pairs:
            jts = torch.autograd.grad([g for g, _ in pairs], us, [t.to(g.dtype) for g, t in pairs],
                                      create_graph=create, retain_graph=create, allow_unused=True)
            for i, jt in zip(diff, jts):
                result[i] = jt
    return [_build(torch.zeros_like(o) if r is None else r, levels) for o, r in zip(full_outs, result)]


# ------------------------------------------------------------------ argnums (torch.func's checks and messages)
def _validate_and_wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _slice_argnums(args, argnums, as_tuple=True):
    if not isinstance(argnums, int) and not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, tuple):
        argnums = tuple(_validate_and_wrap_argnum(a, len(args)) for a in argnums)
        if len(argnums) == 0:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return tuple(args[i] for i in argnums)
    argnums = _validate_and_wrap_argnum(argnums, len(args))
    return (args[argnums],) if as_tuple else args[argnums]


def _replace_args(args, new, argnums):
    if isinstance(argnums, int):
        argnums = _validate_and_wrap_argnum(argnums, len(args))
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    argnums = tuple(_validate_and_wrap_argnum(a, len(args)) for a in argnums)
    return tuple(new[argnums.index(i)] if i in argnums else a for i, a in enumerate(args))


class _Transform:
    """Enter a differentiating transform: grad mode on, one level deeper (NOTE: the depth decides whether the
    backward keeps its graph for an outer transform)."""

    def __enter__(self):
        self.outer = _depth.n > 0
        _depth.n += 1
        self.mode = _torch().enable_grad()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        _depth.n -= 1
        return False


def _differentiable(tree, levels):
    flat, spec = tree_flatten(tree)
    made = [_make_diff(x, levels) for x in flat]
    return (tree_unflatten([m[0] for m in made], spec), [m[1] for m in made], spec,
            any(m[2] for m in made))


# ------------------------------------------------------------------ grad, grad_and_value
def grad_and_value_impl(func, argnums, has_aux, args, kwargs):
    levels = active_levels()
    with _Transform() as tr:
        diff_args = _slice_argnums(args, argnums, as_tuple=False)
        new_diff, leaves, spec, tracked = _differentiable(diff_args, levels)
        args = _replace_args(args, new_diff, argnums)
        output, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value(f)(*args)")
        if not _is_tensor(output):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        full = _to_full(output, levels)
        keep = tr.outer or tracked or _reaches_outer([full], leaves)
        grads = _autograd_grad([full], leaves, [_torch().ones_like(full)], keep, keep)
        grad_input = tree_unflatten([_build(g, levels) for g in grads], spec)
    if not keep:
        output, aux = _detach(output), _detach(aux)
    if has_aux:
        return grad_input, (output, aux)
    return grad_input, output


def grad_and_value(func, argnums=0, has_aux=False):
    """``grad_and_value(f)(*args)``: ``(grad(f)(*args), f(*args))`` (with ``has_aux``: ``(grad, (value, aux))``)."""
    def wrapper(*args, **kwargs):
        return grad_and_value_impl(func, argnums, has_aux, args, kwargs)
    return _wraps(func, wrapper)


def grad(func, argnums=0, has_aux=False):
    """``grad(f)(*args)``: the gradient of the scalar ``f(*args)`` with respect to ``args[argnums]`` (a pytree of
    tensors, or a tuple of them for a tuple ``argnums``); nests with itself and with vmap/vjp/jvp.

    >>> import hookgrad as torch
    >>> torch.func.grad(lambda x: (x ** 2).sum())(torch.tensor([1., 2.]))
    tensor([2., 4.])
    """
    def wrapper(*args, **kwargs):
        results = grad_and_value_impl(func, argnums, has_aux, args, kwargs)
        if has_aux:
            g, (_, aux) = results
            return g, aux
        return results[0]
    return _wraps(func, wrapper)


def _wraps(func, wrapper):
    import functools
    try:
        return functools.wraps(func)(wrapper)
    except (AttributeError, TypeError):
        return wrapper


# ------------------------------------------------------------------ vjp
def _assert_non_empty_tensor_output(output, api):
    if (len(output) == 1 and output[0] is None) or len(output) < 1:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {output})")
    for o in output:
        if not _is_tensor(o):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def vjp(func, *primals, has_aux=False):
    """``(f(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives the vector-Jacobian products for every primal."""
    return _vjp_with_argnums(func, *primals, has_aux=has_aux)


def _vjp_with_argnums(func, *primals, argnums=None, has_aux=False):
    levels = active_levels()
    with _Transform() as tr:
        if argnums is None:
            new_diff, leaves, diff_spec, tracked = _differentiable(primals, levels)
            primals = new_diff
        else:
            diff = _slice_argnums(primals, argnums, as_tuple=False)
            new_diff, leaves, diff_spec, tracked = _differentiable(diff, levels)
            primals = _replace_args(primals, new_diff, argnums)
        primals_out, aux = _split_aux(func(*primals), has_aux, "vjp(f, *primals)")
        flat_out, out_spec = tree_flatten(primals_out)
        _assert_non_empty_tensor_output(flat_out, "vjp(f, *primals)")
        for o in flat_out:
            if not (o.is_floating_point() or o.is_complex()):
                raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                                   f"Tensor with dtype {o.dtype}")
    keep = tr.outer or tracked or _reaches_outer([_to_full(o, levels) for o in flat_out], leaves)
    results = primals_out if keep else _detach(primals_out)
    if has_aux and not keep:
        aux = _detach(aux)

    def wrapper(cotangents, retain_graph=True, create_graph=None):
        flat_cot, cot_spec = tree_flatten(cotangents)
        if out_spec != cot_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {treespec_pprint(cot_spec)}, primal output: "
                               f"{treespec_pprint(out_spec)}")
        if create_graph is None:
            create_graph = keep or _depth.n > 0 or any(_is_tensor(c) and c.requires_grad for c in flat_cot)
        with _torch().enable_grad() if create_graph else _torch().no_grad():
            grads = _backward(flat_out, leaves, flat_cot, levels, retain_graph or create_graph, create_graph)
        return tree_unflatten(grads, diff_spec)

    if has_aux:
        return results, wrapper, aux
    return results, wrapper


# ------------------------------------------------------------------ jvp
_JVP = "jvp(f, primals, tangents)"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(f(*primals), J t)``: the Jacobian-vector product of ``f`` at ``primals`` with ``tangents``."""
    return _jvp_with_argnums(func, primals, tangents, argnums=None, strict=strict, has_aux=has_aux)


def _assert_non_empty_list_of_tensors(output, api, argname):
    if len(output) == 0:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for out in output:
        if not _is_tensor(out):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(out)}")


def _jvp_with_argnums(func, primals, tangents, argnums, *, strict=False, has_aux):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    diff_args = primals if argnums is None else _slice_argnums(primals, argnums)
    flat_primals, primals_spec = tree_flatten(diff_args)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{primals_spec} and tangents with structure {tangents_spec}")
    _assert_non_empty_list_of_tensors(flat_primals, _JVP, "primals")
    _assert_non_empty_list_of_tensors(flat_tangents, _JVP, "tangents")
    for p, t in zip(flat_primals, flat_tangents):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(p.shape)} while the given "
                               f"forward gradient is of size {list(t.shape)}.")
    levels = active_levels()
    with _Transform() as tr:
        new_flat, leaves, _, tracked = _differentiable(flat_primals, levels)
        duals = tree_unflatten(list(new_flat), primals_spec)
        if argnums is not None:
            duals = _replace_args(primals, duals if not isinstance(argnums, int) else duals[0], argnums)
        out, aux = _split_aux(func(*duals), has_aux, _JVP)
        flat_out, spec = tree_flatten(out)
        _assert_non_empty_tensor_output(flat_out, _JVP)
        keep = tr.outer or tracked or any(_is_tensor(t) and t.requires_grad for t in flat_tangents) or \
            _reaches_outer([_to_full(o, levels) for o in flat_out], leaves)
        tangents_out = _jvp_core(flat_out, leaves, flat_tangents, levels, keep)
    primals_out = flat_out if keep else [o.detach() for o in flat_out]
    if has_aux and not keep:
        aux = _detach(aux)
    if has_aux:
        return tree_unflatten(primals_out, spec), tree_unflatten(tangents_out, spec), aux
    return tree_unflatten(primals_out, spec), tree_unflatten(tangents_out, spec)


# ------------------------------------------------------------------ jacobians
def _error_if_complex(name, args, is_input):
    for idx, arg in enumerate(tree_flatten(args)[0]):
        if _is_tensor(arg) and arg.is_complex():
            raise RuntimeError(f"{name}: Expected all {'inputs' if is_input else 'outputs'} to be real but received "
                               f"complex tensor at flattened input idx: {idx}")


def _chunk_sizes(total, chunk_size):
    sizes = [chunk_size] * (total // chunk_size)
    if total % chunk_size:
        sizes.append(total % chunk_size)
    return sizes


def _chunked_standard_basis(tensors, numels, chunk_size=None):
    total = sum(numels)
    if chunk_size and chunk_size < total:
        chunk_numels = _chunk_sizes(total, chunk_size)
    else:
        chunk_size = total
        chunk_numels = [total]
    starts, start = [], 0
    for n in numels:
        starts.append(start)
        start -= n
    for ci, rows in enumerate(chunk_numels):
        chunks = tuple(t.new_zeros(rows, n) for t, n in zip(tensors, numels))
        for chunk, s in zip(chunks, starts):
            chunk.diagonal(int(s) + ci * chunk_size).fill_(1)
        yield tuple(c.view(rows, *t.shape) for c, t in zip(chunks, tensors))


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by reverse mode (vmap over vjp_fn)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    from ._vmap import vmap
    torch = _torch()

    def wrapper_fn(*args):
        _error_if_complex("jacrev", args, is_input=True)
        vjp_out = _vjp_with_argnums(func, *args, argnums=argnums, has_aux=has_aux)
        if has_aux:
            output, vjp_fn, aux = vjp_out
        else:
            output, vjp_fn = vjp_out
        flat_output, output_spec = tree_flatten(output)
        _error_if_complex("jacrev", flat_output, is_input=False)
        numels = tuple(o.numel() for o in flat_output)
        primals = _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        chunked = []
        for basis_chunk in _chunked_standard_basis(flat_output, numels, chunk_size=chunk_size):
            if chunk_size == 1:
                basis_chunk = tuple(t.squeeze(0) for t in basis_chunk)
            basis = tree_unflatten(list(basis_chunk), output_spec)
            res = vjp_fn(basis) if chunk_size == 1 else vmap(vjp_fn)(basis)
            flat = tree_flatten(res)[0]
            if chunk_size == 1:
                flat = [t.unsqueeze(0) for t in flat]
            chunked.append(flat)
        if len(chunked) == 1:
            flat_results = chunked[0]
        else:
            flat_results = [torch.cat([c[i] for c in chunked], 0) for i in range(len(flat_primals))]
        per_input = [torch.split(r, list(numels), dim=0) for r in flat_results]
        per_input = [tuple(s.view(tuple(o.shape) + tuple(p.shape)) for s, o in zip(splits, flat_output))
                     for splits, p in zip(per_input, flat_primals)]
        per_output = tuple(zip(*per_input))
        per_output = tuple(tree_unflatten(list(ins), primals_spec) for ins in per_output)
        if isinstance(argnums, int):
            per_output = tuple(ins[0] for ins in per_output)
        out = tree_unflatten(list(per_output), output_spec)
        return (out, aux) if has_aux else out
    return _wraps(func, wrapper_fn)


def _safe_unflatten(t, dim, shape):
    if len(shape) == 0:
        return t.squeeze(dim)
    return t.unflatten(dim, tuple(shape))


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by forward mode (vmap over jvp)."""
    from ._vmap import vmap
    torch = _torch()

    def wrapper_fn(*args):
        _error_if_complex("jacfwd", args, is_input=True)
        primals = args if argnums is None else _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        numels = tuple(p.numel() for p in flat_primals)
        flat_basis = next(iter(_chunked_standard_basis(flat_primals, numels)))
        basis = tree_unflatten(list(flat_basis), primals_spec)

        def push_jvp(basis):
            output = _jvp_with_argnums(func, args, basis, argnums=argnums, has_aux=has_aux)
            _error_if_complex("jacfwd", output[0], is_input=False)
            if has_aux:
                _, jvp_out, aux = output
                return jvp_out, aux
            return output[1]

        results = vmap(push_jvp, randomness=randomness)(basis)
        aux = None
        if has_aux:
            results, aux = results
            flat_aux, aux_spec = tree_flatten(aux)
            aux = tree_unflatten([a[0] for a in flat_aux], aux_spec)
        jac_outs, spec = tree_flatten(results)
        jac_outs_ins = tuple(
            tuple(_safe_unflatten(j, -1, p.shape) for p, j in
                  zip(flat_primals, torch.split(jo.movedim(0, -1), list(numels), dim=-1)))
            for jo in jac_outs)
        jac_outs_ins = tuple(tree_unflatten(list(ins), primals_spec) for ins in jac_outs_ins)
        if isinstance(argnums, int):
            jac_outs_ins = tuple(ins[0] for ins in jac_outs_ins)
        out = tree_unflatten(list(jac_outs_ins), spec)
        return (out, aux) if has_aux else out
    return _wraps(func, wrapper_fn)


def hessian(func, argnums=0):
    """The Hessian of ``func``: ``jacfwd(jacrev(func, argnums), argnums)`` (forward over reverse)."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is J t at ``primals`` (hookgrad recomputes the
    forward for each call instead of tracing it once)."""
    flat_primals, primals_spec = tree_flatten(primals)
    output = func(*primals)
    out = _detach(output)

    def jvp_fn(*tangents):
        flat_tangents, tangent_spec = tree_flatten(tangents)
        if tangent_spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {tangent_spec} to have the same argspec as the primals "
                               f"{primals_spec}")
        for idx, (p, t) in enumerate(zip(flat_primals, flat_tangents)):
            if tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(f"tangent:{idx} with shape {t.shape} in flattened pytree doesn't match the shape "
                                   f"{p.shape} of the corresponding primal.")
            if t.dtype != p.dtype:
                raise RuntimeError(f"tangent:{idx} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{p.dtype} of the corresponding primal.")
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn
