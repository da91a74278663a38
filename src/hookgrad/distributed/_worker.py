"""One rank of ``hookgrad.distributed.run``: torchrun's environment from MPI's, then the user's script."""
import os
import runpy
import sys


def main():
    env = os.environ
    rank = env.get("PMI_RANK", "0")
    size = env.get("PMI_SIZE", "1")
    env.setdefault("RANK", rank)
    env.setdefault("WORLD_SIZE", size)
    env.setdefault("LOCAL_RANK", env.get("MPI_LOCALRANKID", rank))
    env.setdefault("LOCAL_WORLD_SIZE", env.get("MPI_LOCALNRANKS", size))
    env.setdefault("GROUP_RANK", "0")
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29500")
    args = sys.argv[1:]
    if args and args[0] == "-m":
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
