"""torch.distributed._composable: the composable APIs' old home (fully_shard lives in torch.distributed.fsdp)."""
