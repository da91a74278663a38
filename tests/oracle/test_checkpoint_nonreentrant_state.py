"""Non-reentrant checkpoint, torch vs hookgrad (issue 27): the debug=True non-determinism message, backward
calls sharing one recomputation under GraphExecGroup, a saved tensor that needs no graph unpacking to itself,
early stop leaving no reference cycle behind, and the forward's CPU autocast state re-entered for the
recomputation (both variants)."""
import gc
import weakref

from test_autograd_modes import both, _err


def _non_det(orig, recompute):
    calls = [0]

    def fn(x):
        calls[0] += 1
        return orig(x) if calls[0] == 1 else recompute(x)
    return fn


def test_debug_message_on_non_determinism():
    def scenario(lib, log):
        ck = lib.utils.checkpoint
        a = lib.randn(1, requires_grad=True)
        two = lambda x: x.sin().exp()                                   # noqa: E731
        alt = lambda x: x.sin() * lib.tensor([1.0, 2.0])                # noqa: E731
        three = lambda x: x.sin().exp().sin()                           # noqa: E731
        for debug, glob in ((False, None), (True, None), (False, True)):
            for orig, rec in ((two, alt), (three, two)):
                def run():
                    out = ck.checkpoint(_non_det(orig, rec), a, use_reentrant=False, debug=debug)
                    out.sum().backward()
                if glob is None:
                    t, msg = _err(run)
                else:
                    with ck.set_checkpoint_debug_enabled(glob):
                        t, msg = _err(run)
                log(t, "different metadata" in msg, "different number" in msg,
                    "You are seeing this error because you passed `debug=True` to checkpoint" in msg,
                    "To see a more detailed error message" in msg)
        log(_err(lambda: ck.checkpoint(two, a, use_reentrant=False, debug=True,
                                       context_fn=lambda: (ck.contextlib.nullcontext(),) * 2)))
    both(scenario)


def test_graph_exec_group_shares_one_recomputation():
    def scenario(lib, log):
        ck = lib.utils.checkpoint
        for grouped in (True, False):
            calls = [0]

            def fn(x):
                calls[0] += 1
                y = x.sin().cos()
                return y, y.sin().cos()
            x = lib.tensor([[0.1, 0.2], [0.3, 0.4]], requires_grad=True)
            y, z = ck.checkpoint(fn, x, use_reentrant=False)
            group = ck.GraphExecGroup()
            if grouped:
                group.__enter__()
            (gy,) = lib.autograd.grad(z, (y,), grad_outputs=(lib.ones(2, 2),))
            (gx,) = lib.autograd.grad(y, (x,), grad_outputs=(gy,))
            if grouped:
                group.__exit__(None, None, None)
            log(calls[0], gx)
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        out = ck.checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False)
        with ck.GraphExecGroup():
            out.sum().backward(retain_graph=True)
            t, msg = _err(lambda: out.sum().backward())
            log(t, "Performing two backward calls that overlap" in msg)
            t, msg = _err(lambda: ck.GraphExecGroup().__enter__())
            log(t, msg.split(" <")[0])
    both(scenario)


def test_saved_tensor_without_graph_unpacks_to_itself_and_early_stop_frees():
    def scenario(lib, log):
        ck = lib.utils.checkpoint
        seen = []
        refs = []

        class Save(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                c = x.clone()
                ctx.save_for_backward(y, c)
                refs.append(weakref.ref(c))
                return c

            @staticmethod
            def backward(ctx, g):
                seen.append(ctx.saved_tensors[0])
                return g, None
        a = lib.tensor(1.0, requires_grad=True)
        b = lib.tensor(2.0)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            Save.apply(a, b).backward()
        log(seen[-1] is b)
        gc.disable()
        try:
            def scope():
                ck.checkpoint(Save.apply, a, b, use_reentrant=False).backward()
            scope()
            log(seen[-1] is b, [r() is None for r in refs[1:]])
        finally:
            gc.enable()
    both(scenario)


def test_recomputation_runs_under_the_forward_autocast_state():
    def scenario(lib, log):
        ck = lib.utils.checkpoint
        for reentrant in (False, True):
            for enabled in (True, False):
                dtypes = []

                def foo(x, y):
                    z = lib.mm(lib.mm(x, y), y)
                    dtypes.append(str(z.dtype))
                    return z
                x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
                y = lib.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
                with lib.autocast("cpu", enabled=enabled, dtype=lib.bfloat16):
                    loss = ck.checkpoint(foo, x, y, use_reentrant=reentrant).float().sum()
                loss.backward()
                log(reentrant, enabled, dtypes, x.grad, y.grad)
    both(scenario)
