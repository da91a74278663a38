"""torch.profiler and torch.autograd.profiler (events named after aten ops and backward nodes, record_function
ranges, schedules, the table), CPU autocast (dtypes and values of each op family, gradients, nesting, the
decorator, the weight cache, custom_fwd) and GradScaler("cpu"), each against PyTorch."""
import json
import warnings

import numpy as np
import pytest
import torch

import hookgrad as hg

pytest.importorskip("ml_dtypes")

LIBS = (torch, hg)


def both(fn):
    return fn(torch), fn(hg)


def mlp(L, seed=0):
    L.manual_seed(seed)
    return L.nn.Sequential(L.nn.Linear(6, 5), L.nn.ReLU(), L.nn.Linear(5, 3))


def data(L, *shape, seed=1):
    return L.tensor(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def counts(prof):
    return {e.key: e.count for e in prof.key_averages()}


# ---------------------------------------------------------------------------------------------------------
# profiler

NODES = ("AddmmBackward0", "ReluBackward0", "SumBackward0", "TBackward0", "torch::autograd::AccumulateGrad",
         "autograd::engine::evaluate_function: AddmmBackward0", "autograd::engine::evaluate_function: ReluBackward0",
         "autograd::engine::evaluate_function: SumBackward0", "mine")


def _train_step(L):
    m, x = mlp(L), data(L, 4, 6)
    with L.profiler.profile(record_shapes=True) as p:
        with L.profiler.record_function("mine"):
            y = m(x).sum()
        y.backward()
    return counts(p)


def test_backward_nodes_and_ranges_are_events_as_in_torch():
    t, h = both(_train_step)
    for name in NODES + ("aten::addmm", "aten::relu", "aten::t"):
        assert name in t and name in h, name
    assert {n: t[n] for n in NODES} == {n: h[n] for n in NODES}


def test_forward_ops_both_record_have_torchs_counts():
    def run(L):
        m, x = mlp(L), data(L, 4, 6)
        with L.no_grad(), L.profiler.profile() as p:
            L.softmax(m(x) * 2, 1).sum()
        return counts(p)
    t, h = both(run)
    common = set(t) & set(h)
    assert {"aten::addmm", "aten::t", "aten::relu", "aten::mul", "aten::sum", "aten::softmax"} <= common
    assert {n: t[n] for n in common} == {n: h[n] for n in common}


def test_record_function_nesting_and_decorator():
    def run(L):
        @L.autograd.profiler.record_function("deco")
        def f(x):
            return x.exp()
        x = data(L, 3)
        with L.autograd.profiler.profile() as p:
            with L.profiler.record_function("outer"):
                with L.profiler.record_function("inner"):
                    x.sin()
                f(x)
        ev = {e.name: e for e in p.function_events}
        return {name: (ev[name].cpu_parent.name if ev[name].cpu_parent else None,
                       sorted(c.name for c in ev[name].cpu_children)) for name in ("outer", "inner", "deco")}
    t, h = both(run)
    assert t == h
    assert h["inner"] == ("outer", ["aten::sin"])


def test_schedule_steps_and_trace_ready():
    def run(L):
        ready = []

        def handler(p):
            steps = sorted(e.trace_name for e in p.events() if e.name == "ProfilerStep*")
            ready.append((p.step_num, steps, counts(p).get("aten::mul")))
        x = data(L, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = L.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
            actions = [sched(i).name for i in range(12)]
            with L.profiler.profile(schedule=sched, on_trace_ready=handler) as p:
                for _ in range(11):
                    (x * 2).sum()
                    p.step()
        return ready, actions, p.step_num
    t, h = both(run)
    assert t == h
    assert [r[0] for r in h[0]] == [5, 9]


def test_table_header_and_chrome_trace(tmp_path):
    def run(L):
        m, x = mlp(L), data(L, 4, 6)
        with L.profiler.profile(profile_memory=True) as p:
            m(x).sum().backward()
        table = p.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
        path = tmp_path / f"{L.__name__}.json"
        p.export_chrome_trace(str(path))
        names = {e["name"] for e in json.loads(path.read_text())["traceEvents"]}
        lines = table.splitlines()
        return lines[:3], lines[-2:-1], len(lines), "aten::addmm" in names, lines[-1].split(":")[0]
    t, h = both(run)
    assert t == h


def test_table_with_input_shapes_lists_them():
    def run(L):
        m, x = mlp(L), data(L, 4, 6)
        with L.no_grad(), L.profiler.profile(record_shapes=True) as p:
            m(x)
        # (PyTorch lists addmm's scalar arguments beta and alpha as [] too: compare the tensors' shapes)
        shapes = sorted(e.input_shapes[:3] for e in p.key_averages(group_by_input_shape=True) if e.key == "aten::addmm")
        return shapes, p.key_averages(group_by_input_shape=True).table().splitlines()[1].split()[-2:]
    t, h = both(run)
    assert t == h


def test_one_recorder_behind_both_apis():
    assert hg.profiler.record_function is hg.autograd.profiler.record_function
    assert hg.autograd.profiler_util.EventList is type(hg.autograd.profiler.profile().__enter__().__exit__(
        None, None, None) or hg.autograd.profiler_util.EventList())
    with hg.profiler.profile() as p:
        assert hg.autograd._profiler_enabled()
        hg.ones(2).sum()
    assert not hg.autograd._profiler_enabled()
    assert isinstance(p.events(), hg.autograd.profiler_util.EventList)
    assert hg.profiler.supported_activities() == {hg.profiler.ProfilerActivity.CPU}
    assert str(hg.profiler.ProfilerActivity.CUDA) == str(torch.profiler.ProfilerActivity.CUDA)


# ---------------------------------------------------------------------------------------------------------
# autocast

def close(a, b, tol=1e-2):
    assert str(a.dtype) == str(b.dtype), (a.dtype, b.dtype)
    np.testing.assert_allclose(b.detach().float().numpy(), a.detach().float().numpy(), rtol=tol, atol=tol)


def _grads(m):
    return [p.grad for p in m.parameters()]


def test_autocast_mlp_dtypes_values_and_gradients():
    def run(L):
        m, x = mlp(L), data(L, 4, 6)
        with L.autocast("cpu", dtype=L.bfloat16):
            h = m[1](m[0](x))
            y = m[2](h)
            loss = L.nn.functional.cross_entropy(y, L.tensor([0, 2, 1, 1]))
            mse = L.nn.functional.mse_loss(y, L.zeros(4, 3))
        (loss + mse).backward()
        return [h, y, loss, mse] + _grads(m)
    for a, b in zip(*both(run)):
        close(a, b)


def test_autocast_conv_and_matmul_families():
    def run(L):
        L.manual_seed(0)
        conv, convt = L.nn.Conv2d(2, 3, 3), L.nn.ConvTranspose1d(2, 2, 3)
        x = data(L, 1, 2, 5, 5).requires_grad_()
        a, b, c = data(L, 2, 3, 4, seed=2), data(L, 4, 5, seed=3), data(L, 2, 4, 5, seed=4)
        with L.autocast("cpu"):
            outs = [conv(x), convt(data(L, 1, 2, 4)), a @ b, L.bmm(a, c), L.baddbmm(data(L, 2, 3, 5), a, c),
                    L.mm(a[0], b), L.addmm(data(L, 5), a[0], b), L.softmax(b, 1), a[0] + 1,
                    L.mm(a[0].bfloat16(), b), L.bmm(a, c.bfloat16()), L.addbmm(data(L, 3, 5), a.bfloat16(), c),
                    L.baddbmm(data(L, 2, 3, 5).bfloat16(), a, c)]
        outs[0].float().sum().backward()
        return outs + [x.grad, conv.weight.grad]
    for a, b in zip(*both(run)):
        close(a, b)


def test_autocast_attention_kernel():
    def run(L):
        x = data(L, 1, 2, 5, 4).requires_grad_()
        with L.autocast("cpu"):
            y = L.nn.functional.scaled_dot_product_attention(x, x * 0.5, x, is_causal=True)
        y.float().sum().backward()
        return y, x.grad
    t, h = both(run)
    close(t[0], h[0])
    close(t[1], h[1], tol=5e-2)


def test_autocast_fp32_ops_and_promotion():
    def run(L):
        y = data(L, 4, 3).bfloat16()
        with L.autocast("cpu"):
            return [L.nn.functional.mse_loss(y, L.zeros(4, 3)),
                    L.nn.functional.binary_cross_entropy_with_logits(y, L.ones(4, 3)),
                    L.nn.functional.soft_margin_loss(y, L.ones(4, 3)),
                    L.nn.functional.hinge_embedding_loss(y, -L.ones(4, 3)),
                    L.nn.functional.triplet_margin_loss(y, y * 2, y + 1), L.nn.functional.l1_loss(y, L.ones(4, 3)),
                    L.cat([y, data(L, 1, 3)]), L.stack([y[0], data(L, 3)]), y.prod()]
    for a, b in zip(*both(run)):
        close(a, b)


def test_nested_autocast_disabled_inside_and_other_dtype():
    def run(L):
        a, b = data(L, 3, 4), data(L, 4, 2)
        out = []
        with L.autocast("cpu"):
            out.append((L.is_autocast_enabled("cpu"), str(L.get_autocast_dtype("cpu"))))
            with L.autocast("cpu", enabled=False):
                out.append(str((a @ b).dtype))
                out.append(L.is_autocast_enabled("cpu"))
            with L.autocast("cpu", dtype=L.float16):
                out.append(str((a @ b).dtype))
            out.append(str((a @ b).dtype))
        out.append((L.is_autocast_enabled("cpu"), str(L.get_autocast_dtype("cpu")), L.is_autocast_cache_enabled()))
        out.append(str((a @ b).dtype))
        return out
    t, h = both(run)
    assert t == h


def test_autocast_decorator_and_legacy_names():
    def run(L):
        @L.autocast("cpu")
        def f(a, b):
            return a @ b
        a, b = data(L, 3, 4), data(L, 4, 2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with L.cpu.amp.autocast():
                legacy = str(L.mm(a, b).dtype)
            bad = L.autocast("cpu", dtype=L.float64)
            with bad:
                unsupported = str(L.mm(a, b).dtype)
        cats = sorted({c.category.__name__ for c in w})
        with pytest.raises(RuntimeError):
            L.autocast("nodevice")
        return str(f(a, b).dtype), legacy, unsupported, cats, L.amp.is_autocast_available("cpu")
    t, h = both(run)
    assert t == h


def test_autocast_caches_the_weight_cast():
    def run(L):
        m = L.nn.Linear(4, 4)
        x = data(L, 2, 4)
        with L.autocast("cpu"):
            y1, y2 = m(x), m(x)
        names = []
        fn = y1.grad_fn
        while fn is not None:
            names.append(fn.name())
            nxt = [f for f, _ in fn.next_functions if f is not None]
            fn = nxt[-1] if nxt else None

        def cast_node(y):
            return y.grad_fn.next_functions[2][0].next_functions[0][0]
        with L.autocast("cpu", cache_enabled=False):
            z1, z2 = m(x), m(x)
        return names, cast_node(y1) is cast_node(y2), cast_node(z1) is cast_node(z2)
    t, h = both(run)
    assert t == h
    assert h[1] and not h[2]


def test_custom_fwd_casts_inputs():
    def run(L):
        class F(L.autograd.Function):
            @staticmethod
            @L.amp.custom_fwd(device_type="cpu", cast_inputs=L.float32)
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a @ b, str(a.dtype), L.is_autocast_enabled("cpu")

            @staticmethod
            @L.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g, *_):
                a, b = ctx.saved_tensors
                return g @ b.t(), a.t() @ g
        a = data(L, 3, 4).bfloat16().requires_grad_()
        with L.autocast("cpu"):
            y, seen, inner = F.apply(a, data(L, 4, 2))
        y.sum().backward()
        return str(y.dtype), seen, inner, str(a.grad.dtype)
    t, h = both(run)
    assert t == h


def test_autocast_costs_nothing_when_off():
    from hookgrad.autograd import op_hooks
    assert op_hooks._input_cast[0] is None and not op_hooks._op_hooks
    with hg.autocast("cpu"):
        assert op_hooks._input_cast[0] is not None
    assert op_hooks._input_cast[0] is None and not op_hooks._op_hooks


# ---------------------------------------------------------------------------------------------------------
# GradScaler on the CPU

def test_grad_scaler_cpu_against_torch():
    def run(L):
        m = mlp(L)
        opt = L.optim.SGD(m.parameters(), lr=0.1)
        scaler = L.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
        trace = []
        for step in range(6):
            opt.zero_grad()
            loss = m(data(L, 4, 6, seed=step)).pow(2).mean()
            scaler.scale(loss).backward()
            if step == 2:
                m[0].weight.grad[0, 0] = float("inf")
            if step == 4:
                scaler.unscale_(opt)
                trace.append(float(m[2].bias.grad.abs().sum()))
            scaler.step(opt)
            scaler.update()
            trace.append((scaler.get_scale(), scaler._get_growth_tracker()))
        sd = scaler.state_dict()
        s2 = L.amp.GradScaler("cpu")
        s2.load_state_dict(sd)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            off = L.amp.GradScaler("cuda")
        return trace, sd, s2.get_scale(), [p.detach().numpy().copy() for p in m.parameters()], \
            off.is_enabled(), [str(x.message) for x in w]
    t, h = both(run)
    assert t[0] == h[0] and t[1] == h[1] and t[2] == h[2] and t[4:] == h[4:]
    for a, b in zip(t[3], h[3]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_grad_scaler_errors():
    def run(L):
        m = L.nn.Linear(2, 1)
        opt = L.optim.SGD(m.parameters(), lr=0.1)
        scaler = L.amp.GradScaler("cpu")
        scaler.scale(m(L.ones(1, 2)).sum()).backward()
        scaler.unscale_(opt)
        errs = []
        for f in (lambda: scaler.unscale_(opt), lambda: scaler.step(opt, closure=lambda: 0)):
            try:
                f()
            except RuntimeError as e:
                errs.append(str(e))
        return errs
    t, h = both(run)
    assert t == h and len(h) == 2


def test_trace_handler_files_nesting_and_stacks(tmp_path):
    def run(L):
        x = data(L, 3)
        d = tmp_path / L.__name__
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            handler = L.profiler.tensorboard_trace_handler(str(d), "w", use_gzip=True)
            with L.profiler.profile(schedule=L.profiler.schedule(wait=0, warmup=1, active=1, repeat=2),
                                    on_trace_ready=handler) as p:
                for _ in range(5):
                    x.exp()
                    p.step()
        files = sorted(f.name.split(".")[-3:] for f in d.iterdir())
        with L.profiler.profile() as outer:
            x.sin()
            with L.profiler.profile() as inner:
                x.cos()
        keys = sorted(e.key for e in outer.key_averages() if e.key in ("aten::sin", "aten::cos")), \
            sorted(e.key for e in inner.key_averages() if e.key in ("aten::sin", "aten::cos"))
        return files, keys
    t, h = both(run)
    # (a nested torch profiler ends PyTorch's whole session, so its outer one loses everything: hookgrad's
    # profilers nest, each recording what runs inside it)
    assert t[0] == h[0] and len(h[0]) == 2 and t[1][1] == h[1][1] and h[1][0] == ["aten::cos", "aten::sin"]
    with hg.profiler.profile(with_stack=True) as p:
        hg.ones(2).exp()
    ev = [e for e in p.events() if e.name == "aten::exp"][0]
    assert ev.stack and __file__.rstrip("c") in ev.stack[0]
    assert "Source Location" in p.key_averages(group_by_stack_n=1).table()
    p.export_stacks(str(tmp_path / "stacks.txt"), "self_cpu_time_total")
    assert (tmp_path / "stacks.txt").read_text().strip()


def test_conv_backward_node_runs_aten_convolution_backward():
    def run(L):
        L.manual_seed(0)
        c = L.nn.Conv2d(2, 3, 3)
        x = data(L, 1, 2, 5, 5).requires_grad_()
        with L.profiler.profile() as p:
            c(x).sum().backward()
        node = [e for e in p.events() if e.name == "ConvolutionBackward0"][0]
        n = counts(p)
        return node.cpu_parent.name, "aten::convolution_backward" in {ch.name for ch in node.cpu_children}, \
            n["aten::convolution"], n["torch::autograd::AccumulateGrad"]
    t, h = both(run)
    assert t == h
