"""PyTorch's keyword names and positional order on everything hookgrad implements, generated from torch.

The table comes from torch itself at test time (see _signatures.py): a function added to hookgrad is checked
as soon as it exists. A failure lists `name  keyword/position  what differs  [where PyTorch's names came from]`.
"""
import pytest
import torch

import hookgrad
import _signatures as S


@pytest.mark.parametrize("ns", ["torch", "Tensor", "F", "linalg"])
def test_keyword_names_and_positions_match_pytorch(ns):
    rows = S.mismatches((ns,))
    assert not rows, f"{len(rows)} parameter(s) differ from PyTorch's:\n" + S.table(rows)


def test_the_sources_read_pytorch_correctly():
    # the generator's reading of torch, checked against real calls (a wrong reading would pass anything)
    x = torch.ones(4, 4)
    for ns, name, kw in [("Tensor", "permute", {"dims": (1, 0)}), ("Tensor", "view", {"size": (16,)}),
                         ("Tensor", "reshape", {"shape": (16,)}), ("Tensor", "expand", {"size": (2, 4, 4)}),
                         ("Tensor", "flip", {"dims": (0,)}), ("Tensor", "repeat", {"repeats": (1, 2)}),
                         ("torch", "sum", {"input": x, "dim": 0, "keepdim": True}),
                         ("torch", "swapaxes", {"input": x, "axis0": 0, "axis1": 1}),
                         ("linalg", "vecdot", {"x": x, "y": x, "dim": 0}),
                         ("Tensor", "copy_", {"other": x, "non_blocking": False})]:

        names = {n for o in S.torch_overloads(ns, name, None) for n in o.positional + o.keyword_only}
        assert set(kw) <= names | {"input"}, (ns, name, names)
        target = getattr(x, name) if ns == "Tensor" else getattr(torch if ns == "torch" else torch.linalg, name)
        target(**kw)                                        # torch accepts these names


@pytest.mark.parametrize("expr", [
    "lib.zeros(size=(2, 3))", "lib.ones(size=[2])", "lib.randn(size=(2,)).shape", "lib.rand(size=(2,)).shape",
    "lib.empty(size=(2,)).shape", "lib.flip(x, dims=(0,))", "x.flip(dims=(0, 1))", "x.permute(dims=(1, 0))",
    "lib.permute(x, dims=(1, 0))", "x.reshape(shape=(6,))", "lib.reshape(x, shape=(3, 2))", "x.view(size=(6,))",
    "x.view(dtype=lib.int32)", "x.expand(size=(2, 2, 3))", "x.repeat(repeats=(1, 2))", "x.tile(dims=(2,))",
    "lib.tile(x, dims=(2,))", "x.sum(dim=0, keepdim=True, dtype=lib.float64)", "lib.dot(input=y, tensor=y)",
    "lib.swapaxes(x, axis0=0, axis1=1)", "x.swapaxes(axis0=0, axis1=1)", "x.new_zeros(size=(2,))",
    "x.new_full(size=(2,), fill_value=3.0)", "x.sum_to_size(size=(1, 3))", "x.view_as(other=x)",
    "x.where(condition=x > 2, other=y[0])", "lib.nn.functional.one_hot(input=lib.tensor([1, 0]))",
    "lib.linalg.norm(input=x)", "lib.linalg.vector_norm(input=x)", "lib.transpose(input=x, dim0=0, dim1=1)",
    "lib.zeros(2, size=(3,))", "lib.zeros()", "x.permute()", "x.view()",
    "lib.zeros(2, layout=lib.strided, pin_memory=False, device='cpu')",
    "lib.arange(3, pin_memory=False)", "lib.zeros_like(x, memory_format=lib.preserve_format)",
    "lib.empty(3).uniform_(**{'from': 2, 'to': 3}).ge(2).all()", "lib.empty(3).random_(**{'from': 2, 'to': 3})",
    "x.flip(dims=0)", "lib.zeros(size=2)", "x.view(size=6)", "x.reshape(shape=6)", "lib.permute(x, dims=0)",
    "lib.tensor_split(x, sections=2, dim=1)", "lib.tensor_split(x, indices=[1], dim=1)", "x.tensor_split(2, 1)",
    "lib.tensor_split(x, tensor_indices_or_sections=lib.tensor(2))",
    "lib.hsplit(x, sections=3)", "x.vsplit(indices=[1])", "lib.hsplit(x, [1, 2])",
    "lib.median(x, dim=1, keepdim=True)", "x.nanmedian(dim=0)", "lib.kthvalue(x, k=2, dim=1)", "x.mode(dim=0)",
    "lib.max(x, other=y)", "x.min(other=y)", "lib.norm(x, 2, 1, True)", "x.norm(2, 1, True, lib.float64)",
    "lib.subtract(x, 1, 2)", "x.subtract(1, 2)", "x.clone().subtract_(1, 2)", "lib.sub(x, y, alpha=2)",
    "x.clone().div_(y, rounding_mode='floor')", "x.clone().mul_(other=y)", "x.clone().copy_(other=y)",
    "x.new(size=(2,)).shape", "x.new(data=[1, 2])", "x.new(other=x)",
    "x.to(dtype=lib.float64)", "x.to(lib.float64, False, True)", "x.to(tensor=lib.ones(1, dtype=lib.int64))",
    "lib.inner(x, other=x)", "lib.inner(y, 2.0)", "lib.as_strided_(input=x.clone(), size=(3,), stride=(1,))",
])

def test_keyword_calls_behave_as_pytorch(expr):
    from oracle import assert_same
    res = {}
    for lib in (torch, hookgrad):
        x = lib.arange(6.).reshape(2, 3)
        y = lib.arange(3.)
        try:
            res[lib] = ("ok", eval(expr))
        except Exception as e:      # noqa: BLE001  (the error's type and text are compared)
            res[lib] = ("error", type(e).__name__, str(e).split("\n")[0])
    t, h = res[torch], res[hookgrad]
    assert t[0] == h[0], (expr, t, h)
    if t[0] == "ok":
        assert_same(t[1], h[1], expr)
    else:
        assert t[1:] == h[1:], (expr, t, h)
