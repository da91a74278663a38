"""accelerate: Accelerator().prepare on model, optimizer and data loader, and a few steps."""


def run(torch, rec, weights):
    from accelerate import Accelerator
    from torch.utils.data import DataLoader, TensorDataset
    acc = Accelerator(cpu=True)
    model = weights("model", torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(32, 4, generator=g), torch.randn(32, 1, generator=g))
    model, opt, dl = acc.prepare(model, opt, DataLoader(data, batch_size=8))
    for i, (x, y) in enumerate(dl):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        acc.backward(loss)
        acc.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        rec(f"loss{i}", loss)
    rec("weights", dict(acc.unwrap_model(model).state_dict()))
    rec("device", str(acc.device))
