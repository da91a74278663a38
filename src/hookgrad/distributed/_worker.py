"""One rank of ``hookgrad.distributed.run``: torchrun's environment from MPI's, then the user's script.

The script runs in a child process; this process only waits for it and exits with its status. A rank killed by
a signal (the OOM killer, ``kill -9``) then looks to mpiexec like a rank that exited with an error code, and
mpiexec (``-disable-auto-cleanup``) lets the other ranks see it gone and end with an error naming it, instead of
killing them on the spot. The child dies with this process (PR_SET_PDEATHSIG), so nothing outlives the job.
"""
import ctypes
import os
import runpy
import signal
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
    child = os.fork() if hasattr(os, "fork") else 0
    if child:
        _supervise(child, rank)
    _die_with_parent()
    if args and args[0] == "-m":
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")


def _supervise(child, rank):
    """Forward termination signals to the rank, wait for it, exit with its status (a signal as 128 + n)."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda n, f: os.kill(child, n))
    # mpiexec tells the surviving ranks of a failure with SIGUSR1 (whose default action kills): the rank finds
    # out by itself, in the collective it waits in
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        print(f"hookgrad.distributed.run: rank {rank} (pid {child}) was killed by signal "
              f"{signal.Signals(-code).name}", file=sys.stderr, flush=True)
        code = 128 - code
    os._exit(code)


def _die_with_parent():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    main()
