"""Per-sample gradients from one batched backward (the Opacus method), on hookgrad and torch models.

>>> grads = per_sample_grads(model, lambda out: loss_fn(out, y, reduction="sum"), x)
>>> grads["fc.weight"].shape            # (N, *fc.weight.shape): sample n's gradient in grads[...][n]

Forward hooks record each supported module's input; a tensor hook (``Tensor.register_hook``) on its
output records d(loss)/d(output), which for a summed loss holds, in row n, sample n's gradient only. The
per-sample parameter gradient is then a per-row contraction: ``g[n]^T x[n]`` for Linear, the same over
unfolded patches for Conv, a scatter-add of rows for Embedding, ``sum(g[n] * x_hat[n])`` for the norms.
Every handle is removed before returning; ``.grad`` is not touched (the batch gradient is taken with
``autograd.grad`` and checked against the sum of the per-sample ones).
"""
import itertools

from .lib import library_of

__all__ = ["per_sample_grads", "SUPPORTED"]

SUPPORTED = ("Linear", "Conv1d", "Conv2d", "Conv3d", "Embedding", "LayerNorm", "GroupNorm", "RMSNorm",
             "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "BatchNorm1d (eval)", "BatchNorm2d (eval)",
             "BatchNorm3d (eval)")


# ---- one rule per layer kind: (lib, module, x, g) -> {param attribute: (N, *param.shape)} ----------------
def _linear(lib, m, x, g):
    n = g.shape[0]
    x2, g2 = x.reshape(n, -1, x.shape[-1]), g.reshape(n, -1, g.shape[-1])
    out = {"weight": lib.einsum("nlo,nli->noi", g2, x2)}
    if m.bias is not None:
        out["bias"] = g2.sum(1)
    return out


def _conv_padding(m, d):
    if isinstance(m.padding, str):
        if m.padding == "valid":
            return [(0, 0)] * d
        tot = [m.dilation[i] * (m.kernel_size[i] - 1) for i in range(d)]      # "same"
        return [(t // 2, t - t // 2) for t in tot]
    return [(p, p) for p in m.padding]


def _unfold(lib, x, kernel, stride, padding, dilation, out_shape):
    """(N, C, *S) -> (N, C, K, L): every kernel offset's strided slice of the zero-padded input, C-major
    like the weight's (C, *kernel) layout; built from slicing only, so any number of spatial dims."""
    flat = [v for lr in reversed(padding) for v in lr]
    if any(flat):
        x = lib.nn.functional.pad(x, flat)
    n, c = x.shape[:2]
    cols = []
    for offs in itertools.product(*[range(k) for k in kernel]):
        sl = tuple(slice(o * dl, o * dl + (L - 1) * s + 1, s)
                   for o, dl, L, s in zip(offs, dilation, out_shape, stride))
        cols.append(x[(slice(None), slice(None)) + sl].reshape(n, c, -1))
    return lib.stack(cols, 2)


def _conv(lib, m, x, g):
    if m.padding_mode != "zeros":
        raise NotImplementedError(f"padding_mode={m.padding_mode!r} (only 'zeros')")
    d = len(m.kernel_size)
    n, cout = g.shape[:2]
    groups = m.groups
    cols = _unfold(lib, x, m.kernel_size, m.stride, _conv_padding(m, d), m.dilation, g.shape[2:])
    cin_g = x.shape[1] // groups
    cols = cols.reshape(n, groups, cin_g * cols.shape[2], -1)                 # (N, G, Cin/G*K, L)
    g3 = g.reshape(n, groups, cout // groups, -1)                             # (N, G, Cout/G, L)
    w = lib.einsum("ngol,ngkl->ngok", g3, cols).reshape((n,) + tuple(m.weight.shape))
    out = {"weight": w}
    if m.bias is not None:
        out["bias"] = g.reshape(n, cout, -1).sum(2)
    return out


def _embedding(lib, m, idx, g):
    if m.max_norm is not None or m.scale_grad_by_freq:
        raise NotImplementedError("max_norm / scale_grad_by_freq")
    n = g.shape[0]
    v, dim = m.weight.shape
    rows = (idx.reshape(n, -1) + lib.arange(n).reshape(n, 1) * v).reshape(-1)
    w = lib.zeros(n * v, dim, dtype=g.dtype).index_add_(0, rows, g.reshape(-1, dim)).reshape(n, v, dim)
    if m.padding_idx is not None:
        w[:, m.padding_idx] = 0
    return {"weight": w}


def _affine(lib, m, xhat, g, feature_dims):
    """weight/bias of a norm from x_hat: sum over every dim that is neither the batch nor a feature dim."""
    n = g.shape[0]
    out = {}
    if feature_dims == "last":      # LayerNorm / RMSNorm: the feature dims are the normalized_shape
        k = m.weight.ndim
        fs = tuple(g.shape[g.ndim - k:])
        if m.weight is not None:
            out["weight"] = (g * xhat).reshape((n, -1) + fs).sum(1)
        if getattr(m, "bias", None) is not None:
            out["bias"] = g.reshape((n, -1) + fs).sum(1)
    else:                           # channel norms: the feature dim is 1
        c = g.shape[1]
        if m.weight is not None:
            out["weight"] = (g * xhat).reshape(n, c, -1).sum(2)
        if m.bias is not None:
            out["bias"] = g.reshape(n, c, -1).sum(2)
    return out


def _layer_norm(lib, m, x, g):
    xhat = lib.nn.functional.layer_norm(x, m.normalized_shape, None, None, m.eps)
    return _affine(lib, m, xhat, g, "last")


def _rms_norm(lib, m, x, g):
    xhat = lib.nn.functional.rms_norm(x, m.normalized_shape, None, m.eps)
    return _affine(lib, m, xhat, g, "last")


def _group_norm(lib, m, x, g):
    xhat = lib.nn.functional.group_norm(x, m.num_groups, None, None, m.eps)
    return _affine(lib, m, xhat, g, "channel")


def _instance_norm(lib, m, x, g):
    use_input_stats = m.training or not m.track_running_stats
    xhat = lib.nn.functional.instance_norm(x, None if use_input_stats else m.running_mean,
                                           None if use_input_stats else m.running_var, None, None,
                                           use_input_stats, 0.0, m.eps)
    return _affine(lib, m, xhat, g, "channel")


def _batch_norm(lib, m, x, g):
    if m.training or m.running_mean is None:
        raise NotImplementedError("BatchNorm in training mode mixes the samples of a batch (batch statistics), "
                                  "so it has no per-sample gradient; call model.eval() or use GroupNorm/LayerNorm")
    xhat = lib.nn.functional.batch_norm(x, m.running_mean, m.running_var, None, None, False, 0.0, m.eps)
    return _affine(lib, m, xhat, g, "channel")


_RULES = (("Linear", _linear), ("Conv1d", _conv), ("Conv2d", _conv), ("Conv3d", _conv), ("Embedding", _embedding),
          ("LayerNorm", _layer_norm), ("RMSNorm", _rms_norm), ("GroupNorm", _group_norm),
          ("InstanceNorm1d", _instance_norm), ("InstanceNorm2d", _instance_norm), ("InstanceNorm3d", _instance_norm),
          ("BatchNorm1d", _batch_norm), ("BatchNorm2d", _batch_norm), ("BatchNorm3d", _batch_norm))


def _rule(lib, mod):
    for name, fn in _RULES:
        cls = getattr(lib.nn, name, None)
        if cls is not None and isinstance(mod, cls):
            return fn
    return None


def per_sample_grads(model, loss_fn, *inputs, check=True):
    """``{parameter name: tensor (N, *parameter.shape)}``: the gradient of each sample's loss.

    Args:
        model: a hookgrad or torch ``nn.Module``; dim 0 of its inputs is the batch.
        loss_fn: ``loss_fn(output)`` -> the batch's SUMMED loss (a scalar); sample n's loss may depend
            only on row n of the output.
        *inputs: passed to ``model``.
        check: also verify that the per-sample gradients add up to the batch gradient (a parameter used
            outside its module's forward, e.g. a tied weight read directly, would break that) and raise
            ``RuntimeError`` naming the parameter if not.

    Every parameter that requires grad must belong (directly) to a supported layer
    (:data:`SUPPORTED`); any other raises ``NotImplementedError`` naming the module path. ``.grad``
    is left as it was. Equals a loop of batch-size-1 backward passes (up to rounding).
    """
    lib = library_of(model)
    names = {}
    for name, p in model.named_parameters():
        names.setdefault(id(p), name)
    targets, records, handles = [], [], []
    for path, mod in model.named_modules():
        own = [(a, p) for a, p in mod.named_parameters(recurse=False) if p.requires_grad]
        if not own:
            continue
        rule = _rule(lib, mod)
        if rule is None:
            raise NotImplementedError(
                f"per_sample_grads: module {path or '<root>'!r} ({type(mod).__name__}) has parameters that require "
                f"grad ({', '.join(a for a, _ in own)}) but no per-sample rule; supported: {', '.join(SUPPORTED)}")
        targets.extend(p for _, p in own)
        handles.append(mod.register_forward_hook(_recorder(lib, records, path, mod, rule)))
    if not targets:
        raise ValueError(f"per_sample_grads: {type(model).__name__} has no parameter that requires grad")
    try:
        with lib.enable_grad():
            loss = loss_fn(model(*inputs))
            if not isinstance(loss, lib.Tensor) or loss.numel() != 1:
                raise ValueError("per_sample_grads: loss_fn(output) must return the batch's summed loss as a "
                                 f"one-element tensor, got {type(loss).__name__}"
                                 f"{tuple(loss.shape) if isinstance(loss, lib.Tensor) else ''}")
            batch = lib.autograd.grad(loss, targets, allow_unused=True)
    finally:
        for h in handles:
            h.remove()
        for r in records:
            if r[5] is not None:
                r[5].remove()
    out = {}
    with lib.no_grad():
        for path, mod, rule, x, slot, _ in records:
            if slot[0] is None:     # this call's output did not reach the loss
                continue
            try:
                per = rule(lib, mod, x, slot[0])
            except NotImplementedError as e:
                raise NotImplementedError(f"per_sample_grads: module {path!r} ({type(mod).__name__}): {e}") from None
            for attr, g in per.items():
                p = getattr(mod, attr)
                key = names[id(p)]
                g = g.to(p.dtype)
                out[key] = g if key not in out else out[key] + g
        n = next(iter(out.values())).shape[0] if out else 0
        for p, b in zip(targets, batch):
            key = names[id(p)]
            if key not in out:
                out[key] = lib.zeros((n,) + tuple(p.shape), dtype=p.dtype)
            elif check and b is not None:
                _check_sum(lib, key, out[key], b)
    return {names[id(p)]: out[names[id(p)]] for p in targets if names[id(p)] in out}


def _recorder(lib, records, path, mod, rule):
    def hook(module, args, output):
        if not isinstance(output, lib.Tensor) or not output.requires_grad:
            return
        slot = [None]

        def on_grad(g):
            slot[0] = g if slot[0] is None else slot[0] + g
        records.append((path, mod, rule, args[0].detach(), slot, output.register_hook(on_grad)))
    return hook


def _check_sum(lib, key, per, batch):
    total = per.sum(0).double()
    b = batch.double()
    err = float((total - b).abs().max())
    scale = max(1.0, float(b.abs().max()))
    tol = (1e-9 if batch.dtype == lib.float64 else 1e-4) * scale * max(1, per.shape[0])
    if err > tol:
        raise RuntimeError(f"per_sample_grads: the per-sample gradients of {key!r} do not add up to its batch "
                           f"gradient (max difference {err:.3g}): the parameter is used outside its module's forward "
                           "(e.g. a tied weight read directly), or loss_fn mixes samples")
