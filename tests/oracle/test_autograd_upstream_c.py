"""Issue 27, helper C27: the behaviours behind a share of PyTorch's test_autograd.py failures, torch vs hookgrad:
a saved input detached in place, the profiler's sequence numbers, threads, factory ops and composite ranges
(record_shapes), ``sum(dim=None)``'s node, embedding_bag's sparse gradient and how AccumulateGrad takes a sparse
gradient, Tensor subclasses with their own ``_data`` and ``__torch_function__`` (custom Functions,
autograd.backward / grad, ``_make_wrapper_subclass``), and dispatch modes (the overload objects, aten::detach,
the order against saved-tensor hooks in checkpointing, operators defined through torch.library, selective
checkpointing of them)."""
import contextlib
import functools

import numpy as np

from oracle import events


def _err(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 -- the type and message are what is compared
        return type(e).__name__, str(e)
    return None


# ------------------------------------------------------------------------------------------ saved tensors

def test_saved_input_detached_in_place_raises_in_backward():
    def scenario(lib, log):
        a = lib.tensor([1.0, 2.0], requires_grad=True).clone()
        b = a.sin()
        a.detach_()
        log("input", _err(lambda: b.sum().backward()))
        a = lib.tensor([1.0, 2.0], requires_grad=True).clone()
        b = a.exp()                 # saves its output: detaching the input is fine
        a.detach_()
        b.sum().backward()
        log("output", b.grad_fn is not None)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a = (x * 2)
        a.detach_()                 # detached before it is saved: a constant
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        (a * w).sum().backward()
        log("before", w.grad, x.grad)
        a = lib.tensor([1.0, 2.0], requires_grad=True).clone()
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        c = a * w                   # mul saves both inputs; only a is detached in place
        a.detach_()
        log("mul", _err(lambda: c.sum().backward()))
    events(scenario)


# -------------------------------------------------------------------------------------------- profiler

def test_profiler_sequence_numbers_threads_and_factories():
    def scenario(lib, log):
        from importlib import import_module
        profile = import_module(lib.__name__ + ".autograd.profiler").profile
        with profile() as p:
            x = lib.randn(4, 4, requires_grad=True)
            y = lib.randn(4, 4, requires_grad=True)
            z = x + y
            s = z.sum(dim=None)
            s.backward()
        ev = list(p.function_events)
        fwd = {e.name: e for e in ev if e.name in ("aten::add", "aten::sum")}
        for name, node in (("aten::add", "AddBackward0"), ("aten::sum", "SumBackward1")):
            f = fwd[name]
            bwd = [e for e in ev if e.name in (node, "autograd::engine::evaluate_function: " + node)]
            log(name, f.sequence_nr >= 0, f.fwd_thread, [(e.name, e.sequence_nr == f.sequence_nr,
                                                        e.fwd_thread == f.thread) for e in bwd])
        acc = [e for e in ev if e.name == "torch::autograd::AccumulateGrad"]
        log("acc", [(e.sequence_nr, e.fwd_thread) for e in acc])
        log("randn", [[c.name for c in e.cpu_children] for e in ev if e.name == "aten::randn"])
        log("empty", sorted({e.sequence_nr for e in ev if e.name == "aten::empty"}))
        t = lib.ones(3)
        for make in (lambda: lib.zeros(3), lambda: lib.ones(2, 2), lambda: lib.full((2,), 1.5), lambda: lib.rand(3),
                     lambda: lib.empty(2), lambda: lib.arange(3), lambda: lib.zeros_like(t), lambda: lib.ones_like(t)):
            with profile() as p:
                make()
            log([(e.name, [c.name for c in e.cpu_children]) for e in p.function_events if e.cpu_parent is None])
    events(scenario)


def test_profiler_record_shapes_of_composite_ops():
    def scenario(lib, log):
        from importlib import import_module
        profile = import_module(lib.__name__ + ".autograd.profiler").profile
        lib.manual_seed(0)
        l1, l2 = lib.nn.Linear(6, 5), lib.nn.Linear(5, 3)
        conv = lib.nn.Conv2d(2, 3, 3)
        x = lib.tensor(np.ones((4, 6), np.float32))
        img = lib.tensor(np.ones((1, 2, 5, 5), np.float32))
        a, b = lib.tensor(np.ones((2, 3, 4), np.float32)), lib.tensor(np.ones((4, 5), np.float32))
        with profile(record_shapes=True) as prof:
            l2(l1(x))
            conv(img)
            lib.matmul(a, b)
        for name in ("aten::linear", "aten::conv2d", "aten::matmul"):
            log(name, [e.input_shapes[:3] for e in prof.function_events if e.name == name])
        log([[c.name for c in e.cpu_children][:1] for e in prof.function_events if e.name == "aten::linear"])
    events(scenario)


def test_sum_dim_none_is_the_dim_overload():
    def scenario(lib, log):
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        for y in (x.sum(), x.sum(dim=None), lib.sum(x, None), x.sum(None, True), x.sum(dim=(0, 1)), x.sum(0)):
            y.sum().backward()
            log(y.grad_fn.name(), tuple(y.shape), x.grad)
    events(scenario)


# --------------------------------------------------------------------------------------- sparse gradients

def test_embedding_bag_sparse_weight_gradient():
    def scenario(lib, log):
        F = lib.nn.functional
        w = lib.tensor(np.arange(30.0).reshape(10, 3) / 7, requires_grad=True)
        idx = lib.tensor([1, 2, 4, 5, 4, 3, 2, 9])
        off = lib.tensor([0, 4])
        psw = lib.tensor(np.linspace(0.5, 2.0, 8))
        for kw in (dict(mode="sum"), dict(mode="mean"), dict(mode="mean", padding_idx=4),
                   dict(mode="sum", per_sample_weights=psw)):
            w.grad = None
            F.embedding_bag(idx, w, off, sparse=True, **kw).pow(2).sum().backward()
            g = w.grad
            log(kw.get("mode"), str(g.layout), g._indices(), g._values(), g.is_coalesced(), g.to_dense())
        log("max", _err(lambda: F.embedding_bag(idx, w, off, mode="max", sparse=True)))
        out = F.embedding_bag(idx, w, off, sparse=True, scale_grad_by_freq=True)
        log("scale_grad_by_freq", _err(lambda: out.sum().backward()))
    events(scenario)


def test_accumulate_grad_takes_a_sparse_gradient_it_alone_holds():
    def scenario(lib, log):
        F = lib.nn.functional
        seen = {}

        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a + b

            @staticmethod
            def backward(ctx, g):
                seen["g"] = g._values().data_ptr()
                return g, g

        class Strided(lib.autograd.Function):       # non-contiguous indices and values: both .grads are copies
            @staticmethod
            def forward(ctx, a, b):
                return a + b

            @staticmethod
            def backward(ctx, g):
                v = lib.ones(1, 3).expand(8, 3)
                i = lib.ones(1, 1, dtype=lib.long).expand(1, 8)
                ng = lib.sparse_coo_tensor(i, v, (10, 3))
                seen["g"] = ng._values().data_ptr()
                return ng, ng

        idx, off = lib.tensor([1, 2, 4, 5, 4, 3, 2, 9]), lib.tensor([0, 4])
        for fn in (Twice, Strided):
            a = lib.tensor(np.ones((10, 3)), requires_grad=True)
            b = lib.tensor(np.ones((10, 3)), requires_grad=True)
            loss = F.embedding_bag(idx, fn.apply(a, b), off, sparse=True).sum()
            loss.backward(retain_graph=True)
            pa, pb = a.grad._values().data_ptr(), b.grad._values().data_ptr()
            log(fn.__name__, pa == pb, pa == seen["g"] or pb == seen["g"])
            for _ in range(3):
                loss.backward(retain_graph=True)
            log(str(a.grad.layout), a.grad.to_dense(), b.grad.to_dense())
    events(scenario)


# ---------------------------------------------------------------------------------------- Tensor subclasses

def test_subclass_own_data_and_custom_function_returning_its_input():
    def scenario(lib, log):
        class Custom(lib.Tensor):
            def __init__(self, data):
                super().__init__()
                self._data = data

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                kwargs = {} if kwargs is None else kwargs
                args = tuple(a._data if isinstance(a, cls) else a for a in args)
                out = func(*args, **kwargs)
                return cls(out) if isinstance(out, lib.Tensor) else out

        class Fn(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        inner = lib.tensor([[1.0, 2.0, 3.0]])
        x = Custom(inner)
        log(type(x._data).__name__, x._data, tuple(x.shape), str(x.dtype))
        plain = lib.Tensor(inner)       # the legacy constructor on a tensor: an alias
        plain[0, 0] = 5.0
        log("legacy", inner, tuple(lib.Tensor(2, 3).shape), str(lib.Tensor([1, 2]).dtype))
        y = Fn.apply(x)
        log("as-is", isinstance(y, Custom), type(y._data).__name__, y._data)
    events(scenario)


def test_wrapper_subclass_and_torch_function_of_backward_and_grad():
    def scenario(lib, log):
        calls = []

        class Wrapper(lib.Tensor):
            @staticmethod
            def __new__(cls, data):
                return lib.Tensor._make_wrapper_subclass(cls, data.size(), strides=data.stride(),
                                                         storage_offset=data.storage_offset(), dtype=data.dtype,
                                                         layout=data.layout, device=data.device,
                                                         requires_grad=data.requires_grad)

            def __init__(self, data):
                self._data = data

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                calls.append(func.__name__)

                def unwrap(a):
                    if isinstance(a, (tuple, list)):
                        return type(a)(unwrap(v) for v in a)
                    return a._data if isinstance(a, cls) else a
                return func(*unwrap(args), **{k: unwrap(v) for k, v in (kwargs or {}).items()})

            @classmethod
            def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
                raise AssertionError("not reached: __torch_function__ unwraps")

        class NoDispatch(lib.Tensor):
            pass
        log("no dispatch", _err(lambda: lib.Tensor._make_wrapper_subclass(NoDispatch, (2,), dtype=lib.float32)))
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        w = Wrapper(y)
        log(type(w).__name__, tuple(w.shape), str(w.dtype), w.stride(), w.requires_grad)
        calls.clear()       # (torch also hands the properties read above to __torch_function__; hookgrad does not)
        lib.autograd.backward(w, lib.ones_like(y))
        log("backward", calls, x.grad)
        (g,) = lib.autograd.grad(Wrapper(x * 3), x, lib.ones(3))
        log("grad", calls, g)
    events(scenario)


# ---------------------------------------------------------------------------------------- dispatch modes

def _mode(lib, record):
    from importlib import import_module
    base = import_module(lib.__name__ + ".utils._python_dispatch").TorchDispatchMode

    class Mode(base):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            record(func)
            return func(*args, **(kwargs or {}))
    return Mode()


def test_dispatch_mode_overloads_detach_and_results():
    def scenario(lib, log):
        seen = []
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        with _mode(lib, seen.append):
            y = x.sin()
            d = y.detach()
        log([str(f) for f in seen], seen[0] is lib.ops.aten.sin.default, seen[0] == lib.ops.aten.sin.default,
            d.requires_grad, y)

        results = []

        class Keep(type(_mode(lib, None))):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                results.append(out)
                return out
        with Keep():
            z = x.cos()
        log(len(results), results[0] is z or bool((results[0] == z).all()))
    events(scenario)


def test_dispatch_modes_and_checkpoint_recomputation():
    def scenario(lib, log):
        checkpoint = lib.utils.checkpoint.checkpoint
        ops = []
        mode = _mode(lib, lambda f: ops.append(str(f)))
        x = lib.tensor(1.0, requires_grad=True)
        out = checkpoint(lambda t: t.exp(), x, use_reentrant=False,
                         context_fn=lambda: (mode, contextlib.nullcontext()))
        log("forward", ops)
        ops.clear()
        out = checkpoint(lambda t: t.exp(), x, use_reentrant=False,
                         context_fn=lambda: (contextlib.nullcontext(), mode))
        out.backward()
        log("recompute", ops)       # the op, then the recomputation's detach of what it saves
        for early in (True, False):
            sins, calls = [], [0]

            def fn(t):
                calls[0] += 1
                return t.sin()
            a = lib.tensor(1.0, requires_grad=True)
            with _mode(lib, lambda f: sins.append(f is lib.ops.aten.sin.default)):
                with lib.utils.checkpoint.set_checkpoint_early_stop(early):
                    out = checkpoint(fn, a, use_reentrant=False)
                out.backward()
            log("early stop" if early else "no early stop", calls[0], sum(sins), a.grad)
    events(scenario)


def test_custom_op_through_modes_and_selective_checkpointing():
    def scenario(lib, log):
        ck = lib.utils.checkpoint
        with lib.library._scoped_library("c27test", "FRAGMENT"):
            counter = [0]

            @lib.library.custom_op("c27test::sin_extra", mutates_args=())
            def sin_extra(x: lib.Tensor) -> tuple[lib.Tensor, int]:
                counter[0] += 1
                return x.sin(), 2

            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])

            def backward(ctx, grad, _unused):
                (x,) = ctx.saved_tensors
                return grad * x.cos()

            lib.library.register_autograd("c27test::sin_extra", backward, setup_context=setup_context)
            op = lib.ops.c27test.sin_extra.default
            names = []
            x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
            with _mode(lib, lambda f: names.append(str(f))):
                y, n = op(x)
            log("mode", names, n, y, counter[0])

            class Replace(type(_mode(lib, None))):      # a mode answers for a defined operator: its kernel is not run
                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    if func == op:
                        return args[0] * 0 + 7.0, 3
                    return func(*args, **(kwargs or {}))
            counter[0] = 0
            with Replace():
                y, n = op(x)
            log("replaced", counter[0], n, y)

            def fn(t):
                return (op(t)[0] * t.sin().exp()).sin()
            counter[0] = 0
            ctx = functools.partial(ck.create_selective_checkpoint_contexts, [op])
            out = ck.checkpoint(fn, x, use_reentrant=False, context_fn=ctx)
            (g,) = lib.autograd.grad(out.sum(), (x,))
            (ref,) = lib.autograd.grad(fn(x).sum(), (x,))
            log("sac", counter[0], g, ref)
    events(scenario)


# ------------------------------------------------------------------------------------------------- lobpcg

def _sym(n, batch=(), seed=0):
    a = np.random.default_rng(seed).random(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) / 10


def _signed(lib, U):
    _, idx = U.abs().max(-2, keepdim=True)
    return U * U.gather(-2, idx).sign()


def test_lobpcg_eigenpairs_and_gradient():
    def scenario(lib, log):
        for k, batch, n, largest in ((1, (), 6, True), (2, (), 6, False), (3, (2,), 9, True), (2, (2, 2), 6, False)):
            A = lib.tensor(_sym(n, batch), requires_grad=True)
            X = lib.eye(n, k, dtype=A.dtype).expand(*batch, n, k)
            D, U = lib.lobpcg(A=A, k=k, X=X, largest=largest)
            U = _signed(lib, U)
            (D.sum() + U.sum()).backward()
            log("eig", k, batch, largest, D, U, A.grad, bool((A.grad - A.grad.mT).abs().max() < 1e-9))
        A = lib.tensor(_sym(9))
        B = lib.tensor(_sym(9, seed=1) + np.eye(9))
        D, U = lib.lobpcg(A, 2, B, X=lib.eye(9, 2, dtype=A.dtype))
        log("generalized", D, _signed(lib, U), U.mT @ B @ U)
        log("too many", _err(lambda: lib.lobpcg(lib.tensor(_sym(5)), k=2)))
        Ag = lib.tensor(_sym(9), requires_grad=True)
        Bg = lib.tensor(_sym(9, seed=1) + np.eye(9))
        D, U = lib.lobpcg(Ag, 1, Bg, X=lib.eye(9, 1, dtype=Ag.dtype))
        log("backward with B", _err(lambda: D.sum().backward()))
    events(scenario)


def test_lobpcg_gradcheck():
    import hookgrad

    def f(A):
        D, U = hookgrad.lobpcg(A=A, k=2, X=hookgrad.eye(6, 2, dtype=A.dtype), largest=False)
        return D, _signed(hookgrad, U)
    A = hookgrad.tensor(_sym(6), requires_grad=True)
    assert hookgrad.autograd.gradcheck(f, A, check_batched_grad=False)
