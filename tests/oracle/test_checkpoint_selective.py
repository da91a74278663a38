"""Selective activation checkpointing (torch.utils.checkpoint.create_selective_checkpoint_contexts), torch vs
hookgrad (issue 27): argument checks, policies given as op lists or functions (ops compare equal to
torch.ops.aten.<op>.default), gradients, and the cache's errors (a second recomputation, a cached output
mutated in place)."""
import functools

from test_autograd_modes import both, _err


def test_bad_inputs():
    def scenario(lib, log):
        sac = lib.utils.checkpoint.create_selective_checkpoint_contexts
        log(_err(lambda: sac([2]))[0], _err(lambda: sac([lib.ops.aten.sin]))[0], _err(lambda: sac(2)))
        log("specific OpOverload" in _err(lambda: sac([lib.ops.aten.sin]))[1])
    both(scenario)


def test_policies_gradients_and_cache_errors():
    def scenario(lib, log):
        ck = lib.utils.checkpoint
        P = ck.CheckpointPolicy

        def policy(ctx, op, *args, **kwargs):
            return P.MUST_SAVE if op == lib.ops.aten.sin.default else P.PREFER_RECOMPUTE

        x = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
        for context_fn in (functools.partial(ck.create_selective_checkpoint_contexts, policy),
                           functools.partial(ck.create_selective_checkpoint_contexts, [lib.ops.aten.sin.default])):
            out = ck.checkpoint(lambda t: t.sin().cos().exp(), x, use_reentrant=False, context_fn=context_fn)
            (g,) = lib.autograd.grad(out.sum(), (x,), retain_graph=True)
            log(g)
            log(_err(lambda: out.sum().backward(retain_graph=True)))
        cf = functools.partial(ck.create_selective_checkpoint_contexts, policy)
        out = ck.checkpoint(lambda t: t.sin().mul_(2).cos().exp(), x, use_reentrant=False, context_fn=cf)
        log(_err(lambda: out.sum().backward()) is not None)
        cf = functools.partial(ck.create_selective_checkpoint_contexts, policy, allow_cache_entry_mutation=True)
        out = ck.checkpoint(lambda t: t.sin().mul_(2).cos().exp(), x, use_reentrant=False, context_fn=cf)
        # (no error; the gradient differs on purpose: PyTorch uses the mutated cached value, hookgrad recomputes)
        log(_err(lambda: out.sum().backward()))
    both(scenario)
