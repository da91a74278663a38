"""torch.utils.flop_counter: ``FlopCounterMode`` counts the floating-point operations of the matrix products,
convolutions and attention a region runs, forward and backward, by module and by aten operator, with
PyTorch's formulas (``flop_registry``, ``register_flop_formula``).

Built on the op hooks: every primitive in forward is looked up by its aten name; every node in backward is
counted with the formulas of the aten ops PyTorch's backward calls (``AddmmBackward0``: one ``aten.mm`` per
matrix that needs a gradient; ``ConvolutionBackward0``: ``aten.convolution_backward`` with its output mask).
The ops a backward node runs itself are not counted again. A node is attributed to the modules that ran
its forward (recorded in ``node.metadata``), as PyTorch's ModuleTracker attributes its backward.
"""
import warnings
from collections import defaultdict
from functools import wraps
from math import prod

from .. import ops as _ops
from .._tensor import Tensor
from ..autograd import profiler as _profiler
from ..autograd.op_hooks import OpHook, register_op_hook, aten_name, _op_tls
from ..nn.modules.module import register_module_forward_pre_hook, register_module_forward_hook

__all__ = ["FlopCounterMode", "register_flop_formula"]

aten = _ops.aten
flop_registry = {}


def get_shape(i):
    return i.shape if isinstance(i, Tensor) else i


def shape_wrapper(f):
    """``f`` on shapes: tensor arguments (nested one level) become their shapes, ``out_val`` ``out_shape``."""
    @wraps(f)
    def nf(*args, out_val=None, **kwargs):
        args = [get_shape(a) if not isinstance(a, (list, tuple)) or not any(isinstance(x, Tensor) for x in a)
                else type(a)(get_shape(x) for x in a) for a in args]
        kwargs = {k: get_shape(v) for k, v in kwargs.items()}
        out = (tuple(get_shape(o) for o in out_val) if isinstance(out_val, (list, tuple)) else get_shape(out_val))
        return f(*args, out_shape=out, **kwargs)
    return nf


def register_flop_formula(targets, get_raw=False):
    """Register ``flop_formula(*shapes, out_shape=..., **kwargs)`` for aten op packets ``targets``."""
    def register_fun(flop_formula):
        if not get_raw:
            flop_formula = shape_wrapper(flop_formula)
        for t in (targets if isinstance(targets, (list, tuple)) else (targets,)):
            if t in flop_registry:
                raise RuntimeError(f"duplicate registrations for {t}")
            flop_registry[t] = flop_formula
        return flop_formula
    return register_fun


@register_flop_formula(aten.mm)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs):
    """Count flops for matmul."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    return m * n * 2 * k


@register_flop_formula(aten.addmm)
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs):
    """Count flops for addmm."""
    return mm_flop(a_shape, b_shape)


@register_flop_formula(aten.bmm)
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs):
    """Count flops for the bmm operation."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


@register_flop_formula(aten.baddbmm)
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs):
    """Count flops for the baddbmm operation."""
    return bmm_flop(a_shape, b_shape)


def conv_flop_count(x_shape, w_shape, out_shape, transposed=False):
    """Multiplications and additions of a convolution (the bias ignored): for each point of the output grid
    (of the input grid when transposed), the filter times the batch and both channel counts, times 2."""
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


@register_flop_formula([aten.convolution, aten._convolution])
def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args, out_shape=None, **kwargs):
    """Count flops for convolution."""
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


@register_flop_formula(aten.convolution_backward)
def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
                       _output_padding, _groups, output_mask, out_shape, **kwargs):
    """The input gradient is the transposed convolution of the output gradient with the weight; the weight
    gradient the convolution of the input with the output gradient (batch and channels swapped)."""
    def t(shape):
        return [shape[1], shape[0]] + list(shape[2:])
    flop_count = 0
    if output_mask[0]:
        flop_count += conv_flop_count(grad_out_shape, w_shape, get_shape(out_shape[0]), not transposed)
    if output_mask[1]:
        gw = get_shape(out_shape[1])
        if transposed:
            flop_count += conv_flop_count(t(grad_out_shape), t(x_shape), t(gw), transposed=False)
        else:
            flop_count += conv_flop_count(t(x_shape), t(grad_out_shape), t(gw), transposed=False)
    return flop_count


def sdpa_flop_count(query_shape, key_shape, value_shape):
    """Flops of attention: the two batched products (scores, then scores @ value); grouped-query heads too."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    if not (b == _b2 == _b3 and h_kv == _h3 and d_q == _d2 and s_k == _s3):
        raise AssertionError(f"sdpa_flop_count: query/key/value shapes are incompatible: "
                             f"q={query_shape}, k={key_shape}, v={value_shape}")
    return bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k)) + bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v))


@register_flop_formula([aten._scaled_dot_product_efficient_attention, aten._scaled_dot_product_flash_attention,
                        aten._scaled_dot_product_cudnn_attention])
def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs):
    """Count flops for self-attention (PyTorch's CPU kernel, _scaled_dot_product_flash_attention_for_cpu,
    has no formula: PyTorch counts it as 0, and so does hookgrad)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape):
    """Attention backward: the scores again, then four batched products for the gradients."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    total = bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k))
    total += bmm_flop((b * h_q, s_q, d_v), (b * h_q, d_v, s_k))
    total += bmm_flop((b * h_q, s_k, s_q), (b * h_q, s_q, d_v))
    total += bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_q))
    total += bmm_flop((b * h_q, d_q, s_q), (b * h_q, s_q, s_k))
    return total


@register_flop_formula([aten._scaled_dot_product_efficient_attention_backward,
                        aten._scaled_dot_product_flash_attention_backward,
                        aten._scaled_dot_product_cudnn_attention_backward])
def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs):
    """Count flops for self-attention backward."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def normalize_tuple(x):
    return x if isinstance(x, tuple) else (x,)


suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number):
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number, suffix):
    index = suffixes.index(suffix)
    return f"{number / 1000 ** index:.3f}" + suffixes[index]


def convert_to_percent_str(num, denom):
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


def _tabulate(rows, headers, colalign):
    """tabulate's "simple" format (PyTorch prints the table with the tabulate package)."""
    widths = [max(len(str(r[i])) for r in [headers] + rows) for i in range(len(headers))]

    def fmt(r):
        return "  ".join(str(v).ljust(w) if a == "left" else str(v).rjust(w)
                         for v, w, a in zip(r, widths, colalign)).rstrip()
    return "\n".join([fmt(headers), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows])


# ---- the backward nodes: which aten ops PyTorch's backward formula runs, and their flops

_KEY = "hookgrad.flop_counter"      # node.metadata: (aten name, input shapes, output shape, transposed, parents)


def _backward_flops(node, info, grad_outputs):
    """{aten packet: flops} of a backward node, from what its forward recorded."""
    op, shapes, out_shape, transposed, _ = info
    need = [e[0] is not None for e in node.next_functions]
    if op in ("mm", "addmm", "bmm", "baddbmm"):
        ia, ib = (0, 1) if op in ("mm", "bmm") else (1, 2)
        n = sum(1 for i in (ia, ib) if i < len(need) and need[i])
        if not n:
            return {}
        if op in ("mm", "addmm"):
            return {aten.mm: n * mm_flop(shapes[ia], shapes[ib])}
        return {aten.bmm: n * bmm_flop(shapes[ia], shapes[ib])}
    if op == "convolution":
        mask = [need[0], need[1], len(need) > 2 and need[2]]
        if not (mask[0] or mask[1]):
            return {}
        g = grad_outputs[0]
        return {aten.convolution_backward: conv_backward_flop(
            tuple(g.shape), shapes[0], shapes[1], None, None, None, None, transposed, None, None, mask,
            out_val=(shapes[0], shapes[1], None))}
    return {}


def _forward_flops(registry, op, inputs, output, transposed):
    packet = getattr(aten, op, None) if op in _ops._aten_table() else None
    f = registry.get(packet) if packet is not None else None
    if f is None:
        return None, 0
    if op in ("convolution", "_convolution"):
        args = (inputs[0], inputs[1], None, None, None, None, transposed)
    else:
        args = tuple(inputs)
    return packet, f(*args, out_val=output)


class _Counter(OpHook):
    def __init__(self, counter):
        self.counter = counter
        self.bdepth = 0

    def forward_post(self, name, inputs, output, node):
        if self.bdepth:         # ops a backward node runs: counted with the node
            return
        c = self.counter
        op = aten_name(name)
        # conv_transpose's primitive is told its output size (the parameters of the op running now)
        transposed = op == "convolution" and "out_hw" in (getattr(_op_tls, "params", None) or ())
        packet, flops = _forward_flops(c.flop_registry, op, inputs, output, transposed)
        parents = frozenset(c._parents)
        if node is not None and op in ("mm", "addmm", "bmm", "baddbmm", "convolution"):
            shapes = [tuple(x.shape) if isinstance(x, Tensor) else None for x in inputs]
            node.metadata[_KEY] = (op, shapes, tuple(output.shape), bool(transposed), parents)
        if packet is not None:
            for p in parents:
                c.flop_counts[p][packet] += flops

    def backward_pre(self, node, grad_outputs):
        self.bdepth += 1

    def backward_post(self, node, grad_inputs, grad_outputs):
        self.bdepth -= 1
        info = node.metadata.get(_KEY)
        if info is None:
            return
        c = self.counter
        for packet, flops in _backward_flops(node, info, grad_outputs).items():
            if packet in c.flop_registry:
                for p in info[4]:
                    c.flop_counts[p][packet] += flops


class FlopCounterMode:
    """Counts the flops run inside, per module path (``"Global"`` for everything) and aten op.

    >>> with FlopCounterMode(display=False) as fc:
    ...     model(x).sum().backward()          # doctest: +SKIP
    >>> fc.get_total_flops(), fc.get_flop_counts()["Global"]     # doctest: +SKIP
    """

    def __init__(self, mods=None, depth=2, display=True, custom_mapping=None):
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        if custom_mapping is None:
            custom_mapping = {}
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it", stacklevel=2)
        self.flop_registry = {**flop_registry, **{k: v if getattr(v, "_get_raw", False) else shape_wrapper(v)
                                                  for k, v in custom_mapping.items()}}
        self._parents = {"Global"}
        self._names = {}
        self._handles = []

    def get_total_flops(self):
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self):
        """``{module path: {aten op packet: flops}}``, ``"Global"`` holding everything."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None):
        """The counts as PyTorch's table: each module (to ``depth`` levels) and its ops, with the share of
        the total."""
        if depth is None:
            depth = self.depth
        if depth is None:
            depth = 999999
        header = ["Module", "FLOP", "% Total"]
        values = []
        global_flops = self.get_total_flops()
        global_suffix = get_suffix_str(global_flops)
        subsumed = False

        def process_mod(mod_name, d):
            nonlocal subsumed
            total = sum(self.flop_counts[mod_name].values())
            subsumed |= total >= global_flops
            pad = " " * d
            rows = [[pad + mod_name, convert_num_with_suffix(total, global_suffix),
                     convert_to_percent_str(total, global_flops)]]
            for k, v in self.flop_counts[mod_name].items():
                rows.append([pad + " - " + str(k), convert_num_with_suffix(v, global_suffix),
                             convert_to_percent_str(v, global_flops)])
            return rows

        for mod in sorted(self.flop_counts.keys()):
            if mod == "Global":
                continue
            mod_depth = mod.count(".") + 1
            if mod_depth > depth:
                continue
            values.extend(process_mod(mod, mod_depth - 1))
        if "Global" in self.flop_counts and not subsumed:
            for v in values:
                v[0] = " " + v[0]
            values = process_mod("Global", 0) + values
        if len(values) == 0:
            values = [["Global", "0", "0%"]]
        return _tabulate(values, header, ("left", "right", "right"))

    # ---- module tracking (PyTorch's ModuleTracker naming: the root by class name, children by attribute)
    def _name(self, mod):
        """A module's path: its class name for a module first seen on its own, else its parent's path and
        attribute name (the entry keeps the module alive, so its id is not reused while counting)."""
        name = self._names.get(id(mod))
        if name is None:
            name = self._names[id(mod)] = (type(mod).__name__, mod)
        for child_name, sub in mod.named_children():
            if id(sub) not in self._names:
                self._names[id(sub)] = (f"{name[0]}.{child_name}", sub)
        return name[0]

    def _pre(self, mod, args):
        self._parents.add(self._name(mod))

    def _post(self, mod, args, output):
        self._parents.discard(self._name(mod))

    def __enter__(self):
        self.flop_counts.clear()
        self._parents = {"Global"}
        self._names = {}
        self._handles = [register_module_forward_pre_hook(self._pre),
                         register_module_forward_hook(self._post, always_call=True),
                         register_op_hook(_Counter(self))]
        return self

    def __exit__(self, *args):
        for h in self._handles:
            h.remove()
        self._handles = []
        self._names = {}
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _count_flops(self, func_packet, out, args, kwargs):
        if func_packet in self.flop_registry:
            flops = self.flop_registry[func_packet](*args, **kwargs, out_val=out)
            for par in set(self._parents):
                self.flop_counts[par][func_packet] += flops
        return out


def _event_flops(event):
    """The flops of a profiler event (``profile(with_flops=True)``), from its name and input shapes."""
    name = event.name
    if not name.startswith("aten::") or not event.input_shapes:
        return None
    op = name[6:]
    f = flop_registry.get(getattr(aten, op, None)) if op in _ops._aten_table() else None
    if f is None or op in ("convolution", "_convolution", "convolution_backward"):
        return None
    try:
        return f(*[tuple(s) for s in event.input_shapes])
    except (ValueError, TypeError, AssertionError):
        return None


_profiler._event_flops[0] = _event_flops
