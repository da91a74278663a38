"""Grad-CAM, Grad-CAM++ and feature-map extraction, with forward hooks and tensor hooks.

>>> cam = GradCAM(model, "features.3")          # a layer (Module or path) whose output is N,C,H,W
>>> maps, classes = cam(x)                      # maps: N,H,W in [0,1] at the input's size
>>> acts = feature_maps(model, ["features.*"], x)   # {path: activation}
"""
from .lib import lib_of
from .paths import module_paths, select

__all__ = ["GradCAM", "GradCAMPlusPlus", "feature_maps"]


def _resolve(model, layer, who):
    """``(path, module)`` for a Module under ``model`` or a path string."""
    if isinstance(layer, str):
        try:
            return layer, model.get_submodule(layer)
        except AttributeError as e:
            raise AttributeError(f"{who}: no layer '{layer}' in {type(model).__name__}: {e}") from None
    if isinstance(layer, lib_of(model).Module):
        path = module_paths(model).get(id(layer))
        if path is None:
            raise ValueError(f"{who}: the {type(layer).__name__} given as layer is not a submodule of the model")
        return path, layer
    raise TypeError(f"{who}: layer must be a Module or a module path, got {type(layer).__name__}")


class GradCAM:
    """Grad-CAM (Selvaraju et al.) at ``target_layer``: weights = spatial mean of the gradient of the
    class score w.r.t. the layer's output A; map = relu(sum_k weight_k * A_k).

    ``cam(x, target=None)`` (or calling the object) runs ``model(x)``, takes the score of class
    ``target`` (None: each sample's argmax; an int: that class for all; a sequence: one per sample),
    and returns ``(maps, classes)``: maps of shape (N, H, W) at the input's spatial size (bilinear,
    ``align_corners=False``), each min-max normalised to [0, 1] (all zeros where the map is constant),
    and the list of classes used.

    The hooks live only during ``cam()``: a forward hook on the layer keeps its output, replacing it
    by a detached copy that requires grad (so the backward stops at the layer and nothing accumulates
    into parameters' ``.grad``), and a tensor hook on that copy keeps its gradient. After a call,
    ``activations`` and ``gradients`` hold A and dScore/dA. Put the model in eval() mode first if it
    has dropout or batch norm. If the layer runs several times in one forward, the last call is used.
    """

    def __init__(self, model, target_layer):
        self.model = model
        self.lib = lib_of(model)
        self.path, self.layer = _resolve(model, target_layer, type(self).__name__)
        self.activations = None
        self.gradients = None
        self._leaf = None

    # the weights of each channel from the gradients (N,C,H,W) and activations -> (N,C)
    def weights(self, A, g):
        return g.mean((2, 3))

    def _forward_hook(self, module, args, output):
        Tensor = self.lib.Tensor
        if not isinstance(output, Tensor) or output.dim() != 4:
            shape = tuple(output.shape) if isinstance(output, Tensor) else type(output).__name__
            raise ValueError(f"{type(self).__name__}: layer '{self.path}' ({type(module).__name__}) must output "
                             f"an N,C,H,W tensor, got {shape}")
        out = output.detach().requires_grad_(True)
        self.activations = out.detach()
        self._leaf = out

        def gradcam_keep_grad(grad):
            self.gradients = grad.detach()
        out.register_hook(gradcam_keep_grad)
        return out

    def cam(self, x, target=None):
        """``(maps, classes)`` for the input batch ``x`` (see the class doc)."""
        L = self.lib
        Tensor = L.Tensor
        self.activations = self.gradients = None
        handle = self.layer.register_forward_hook(self._forward_hook)
        try:
            with L.enable_grad():
                out = self.model(x)
        finally:
            handle.remove()
        if self.activations is None:
            raise RuntimeError(f"{type(self).__name__}: layer '{self.path}' did not run during model(x)")
        if not isinstance(out, Tensor) or out.dim() != 2:
            raise ValueError(f"{type(self).__name__}: the model must return class scores of shape (N, classes), "
                             f"got {tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__}")
        n = out.shape[0]
        if target is None:
            classes = [int(c) for c in out.detach().argmax(1).tolist()]
        elif isinstance(target, int):
            classes = [target] * n
        else:
            classes = [int(c) for c in (target.tolist() if isinstance(target, Tensor) else target)]
            if len(classes) != n:
                raise ValueError(f"{type(self).__name__}: {len(classes)} targets for a batch of {n}")
        score = out[list(range(n)), classes].sum()
        # the tensor hook on the hooked output fills self.gradients; grad() leaves every .grad alone
        L.autograd.grad(score, [self._leaf])
        self._leaf = None
        A, g = self.activations, self.gradients
        with L.no_grad():
            w = self.weights(A, g)                                   # N,C
            m = (w[:, :, None, None] * A).sum(1, keepdim=True).relu()  # N,1,h,w
            m = L.F.interpolate(m, size=tuple(x.shape[-2:]), mode="bilinear", align_corners=False)[:, 0]
            lo = m.amin((1, 2), keepdim=True)
            span = m.amax((1, 2), keepdim=True) - lo
            maps = (m - lo) / span.masked_fill(span == 0, 1.0) * (span != 0)
        return maps, classes

    __call__ = cam

    def remove(self):
        """Nothing to remove: hooks only live during ``cam()`` (kept for the usual tool interface)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class GradCAMPlusPlus(GradCAM):
    """Grad-CAM++ (Chattopadhay et al.) at ``target_layer``: alpha = g^2 / (2 g^2 + sum_ij(A) g^3)
    (0 where the denominator is 0), weights = sum_ij(alpha * relu(g)); otherwise as :class:`GradCAM`."""

    def weights(self, A, g):
        g2 = g * g
        g3 = g2 * g
        denom = 2 * g2 + A.sum((2, 3), keepdim=True) * g3
        nz = denom != 0
        alpha = g2 / denom.masked_fill(~nz, 1.0) * nz
        return (alpha * g.relu()).sum((2, 3))


def feature_maps(model, layers, x, *, all_calls=False):
    """Run ``model(x)`` under ``no_grad`` with forward hooks on ``layers`` (module path patterns such
    as ``"features.*"``, paths, or Modules) and return ``{path: output}`` (detached). The hooks are
    removed afterwards, also when the forward raises. A module that runs several times keeps its last
    output, or the list of all of them with ``all_calls=True``."""
    L = lib_of(model)
    Tensor = L.Tensor
    if isinstance(layers, (str, L.Module)):
        layers = [layers]
    chosen = {}
    for layer in layers:
        if isinstance(layer, str) and any(c in layer for c in "*?["):
            matched = select(model, layer)
            if not matched:
                raise ValueError(f"feature_maps: pattern '{layer}' matches no module of {type(model).__name__}")
            chosen.update((id(m), (p, m)) for p, m in matched)
        else:
            p, m = _resolve(model, layer, "feature_maps")
            chosen[id(m)] = (p, m)
    result = {}

    def make(path):
        def feature_maps_hook(module, args, output):
            o = output.detach() if isinstance(output, Tensor) else output
            if all_calls:
                result.setdefault(path, []).append(o)
            else:
                result[path] = o
        return feature_maps_hook
    handles = [m.register_forward_hook(make(p)) for p, m in chosen.values()]
    try:
        with L.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return result
