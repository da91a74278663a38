"""Running a test's worker script on 2 ranks: ``launch(tmp_path, code)`` starts ``code`` under
``python -m hookgrad.distributed.run --nproc-per-node 2`` and returns what each rank passed to ``report``.

Each rank of the worker has, before ``code``:
- ``report(obj)``: pickled to the rank's result file (last call wins);
- ``RANK``, ``WORLD``: its rank and the world size (from MPI's environment);
- ``gloo()``: torch.distributed's gloo group joined on the same ranks (torch is the oracle: a worker may run
  PyTorch's DDP and hookgrad's side by side in one process), with a free port chosen by the harness.
Several checks share one launch: starting 2 processes costs ~2-4 s.
"""
import os
import pickle
import signal
import socket
import subprocess
import sys
import textwrap

PRELUDE = '''
import os, sys, pickle
RANK = int(os.environ["RANK"]); WORLD = int(os.environ["WORLD_SIZE"])
def report(obj):
    with open(os.path.join(os.environ["HG_OUT"], f"rank{RANK}.pkl"), "wb") as f:
        pickle.dump(obj, f)
def gloo():
    import torch, torch.distributed as tdist
    torch.set_num_threads(1)
    if not tdist.is_initialized():
        tdist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["HG_PORT"], rank=RANK,
                                 world_size=WORLD)
    return tdist
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Result:
    def __init__(self, code, out, ranks):
        self.returncode, self.output, self.ranks = code, out, ranks

    def __getitem__(self, r):
        return self.ranks[r]


def launch(tmp_path, code, n=2, timeout=90, env=None, check=True):
    """Run ``code`` on ``n`` ranks; the per-rank reports (None for a rank that reported nothing)."""
    script = tmp_path / "worker.py"
    script.write_text(PRELUDE + textwrap.dedent(code))
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    e = dict(os.environ, HG_OUT=str(out), HG_PORT=str(free_port()), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    e.update(env or {})
    p = subprocess.Popen([sys.executable, "-m", "hookgrad.distributed.run", "--nproc-per-node", str(n), str(script)],
                         env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(tmp_path),
                         start_new_session=True)
    try:
        text, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)        # the launcher, mpiexec and every rank
        text, _ = p.communicate()
        raise AssertionError(f"the {n}-rank job did not end within {timeout} s:\n{text[-6000:]}") from None
    ranks = []
    for r in range(n):
        f = out / f"rank{r}.pkl"
        ranks.append(pickle.loads(f.read_bytes()) if f.exists() else None)
    res = Result(p.returncode, text, ranks)
    if check and p.returncode != 0:
        raise AssertionError(f"the {n}-rank job failed (exit {p.returncode}):\n{res.output[-6000:]}")
    return res
