"""tools.nan.detect_nonfinite: the first op producing NaN/Inf, forward and backward (no torch)."""
import math

import pytest

import hookgrad as torch
from hookgrad import nn
from hookgrad.autograd.graph import _op_hooks
from hookgrad.nn.modules.module import global_module_hooks
from hookgrad.tools.nan import detect_nonfinite

LOG_LINE = "return torch.log(x)  # LOG"
SQRT_LINE = "return x.sqrt() * 2  # SQRT"


class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)  # LOG


class Root(nn.Module):
    def forward(self, x):
        return x.sqrt() * 2  # SQRT


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.act = Log()

    def forward(self, x):
        return self.act(self.lin(x).abs() - 1.0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(Block(), nn.Tanh())
        self.root = Root()

    def forward(self, x):
        return self.root(self.enc(x).abs())


def _net():
    torch.manual_seed(0)
    return Net()


def _no_hooks_left():
    assert len(_op_hooks) == 0
    assert global_module_hooks() == []


def test_forward_log_of_negative_names_op_path_call_and_line():
    m = _net()
    x = torch.full((2, 3), 0.1)
    with pytest.raises(RuntimeError) as ei:
        with detect_nonfinite(m) as d:
            m(x)
    ev = d.first
    assert (ev.phase, ev.op, ev.module_path, ev.call_index, ev.upstream) == ("forward", "Log", "enc.0.act", 0, False)
    assert ev.kind == "nan" and ev.output_index == 0 and 0 < ev.count <= 6
    assert ev.frame.name == "forward" and ev.frame.line.strip() == LOG_LINE
    assert ev.input_shapes == ["(2, 3) float32"]
    msg = str(ei.value)
    assert "Function 'Log' returned nan values" in msg and "'enc.0.act' (call 0)" in msg and LOG_LINE in msg
    assert len(d.events) == 1
    _no_hooks_left()


def test_module_stack_is_clean_after_a_raise_in_nested_modules():
    m = _net()
    for _ in range(2):      # the second context must see call 0 again, and the same path
        with pytest.raises(RuntimeError, match="'enc.0.act' \\(call 0\\)"):
            with detect_nonfinite(m):
                m(torch.full((1, 3), 0.1))
    _no_hooks_left()


def test_shared_module_second_call_is_the_culprit():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.log = Log()

        def forward(self, x):
            return self.log(self.log(x) + 3.0)    # log(x) fine; log(log(x) + 3) < 0 for tiny x

    m = Twice()
    x = torch.tensor([1.0, 1e-3, 2.0])
    with detect_nonfinite(m, raise_=False) as d:
        m(x)
    assert [(e.op, e.module_path, e.call_index, e.upstream) for e in d.events] == [("Log", "log", 1, False)]
    # values: log(1e-3) + 3 = -3.9 -> log -> nan, only the 2nd element
    assert d.first.count == 1 and d.first.kind == "nan"


def test_backward_sqrt_at_zero_reports_node_and_forward_site():
    m = Root()
    x = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
    with pytest.raises(RuntimeError) as ei:
        with detect_nonfinite(m, check="backward") as d:
            y = m(x)
            assert y.tolist() == [0.0, 2.0, 4.0]      # forward is finite
            y.sum().backward()
    ev = d.first
    assert (ev.phase, ev.node, ev.op, ev.module_path, ev.call_index) == ("backward", "SqrtBackward0", "Sqrt", "", 0)
    assert ev.kind == "inf" and ev.count == 1 and not ev.upstream
    assert ev.frame.line.strip() == SQRT_LINE
    assert str(ei.value).startswith("detect_nonfinite: Function 'SqrtBackward0' returned inf values in its 0th output")
    assert x.grad is None
    _no_hooks_left()


def test_backward_collect_reports_source_not_propagation():
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    with detect_nonfinite(raise_=False) as d:
        (x.sqrt() * 3).exp().sum().backward()    # inf appears at SqrtBackward0 only
    assert [(e.phase, e.node) for e in d.events] == [("backward", "SqrtBackward0")]
    assert d.first.module_path is None and d.first.frame is not None
    assert math.isinf(x.grad.tolist()[0])


def test_upstream_nan_in_the_data_is_flagged():
    m = _net()
    x = torch.tensor([[float("nan"), 2.0, 3.0]])
    with detect_nonfinite(m, raise_=False, check="forward") as d:
        m(x)
    assert len(d.events) == 1
    ev = d.first
    assert ev.upstream and ev.op == "Addmm" and ev.module_path == "enc.0.lin"
    assert "already non-finite" in ev.message


def test_forward_only_and_backward_only_filters():
    x = torch.tensor([-1.0], requires_grad=True)
    with detect_nonfinite(check="backward", raise_=False) as d:
        x.log()                       # forward nan not checked
    assert d.events == []
    with detect_nonfinite(check="forward", raise_=False) as d:
        torch.tensor([0.0], requires_grad=True).sqrt().sum().backward()
    assert d.events == []
    with pytest.raises(ValueError):
        detect_nonfinite(check="sideways")


def test_finite_run_records_nothing_and_nodes_carry_forward_site():
    m = _net()
    x = torch.full((2, 3), 2.0, requires_grad=True)
    with detect_nonfinite(m, check="backward") as d:
        y = m(x + 5.0)
        y.sum().backward()
    assert d.events == []
    from hookgrad.tools.ophooks import WHERE
    path, idx, frame = y.grad_fn.metadata[WHERE]
    assert (path, idx) == ("root", 0) and frame.line.strip() == SQRT_LINE
    _no_hooks_left()
