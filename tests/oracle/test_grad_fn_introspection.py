"""grad_fn as tools see it (torchviz's make_dot walks next_functions, dir(fn), _saved_*, saved_tensors):
the names and values of PyTorch's saved attributes, dir() without internals, saved_tensors only where
PyTorch has it. Every check runs the same program on torch and hookgrad and compares."""
import numpy as np
import pytest
import torch

import hookgrad

RNG = np.random.RandomState(0)
A = RNG.randn(3, 4).astype("float32")
B = RNG.randn(3, 4).astype("float32")

# (program over lib `t`, inputs a, b (3, 4) requiring grad)
OPS = [
    "a*b", "a+b", "a-b", "a/b", "a+2", "a*2", "a/2", "a**b", "-a", "a@b.T", "a.T", "a.t()",
    "a.sum()", "a.sum(1)", "a.sum(1,keepdim=True)", "a.mean()", "a.mean(0)", "a.exp()", "a.log()", "a.sin()",
    "a.tanh()", "a.sigmoid()", "a.relu()", "a.abs()", "a.sqrt()", "a.rsqrt()", "a.clamp(-0.5,0.5)", "a.clamp(min=0)",
    "a.max()", "a.max(1)[0]", "a.min(0)[0]", "a.amax(1)", "a.view(12)", "a.reshape(2,6)", "a.permute(1,0)",
    "a.transpose(0,1)", "a.unsqueeze(0)", "a.unsqueeze(2)", "a.squeeze()", "a.flatten()", "a.expand(2,3,4)", "t.cat([a,b])",
    "t.cat([a,b],1)", "t.stack([a,b])", "a.softmax(1)", "a.log_softmax(1)", "t.nn.functional.gelu(a)",
    "t.nn.functional.gelu(a,approximate='tanh')", "t.nn.functional.leaky_relu(a,0.1)", "t.nn.functional.silu(a)",
    "t.nn.functional.elu(a,alpha=0.5)", "t.nn.functional.linear(a,b)", "a.var(1)", "a.norm()", "t.where(a>0,a,b)",
    "a.masked_fill(a>0,0.)", "a.split(2,1)[0]", "a.chunk(2,0)[1]", "a.repeat(2,1)", "a.cumsum(1)", "a.prod(1)",
    "a.maximum(b)", "t.mm(a,b.T)", "t.matmul(a,b.T)", "a.log1p()", "a.expm1()", "a.reciprocal()", "a.clone()",
    "a.to(t.float64)", "a.sign()", "a.erf()", "a.atan2(b)", "a.lerp(b,0.3)", "a.flip(0)", "a.roll(1,0)",
    "t.nn.functional.conv2d(a.reshape(1,1,3,4),b[:2,:2].reshape(1,1,2,2),stride=1,padding=1)",
    "t.nn.functional.conv2d(a.reshape(1,1,3,4),b[:2,:2].reshape(1,1,2,2),b[0,:1],stride=2,dilation=1)",
    "t.nn.functional.max_pool2d(a.reshape(1,1,3,4),2,stride=1)", "t.nn.functional.avg_pool2d(a.reshape(1,1,3,4),2,1)",
    "t.nn.functional.layer_norm(a,(4,),b[0],None)", "t.nn.functional.batch_norm(a,None,None,b[0],training=True)",
    "t.nn.functional.cross_entropy(a,t.tensor([0,1,2]))", "t.nn.functional.nll_loss(a,t.tensor([0,1,2]),reduction='sum')",
    "t.nn.functional.embedding(t.tensor([0,2]),a)", "t.nn.functional.embedding(t.tensor([0,2]),a,padding_idx=1)",
    "t.nn.functional.hardtanh(a)", "a.gather(1,t.tensor([[0],[1],[2]]))", "a.index_select(0,t.tensor([0,2]))",
    "a.sort(1)[0]", "a.topk(2,1)[0]", "a.unbind(0)[1]", "a.diagonal()", "a.triu()", "a.tril(1)", "a.logsumexp(1)",
    "t.addmm(a[:,:3],a,b.T[:,:3])", "t.bmm(a.reshape(1,3,4),b.reshape(1,4,3))", "a.mul(b).add(1)",
]


def _value(lib, v):
    if isinstance(v, lib.Tensor):
        return ("T", str(v.dtype).split(".")[-1], tuple(v.shape), [str(x) for x in v.detach().double().numpy().round(5).ravel()])
    if isinstance(v, tuple):
        return tuple(_value(lib, x) for x in v)
    assert type(v) in (int, float, bool, str, type(None)), f"saved value of type {type(v)}"
    return (type(v).__name__, round(v, 5) if isinstance(v, float) else v)


def _walk(lib, out):
    """Every node of the graph, each as (name, {saved attr: value}, dir without dunders)."""
    nodes, seen, todo = [], set(), [out.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        saved = {k: _value(lib, getattr(fn, k)) for k in dir(fn) if k.startswith("_saved_")}
        names = sorted(k for k in dir(fn) if not k.startswith("__"))
        nodes.append((fn.name(), saved, names, hasattr(fn, "saved_tensors"), hasattr(fn, "variable")))
        todo.extend(f for f, _ in fn.next_functions)
    return nodes


# Known gaps (strict: each must still fail, so a fix shows up): a Python number saved as a tensor
# keeps NumPy's dtype (PyTorch: int64 0-dim); int arguments stored as floats (elu's scale, norm's
# ord); pooling's default stride shows
# (k, k) (PyTorch: ()); layer/batch norm lack bias/running stats; nll_loss lacks total_weight.
GAPS = {"a*2", "a/2", "t.nn.functional.elu(a,alpha=0.5)", "a.norm()",
        "t.nn.functional.max_pool2d(a.reshape(1,1,3,4),2,stride=1)",
        "t.nn.functional.layer_norm(a,(4,),b[0],None)", "t.nn.functional.batch_norm(a,None,None,b[0],training=True)",
        "t.nn.functional.cross_entropy(a,t.tensor([0,1,2]))", "t.nn.functional.nll_loss(a,t.tensor([0,1,2]),reduction='sum')"}
OPS = [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason="known gap")) if p in GAPS else p for p in OPS]

# torch-internal names hookgrad does not offer (no tool reads them)
_TORCH_ONLY = {"_input_metadata", "_register_hook_dict"}


@pytest.mark.parametrize("prog", OPS)
def test_saved_attributes_and_dir_match_torch(prog):
    res = []
    for lib in (torch, hookgrad):
        a = lib.tensor(A, requires_grad=True)
        b = lib.tensor(B, requires_grad=True)
        nodes = _walk(lib, eval(prog, {"t": lib, "a": a, "b": b}))
        res.append([(n, s, [k for k in d if k not in _TORCH_ONLY], st, var) for n, s, d, st, var in nodes])
    assert res[1] == res[0]


def test_dir_lists_nothing_that_raises():
    a = hookgrad.tensor(A, requires_grad=True)
    b = hookgrad.tensor(B, requires_grad=True)
    for prog in [p if isinstance(p, str) else p.values[0] for p in OPS]:
        out = eval(prog, {"t": hookgrad, "a": a, "b": b})
        for fn, _ in ((out.grad_fn, 0),) + out.grad_fn.next_functions:
            if fn is not None:
                for k in dir(fn):
                    getattr(fn, k)


def _errors(lib, read):
    x = lib.tensor(A, requires_grad=True)
    y = (x * 2).sum(1)
    z = x.exp()
    (y.sum() + z.sum()).backward()
    try:
        return ("ok", _value(lib, read(y, z)))
    except Exception as e:
        return (type(e).__name__, str(e).split(".")[0])


@pytest.mark.parametrize("read", [lambda y, z: z.grad_fn._saved_result, lambda y, z: y.grad_fn._saved_dim,
                                  lambda y, z: y.grad_fn._saved_self_sym_sizes,
                                  lambda y, z: y.grad_fn.next_functions[0][0]._saved_other,
                                  lambda y, z: z.grad_fn._raw_saved_result.data])
def test_saved_after_backward(read):
    assert _errors(hookgrad, read) == _errors(torch, read)


def test_saved_tensors_only_on_custom_functions():
    def run(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        x = lib.tensor(A, requires_grad=True)
        out = Double.apply(x).exp()
        custom = out.grad_fn.next_functions[0][0]
        return (hasattr(out.grad_fn, "saved_tensors"), hasattr(custom, "saved_tensors"),
                [_value(lib, t) for t in custom.saved_tensors], "saved_tensors" in dir(custom))
    assert run(hookgrad) == run(torch)


def _make_dot_walk(lib, out):
    """torchviz.make_dot(out, show_attrs=True, show_saved=True), its reading of the graph: labels
    (attr: str(value)), saved tensors, variables, edges; ids replaced by visit order."""
    seen, ids, lines = set(), {}, []

    def nid(o):
        return ids.setdefault(id(o), len(ids))

    def add(fn):
        if fn in seen:
            return
        seen.add(fn)
        attrs = {}
        for attr in dir(fn):
            if attr.startswith("_saved_"):
                val = getattr(fn, attr)
                seen.add(val)
                attrs[attr[7:]] = ("tensor", tuple(val.shape)) if lib.is_tensor(val) else str(val)
        if hasattr(fn, "variable"):
            lines.append(("var", nid(fn.variable), tuple(fn.variable.shape), nid(fn)))
        lines.append(("fn", nid(fn), fn.name(), sorted(attrs.items())))
        for u in fn.next_functions:
            if u[0] is not None:
                lines.append(("edge", nid(u[0]), nid(fn)))
                add(u[0])
        if hasattr(fn, "saved_tensors"):
            lines.extend(("saved", nid(t)) for t in fn.saved_tensors)
    add(out.grad_fn)
    return lines


def test_torchviz_walk_of_a_small_cnn():
    def run(lib):
        lib.manual_seed(0)
        nn = lib.nn
        model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(8, 3), nn.LogSoftmax(1))
        x = lib.tensor(RNG.randn(2, 1, 4, 4).astype("float32"))
        return _make_dot_walk(lib, model(x).sum())
    assert run(hookgrad) == run(torch)
