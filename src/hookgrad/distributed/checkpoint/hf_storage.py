"""torch.distributed.checkpoint.hf_storage: DCP's readers and writers of Hugging Face safetensors checkpoints
(making one raises: hookgrad has no distributed checkpointing)."""
from ._api import FileSystemReader, FileSystemWriter


class HuggingFaceStorageReader(FileSystemReader):
    pass


class HuggingFaceStorageWriter(FileSystemWriter):
    pass
