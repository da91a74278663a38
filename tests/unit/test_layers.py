"""The import graph of src/hookgrad: no import circles, and no import from a lower layer up to a higher one.

Every ``import`` / ``from ... import`` of every module is collected with ``ast``, at module level and inside
functions alike (a lazy import is still a dependency). An import names a module: ``from .x import y`` is
``x.y`` when that is a module, else ``x``; ``from .. import name`` / ``import hookgrad`` of the package root
is an import of the root, the top layer. (Python also runs the parent packages' ``__init__`` first; that
implicit step is not an edge here.)
"""
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "hookgrad"
ROOT = "hookgrad"

# The layers, bottom first. A module belongs to the longest entry that is its name or a package above it;
# it may import its own layer and the layers below, never one above.
LAYERS = (
    # 0: leaves: dtypes, errors and warnings, the array module seam, layouts, the one hook-storage pattern
    ("_dtype", "_errors", "_warnings", "_array", "_cuda_kernels", "_kept", "_meta", "_symbolic", "_layout", "_malloc", "_coverage_names", "version", "_parallel", "_jit",
     "torch_version", "__future__", "utils.hooks", "_progress"),
    # 1: the Tensor (its state and hook registration) and how it prints; knows nothing of autograd
    ("_tensor", "_printing", "types"),
    # 2: autograd's core: grad mode, saved tensors, nodes, the engine, views and rebase, custom Functions
    ("autograd.grad_mode", "autograd.saved", "autograd.op_hooks", "autograd.node", "autograd.formulas",
     "autograd.engine", "autograd.views", "autograd.graph", "autograd.multi_grad", "autograd.anomaly_mode",
     "autograd.function", "autograd.basic_ops", "autograd.forward_ad", "autograd.profiler", "autograd.profiler_util"),
    # 3: tensors made from nothing (factories, random numbers, storages)
    ("_creation", "storage", "random"),
    # 4: the differentiable primitives and the in-place plumbing, one sub-layer per step of the op families'
    #    order, bottom first (a family may import the families below it, never one above):
    #    the shared plumbing and leaf kernels (in-place and dispatch helpers, out=, return types, fill, the NumPy
    #    erf kernel, the indexing nodes that index and join share)
    ("primitives._inplace", "primitives._dispatch", "primitives._out", "primitives.return_types", "primitives.fill",
     "primitives._kernels", "primitives._reduce_order", "primitives._index_nodes"),
    ("primitives.elementwise",),            # unary/binary maths, where
    ("primitives.join",),                   # cat/stack/split/pad (the others build on cat)
    ("primitives.nn", "primitives.attention"),   # conv, pooling, activations; scaled dot-product attention
    ("primitives.index",),                  # get/set items, gather/scatter, masks, comparisons
    ("primitives.shape",),                  # views, reshapes, *_copy, meshgrid
    ("primitives.reduce", "primitives.special", "primitives.linalg", "primitives.solvers", "primitives.decomp",
     "primitives.complex"),
    ("primitives.stats", "primitives.everyday", "primitives.weight_norm", "primitives.sampling",
     "primitives.losses", "primitives.embedding_bag", "primitives.vision", "primitives.foreach"),
    ("primitives.rnn",),                    # the recurrences of RNN / LSTM / GRU, composed of the families above
    ("primitives",),                        # the package: installs the Tensor methods of every family
    # above the primitives, built on the ops: the torch.autograd namespace (backward, grad, functional,
    #    gradcheck), nn, optim, utils, serialization, the namespaces of missing names, PyTorch's load-time modules
    ("autograd", "nn", "ao", "optim", "utils", "serialization", "_weights_only_unpickler", "_misc", "_nn_functions",
     "futures", "distributed", "jit", "hub", "overrides", "multiprocessing", "backends", "cpu", "cuda", "xpu", "_no_accelerator", "amp", "profiler",
     "primitives.linalg_ns",
     "compiler", "_dynamo", "_tensor_str", "_utils", "_subclasses", "onnx", "accelerator",  # torch's load-time stand-ins (issue 22)
     "primitives.special_ns", "primitives.fft", "primitives.signal", "_missing",
     "sparse"),                             # torch.sparse (issue 27), over primitives/sparse.py
    # the top: hookgrad itself (the flat namespace, ""), the namespace glue (torch._C, torch.ops, the torch
    #    alias) and the clients of the public API, which import hookgrad as their users do
    ("__config__",                          # describes the build (reads hookgrad.__version__)
     "", "_C", "_VF", "ops", "library", "_custom_ops", "compat", "functional", "__main__", "_spawn", "tools", "models", "distributions", "testing",
     "utils._python_dispatch", "utils.flop_counter", "_sample_fns", "fx",
     "func", "_functorch", "_vmap_internals"),            # torch.func's transforms, over the public ops (issue 27)
)
# hookgrad/__init__ re-exports every layer: its own imports are not checked (an import of it from a layer
# below the top is an upward import, reported as such), and they are left out of the cycle search.

# Edges that break the rules today, each with its reason; the lead decides. Keep this list short.
ALLOWED = {
    # PyTorch's code calls these through the torch namespace at call time, so that a patched torch.<fn> is seen
    # (nn.functional.rrelu -> torch.rrelu, the activation modules -> torch.tanh / torch.sigmoid), and torch.overrides
    # lists the namespace's functions by name
    ("nn.functional", ""): "F.rrelu calls torch.rrelu / torch.rrelu_ (owner: nn/functional.py)",
    ("nn.modules.activation", ""): "Tanh/Sigmoid call torch.tanh / torch.sigmoid (owner: nn/modules/activation.py)",
    ("overrides", ""): "get_ignored_functions reads the namespace (owner: overrides.py)",
    # selective activation checkpointing (torch.utils.checkpoint.create_selective_checkpoint_contexts) builds its two
    # TorchDispatchModes on first use; the modes live above, with torch.ops
    ("utils.checkpoint", "utils._python_dispatch"): "SAC's dispatch modes, built on first use (owner: utils/checkpoint.py)",
}


def _modules():
    mods = {}
    for p in SRC.rglob("*.py"):
        parts = list(p.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = p
    return mods


MODULES = _modules()


def _owner(name):
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(mod):
    """{imported module: first line} for every import of a hookgrad module in ``mod``."""
    path = MODULES[mod]
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] == ROOT]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").split(".")[0] == ROOT:
                base = node.module
            else:
                continue
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for t in targets:
            out.setdefault(_owner(t), node.lineno)
    out.pop(mod, None)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


def _short(m):
    return m[len(ROOT) + 1:] if m != ROOT else ""


def layer_of(mod):
    name, best = _short(mod), None
    for i, entries in enumerate(LAYERS):
        for e in entries:
            if (e == name or e == "" and name == "" or name.startswith(e + ".")) and \
                    (best is None or len(e) > len(best[1])):
                best = (i, e)
    return None if best is None else best[0]


def _edges():
    for a, targets in GRAPH.items():
        if a == ROOT:
            continue
        for b, line in targets.items():
            if (_short(a), _short(b)) not in ALLOWED:
                yield a, b, line


def cycles():
    """The strongly connected components of more than one module, each as a list of its internal edges."""
    graph = {}
    for a, b, line in _edges():
        graph.setdefault(a, {})[b] = line
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):                       # Tarjan, iterative over an explicit stack of iterators
        work = [(v, iter(graph.get(v, ())))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(f"{_short(a) or ROOT}:{graph[a][b]} -> {_short(b) or ROOT}"
                                          for a in comp for b in graph.get(a, ()) if b in comp))

    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    return out


def upward_imports():
    return sorted(f"{_short(a) or ROOT}:{line} (layer {layer_of(a)}) -> {_short(b) or ROOT} (layer {layer_of(b)})"
                  for a, b, line in _edges() if layer_of(b) > layer_of(a))


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) is None] == [], "add these modules to LAYERS"


def test_the_allow_list_is_not_stale():
    edges = {(_short(a), _short(b)) for a in GRAPH for b in GRAPH[a]}
    assert sorted(set(ALLOWED) - edges) == []


def test_no_upward_imports():
    up = upward_imports()
    assert up == [], f"{len(up)} imports from a lower layer up to a higher one:\n" + "\n".join(up)


def test_no_import_cycles():
    found = cycles()
    assert found == [], f"{len(found)} import cycles:\n" + "\n\n".join("\n".join(c) for c in found)


def test_the_analysis_sees_lazy_and_relative_imports():
    # _tensor's module is imported by modules that are known to import it (relative and absolute forms)
    assert f"{ROOT}._tensor" in GRAPH[f"{ROOT}._creation"]
    assert f"{ROOT}.autograd.grad_mode" in GRAPH[f"{ROOT}.primitives._dispatch"]
