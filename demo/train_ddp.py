"""The 2-process part of `make demo`: data-parallel training over MPI, with a communication hook.

    python -m hookgrad.distributed.run --nproc-per-node 2 demo/train_ddp.py

Each process trains the digits CNN of train_digits.py on its half of every batch (DistributedSampler); DDP
averages the gradients during backward, bucket by bucket, overlapped with the backward pass; a communication
hook (fp16 compression, from PyTorch's ddp_comm_hooks) halves the bytes sent. At the end the ranks check that
they hold identical parameters, and rank 0 prints the test accuracy and what DDP measured.

Only hookgrad's public, PyTorch-compatible API: with ``import torch`` (and backend "gloo") it runs under torchrun.
"""
import os
import sys
import time

import numpy as np

import hookgrad as torch
import hookgrad.distributed as dist
from hookgrad.distributed.algorithms.ddp_comm_hooks import default_hooks
from hookgrad.nn.parallel import DistributedDataParallel as DDP
from hookgrad.utils.data import DataLoader, TensorDataset
from hookgrad.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_digits import Net, load_digits_data  # noqa: E402


def main(epochs=4):
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    (xtr, ytr), (xte, yte) = load_digits_data()
    train = TensorDataset(torch.tensor(xtr), torch.tensor(ytr))
    sampler = DistributedSampler(train, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=32, sampler=sampler)
    model = DDP(Net())
    model.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    start = time.perf_counter()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        total, n = 0.0, 0
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total, n = total + loss.item() * len(y), n + len(y)
        mean = torch.tensor([total, float(n)], dtype=torch.float64)
        dist.all_reduce(mean)
        if rank == 0:
            print(f"epoch {epoch + 1}: loss {mean[0].item() / mean[1].item():.4f} "
                  f"({int(mean[1].item())} samples over {world} processes)", flush=True)
    took = time.perf_counter() - start
    # every rank holds the same parameters: compare a checksum across ranks
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double()
    sums = [None] * world
    dist.all_gather_object(sums, float(flat.sum()))
    model.eval()
    with torch.no_grad():
        acc = (model(torch.tensor(xte)).argmax(1) == torch.tensor(yte)).double().mean().item()
    log = model._get_ddp_logging_data()
    if rank == 0:
        same = all(s == sums[0] for s in sums)
        print(f"parameters identical on all {world} ranks: {same} (checksum {sums[0]:.6f})")
        print(f"test accuracy {acc * 100:.2f}% after {epochs} epochs in {took:.1f} s")
        comm, overlap = log.get("avg_backward_comm_time", 0), log.get("avg_backward_compute_comm_overlap_time", 0)
        print(f"DDP: {len(log.get('bucket_sizes', '').split(','))} bucket(s), comm hook {log.get('comm_hook')}, "
              f"allreduce {comm / 1e6:.2f} ms per step, {overlap / max(comm, 1):.0%} of it hidden by backward")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
