"""torch_geometric's torch.sparse paths (COO/CSR/CSC adjacency, spmm with every reduce, GCNConv/SAGEConv on a CSR
adjacency, gradients): run as ``python pyg_sparse.py OUT`` (torch) and ``python -m hookgrad pyg_sparse.py OUT``;
writes what it computed (NumPy values) to OUT."""
import sys
import pickle
import warnings

import numpy as np
import torch
torch.manual_seed(0)
from torch_geometric.utils import (to_torch_coo_tensor, to_torch_csr_tensor, to_torch_csc_tensor, spmm, to_edge_index,
                                   dense_to_sparse, to_dense_adj, is_torch_sparse_tensor)
from torch_geometric.nn import GCNConv, SAGEConv

warnings.simplefilter("ignore")
res = {}
def rec(k, v):
    if hasattr(v, "layout") and v.layout != torch.strided:
        v = v.to_dense()
    res[k] = v.detach().numpy().copy() if hasattr(v, "detach") else v
ei = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4, 4, 0, 1, 3], [1, 0, 2, 1, 3, 2, 4, 3, 0, 4, 3, 1]])
x = torch.tensor(np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32), requires_grad=True)
w = torch.tensor(np.random.default_rng(1).random(12).astype(np.float32))
steps = []
try:
    coo = to_torch_coo_tensor(ei, w, size=5); rec("coo", coo); steps.append("coo")
    csr = to_torch_csr_tensor(ei, w, size=5); rec("csr", csr); steps.append("csr")
    csc = to_torch_csc_tensor(ei, w, size=5); rec("csc", csc); steps.append("csc")
    rec("is_sparse", is_torch_sparse_tensor(csr)); steps.append("is")
    rec("spmm_coo", spmm(coo, x)); steps.append("spmm_coo")
    rec("spmm_csr", spmm(csr, x)); steps.append("spmm_csr")
    for r in ("mean", "max", "min"):
        rec("spmm_" + r, spmm(csr, x, reduce=r))
    steps.append("spmm_reduce")
    e2, w2 = to_edge_index(csr); rec("e2", e2); rec("w2", w2); steps.append("to_edge_index")
    d = to_dense_adj(ei, edge_attr=w)[0]; rec("dense_adj", d)
    e3, w3 = dense_to_sparse(d); rec("e3", e3); rec("w3", w3); steps.append("dense_to_sparse")
    torch.manual_seed(0)
    conv = GCNConv(8, 4)
    conv2 = SAGEConv(8, 4)
    out = conv(x, csr); rec("gcn_csr", out); steps.append("gcn_csr")
    out2 = conv2(x, csr); rec("sage_csr", out2); steps.append("sage_csr")
    out3 = conv(x, ei); rec("gcn_ei", out3)
    (out.sum() + out2.sum()).backward()
    rec("xgrad", x.grad)
    rec("wgrad", conv.lin.weight.grad)
    steps.append("backward")
except Exception:
    import traceback
    traceback.print_exc()
res["steps"] = steps
pickle.dump(res, open(sys.argv[1], "wb"))
print(steps)
