"""Hostile arguments get PyTorch's exception type and text (never a NumPy/Python internal error), and the
DataLoader goes on after a failing batch, as PyTorch's does. Every case runs under torch and hookgrad."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad

from ops_util import same_error

X4 = np.random.default_rng(0).random((2, 3, 6, 6)).astype(np.float32)
W4 = np.random.default_rng(1).random((4, 3, 3, 3)).astype(np.float32)
X3 = X4[:, :, 0, :].copy()
W3 = W4[:, :, 0, :].copy()
F = lambda L: L.nn.functional  # noqa: E731

GEO = [dict(stride=0), dict(stride=-1), dict(padding=-1), dict(dilation=0), dict(dilation=-1), dict(stride=1.5),
       dict(padding=1.5), dict(stride=(1, 2, 3)), dict(groups=0), dict(groups=-1), dict(groups=2), dict(stride="a"),
       dict(padding="foo"), dict(stride=None), dict(stride=(True, 1)), dict(dilation=(0, -1)), dict(stride=0, padding=-1)]


@pytest.mark.parametrize("kw", GEO, ids=str)
@pytest.mark.parametrize("op", ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"])
def test_conv_geometry(op, kw):
    x, w = (X3, W3) if op.endswith("1d") else (X4, W4)
    if "transpose" in op:
        w = np.ascontiguousarray(np.swapaxes(w, 0, 1))
    if "transpose" in op and kw.get("padding") == "foo":
        kw = dict(padding=(1, "a"))
    same_error(lambda L, x, w: getattr(F(L), op)(x, w, **kw), x, w)


@pytest.mark.parametrize("case", [
    lambda L, x, w: F(L).conv2d(x, w, L.zeros(3)),                      # bias of the wrong size
    lambda L, x, w: F(L).conv2d(x, w, L.zeros(4, 1)),
    lambda L, x, w: F(L).conv2d(x, w, L.zeros(4, dtype=L.float64)),
    lambda L, x, w: F(L).conv_transpose2d(x, w.transpose(0, 1), L.zeros(5)),
    lambda L, x, w: F(L).conv2d(x, w[:, :, 0]),                         # weight of the wrong rank
    lambda L, x, w: F(L).conv2d(x, w.long()),
    lambda L, x, w: F(L).conv2d(x, w[:0]),
    lambda L, x, w: F(L).conv2d(None, w),
    lambda L, x, w: F(L).conv2d(x, None),
    lambda L, x, w: F(L).conv2d(x, w, [0., 0, 0, 0]),
    lambda L, x, w: F(L).conv_transpose2d(x, w.transpose(0, 1), stride=2, output_padding=-1),
    lambda L, x, w: F(L).conv2d(x[:, :, :0], w),
])
def test_conv_tensors(case):
    same_error(case, X4, W4)


POOL = [dict(kernel_size=0), dict(kernel_size=-1), dict(kernel_size=2, stride=0), dict(kernel_size=2, stride=-1),
        dict(kernel_size=2, padding=-1), dict(kernel_size=2, dilation=0), dict(kernel_size=1.5),
        dict(kernel_size=2, stride=1.5), dict(kernel_size=(2, 2, 2)), dict(kernel_size=7), dict(kernel_size=2, padding=2),
        dict(kernel_size=2, stride=(1, 2, 3)), dict(kernel_size="a"), dict(kernel_size=None), dict(kernel_size=[]),
        dict(kernel_size=(2, 1.5)), dict(kernel_size=2, padding=(1, 2, 3)), dict(kernel_size=2, dilation=-1)]


@pytest.mark.parametrize("kw", POOL, ids=str)
@pytest.mark.parametrize("op", ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "unfold"])
def test_pool_geometry(op, kw):
    kw = dict(kw)
    if op.startswith("avg") and "dilation" in kw or op == "unfold" and kw.get("padding") == 2:
        return      # avg pools take no dilation; unfold accepts any padding
    x = X3 if op.endswith("1d") else X4
    same_error(lambda L, x: getattr(F(L), op)(x, **kw), x)


@pytest.mark.parametrize("case", [
    lambda L, x: F(L).max_pool2d(x[0, 0], 2), lambda L, x: F(L).avg_pool2d(x[0, 0], 2),
    lambda L, x: F(L).avg_pool2d(x[None], 2), lambda L, x: F(L).max_pool2d(x[:, :, :0], 2),
    lambda L, x: F(L).max_pool1d(x, 2), lambda L, x: F(L).avg_pool1d(x, 2), lambda L, x: F(L).unfold(x[0, 0], 2),
    lambda L, x: F(L).unfold(x[None], 2), lambda L, x: F(L).fold(x, 4, 2), lambda L, x: F(L).fold(x[0, 0, 0], 4, 2),
] + [lambda L, x, o=o, f=f: getattr(F(L), f)(x, o) for o in (-1, 1.5, (1, 2, 3), "a", None, (2, -1), [])
     for f in ("adaptive_avg_pool2d", "adaptive_max_pool2d")]
  + [lambda L, x, o=o, f=f: getattr(F(L), f)(x[:, :, 0], o) for o in (-1, 1.5, (1, 2), "a")
     for f in ("adaptive_avg_pool1d", "adaptive_max_pool1d")]
  + [lambda L, x: F(L).adaptive_avg_pool2d(x[:, :, :0], 2), lambda L, x: F(L).adaptive_avg_pool1d(x, 2)])
def test_pool_inputs(case):
    same_error(case, X4)


FOLD = [dict(output_size=(4, 4), kernel_size=0), dict(output_size=(4, 4), kernel_size=2, stride=0),
        dict(output_size=(4, 4), kernel_size=2, padding=-1), dict(output_size=(4, 4), kernel_size=2, dilation=0),
        dict(output_size=(4, 4), kernel_size=1.5), dict(output_size=(4, 4, 4), kernel_size=2),
        dict(output_size=(4, 4), kernel_size=(2, 2, 2))]


@pytest.mark.parametrize("kw", FOLD, ids=str)
def test_fold_geometry(kw):
    same_error(lambda L, x: F(L).fold(x, **kw), np.zeros((2, 12, 9), np.float32))


X = np.random.default_rng(2).random((4, 5)).astype(np.float32)
LOSS = {
    "ce 2d target": lambda L, x: F(L).cross_entropy(x, L.zeros(4, 2, dtype=L.int64)),
    "ce float target": lambda L, x: F(L).cross_entropy(x, L.zeros(4)),
    "ce int32 target": lambda L, x: F(L).cross_entropy(x, L.zeros(4, dtype=L.int32)),
    "ce bool target": lambda L, x: F(L).cross_entropy(x, L.zeros(4, dtype=L.bool)),
    "ce out of range": lambda L, x: F(L).cross_entropy(x, L.tensor([0, 1, 2, 5])),
    "ce negative": lambda L, x: F(L).cross_entropy(x, L.tensor([0, 1, 2, -1])),
    "ce weight size": lambda L, x: F(L).cross_entropy(x, L.tensor([0, 1, 2, 3]), weight=L.ones(3)),
    "ce weight 2d": lambda L, x: F(L).cross_entropy(x, L.tensor([0, 1, 2, 3]), weight=L.ones(5, 1)),
    "ce batch": lambda L, x: F(L).cross_entropy(x, L.tensor([0, 1, 2])),
    "ce 0d": lambda L, x: F(L).cross_entropy(x[0, 0], L.tensor(0)),
    "ce 1d oob": lambda L, x: F(L).cross_entropy(x[0], L.tensor(7)),
    "ce spatial": lambda L, x: F(L).cross_entropy(L.zeros(2, 3, 4), L.zeros(2, 5, dtype=L.int64)),
    "ce int input": lambda L, x: F(L).cross_entropy(L.zeros(2, 3, dtype=L.int64), L.zeros(2, dtype=L.int64)),
    "ce probs shape": lambda L, x: F(L).cross_entropy(x, L.full((4, 4), .2)),
    "ce probs weight": lambda L, x: F(L).cross_entropy(x, L.full((4, 5), .2), weight=L.ones(2)),
    "ce probs ignore": lambda L, x: F(L).cross_entropy(x, L.full((4, 5), .2), ignore_index=1),
    "ce probs smoothing": lambda L, x: F(L).cross_entropy(x, L.full((4, 5), .2), label_smoothing=2.),
    "ce list target": lambda L, x: F(L).cross_entropy(x, [0, 1, 2, 3]),
    "nll int32": lambda L, x: F(L).nll_loss(x, L.zeros(4, dtype=L.int32)),
    "nll float": lambda L, x: F(L).nll_loss(x, L.zeros(4)),
    "nll 2d target": lambda L, x: F(L).nll_loss(x, L.zeros(4, 2, dtype=L.int64)),
    "nll weight dtype": lambda L, x: F(L).nll_loss(x, L.tensor([0, 1, 2, 3]), weight=L.ones(5, dtype=L.float64)),
    "nll 3d": lambda L, x: F(L).nll_loss(L.zeros(2, 3, 4), L.zeros(2, dtype=L.int64)),
    "nll 4d": lambda L, x: F(L).nll_loss(L.zeros(2, 3, 4, 4), L.zeros(2, 4, 5, dtype=L.int64)),
    "nll 4d oob": lambda L, x: F(L).nll_loss(L.zeros(2, 3, 4, 4), L.full((2, 4, 4), 3)),
    "bce target >1": lambda L, x: F(L).binary_cross_entropy(L.full((3,), .5), L.tensor([0., 1, 2])),
    "bce target <0": lambda L, x: F(L).binary_cross_entropy(L.full((3,), .5), L.tensor([0., 1, -1])),
    "bce target nan": lambda L, x: F(L).binary_cross_entropy(L.full((3,), .5), L.tensor([0., 1, float("nan")])),
    "bce input nan": lambda L, x: F(L).binary_cross_entropy(L.tensor([.5, .5, float("nan")]), L.ones(3)),
    "bce int target": lambda L, x: F(L).binary_cross_entropy(L.full((3,), .5), L.tensor([0, 1, 1])),
    "bce int input": lambda L, x: F(L).binary_cross_entropy(L.tensor([0, 1]), L.tensor([0, 1])),
    "bce double target": lambda L, x: F(L).binary_cross_entropy(L.full((3,), .5), L.ones(3, dtype=L.float64)),
    "bce weight": lambda L, x: F(L).binary_cross_entropy(L.full((3,), .5), L.ones(3), weight=L.ones(2)),
    "bce weight 2d": lambda L, x: F(L).binary_cross_entropy(L.full((2,), .5), L.ones(2), weight=L.ones(2, 1)),
    "bce reduction": lambda L, x: F(L).binary_cross_entropy(L.full((2,), .5), L.ones(2), reduction="foo"),
    "bcel int target": lambda L, x: F(L).binary_cross_entropy_with_logits(L.full((2,), .5), L.tensor([1, 1])),
    "softmax int": lambda L, x: F(L).softmax(L.tensor([1, 2]), 0),
    "log_softmax int": lambda L, x: F(L).log_softmax(L.tensor([1, 2]), 0),
    "linear str": lambda L, x: F(L).linear("a", x),
}


@pytest.mark.parametrize("name", list(LOSS))
def test_losses(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(LOSS[name], X)


SIZES = {
    "zeros float": lambda L: L.zeros(2.5), "zeros tuple float": lambda L: L.zeros((2, 2.5)),
    "zeros first float": lambda L: L.zeros((2.5, 3)), "zeros neg": lambda L: L.zeros(-1),
    "zeros neg2": lambda L: L.zeros(2, -1), "zeros None": lambda L: L.zeros(None), "zeros str": lambda L: L.zeros("a"),
    "zeros np float": lambda L: L.zeros(np.float64(2)), "zeros mixed": lambda L: L.zeros((2, 3), 4),
    "zeros tensor": lambda L: L.zeros(L.tensor([2, 3])), "zeros bool": lambda L: L.zeros(True),
    "zeros varargs float": lambda L: L.zeros(2, 2.5), "ones float": lambda L: L.ones(2.5),
    "ones neg": lambda L: L.ones(2, -1), "empty float": lambda L: L.empty(2.5), "empty neg": lambda L: L.empty(-2),
    "full float": lambda L: L.full((2.5,), 1.), "full neg": lambda L: L.full((-1,), 1.), "full int": lambda L: L.full(3, 1.),
    "full str": lambda L: L.full((2,), "a"), "full tuple float": lambda L: L.full((2, 2.5), 1.),
    "rand float": lambda L: L.rand(2.5), "rand neg": lambda L: L.rand(-1), "rand str": lambda L: L.rand((2, "a")),
    "randn float": lambda L: L.randn(2.5), "randn neg": lambda L: L.randn(2, -1),
    "randint float size": lambda L: L.randint(0, 5, (2.5,)), "randint int size": lambda L: L.randint(0, 5, 3),
    "randint neg": lambda L: L.randint(0, 5, (-1,)), "randint empty range": lambda L: L.randint(5, 5, (2,)),
    "randint high 0": lambda L: L.randint(0, (2,)), "randperm neg": lambda L: L.randperm(-1),
    "randperm float": lambda L: L.randperm(2.5), "arange sign": lambda L: L.arange(0, 5, -1),
    "arange nan": lambda L: L.arange(0, float("nan")), "arange inf": lambda L: L.arange(0, float("inf")),
    "linspace float": lambda L: L.linspace(0, 1, 2.5), "eye neg": lambda L: L.eye(-1), "eye float": lambda L: L.eye(2.5),
    "view float": lambda L: L.zeros(6).view(2.5, 2), "view neg": lambda L: L.zeros(6).view(-2, 3),
    "view str": lambda L: L.zeros(6).view("a"), "view tuple float": lambda L: L.zeros(6).view(2, 2.5),
    "reshape float": lambda L: L.zeros(6).reshape(2.5, 2), "reshape tuple float": lambda L: L.zeros(6).reshape((2.5, 2)),
    "reshape str": lambda L: L.zeros(6).reshape("a"), "reshape None": lambda L: L.zeros(6).reshape(None),
    "expand float": lambda L: L.zeros(1).expand(2.5), "expand tuple float": lambda L: L.zeros(1).expand((2.5,)),
    "new_zeros float": lambda L: L.zeros(1).new_zeros(2.5), "new_ones neg": lambda L: L.zeros(1).new_ones(-1),
    "new_empty str": lambda L: L.zeros(1).new_empty("a"), "new_full float": lambda L: L.zeros(1).new_full((2.5,), 1),
    "new_full int": lambda L: L.zeros(1).new_full(2, 1), "zeros_like str": lambda L: L.zeros_like("a"),
    "sge str": lambda L: L.set_grad_enabled("yes"), "sge None": lambda L: L.set_grad_enabled(None),
    "sge int": lambda L: L.set_grad_enabled(1), "sge np bool": lambda L: L.set_grad_enabled(np.bool_(True)),
    "sge tensor": lambda L: L.set_grad_enabled(L.zeros(1)),
}


@pytest.mark.parametrize("name", list(SIZES))
def test_sizes_and_modes(name):
    same_error(lambda L: SIZES[name](L))
    assert hookgrad.is_grad_enabled() and torch.is_grad_enabled()     # a rejected mode changes nothing


def test_good_sizes_still_work():
    for L in (torch, hookgrad):
        assert tuple(L.zeros(np.int64(2), 3).shape) == (2, 3)
        assert tuple(L.zeros(L.Size([2, 3])).shape) == (2, 3)
        assert tuple(L.ones(2, True).shape) == (2, 1)
        assert tuple(L.zeros(6).view(np.int64(2), L.tensor(3)).shape) == (2, 3)
        assert tuple(L.zeros(1).new_full((2, 3), 1.).shape) == (2, 3)
        assert tuple(L.zeros(6).reshape([3, -1]).shape) == (3, 2)


def test_inference_mode_non_bool_decorates():
    for L in (torch, hookgrad):
        f = L.inference_mode(lambda: L.is_inference_mode_enabled())
        assert f() is True
        with L.inference_mode(False):
            assert not L.is_inference_mode_enabled()


def test_module_usable_after_bad_input():
    for L in (torch, hookgrad):
        L.manual_seed(0)
        m = L.nn.Conv2d(3, 4, 3)
        before = m.weight.detach().clone()
        with pytest.raises(RuntimeError):
            m(L.zeros(1, 2, 5, 5))
        assert L.equal(m.weight, before)
        assert tuple(m(L.zeros(1, 3, 5, 5)).shape) == (1, 4, 3, 3)


def _loader_run(L, mode):
    D = L.utils.data

    class DS(D.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            if i == 2:
                raise KeyError(i)
            return L.tensor([float(i)])

    class It(D.IterableDataset):
        def __iter__(self):
            class I:
                n = 0

                def __next__(s):
                    s.n += 1
                    if s.n == 3:
                        raise ValueError("boom")
                    if s.n > 7:
                        raise StopIteration
                    return L.tensor(float(s.n))
            return I()

    calls = []

    def coll(b):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("collate")
        return L.stack(b) if isinstance(b, list) else b

    dl = {"map": lambda: D.DataLoader(DS(), batch_size=2), "map-none": lambda: D.DataLoader(DS(), batch_size=None),
          "collate": lambda: D.DataLoader(DS(), batch_size=1, collate_fn=coll),
          "iterable": lambda: D.DataLoader(It(), batch_size=2), "iterable-none": lambda: D.DataLoader(It(), batch_size=None),
          "iterable-collate": lambda: D.DataLoader(It(), batch_size=2, collate_fn=coll),
          "iterable-drop": lambda: D.DataLoader(It(), batch_size=2, drop_last=True)}[mode]()
    it, out = iter(dl), []
    for _ in range(12):
        try:
            out.append(next(it).flatten().tolist())
        except StopIteration:
            out.append("stop")
            break
        except Exception as e:  # noqa: BLE001 - the exception is part of the behaviour
            out.append(type(e).__name__)
    return out


@pytest.mark.parametrize("mode", ["map", "map-none", "collate", "iterable", "iterable-none", "iterable-collate",
                                  "iterable-drop"])
def test_dataloader_goes_on_after_a_failing_batch(mode):
    assert _loader_run(hookgrad, mode) == _loader_run(torch, mode)
