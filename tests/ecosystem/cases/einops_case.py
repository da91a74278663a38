"""einops: rearrange / reduce / repeat / einsum on tensors, and its layers inside a model, with backward."""


def run(torch, rec, weights):
    import einops
    from einops.layers.torch import Rearrange, Reduce
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    y = einops.rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=4, p2=4)
    rec("rearrange", y)
    rec("reduce", einops.reduce(x, "b c h w -> b c", "mean"))
    rec("repeat", einops.repeat(x[0, 0], "h w -> c h w", c=2))
    rec("einsum", einops.einsum(x, x, "b c h w, b c h w -> b c"))
    model = torch.nn.Sequential(Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=4, p2=4),
                                torch.nn.Linear(48, 16), Reduce("b n d -> b d", "max"), torch.nn.Linear(16, 4))
    weights("model", model)
    out = model(x)
    out.sum().backward()
    rec("model", out)
    rec("x.grad", x.grad)
    rec("w.grad", model[1].weight.grad)
    rec("repr", repr(model))
