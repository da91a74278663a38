"""torch-geometric: GCNConv and GATConv on a small graph, a two-layer GCN trained for a few steps."""


def run(torch, rec, weights):
    from torch_geometric.data import Data
    from torch_geometric.nn import GCNConv, GATConv, global_mean_pool
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4, 4, 0, 1, 3],
                               [1, 0, 2, 1, 3, 2, 4, 3, 0, 4, 3, 1]])
    x = torch.randn(5, 8)
    data = Data(x=x, edge_index=edge_index)
    rec("data", repr(data))

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(8, 16)
            self.conv2 = GCNConv(16, 3)
            self.gat = GATConv(8, 4, heads=2)

        def forward(self, x, edge_index):
            h = self.conv1(x, edge_index).relu()
            return self.conv2(h, edge_index), self.gat(x, edge_index)

    model = weights("gcn", GCN())
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    y = torch.tensor([0, 1, 2, 0, 1])
    for step in range(3):
        opt.zero_grad()
        out, gat = model(data.x, data.edge_index)
        loss = torch.nn.functional.cross_entropy(out, y) + gat.pow(2).mean()
        loss.backward()
        opt.step()
        rec(f"loss{step}", loss)
    rec("out", out)
    rec("pooled", global_mean_pool(out, torch.tensor([0, 0, 1, 1, 1])))
    rec("grad", model.conv1.lin.weight.grad)
