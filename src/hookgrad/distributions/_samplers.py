"""Samplers PyTorch runs in C++ with algorithms of its own (gamma, Poisson, binomial). hookgrad draws with
classic rejection algorithms from its own generator (``rand``/``randn``), so ``manual_seed`` makes them
reproducible but not PyTorch's numbers (docs/differences.md). Each works on whole tensors: every round draws
for the entries still rejected.
"""
import math

import hookgrad
from ..primitives.special import StandardGamma

__all__ = ["standard_gamma", "poisson", "binomial"]


def _accept_loop(shape, dtype, propose):
    """Fill a tensor of ``shape`` by rounds of ``propose(mask) -> (values, accepted)`` until all are accepted."""
    out = hookgrad.zeros(shape, dtype=dtype)
    todo = hookgrad.ones(shape, dtype=hookgrad.bool)
    for _ in range(1000):
        if not bool(todo.any()):
            return out
        values, ok = propose()
        take = todo & ok
        out = hookgrad.where(take, values, out)
        todo = todo & ~ok
    raise RuntimeError("sampler did not converge")


def _gamma_draw(alpha):
    """Marsaglia and Tsang's gamma(alpha, 1) sampler (with the alpha < 1 boost u^(1 / alpha))."""
    a = alpha.detach()
    boost = a < 1
    a1 = hookgrad.where(boost, a + 1, a)
    d = a1 - 1.0 / 3
    c = (9 * d).rsqrt()

    def propose():
        x = hookgrad.randn(a.shape, dtype=a.dtype)
        v = (1 + c * x) ** 3
        u = hookgrad.rand(a.shape, dtype=a.dtype)
        ok = (v > 0) & (u.log() < 0.5 * x * x + d - d * v + d * v.clamp(min=1e-300).log())
        return d * v, ok
    g = _accept_loop(a.shape, a.dtype, propose)
    u = hookgrad.rand(a.shape, dtype=a.dtype)
    return hookgrad.where(boost, g * u.pow(1 / a), g)


def standard_gamma(alpha):
    """A gamma(alpha, 1) sample, differentiable in ``alpha`` (implicit reparameterisation)."""
    with hookgrad.no_grad():
        x = _gamma_draw(alpha)
        x = x.clamp(min=hookgrad.finfo(x.dtype).tiny)
    return StandardGamma.apply(alpha, sample=x._data)


def poisson(rate, generator=None):
    """Poisson(rate) samples: inversion below rate 10, Hormann's PTRS transformed rejection above."""
    with hookgrad.no_grad():
        lam = rate.detach()
        small = lam < 10
        # inversion (sequential search), for the small rates
        lam_s = hookgrad.where(small, lam, hookgrad.zeros_like(lam))
        u = hookgrad.rand(lam.shape, dtype=lam.dtype, generator=generator)
        k = hookgrad.zeros_like(lam)
        p = (-lam_s).exp()
        cdf = p.clone()
        for i in range(1, 200):
            more = (u > cdf) & small
            if not bool(more.any()):
                break
            k = k + more.to(k.dtype)
            p = p * lam_s / i
            cdf = cdf + p
        # PTRS for the rest
        lam_b = hookgrad.where(small, hookgrad.full_like(lam, 10.0), lam)
        slam = lam_b.sqrt()
        loglam = lam_b.log()
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)

        def propose():
            uu = hookgrad.rand(lam.shape, dtype=lam.dtype, generator=generator) - 0.5
            v = hookgrad.rand(lam.shape, dtype=lam.dtype, generator=generator)
            us = 0.5 - uu.abs()
            kk = ((2 * a / us + b) * uu + lam_b + 0.43).floor()
            quick = (us >= 0.07) & (v <= vr)
            valid = (kk >= 0) & ~((us < 0.013) & (v > us))
            full = (v.log() + invalpha.log() - (a / (us * us) + b).log()
                    <= -lam_b + kk * loglam - (kk + 1).lgamma())
            return kk, quick | (valid & full)
        big = _accept_loop(lam.shape, lam.dtype, propose)
        out = hookgrad.where(small, k, big)
        return hookgrad.where(lam == 0, hookgrad.zeros_like(out), out)


def binomial(count, prob, generator=None):
    """Binomial(count, prob) samples: inversion when count * min(p, 1 - p) < 10, Hormann's BTRS above."""
    with hookgrad.no_grad():
        n = count.detach()
        p0 = prob.detach()
        n, p0 = hookgrad.broadcast_tensors(n, p0)
        flip = p0 > 0.5
        p = hookgrad.where(flip, 1 - p0, p0)
        q = 1 - p
        small = n * p < 10
        # inversion
        u = hookgrad.rand(n.shape, dtype=n.dtype, generator=generator)
        ps = hookgrad.where(small, p, hookgrad.zeros_like(p))
        qs = 1 - ps
        pmf = qs.pow(n)
        cdf = pmf.clone()
        k = hookgrad.zeros_like(n)
        r = ps / qs
        for i in range(1, 400):
            more = (u > cdf) & small & (k < n)
            if not bool(more.any()):
                break
            k = k + more.to(k.dtype)
            pmf = pmf * (n - i + 1) / i * r
            cdf = cdf + pmf
        # BTRS
        nb = hookgrad.where(small, hookgrad.full_like(n, 100.0), n)
        pb = hookgrad.where(small, hookgrad.full_like(p, 0.5), p)
        qb = 1 - pb
        spq = (nb * pb * qb).sqrt()
        b = 1.15 + 2.53 * spq
        a = -0.0873 + 0.0248 * b + 0.01 * pb
        c = nb * pb + 0.5
        alpha = (2.83 + 5.1 / b) * spq
        vr = 0.92 - 4.2 / b
        m = ((nb + 1) * pb).floor()
        lpq = (pb / qb).log()
        h = (m + 1).lgamma() + (nb - m + 1).lgamma()

        def propose():
            uu = hookgrad.rand(n.shape, dtype=n.dtype, generator=generator) - 0.5
            v = hookgrad.rand(n.shape, dtype=n.dtype, generator=generator)
            us = 0.5 - uu.abs()
            kk = ((2 * a / us + b) * uu + c).floor()
            inside = (kk >= 0) & (kk <= nb)
            quick = (us >= 0.07) & (v <= vr)
            lv = (v * alpha / (a / (us * us) + b)).log()
            full = lv <= h - (kk + 1).lgamma() - (nb - kk + 1).lgamma() + (kk - m) * lpq
            return kk, inside & (quick | full)
        big = _accept_loop(n.shape, n.dtype, propose)
        out = hookgrad.where(small, k, big)
        out = hookgrad.where(flip, n - out, out)
        return hookgrad.where(p0 == 0, hookgrad.zeros_like(out), hookgrad.where(p0 == 1, n, out))
