"""torch.distributed.elastic, the part training scripts import: ``multiprocessing.errors.record`` (torchrun
scripts decorate their main with it) and ``ChildFailedError``."""
