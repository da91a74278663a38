"""Bad arguments get PyTorch's exception (the argument parser's TypeError): representative calls of every family
with arguments of the wrong type, made under torch and hookgrad alike; the exception types must agree, and where
PyTorch's parser names the argument ("must be Tensor, not int"), the text must too.

The calls are argument patterns of scripts/coverage.py (its inputs and its way of calling), a sample across the
names where the two libraries used to disagree."""
import os

import pytest
import torch

import hookgrad

def _script(name):
    """scripts/<name>.py as a module, not put on sys.path (its name would hide the PyPI package ``coverage``,
    which numba imports when it is there)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"_{name}_script",
                                                  os.path.join(os.path.dirname(__file__), "..", "..", "scripts", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


C = _script("coverage")

Attr = C.Attr

CALLS = [
    ('Tensor.addr', ('x', 'b', 0.5)),
    ('Tensor.allclose', ('x', (1, 0))),
    ('Tensor.bitwise_or', ('x', Attr("float64"))),
    ('Tensor.bitwise_xor_', ('x', Attr("float64"))),
    ('Tensor.bmm', ('img', 2)),
    ('Tensor.broadcast_to', ('x', 0, 1)),
    ('Tensor.chunk', ('img', 'k')),
    ('Tensor.cummax', ('x', 'y')),
    ('Tensor.cummin', ('x', 'W')),
    ('Tensor.cumsum', ('x', 'w')),
    ('Tensor.cumsum_', ('x', 'b')),
    ('Tensor.diagflat', ('x', 'b')),
    ('Tensor.diagonal', ('x', 'b')),
    ('Tensor.equal', ('x', 2)),
    ('Tensor.gather', ('x', 0, 1)),
    ('Tensor.ger', ('x', -1)),
    ('Tensor.is_same_size', ('x', 1)),
    ('Tensor.is_set_to', ('x', (1, 0))),
    ('Tensor.lerp', ('x', 0, 1)),
    ('Tensor.logical_xor', ('x', Attr("float64"))),
    ('Tensor.masked_fill_', ('x', 0, 1)),
    ('Tensor.masked_scatter', ('x', 1, 't')),
    ('Tensor.mean', ('b', 'b')),
    ('Tensor.mm', ('x', 0.5)),
    ('Tensor.mode', ('x', 'y', 'z')),
    ('Tensor.movedim', ('x', 1, 't')),
    ('Tensor.multinomial', ('x', 'y', 0.5)),
    ('Tensor.nanquantile', ('x', 1, 'i', 'y')),
    ('Tensor.polygamma_', ('x', 'b')),
    ('Tensor.put', ('x', 1, 'i')),
    ('Tensor.put_', ('x', 1, 'i')),
    ('Tensor.relu_', ('b', 'b')),
    ('Tensor.repeat_interleave', ('x', 'y', 'z')),
    ('Tensor.reshape_as', ('x', 1)),
    ('Tensor.rot90', ('s', 's')),
    ('Tensor.scatter', ('x', 'b', 0.5)),
    ('Tensor.select', ('x', 'y', 0.5)),
    ('Tensor.slice_scatter', ('x', Attr("float64"))),
    ('Tensor.take', ('x', 1)),
    ('Tensor.tensor_split', ('x', 'y', 0.5)),
    ('Tensor.topk', ('v', 'u')),
    ('Tensor.transpose_', ('x', 'y', 0.5)),
    ('Tensor.tril', ('v', 'u')),
    ('Tensor.triu', ('v', 'u')),
    ('Tensor.unbind', ('x', 'W')),
    ('Tensor.unsafe_chunk', ('s', 's')),
    ('Tensor.var', ('b', 'b')),
    ('Tensor.view_as', ('x', -1)),
    ('Tensor.where', ('x', 1, 'i')),
    ('linalg.matrix_norm', ('x', 'y', 'z')),
    ('nn.functional.adaptive_max_pool1d', (2, 3)),
    ('nn.functional.bilinear', ('x', 1, 't')),
    ('nn.functional.channel_shuffle', ('x', 'w')),
    ('nn.functional.conv2d', ('x', Attr("float64"))),
    ('nn.functional.conv_transpose1d', ('x', 'y', 0.5)),
    ('nn.functional.conv_transpose2d', ('x', 'y', 0.5)),
    ('nn.functional.dropout', (3,)),
    ('nn.functional.hardswish', (2, 3)),
    ('nn.functional.linear', ('x', 'b', 0.5)),
    ('nn.functional.max_pool1d_with_indices', (2, 3)),
    ('nn.functional.mish', (2, 3)),
    ('nn.functional.one_hot', ('b', 'b')),
    ('nn.functional.rrelu', ('x', 1, 'i', 'y')),
    ('nn.functional.softmin', ('bx', 'by')),
    ('torch.add', ('x', 1, 't')),
    ('torch.addmv', ('x', 1, 't')),
    ('torch.addr', ('x', 'y', 0.5)),
    ('torch.all', (2, 3)),
    ('torch.alpha_dropout_', ('x', 1, 't')),
    ('torch.amin', (3,)),
    ('torch.any', (3,)),
    ('torch.argwhere', (3,)),
    ('torch.as_strided_scatter', ('x', 1, 'i', 'y')),
    ('torch.baddbmm', ('x', 1, 'i')),
    ('torch.bilinear', ('x', 'y', 0.5)),
    ('torch.bitwise_xor', ('x', Attr("float64"))),
    ('torch.bmm', ('img', 2)),
    ('torch.broadcast_to', (2, 3)),
    ('torch.chunk', ('v', 'u')),
    ('torch.clamp', (2, 3)),
    ('torch.clamp_min', (2, 3)),
    ('torch.combinations', (2, 3)),
    ('torch.conv_transpose2d', ('x', 'b', 0.5)),
    ('torch.cosine_similarity', ('x', Attr("float64"))),
    ('torch.count_nonzero', (3,)),
    ('torch.cross', ('x', 1, 'i')),
    ('torch.cummin', ('b', 'b')),
    ('torch.cumsum', ('v', 'u')),
    ('torch.diag', ('x', 'w')),
    ('torch.diag_embed', ('x', 1, 't')),
    ('torch.diagflat', (2, 3)),
    ('torch.diagonal_scatter', ('x', (1, 0))),
    ('torch.diff', ('x', 1, 'i', 'y')),
    ('torch.dist', ('x', (3, 2))),
    ('torch.dropout_', ('x', 1, 'i')),
    ('torch.fill', (2, 3)),
    ('torch.ger', ('x', Attr("float64"))),
    ('torch.histogram', (2, 3)),
    ('torch.index_select', ('x', 'y', 0.5)),
    ('torch.is_floating_point', (3,)),
    ('torch.is_inference', (3,)),
    ('torch.is_same_size', ('x', 0.5)),
    ('torch.isin', ('x', Attr("float64"))),
    ('torch.isneginf', (3,)),
    ('torch.kthvalue', ('x', 'y', 'z')),
    ('torch.log_softmax', ('b', 'b')),
    ('torch.logcumsumexp', ('bx', 'by')),
    ('torch.logical_not', (3,)),
    ('torch.logical_xor', ('x', Attr("float64"))),
    ('torch.masked_fill', ('x', 0, 1)),
    ('torch.median', (2, 3)),
    ('torch.moveaxis', ('x', 1, 'i')),
    ('torch.msort', (3,)),
    ('torch.multinomial', ('bx', 'by')),
    ('torch.nanmedian', ('v', 'u')),
    ('torch.nanquantile', ('x', 1, 'i', 'y')),
    ('torch.native_channel_shuffle', (2, 3)),
    ('torch.nonzero', (3,)),
    ('torch.pairwise_distance', ('x', (3, 2))),
    ('torch.permute_copy', (2, 3)),
    ('torch.pixel_shuffle', (2, 3)),
    ('torch.pixel_unshuffle', (2, 3)),
    ('torch.prod', (3,)),
    ('torch.rand_like', (3,)),
    ('torch.ravel', (3,)),
    ('torch.relu', ('x', 'W')),
    ('torch.reshape', (2, 3)),
    ('torch.rms_norm', (2, 3)),
    ('torch.rot90', ('x', 't')),
    ('torch.round', (3,)),
    ('torch.scatter', ('x', 'y', 'z')),
    ('torch.scatter_add', ('x', 1, 0, 2)),
    ('torch.searchsorted', (2, 3)),
    ('torch.select_scatter', ('x', 1, 'i', 'y')),
    ('torch.slice_inverse', ('x', 1, 0, 2)),
    ('torch.softmax', ('x', 'y', 'z')),
    ('torch.split_copy', ('x', 1, 'i')),
    ('torch.split_with_sizes_copy', ('x', 'y', 'z')),
    ('torch.std', (2, 3)),
    ('torch.std_mean', (3,)),
    ('torch.sum', (2, 3)),
    ('torch.t', (3,)),
    ('torch.take_along_dim', ('x', 1)),
    ('torch.tensor_split', ('x', 1, 'i')),
    ('torch.trace', (3,)),
    ('torch.transpose', ('x', 'b', 0.5)),
    ('torch.transpose_copy', ('x', 'b', 0.5)),
    ('torch.tril_indices', ('x', 1, 'i')),
    ('torch.triu', (3,)),
    ('torch.triu_indices', ('x', 'y', 0.5)),
    ('torch.unbind', ('b', 'b')),
    ('torch.unsqueeze', (2, 3)),
    ('torch.unsqueeze_copy', ('x', 'y')),
    ('torch.var', (2, 3)),
    ('torch.vdot', ('x', (3, 2))),]


def _run(lib, name, pattern):
    ns, _, fname = name.rpartition(".")
    path = {"torch": "", "Tensor": "Tensor", "nn.functional": "nn.functional", "linalg": "linalg"}[ns]
    with C.calling():
        res, _ = C._call(lib, C._getter(path, fname, path == "Tensor"), pattern)
    return res


@pytest.mark.parametrize("name,pattern", CALLS, ids=[f"{n}{p}" for n, p in CALLS])
def test_bad_arguments_raise_as_torch(name, pattern):
    want = _run(torch, name, pattern)
    got = _run(hookgrad, name, pattern)
    assert isinstance(want, BaseException), f"torch accepted {name}{pattern}: the call is no longer a bad one"
    assert isinstance(got, BaseException), f"hookgrad accepted {name}{pattern}; torch raised {want!r}"
    base = next(t for t in type(want).__mro__ if t.__module__ == "builtins")
    assert isinstance(got, base), f"{name}{pattern}: torch raised {want!r}, hookgrad {got!r}"
    text = str(want)
    if "must be" in text and "): argument '" in text and not name.startswith("nn."):   # F's inner op names vary     # the parser's text names the argument and its type
        assert str(got) == text, f"{name}{pattern}"


@pytest.mark.parametrize("call", [
    lambda t: t.addmm(t.ones(2, 3), t.ones(3, 2), 0.5), lambda t: t.ones(2, 3).sum(t.ones(2)),
    lambda t: t.cat([t.ones(2), 1]), lambda t: t.exp(t.ones(2), 1), lambda t: t.nn.functional.linear(t.ones(2, 3), 3),
    lambda t: t.ones(2, 3).add("a"), lambda t: t.ones(2, 3).addmm(t.ones(3, 2), 0.5), lambda t: t.matmul(t.ones(2), 2),
    lambda t: t.ones(2, 3).cumsum(t.ones(1)), lambda t: t.gather(t.ones(2, 3), 1, 0.5),
    lambda t: t.nn.functional.relu(3), lambda t: t.ones(2, 3).index_select(0, [0]),
])
def test_parser_texts(call):
    try:
        call(torch)
    except Exception as e:      # noqa: BLE001
        want = e
    else:
        pytest.fail("torch accepted the call")
    with pytest.raises(type(want)) as got:
        call(hookgrad)
    if "): argument '" in str(want) or "positional argument" in str(want):
        assert str(got.value) == str(want)
