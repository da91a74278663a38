"""Random small op graphs with hooks for second-order tests (test_engine_exact.py): make(rng) draws a
case, scen(*case) builds the scenario, run(scenario) returns None or a description of the difference."""
import sys, random, warnings
import numpy as np, torch, hookgrad


from oracle import to_np

class Rec:
    def __init__(self): self.struct, self.arrays = [], []
    def __call__(self, name, *values): self.struct.append((name,) + tuple(self._plain(v) for v in values))
    def _plain(self, v):
        if isinstance(v, (torch.Tensor, hookgrad.Tensor)):
            self.arrays.append(to_np(v).astype(np.float64)); return ("T", str(v.dtype), tuple(v.shape))
        if isinstance(v, (tuple, list)): return tuple(self._plain(x) for x in v)
        return v

UN = ["sin", "exp", "relu", "tanh", "pow2", "pow3", "sum_k", "idx", "mul2", "sq", "sigmoid", "sqrtabs", "logabs", "mean", "softmax", "norm", "abs", "clamp", "maxdim", "T", "reshape", "expand", "cat", "unbind", "lsm", "div", "rsqrt", "cumsum", "std", "where", "gather", "amax", "prod", "log1p", "elu", "gelu", "silu", "softplus", "min2"]
BI = ["add", "mul", "matmul", "sub", "div", "maximum", "atan2"]
HK = ["t_log", "t_scale", "retain", "pre", "post", "pre_scale", "post_scale", "leaf_log", "postacc"]

def un(lib, n, t):
    if n == "exp": return (t * 0.3).exp()
    if n == "pow2": return t.pow(2)
    if n == "pow3": return t ** 3
    if n == "sum_k": return t.sum(0, keepdim=True) * t
    if n == "idx": return t[[0, 2, 1]] * t[1]
    if n == "mul2": return t * 2
    if n == "sq": return t * t
    F = lib.nn.functional
    if n == "sqrtabs": return (t.abs() + 0.5).sqrt()
    if n == "logabs": return (t.abs() + 0.5).log()
    if n == "mean": return t.mean(1, keepdim=True) + t
    if n == "softmax": return t.softmax(-1)
    if n == "norm": return t.norm() * t
    if n == "clamp": return t.clamp(-0.5, 0.7)
    if n == "maxdim": return t.max(1, keepdim=True)[0] * t
    if n == "T": return t.t()
    if n == "reshape": return t.reshape(9).reshape(3, 3)
    if n == "expand": return t[0:1].expand(3, 3)
    if n == "cat": return lib.cat([t[:2], t[1:2]], 0)
    if n == "unbind": a, b, c = t.unbind(0); return lib.stack([c, a, b])
    if n == "lsm": return F.log_softmax(t, 1)
    if n == "div": return t / (t.abs() + 1)
    if n == "rsqrt": return (t * t + 1).rsqrt()
    if n == "cumsum": return t.cumsum(1)
    if n == "std": return t.std(0, keepdim=True) * t
    if n == "where": return lib.where(t > 0, t * t, t)
    if n == "gather": return t.gather(1, lib.tensor([[0, 0, 1], [2, 1, 0], [1, 1, 1]]))
    if n == "amax": return t.amax(0) * t
    if n == "prod": return t.prod(1, keepdim=True) + t
    if n == "log1p": return (t * t).log1p()
    if n == "elu": return F.elu(t)
    if n == "gelu": return F.gelu(t)
    if n == "silu": return F.silu(t)
    if n == "softplus": return F.softplus(t)
    if n == "min2": return lib.minimum(t, t * 0.5)
    return getattr(t, n)()

def bi(n, a, b):
    if n == "div": return a / (b * b + 1)
    if n == "maximum": return a.maximum(b)
    if n == "atan2": return a.atan2(b)
    return {"add": a + b, "mul": a * b, "matmul": a @ b, "sub": a - b}[n]

def make(rng):
    ops = []
    for _ in range(rng.randint(2, 7)):
        if rng.random() < 0.5: ops.append(("u", rng.choice(UN), rng.randint(0, 50)))
        else: ops.append(("b", rng.choice(BI), (rng.randint(0, 50), rng.randint(0, 50))))
    hooks = [(rng.randint(0, 50), rng.choice(HK)) for _ in range(rng.randint(2, 8))]
    mode = rng.choice(["grad_cg", "backward_cg", "grad_cg_grad", "backward_cg_twice"])
    return ops, hooks, mode, rng.randint(0, 3), rng.randint(1, 3)

def scen(ops, hooks, mode, seed, nleaf):
    data = np.random.default_rng(seed).standard_normal((3, 3, 3)).astype(np.float64)
    def s(lib, log):
        leaves = [lib.tensor(data[i], requires_grad=True) for i in range(nleaf)]
        const = lib.tensor(data[2])
        nodes = list(leaves) + [const]
        for kind, name, arg in ops:
            if kind == "u": nodes.append(un(lib, name, nodes[arg % len(nodes)]))
            else: nodes.append(bi(name, nodes[arg[0] % len(nodes)], nodes[arg[1] % len(nodes)]))
        retained = []
        for k, (idx, h) in enumerate(hooks):
            t = nodes[idx % len(nodes)]
            tag = f"{h}{k}@{idx % len(nodes)}"
            if not t.requires_grad: continue
            if h == "t_log": t.register_hook(lambda g, tag=tag: log(tag, g, g.requires_grad))
            elif h == "t_scale": t.register_hook(lambda g, tag=tag: (log(tag, g), g * 2)[1])
            elif h == "retain": t.retain_grad(); retained.append(t)
            elif h == "leaf_log": leaves[idx % nleaf].register_hook(lambda g, tag=tag: log(tag, g, g.requires_grad))
            elif h == "postacc": leaves[idx % nleaf].register_post_accumulate_grad_hook(lambda p, tag=tag: log(tag, p.grad))
            elif t.grad_fn is not None:
                n = t.grad_fn
                if h == "pre": n.register_prehook(lambda go, tag=tag: log(tag, go))
                elif h == "pre_scale": n.register_prehook(lambda go, tag=tag: (log(tag, go), tuple(None if g is None else g * 3 for g in go))[1])
                elif h == "post": n.register_hook(lambda gi, go, tag=tag: log(tag, gi, go))
                else: n.register_hook(lambda gi, go, tag=tag: (log(tag, len(gi)), tuple(None if g is None else g * 0.5 for g in gi))[1])
        out = nodes[-1]
        if not out.requires_grad:
            log("noreq"); return
        loss = (out * out).sum() + out.sum()
        if mode.startswith("grad_cg"):
            gs = lib.autograd.grad(loss, leaves, create_graph=True, allow_unused=True)
            log("gs", gs)
            tot = None
            for g in gs:
                if g is not None and g.requires_grad:
                    v = (g * g).sum().sqrt() if mode == "grad_cg" else (g.sin()).sum()
                    tot = v if tot is None else tot + v
            if tot is None: log("nothing"); return
            if mode == "grad_cg": tot.backward()
            else: log("gg", lib.autograd.grad(tot, leaves, allow_unused=True))
        else:
            loss.backward(create_graph=True)
            log("g1", [t.grad for t in leaves])
            log("r1", [t.grad for t in retained])
            tot = None
            for t in leaves:
                if t.grad is not None and t.grad.requires_grad:
                    v = (t.grad * t.grad).sum()
                    tot = v if tot is None else tot + v
            if tot is None: log("nothing"); return
            tot.backward()
            if mode == "backward_cg_twice":
                for t in leaves: t.grad = None
                loss.backward()
        log("leaf grads", [t.grad for t in leaves])
        log("retained", [t.grad for t in retained])
    return s

def run(s):
    recs, errs = [], []
    for lib in (torch, hookgrad):
        r = Rec()
        try: s(lib, r); errs.append(None)
        except Exception as e: errs.append(f"{type(e).__name__}: {str(e)[:150]}")
        recs.append(r)
    t, h = recs
    if h.struct != t.struct: return f"struct\n torch: {t.struct}\n hg:    {h.struct}\n errs {errs}"
    if errs[0] != errs[1] and (errs[0] is None or errs[1] is None or errs[0].split(':')[0] != errs[1].split(':')[0]): return f"errs {errs}"
    for a, b in zip(t.arrays, h.arrays):
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-6, atol=1e-8, equal_nan=True): return f"values {a} {b}\n {t.struct}"
    return None

def _main():
    n = int(sys.argv[1]); start = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    fails = 0
    for i in range(start, start + n):
        rng = random.Random(i)
        case = make(rng)
        r = run(scen(*case))
        if r:
            fails += 1
            if fails <= 6: print("CASE", i, case, "\n", r[:1500])
    print("fails", fails, "of", n)


if __name__ == "__main__":
    _main()
