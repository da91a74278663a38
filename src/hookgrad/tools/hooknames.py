"""Canonical hook names (TransformerLens's ``blocks.{i}.attn.hook_pattern``...) mapped to native module
paths, for the BERT, GPT-2-style and ViT layouts of Hugging Face checkpoints (and hookgrad.models.bert),
on hookgrad and torch models.

>>> hook_names(model)["blocks.3.attn.hook_pattern"]
HookSite('blocks.3.attn.hook_pattern' = input 0 of 'bert.encoder.layer.3.attention.self.dropout')
>>> h = add_hook(model, "blocks.0.hook_mlp_out", lambda act, hook: act * 0)    # zero-ablate
>>> unresolved(model, ["blocks.0.attn.hook_attn_scores"])   # [(name, why it has no native site)]

A name resolves to a module and one of its values: its output (``out``), the first element of a tuple
output (``out0``) or its first positional argument (``in0``), the value TransformerLens's hook point of
that name sees. Names whose value no module returns (pre-softmax attention scores, GPT-2's q/k/v split
inside one projection) are unresolved, each with the reason.
"""
import difflib
import re

from .lib import lib_of

__all__ = ["LAYOUTS", "HookSite", "detect_layout", "hook_names", "resolve", "unresolved", "nearest", "add_hook"]

_NOT_A_MODULE = "the value is computed inside {module}'s forward, not returned by a submodule"

# layout -> probe (a path that identifies it, under any prefix), blocks container, names, unresolved names
LAYOUTS = {
    "gpt2": {
        "probe": "h.0.attn.c_attn", "blocks": "h",
        "names": {
            "hook_embed": ("wte", "out"), "hook_pos_embed": ("wpe", "out"),
            "blocks.{i}.hook_resid_pre": ("h.{i}", "in0"),
            "blocks.{i}.ln1.hook_normalized": ("h.{i}.ln_1", "out"),
            "blocks.{i}.attn.hook_pattern": ("h.{i}.attn.attn_dropout", "in0"),
            "blocks.{i}.attn.hook_z": ("h.{i}.attn.c_proj", "in0"),
            "blocks.{i}.hook_attn_out": ("h.{i}.attn", "out0"),
            "blocks.{i}.hook_resid_mid": ("h.{i}.ln_2", "in0"),
            "blocks.{i}.ln2.hook_normalized": ("h.{i}.ln_2", "out"),
            "blocks.{i}.mlp.hook_pre": ("h.{i}.mlp.c_fc", "out"),
            "blocks.{i}.mlp.hook_post": ("h.{i}.mlp.act", "out"),
            "blocks.{i}.hook_mlp_out": ("h.{i}.mlp", "out"),
            "blocks.{i}.hook_resid_post": ("h.{i}", "out0"),
            "ln_final.hook_normalized": ("ln_f", "out"),
        },
        "unresolved": {
            "blocks.{i}.attn.hook_q": "GPT-2 computes q, k and v in one projection (h.{i}.attn.c_attn) and splits "
                                      "it inside the attention's forward: capture c_attn and split it in 3",
            "blocks.{i}.attn.hook_k": "see hook_q: k is a third of h.{i}.attn.c_attn's output",
            "blocks.{i}.attn.hook_v": "see hook_q: v is a third of h.{i}.attn.c_attn's output",
            "blocks.{i}.attn.hook_attn_scores": _NOT_A_MODULE.format(module="h.{i}.attn") + " (pre-softmax scores)",
        },
    },
    "bert": {
        "probe": "encoder.layer.0.attention.self.query", "blocks": "encoder.layer",
        "names": {
            "hook_embed": ("embeddings.word_embeddings", "out"),
            "hook_pos_embed": ("embeddings.position_embeddings", "out"),
            "blocks.{i}.hook_resid_pre": ("encoder.layer.{i}", "in0"),
            "blocks.{i}.attn.hook_q": ("encoder.layer.{i}.attention.self.query", "out"),
            "blocks.{i}.attn.hook_k": ("encoder.layer.{i}.attention.self.key", "out"),
            "blocks.{i}.attn.hook_v": ("encoder.layer.{i}.attention.self.value", "out"),
            "blocks.{i}.attn.hook_pattern": ("encoder.layer.{i}.attention.self.dropout", "in0"),
            "blocks.{i}.attn.hook_z": ("encoder.layer.{i}.attention.output.dense", "in0"),
            "blocks.{i}.hook_attn_out": ("encoder.layer.{i}.attention.output.dense", "out"),
            "blocks.{i}.ln1.hook_normalized": ("encoder.layer.{i}.attention.output.LayerNorm", "out"),
            "blocks.{i}.hook_resid_mid": ("encoder.layer.{i}.attention", "out0"),
            "blocks.{i}.mlp.hook_pre": ("encoder.layer.{i}.intermediate.dense", "out"),
            "blocks.{i}.mlp.hook_post": ("encoder.layer.{i}.intermediate.intermediate_act_fn", "out"),
            "blocks.{i}.hook_mlp_out": ("encoder.layer.{i}.output.dense", "out"),
            "blocks.{i}.ln2.hook_normalized": ("encoder.layer.{i}.output.LayerNorm", "out"),
            "blocks.{i}.hook_resid_post": ("encoder.layer.{i}", "out0"),
        },
        "unresolved": {
            "blocks.{i}.attn.hook_attn_scores": _NOT_A_MODULE.format(module="encoder.layer.{i}.attention.self")
            + " (pre-softmax scores)",
            "ln_final.hook_normalized": "BERT is post-LN: there is no final LayerNorm (blocks.{i}.ln2 is the last)",
        },
    },
    "vit": {
        "probe": "encoder.layer.0.attention.attention.query", "blocks": "encoder.layer",
        "names": {
            "hook_embed": ("embeddings.patch_embeddings", "out"),
            "blocks.{i}.hook_resid_pre": ("encoder.layer.{i}", "in0"),
            "blocks.{i}.ln1.hook_normalized": ("encoder.layer.{i}.layernorm_before", "out"),
            "blocks.{i}.attn.hook_q": ("encoder.layer.{i}.attention.attention.query", "out"),
            "blocks.{i}.attn.hook_k": ("encoder.layer.{i}.attention.attention.key", "out"),
            "blocks.{i}.attn.hook_v": ("encoder.layer.{i}.attention.attention.value", "out"),
            "blocks.{i}.attn.hook_pattern": ("encoder.layer.{i}.attention.attention.dropout", "in0"),
            "blocks.{i}.attn.hook_z": ("encoder.layer.{i}.attention.output.dense", "in0"),
            "blocks.{i}.hook_attn_out": ("encoder.layer.{i}.attention", "out0"),
            "blocks.{i}.hook_resid_mid": ("encoder.layer.{i}.layernorm_after", "in0"),
            "blocks.{i}.ln2.hook_normalized": ("encoder.layer.{i}.layernorm_after", "out"),
            "blocks.{i}.mlp.hook_pre": ("encoder.layer.{i}.intermediate.dense", "out"),
            "blocks.{i}.mlp.hook_post": ("encoder.layer.{i}.intermediate.intermediate_act_fn", "out"),
            "blocks.{i}.hook_mlp_out": ("encoder.layer.{i}.output.dense", "out"),
            "blocks.{i}.hook_resid_post": ("encoder.layer.{i}", "out0"),
            "ln_final.hook_normalized": ("layernorm", "out"),
        },
        "unresolved": {
            "hook_pos_embed": "ViT adds a position-embedding Parameter inside embeddings' forward: no module "
                              "returns it (read embeddings.position_embeddings directly)",
            "blocks.{i}.attn.hook_attn_scores": _NOT_A_MODULE.format(module="encoder.layer.{i}.attention.attention")
            + " (pre-softmax scores)",
        },
    },
}

_WHAT = {"out": "output", "out0": "output 0", "in0": "input 0"}


class HookSite:
    """Where a canonical name lives: ``path`` (full module path), ``module``, ``value`` (``"out"``,
    ``"out0"`` or ``"in0"``), ``layout``."""
    __slots__ = ("name", "path", "module", "value", "layout")

    def __init__(self, name, path, module, value, layout):
        self.name, self.path, self.module, self.value, self.layout = name, path, module, value, layout

    def __repr__(self):
        return f"HookSite({self.name!r} = {_WHAT[self.value]} of {self.path!r})"


def detect_layout(model, layout=None):
    """``(layout, prefix)``: the first layout whose probe path is in the model (under any prefix, e.g.
    ``"bert."`` or ``"transformer."``); ``ValueError`` when none is."""
    names = [n for n, _ in model.named_modules()]
    for lay in ([layout] if layout else LAYOUTS):
        if lay not in LAYOUTS:
            raise ValueError(f"hook names: unknown layout {lay!r}; known: {', '.join(LAYOUTS)}")
        probe = LAYOUTS[lay]["probe"]
        for n in names:
            if n == probe or n.endswith("." + probe):
                return lay, n[:len(n) - len(probe)]
    raise ValueError(f"hook names: {type(model).__name__} has none of the known layouts ({', '.join(LAYOUTS)}): "
                     f"no module path ends with {', '.join(repr(v['probe']) for v in LAYOUTS.values())}")


def _blocks(model, lay, prefix):
    mods = dict(model.named_modules())
    n = 0
    while f"{prefix}{LAYOUTS[lay]['blocks']}.{n}" in mods:
        n += 1
    return n, mods


def _expand(table, n):
    for name, v in table.items():
        if "{i}" in name:
            for i in range(n):
                yield name.replace("{i}", str(i)), (v.replace("{i}", str(i)) if isinstance(v, str) else tuple(
                    x.replace("{i}", str(i)) for x in v))
        else:
            yield name, v


def hook_names(model, layout=None):
    """``{canonical name: HookSite}`` for every name that resolves on ``model`` (layers expanded)."""
    lay, prefix = detect_layout(model, layout)
    n, mods = _blocks(model, lay, prefix)
    out = {}
    for name, (path, value) in _expand(LAYOUTS[lay]["names"], n):
        mod = mods.get(prefix + path)
        if mod is not None:
            out[name] = HookSite(name, prefix + path, mod, value, lay)
    return out


def unresolved(model, names=None, layout=None):
    """``[(name, reason)]`` for the given canonical names (default: every name of the layout's tables)
    that do not resolve on ``model``."""
    lay, prefix = detect_layout(model, layout)
    n, mods = _blocks(model, lay, prefix)
    known = dict(_expand(LAYOUTS[lay]["names"], n))
    why = dict(_expand(LAYOUTS[lay]["unresolved"], n))
    names = list(known) + list(why) if names is None else names
    out = []
    for name in names:
        if name in known:
            path = prefix + known[name][0]
            if path not in mods:
                out.append((name, f"no module {path!r} in this {type(model).__name__} (a variant of the {lay} "
                                  "layout without it)"))
        elif name in why:
            out.append((name, why[name]))
        else:
            m = re.match(r"blocks\.(\d+)\.", name)
            if m and int(m.group(1)) >= n:
                out.append((name, f"the model has {n} block{'s' if n != 1 else ''} (0..{n - 1})"))
            else:
                close = [k for k in known if k.split(".")[-1] == name.split(".")[-1]][:3]
                out.append((name, f"not a canonical name of the {lay} layout" +
                            (f"; did you mean {', '.join(close)}?" if close else "")))
    return out


def nearest(model, name, n=3, layout=None):
    """The (at most ``n``) canonical names that resolve on ``model`` nearest to ``name``, best first: for a
    block index past the last, the same name in the last block; else the closest spellings, within the same
    block when ``name`` has an index in range (``difflib``)."""
    known = list(hook_names(model, layout))
    out = []
    m = re.match(r"blocks\.(\d+)\.(.*)$", name)
    if m:
        last = max((int(k.split(".")[1]) for k in known if k.startswith("blocks.")), default=None)
        if last is not None and int(m.group(1)) > last:
            same = f"blocks.{last}.{m.group(2)}"
            out += [same] if same in known else []
            name = same
        pool = [k for k in known if k.startswith(f"blocks.{name.split('.')[1]}.")] or known
    else:
        pool = [k for k in known if not k.startswith("blocks.")] + [k for k in known if k.startswith("blocks.0.")]
    for k in difflib.get_close_matches(name, pool, n + len(out), 0.5):
        if k not in out:
            out.append(k)
    return out[:n]


def resolve(model, name, layout=None):
    """The :class:`HookSite` of one canonical name; ``KeyError`` with the reason when it has none."""
    site = hook_names(model, layout).get(name)
    if site is None:
        reason = unresolved(model, [name], layout)[0][1]
        raise KeyError(f"hook name {name!r}: {reason}")
    return site


def add_hook(model, name, fn, layout=None):
    """Register ``fn(activation, hook=site)`` at a canonical name, TransformerLens style: it sees the
    value the name stands for and may return a replacement (None keeps it). Returns the module hook's
    handle."""
    site = resolve(model, name, layout)
    lib = lib_of(model)
    if site.value == "in0":
        def pre(module, args, kwargs):
            if args:
                new = fn(args[0], hook=site)
                return None if new is None else ((new,) + tuple(args[1:]), kwargs)
            key = next((k for k, v in kwargs.items() if isinstance(v, lib.Tensor)), None)
            if key is not None:
                new = fn(kwargs[key], hook=site)
                if new is not None:
                    return args, dict(kwargs, **{key: new})
            return None
        return site.module.register_forward_pre_hook(pre, with_kwargs=True)

    def post(module, args, output):
        if site.value == "out0" and isinstance(output, (tuple, list)):
            new = fn(output[0], hook=site)
            return None if new is None else type(output)((new,) + tuple(output[1:]))
        return fn(output, hook=site)
    return site.module.register_forward_hook(post)
