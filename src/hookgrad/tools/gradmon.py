"""Gradient monitor: per-parameter and per-module gradient statistics every step, with warnings.

Built only on public hooks: a post-accumulate-grad hook on every parameter (it sees ``.grad`` right
after the engine accumulated it) and a forward pre-hook on the model (a new forward closes the step).

>>> mon = GradientMonitor(model)
>>> loss = model(x).sum(); loss.backward()
>>> mon.step()                       # optional: closes the step now (else: next forward/backward)
>>> mon.history["0.weight"][-1]["norm"]
>>> print(mon.table())
"""
import math
import warnings

import numpy as np

from .lib import library_of
from .paths import module_paths

__all__ = ["GradientMonitor", "GradientWarning"]


class GradientWarning(UserWarning):
    """Warned by :class:`GradientMonitor` for a vanishing, exploding or non-finite gradient."""


def _param_stats(g, bins, hist_range):
    g = np.asarray(g)
    flat = g.reshape(-1)
    a = np.abs(flat.astype(np.float64, copy=False))
    n = flat.size
    finite = np.isfinite(a)
    nonfinite = int(n - np.count_nonzero(finite))
    norm = float(math.sqrt(np.dot(a, a))) if n else 0.0
    if nonfinite:   # dot of inf/nan is inf/nan already; keep nan if any nan
        norm = float("nan") if np.isnan(a).any() else float("inf")
    vals = flat[finite] if nonfinite else flat
    counts, edges = np.histogram(vals.astype(np.float64, copy=False), bins=bins, range=hist_range)
    return {"norm": norm,
            "max": float(a.max()) if n else 0.0,
            "zero_frac": float(n - np.count_nonzero(flat)) / n if n else 0.0,
            "numel": int(n),
            "nonfinite": nonfinite,
            "hist": counts,
            "edges": edges}


# ---- gradients on a device (CUDA): the statistics are computed there and read once per step -------------------------
_HEAD = 5       # sum of squares of the finite |g|, max |g|, exact zeros, non-finite entries, any NaN; then the histogram


def _device_hist(v, bins, hist_range, fin):
    """``numpy.histogram(v[fin], bins, hist_range)`` of a flat float64 device tensor, on the device: ``[counts...,
    first edge, last edge]`` (float64; NumPy's edges and its rounding corrections at them)."""
    keep = fin
    if hist_range is not None:
        lo, hi = (v.new_tensor(float(e)) for e in hist_range)
        keep = fin & (v >= lo) & (v <= hi)
    else:
        inf = v.new_tensor(float("inf"))
        lo, hi = v.where(fin, inf).min() if v.numel() else inf, v.where(fin, -inf).max() if v.numel() else -inf
        empty = lo > hi                                         # no finite value: NumPy's range (0, 1)
        lo, hi = lo.where(~empty, v.new_tensor(0.0)), hi.where(~empty, v.new_tensor(1.0))
        same = (lo == hi).double() * 0.5
        lo, hi = lo - same, hi + same
    out = v.new_zeros(bins + 2)
    out[bins], out[bins + 1] = lo, hi
    if not v.numel():
        return out
    edges = v.new_tensor(np.arange(bins + 1, dtype=np.float64)) * ((hi - lo) / bins) + lo     # as numpy.linspace
    edges[bins] = hi
    # bin j holds edges[j] <= x < edges[j + 1], the last one x <= edges[-1] too (NumPy's rule): counted by
    # searching the edges in the sorted values, the values left out moved past every edge
    s = v.where(keep, v.new_tensor(float("inf"))).sort().values
    lib = library_of(v)
    below = lib.searchsorted(s, edges).double()
    below[bins] = lib.searchsorted(s, edges[bins:], right=True)[0]
    out[:bins] = below[1:] - below[:-1]
    return out


def _device_stats(g, bins, hist_range):
    """(the statistics vector of :func:`_param_stats` on the device, the flat float64 values): nothing read."""
    v = g.detach().reshape(-1).double()
    a, fin = v.abs(), v.isfinite()
    head = v.new_zeros(_HEAD)
    head[0] = a.where(fin, v.new_tensor(0.0)).square().sum()
    if v.numel():
        head[1] = a.max()
    head[2] = (v == 0).sum()
    head[3] = (~fin).sum()
    head[4] = v.isnan().any()
    return head, _device_hist(v, bins, hist_range, fin), v


def _host_stats(vec, n, bins):
    """:func:`_param_stats`' dict from the statistics vector read to the host."""
    sumsq, mx, zeros, nonfinite, hasnan = vec[:_HEAD]
    nonfinite = int(nonfinite)
    norm = math.sqrt(sumsq) if not nonfinite else float("nan") if hasnan else float("inf")
    return {"norm": norm, "max": float(mx), "zero_frac": float(zeros) / n if n else 0.0, "numel": int(n),
            "nonfinite": nonfinite, **_hist_of(vec[_HEAD:], bins)}


def _hist_of(h, bins):
    return {"hist": h[:bins].astype(np.int64), "edges": np.linspace(h[bins], h[bins + 1], bins + 1)}


class GradientMonitor:
    """Gradient statistics for every parameter (and aggregated per module) of ``model``, every step.

    Args:
        model: the Module to watch (every parameter that requires grad at construction).
        every: record one step in ``every`` (the other steps cost one dict lookup per parameter).
        bins, range: passed to ``numpy.histogram`` for each gradient (non-finite entries left out).
        vanishing: warn when a parameter's gradient norm is below this (``None``: never).
        exploding: warn when it is above this, or not finite (``None``: only non-finite).
        auto_step: a step ends by itself when the model runs forward again, or when a parameter
            receives a second gradient (a new backward without forward). With ``auto_step=False``
            only :meth:`step` ends a step, and the statistics are those of ``.grad`` at that moment
            (use it with gradient accumulation: one step per optimizer step).

    Per parameter (key: name from ``named_parameters``), each recorded step appends to
    ``history[name]`` a dict ``{"step", "norm", "max", "zero_frac", "numel", "nonfinite", "hist",
    "edges"}`` (norm: L2 in float64; max: max |g|; zero_frac: fraction of exact zeros; hist/edges:
    ``numpy.histogram`` of the finite entries, in float64). ``module_history[path]`` holds the same statistics for
    every module, aggregated over the parameters of its whole subtree that got a gradient this step
    (``""`` is the model: the global norm). A parameter without a gradient in a step has no entry.

    Warnings (:class:`GradientWarning`) name the step, the parameter, its module path and the value;
    they are issued as soon as the statistics are computed (during backward with ``auto_step``).

    Gradients on a device (CUDA) are not copied to the host in the hooks: their statistics are computed on the
    device and read once per step, when the step ends (one host read for every parameter and module together);
    their warnings come then. A ``bins`` sequence (explicit edges) reads each parameter's gradient instead.
    """

    def __init__(self, model, every=1, bins=20, range=None, vanishing=1e-7, exploding=1e3, auto_step=True):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"GradientMonitor: every must be a positive int, got {every!r}")
        self.model = model
        self.every = every
        self.bins = bins
        self.range = range
        self.vanishing = vanishing
        self.exploding = exploding
        self.auto_step = auto_step
        self.history = {}
        self.module_history = {}
        self.steps = 0                  # completed steps
        paths = module_paths(model)
        self._owner = {}                # param name -> module path of the module holding it
        self._params = {}               # param name -> parameter
        seen = set()
        for mpath, mod in model.named_modules():
            for pname, p in mod.named_parameters(recurse=False):
                full = f"{mpath}.{pname}" if mpath else pname
                if id(p) in seen:
                    continue            # a shared parameter is watched once, under its first name
                seen.add(id(p))
                if p.requires_grad:
                    self._params[full] = p
                    self._owner[full] = paths.get(id(mod), mpath)
        self._order = {n: i for i, n in enumerate(self._params)}
        self._order.update((path, i) for i, (path, _) in enumerate(model.named_modules()))
        self._pending = {}              # name -> stats of the step in progress (or None when not recorded)
        self._handles = []
        for name, p in self._params.items():
            self._handles.append(p.register_post_accumulate_grad_hook(self._make_hook(name)))
        if auto_step:
            self._handles.append(model.register_forward_pre_hook(self._on_forward))

    # ---- collection -------------------------------------------------------------------
    def _recording(self):
        return self.steps % self.every == 0

    def _make_hook(self, name):
        def gradient_monitor_hook(param):
            if self.auto_step:
                if name in self._pending:
                    self._finish()      # second gradient for the same parameter: a new backward
                self._pending[name] = self._compute(name, param) if self._recording() else None
            else:
                self._pending[name] = None      # computed at step() from .grad then
        return gradient_monitor_hook

    def _on_forward(self, module, args):
        if self._pending:
            self._finish()

    def _compute(self, name, param):
        g = param.grad
        if g is None:
            return None
        if g.device.type != "cpu" and np.isscalar(self.bins):     # on the device until the step ends (_read)
            head, hist, v = _device_stats(g, self.bins, self.range)
            return {"step": self.steps, "numel": v.numel(), "_dev": (head, hist), "_g": v}
        arr = g.detach().cpu().numpy()
        st = _param_stats(arr, self.bins, self.range)
        st["step"] = self.steps
        if self.range is None and np.isscalar(self.bins):
            st["_g"] = arr.copy()       # for the module histograms (.grad may change before the step ends)
        self._check(f"parameter '{name}' (module '{self._owner[name]}')", st)
        return st

    def _check(self, what, st):
        n = st["norm"]
        if not math.isfinite(n) or st["nonfinite"]:
            warnings.warn(f"GradientMonitor: step {self.steps}: non-finite gradient in {what}: norm {n}, "
                          f"{st['nonfinite']} non-finite entries", GradientWarning, stacklevel=3)
        elif self.exploding is not None and n > self.exploding:
            warnings.warn(f"GradientMonitor: step {self.steps}: exploding gradient in {what}: "
                          f"norm {n:.4g} > {self.exploding:g}", GradientWarning, stacklevel=3)
        elif self.vanishing is not None and n < self.vanishing:
            warnings.warn(f"GradientMonitor: step {self.steps}: vanishing gradient in {what}: "
                          f"norm {n:.4g} < {self.vanishing:g}", GradientWarning, stacklevel=3)

    def _finish(self):
        pending, self._pending = self._pending, {}
        if not pending:
            return
        if not self.auto_step and self._recording():
            pending = {n: self._compute(n, self._params[n]) for n in pending}
        recorded = {n: st for n, st in pending.items() if st is not None}
        module_hists = self._read(recorded) if any("_dev" in st for st in recorded.values()) else {}
        for n, st in recorded.items():
            self.history.setdefault(n, []).append({k: v for k, v in st.items() if k != "_g"})
        if recorded:
            self._aggregate(recorded, module_hists)
        self.steps += 1

    def _read(self, recorded):
        """The step's device statistics, read to the host at once (one copy): the parameters' (their warnings
        now), and each module's histogram (over its parameters' values, computed on the device)."""
        dev = [n for n, st in recorded.items() if "_dev" in st]
        vecs = [t for n in dev for t in recorded[n]["_dev"]]
        paths = []
        if self.range is None and len(dev) == len(recorded):
            for path, names in self._members(recorded).items():
                vals = [recorded[n]["_g"] for n in names]
                joined = vals[0] if len(vals) == 1 else vals[0].new_empty(sum(v.numel() for v in vals))
                o = 0
                for v in vals if len(vals) > 1 else ():
                    joined[o:o + v.numel()] = v
                    o += v.numel()
                paths.append(path)
                vecs.append(_device_hist(joined, self.bins, None, joined.isfinite()))
        buf = vecs[0].new_empty(sum(v.numel() for v in vecs))
        o = 0
        for v in vecs:
            buf[o:o + v.numel()] = v
            o += v.numel()
        host = buf.cpu().numpy()            # the step's one host read
        o, k = 0, _HEAD + self.bins + 2
        for n in dev:
            st = recorded[n]
            st.update(_host_stats(host[o:o + k], st.pop("numel"), self.bins))
            del st["_dev"]
            if self.range is not None:
                st.pop("_g")
            o += k
            self._check(f"parameter '{n}' (module '{self._owner[n]}')", st)
        k = self.bins + 2
        hists = {}
        for path in paths:
            hists[path] = _hist_of(host[o:o + k], self.bins)
            o += k
        for n in dev:       # (parameters on several devices: the module histograms read the values, as on the CPU)
            g = recorded[n].pop("_g", None)
            if g is not None and not paths and self.range is None:
                recorded[n]["_g"] = g.cpu().numpy()
        return hists

    def _members(self, recorded):
        members = {}                    # module path -> [param names]
        for n in recorded:
            owner = self._owner[n]
            parts = owner.split(".") if owner else []
            for i in range(len(parts) + 1):
                members.setdefault(".".join(parts[:i]), []).append(n)
        return members

    def _aggregate(self, recorded, module_hists=None):
        members = self._members(recorded)
        fixed_edges = self.range is not None or not np.isscalar(self.bins)
        for path in sorted(members, key=self._order.get):
            sts = [recorded[n] for n in members[path]]
            numel = sum(s["numel"] for s in sts)
            nonfinite = sum(s["nonfinite"] for s in sts)
            norm = math.sqrt(sum(s["norm"] ** 2 for s in sts))
            if fixed_edges:
                counts, edges = sum(s["hist"] for s in sts), sts[0]["edges"]
            elif module_hists and path in module_hists:
                counts, edges = module_hists[path]["hist"], module_hists[path]["edges"]
            else:
                vals = np.concatenate([s["_g"].reshape(-1) for s in sts])
                counts, edges = np.histogram(vals[np.isfinite(vals)].astype(np.float64, copy=False), bins=self.bins)
            zeros = sum(s["zero_frac"] * s["numel"] for s in sts)
            st = {"step": self.steps, "norm": norm, "max": max(s["max"] for s in sts),
                  "zero_frac": zeros / numel if numel else 0.0, "numel": numel, "nonfinite": nonfinite,
                  "hist": counts, "edges": edges, "params": list(members[path])}
            self.module_history.setdefault(path, []).append(st)

    # ---- public API -------------------------------------------------------------------
    def step(self):
        """End the step in progress now (its module statistics are computed; the step counter moves).
        With ``auto_step=False`` this is where the statistics are taken, from ``.grad``."""
        if self.auto_step:
            self._finish()
        else:
            if not self._pending:
                self.steps += 1         # a step without any gradient: still counted
                return
            self._finish()

    def flush(self):
        """End the step in progress if there is one (``auto_step``); called by table/plot/remove."""
        if self.auto_step:
            self._finish()

    def latest(self, by="parameter"):
        """``{name: stats}`` of the latest recorded step (by ``"parameter"`` or ``"module"``)."""
        self.flush()
        hist = self.history if by == "parameter" else self.module_history
        if by not in ("parameter", "module"):
            raise ValueError(f"GradientMonitor: by must be 'parameter' or 'module', got {by!r}")
        last = max((h[-1]["step"] for h in hist.values() if h), default=None)
        names = sorted((n for n, h in hist.items() if h and h[-1]["step"] == last), key=self._order.get)
        return {n: hist[n][-1] for n in names}

    def table(self, by="parameter"):
        """A printable text table of the latest recorded step (one row per parameter or module)."""
        rows = self.latest(by)
        if not rows:
            return "GradientMonitor: no gradient recorded yet"
        step = next(iter(rows.values()))["step"]
        head = ("parameter" if by == "parameter" else "module", "numel", "norm", "max|g|", "zero%", "flag")
        body = []
        for n, st in rows.items():
            flag = ""
            if st["nonfinite"] or not math.isfinite(st["norm"]):
                flag = "NONFINITE"
            elif self.exploding is not None and st["norm"] > self.exploding:
                flag = "EXPLODING"
            elif self.vanishing is not None and st["norm"] < self.vanishing:
                flag = "VANISHING"
            body.append((n if n else "(model)", str(st["numel"]), f"{st['norm']:.4e}", f"{st['max']:.4e}",
                         f"{100 * st['zero_frac']:.1f}", flag))
        widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
        fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        lines = [f"gradients at step {step}", fmt(head), "  ".join("-" * w for w in widths)]
        lines += [fmt(r) for r in body]
        return "\n".join(lines)

    def plot(self, path, modules=None, logy=True):
        """Write a PNG of the gradient norm over steps, one line per module (default: the modules that
        hold parameters directly, plus the model's global norm). Needs matplotlib."""
        try:
            import matplotlib
            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt
        except ImportError as e:       # optional dependency
            raise ImportError("GradientMonitor.plot needs matplotlib (pip install matplotlib)") from e
        self.flush()
        if modules is None:
            modules = [""] + sorted(set(self._owner.values()) - {""})
        fig, ax = plt.subplots(figsize=(7, 4))
        for m in modules:
            h = self.module_history.get(m)
            if h:
                ax.plot([s["step"] for s in h], [s["norm"] for s in h], marker=".", label=m or "(model)")
        ax.set_xlabel("step")
        ax.set_ylabel("gradient norm")
        if logy:
            ax.set_yscale("log")
        ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(path, format="png")
        plt.close(fig)
        return path

    def remove(self):
        """End the step in progress and remove every hook the monitor registered (idempotent)."""
        self.flush()
        for h in self._handles:
            h.remove()
        self._handles = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
