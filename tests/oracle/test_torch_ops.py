"""torch.ops.aten (PyTorch's operator namespace) and TorchDispatchMode vs hookgrad's."""
import numpy as np
import pytest

import hookgrad
from oracle import check, events

R = np.random.default_rng(0)
A = R.standard_normal((3, 4))
B = R.standard_normal((4, 2))
C = R.standard_normal((3, 2))
X4 = R.standard_normal((2, 3, 5, 5))
W4 = R.standard_normal((4, 3, 3, 3))
BB = R.standard_normal((2, 3, 4))

CALLS = [
    ("mm", lambda lib, a, b: lib.ops.aten.mm(a, b), (A, B)),
    ("mm.default", lambda lib, a, b: lib.ops.aten.mm.default(a, b), (A, B)),
    ("addmm", lambda lib, c, a, b: lib.ops.aten.addmm(c, a, b, beta=0.5, alpha=2.0), (C, A, B)),
    ("bmm", lambda lib, x: lib.ops.aten.bmm(x, x.transpose(1, 2)), (BB,)),
    ("relu", lambda lib, a: lib.ops.aten.relu.default(a), (A,)),
    ("add.Tensor", lambda lib, a, c: lib.ops.aten.add.Tensor(a, c[:1, :1], alpha=3), (A, C)),
    ("add.Scalar", lambda lib, a: lib.ops.aten.add.Scalar(a, 2.5), (A,)),
    ("mul.Tensor", lambda lib, a: lib.ops.aten.mul.Tensor(a, a), (A,)),
    ("mean.dim", lambda lib, a: lib.ops.aten.mean.dim(a, [1], True), (A,)),
    ("sum.dim_IntList", lambda lib, a: lib.ops.aten.sum.dim_IntList(a, [0]), (A,)),
    ("sum", lambda lib, a: lib.ops.aten.sum(a), (A,)),
    ("t", lambda lib, a: lib.ops.aten.t(a), (A,)),
    ("view", lambda lib, a: lib.ops.aten.view(a, [4, 3]), (A,)),
    ("slice.Tensor", lambda lib, a: lib.ops.aten.slice.Tensor(a, 1, 1, 4, 2), (A,)),
    ("expand", lambda lib, c: lib.ops.aten.expand(c[:1], [3, 2]), (C,)),
    ("_softmax", lambda lib, a: lib.ops.aten._softmax(a, 1, False), (A,)),
    ("convolution", lambda lib, x, w: lib.ops.aten.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
     (X4, W4)),
    ("convolution.T", lambda lib, x, w: lib.ops.aten.convolution.default(
        x, w.transpose(0, 1), None, [2, 2], [0, 0], [1, 1], True, [1, 1], 1), (X4, W4)),
    ("_convolution", lambda lib, x, w: lib.ops.aten._convolution(
        x, w, None, [2, 1], [0, 1], [1, 1], False, [0, 0], 1, False, False, True, True), (X4, W4)),
]


@pytest.mark.parametrize("name,fn,arrays", CALLS, ids=[c[0] for c in CALLS])
def test_aten_calls(name, fn, arrays):
    (t_out,), (h_out,) = check(fn, *arrays)
    if name not in ("_convolution", "add.Scalar"):   # torch's grad_fn: ConvolutionBackward1, AddBackward1
        assert type(h_out.grad_fn).__name__ == type(t_out.grad_fn).__name__


def test_packet_and_overload_metadata():
    def scenario(lib, log):
        aten = lib.ops.aten
        for p in (aten.mm, aten.add, aten.sum, aten.convolution, aten._convolution, aten.matmul):
            log("packet", str(p), repr(p), p.__name__, p._qualified_op_name, p.overloads())
            ov = getattr(p, p.overloads()[0])
            log("overload", str(ov), repr(ov), ov.__name__, ov.name(), ov.namespace, ov.overloadpacket is p,
                ov._overloadpacket is p, ov is getattr(p, p.overloads()[0]))
        log("ns", repr(aten), aten.name, lib.ops.aten is aten, aten.mm is aten.mm, hash(aten.mm) == hash(aten.mm))
        log("hasattr", hasattr(aten, "mm"), hasattr(aten, "no_such_op"), hasattr(aten.mm, "Tensor"),
            hasattr(aten.add, "Tensor"), hasattr(aten.mm, "__wrapped__"))
        log("dict keys", {aten.mm: 1, aten.addmm: 2}[aten.mm], aten.mm.default in {aten.mm.default: 0})
        for probe in (lambda: aten.no_such_op, lambda: aten.mm.no_such_overload, lambda: lib.ops.myns.my_op):
            try:
                probe()
                log("ok")
            except AttributeError as e:
                log(type(e).__mro__[-4].__name__, str(e).split(" (hookgrad")[0])
    events(scenario)


def test_unimplemented_and_load_library():
    aten = hookgrad.ops.aten
    packet = aten.fbgemm_linear_fp16_weight          # torch has it, so the attribute exists
    assert packet._qualified_op_name == "aten::fbgemm_linear_fp16_weight"
    with pytest.raises(NotImplementedError, match=r"aten::fbgemm_linear_fp16_weight .*not implemented in hookgrad"):
        packet(hookgrad.ones(2))
    with pytest.raises(OSError, match="Could not load this library: libfoo.so"):     # as torch (see test_vision_ops)
        hookgrad.ops.load_library("libfoo.so")
    assert not hasattr(hookgrad.ops.optional_lib, "nms")      # how libraries probe for optional ops


def test_dispatch_mode_sees_aten_ops():
    """A logging TorchDispatchMode sees the same aten overloads, argument shapes and scalars."""
    def scenario(lib, log):
        from importlib import import_module
        base = import_module(lib.__name__ + ".utils._python_dispatch").TorchDispatchMode

        def desc(a):
            if isinstance(a, lib.Tensor):
                return ("T", tuple(a.shape))
            return tuple(desc(x) for x in a) if isinstance(a, (list, tuple)) else a

        class Mode(base):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if str(func) != "aten.detach.default":  # torch's autograd detaches what it saves
                    log(str(func), str(func._overloadpacket), desc(args), desc(out))
                return out

        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3, padding=1, stride=2), lib.nn.ReLU(), lib.nn.Flatten(),
                              lib.nn.Linear(36, 2))
        x = lib.tensor(X4.astype(np.float32))
        with Mode():
            y = m(x)
        log("out", tuple(y.shape))
        with Mode(), lib.no_grad():
            m(x)
    events(scenario)


def test_generated_torch_names_are_current(tmp_path):
    """src/hookgrad/_coverage_names.py is what scripts/gen_torch_names.py makes from the installed torch
    (run in a fresh interpreter: importing more of torch adds names to dir(torch))."""
    import os
    import subprocess
    import sys
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    out = tmp_path / "names.py"
    subprocess.run([sys.executable, os.path.join(root, "scripts", "gen_torch_names.py"), str(out)], check=True,
                   capture_output=True)
    with open(os.path.join(root, "src", "hookgrad", "_coverage_names.py")) as f:
        assert out.read_text() == f.read(), "stale: run scripts/gen_torch_names.py"
