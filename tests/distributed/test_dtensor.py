"""DTensor and DeviceMesh on 2 ranks: hookgrad's (MPI) beside PyTorch's (gloo) in the same processes, the same
global tensors laid out by the same placements; the local tensors, full tensors, shapes, placements and the
errors compared on each rank."""
from harness import launch

WORKER = r'''
import numpy as np
import hookgrad as hg, hookgrad.distributed as hd
tdist = gloo()
import torch
hd.init_process_group("gloo")
from torch.distributed.tensor import DTensor as TD, Shard as TS, Replicate as TR, Partial as TP, distribute_tensor as tdt
from torch.distributed.device_mesh import init_device_mesh as tmesh
from torch.distributed.tensor._utils import compute_local_shape_and_global_offset as tclsgo
from hookgrad.distributed.tensor import DTensor as HD, Shard as HS, Replicate as HR, Partial as HP, distribute_tensor as hdt
from hookgrad.distributed.device_mesh import init_device_mesh as hmesh
from hookgrad.distributed.tensor._utils import compute_local_shape_and_global_offset as hclsgo
import hookgrad.distributed._functional_collectives as hfc
import torch.distributed._functional_collectives as tfc

T = dict(lib=torch, D=TD, S=TS, R=TR, P=TP, dt=tdt, mesh=tmesh("cpu", (WORLD,)), cl=tclsgo, fc=tfc)
H = dict(lib=hg, D=HD, S=HS, R=HR, P=HP, dt=hdt, mesh=hmesh("cpu", (WORLD,)), cl=hclsgo, fc=hfc)
results = {}

def desc(x):
    if hasattr(x, "placements"):
        return ("dtensor", tuple(x.shape), repr(x.placements), x.to_local().numpy().tolist(), str(x.dtype))
    if hasattr(x, "numpy"):
        return ("tensor", x.numpy().tolist(), str(x.dtype))
    return x

def both(name, fn):
    out = []
    for k in (T, H):
        try:
            out.append(("ok", desc(fn(**k))))
        except Exception as e:
            out.append(("error", type(e).__name__))
    results[name] = out

g = np.arange(30, dtype=np.float32).reshape(5, 6) * (1 + RANK * 0)      # the same global value on every rank
mine = np.full((2, 3), float(RANK + 1), dtype=np.float32)                 # a different local value per rank
for p in ("S0", "S1", "S-1", "R"):
    def place(S, R, p=p):
        return [S(int(p[1:]))] if p[0] == "S" else [R()]
    both(f"distribute {p}", lambda lib, dt, mesh, S, R, **k: dt(lib.from_numpy(g.copy()), mesh, place(S, R)))
    both(f"full {p}", lambda lib, dt, mesh, S, R, **k: dt(lib.from_numpy(g.copy()), mesh, place(S, R)).full_tensor())
    both(f"local shape {p}", lambda cl, mesh, S, R, **k: cl((5, 6), mesh, place(S, R)))
    for q in ("S0", "S1", "R"):
        both(f"redistribute {p} -> {q}", lambda lib, dt, mesh, S, R, **k: dt(lib.from_numpy(g.copy()), mesh,
             place(S, R)).redistribute(mesh, place(S, R, q)))
both("from_local S0", lambda lib, D, mesh, S, **k: D.from_local(lib.from_numpy(mine.copy()), mesh, [S(0)]))
both("from_local S0 full", lambda lib, D, mesh, S, **k: D.from_local(lib.from_numpy(mine.copy()), mesh, [S(0)]).full_tensor())
both("from_local S1 full", lambda lib, D, mesh, S, **k: D.from_local(lib.from_numpy(mine.copy()), mesh, [S(1)]).full_tensor())
both("partial -> R", lambda lib, D, mesh, P, R, **k: D.from_local(lib.from_numpy(mine.copy()), mesh, [P()]).redistribute(mesh, [R()]))
both("partial -> S0", lambda lib, D, mesh, P, S, **k: D.from_local(lib.from_numpy(mine.copy()), mesh, [P()]).redistribute(mesh, [S(0)]))
both("partial max full", lambda lib, D, mesh, P, **k: D.from_local(lib.from_numpy(mine.copy()), mesh, [P("max")]).full_tensor())
both("replicate run_check", lambda lib, D, mesh, R, **k: D.from_local(lib.from_numpy(mine.copy()), mesh, [R()], run_check=True).to_local())
both("src_data_rank 1", lambda lib, dt, mesh, R, **k: dt(lib.from_numpy(mine.copy()), mesh, [R()], src_data_rank=1))
both("int64 S0", lambda lib, dt, mesh, S, **k: dt(lib.arange(7), mesh, [S(0)]))
both("metadata", lambda lib, dt, mesh, S, **k: (lambda x: (tuple(x.size()), x.ndim, x.numel(), x.stride(), str(x.device),
     x.requires_grad))(dt(lib.from_numpy(g.copy()), mesh, [S(1)])))
both("requires_grad", lambda lib, dt, mesh, S, **k: dt(lib.ones(4, 2, requires_grad=True), mesh, [S(0)]).requires_grad)
both("mesh", lambda mesh, **k: (mesh.size(), mesh.ndim, tuple(mesh.shape), mesh.get_rank(), mesh.get_local_rank(),
     mesh.device_type, mesh.mesh.tolist()))
both("named mesh", lambda lib, **k: (lambda m: (m.mesh_dim_names, m["dp"].size()))(
     (tmesh if lib is torch else hmesh)("cpu", (WORLD,), mesh_dim_names=("dp",))))
both("mesh too big", lambda lib, **k: (tmesh if lib is torch else hmesh)("cpu", (WORLD + 1,)))
both("fc all_reduce", lambda lib, fc, mesh, **k: fc.wait_tensor(fc.all_reduce(lib.from_numpy(mine.copy()), "sum", mesh)))
both("fc all_gather", lambda lib, fc, mesh, **k: fc.wait_tensor(fc.all_gather_tensor(lib.from_numpy(mine.copy()), 1, mesh)))
results["repr"] = (repr(hdt(hg.from_numpy(g.copy()), H["mesh"], [HS(0)])).split("device_mesh")[0],
                   repr(tdt(torch.from_numpy(g.copy()), T["mesh"], [TS(0)])).split("device_mesh")[0])
try:
    hdt(hg.ones(2), H["mesh"], [HS(0)]) + 1
except NotImplementedError as e:
    results["op"] = str(e)
report(results)
'''


def test_dtensor_matches_torch_on_two_ranks(tmp_path):
    res = launch(tmp_path, WORKER, timeout=150)
    for rank in range(2):
        r = res[rank]
        assert r is not None, res.output[-3000:]
        hrepr, trepr = r.pop("repr")
        assert hrepr == trepr
        assert r.pop("op").startswith("DTensor.__add__ (aten op on a DTensor) is not implemented in hookgrad")
        for name, (t, h) in r.items():
            assert h == t, (rank, name, t, h)
