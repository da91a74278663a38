"""``python -m hookgrad.distributed.run --nproc-per-node N script.py args...``: torchrun's command line on MPI.

It starts N copies of the script under MPICH's ``mpiexec`` (the one the ``mpich`` package puts beside this
Python), each with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT) and, as torchrun does for more than one process, OMP_NUM_THREADS=1 unless it is set. When a rank
dies the others are left to end by themselves: their collectives notice the missing rank and raise an error
naming it (``-disable-auto-cleanup``), instead of being killed without a word.

Several hosts: start the job with MPICH's own launcher, ``mpiexec -hosts a,b -n N python script.py``.
"""
import argparse
import os
import shutil
import subprocess
import sys

__all__ = ["main", "mpiexec"]


def mpiexec():
    """The path of MPICH's mpiexec: beside this Python (the mpich wheel), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("hookgrad.distributed.run needs MPICH's mpiexec: install the distributed extra "
                           "(pip install 'hookgrad[distributed]')")
    return found


def _parser():
    p = argparse.ArgumentParser(prog="python -m hookgrad.distributed.run",
                                description="Start N processes of a training script under MPI (torchrun's options)")
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc", default="1",
                   help="processes on this machine: a number, or 'auto'/'cpu' for one per core")
    p.add_argument("--nnodes", default="1", help="only 1: for several hosts use mpiexec -hosts directly")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", default=0, type=int)
    p.add_argument("--master-addr", "--master_addr", dest="master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", dest="master_port", default=29500, type=int)
    p.add_argument("--standalone", action="store_true")
    p.add_argument("--rdzv-backend", "--rdzv_backend", dest="rdzv_backend", default=None)
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", dest="rdzv_endpoint", default=None)
    p.add_argument("--max-restarts", "--max_restarts", dest="max_restarts", default=0, type=int)
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def command(args):
    """The mpiexec command line for parsed ``args``."""
    n = (os.cpu_count() or 1) if args.nproc in ("auto", "cpu") else int(args.nproc)
    if n < 1:
        raise ValueError(f"--nproc-per-node must be at least 1, got {args.nproc}")
    if str(args.nnodes) not in ("1", "1:1"):
        raise ValueError("hookgrad.distributed.run starts one machine's processes; for several hosts use MPICH's "
                         "launcher: mpiexec -hosts host1,host2 -n N python script.py")
    target = [args.script] if args.no_python else \
        [sys.executable, "-m", "hookgrad.distributed._worker"] + (["-m"] if args.module else []) + [args.script]
    return [mpiexec(), "-disable-auto-cleanup", "-n", str(n)] + target + list(args.script_args), n


def main(argv=None):
    args = _parser().parse_args(argv)
    cmd, n = command(args)
    env = dict(os.environ)
    if n > 1 and "OMP_NUM_THREADS" not in env:
        print("*****************************************\nSetting OMP_NUM_THREADS environment variable for each "
              "process to be 1 in default, to avoid your system being overloaded, please further tune the variable "
              "for optimal performance in your application as needed. \n*****************************************",
              file=sys.stderr)
        env["OMP_NUM_THREADS"] = "1"
    env["MASTER_ADDR"] = args.master_addr
    env["MASTER_PORT"] = str(args.master_port)
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
