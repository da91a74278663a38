"""torch.distributed.elastic.multiprocessing: only ``errors`` (hookgrad's launcher is MPI's mpiexec)."""
