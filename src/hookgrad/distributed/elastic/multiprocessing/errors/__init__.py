"""torch.distributed.elastic.multiprocessing.errors: ``@record`` for a worker's entry point, and
``ChildFailedError``.

``record(fn)`` runs ``fn``; an exception escaping it is written, as torchelastic's JSON error file, to
``$TORCHELASTIC_ERROR_FILE`` when that is set, then re-raised (a ``SystemExit(0)`` returns None, as in PyTorch).
hookgrad's launcher does not set the variable (MPI reports a failed rank itself), so there it only re-raises.
"""
import functools
import json
import os
import time
import traceback

__all__ = ["ChildFailedError", "record", "ErrorHandler", "get_error_handler"]


class ErrorHandler:
    """Writes an exception to the error file named by ``TORCHELASTIC_ERROR_FILE``, if any."""

    def _get_error_file_path(self):
        return os.environ.get("TORCHELASTIC_ERROR_FILE", None)

    def initialize(self):
        pass

    def record_exception(self, e):
        file = self._get_error_file_path()
        if file:
            data = {"message": {"message": f"{type(e).__name__}: {e}",
                                "extraInfo": {"py_callstack": traceback.format_exc(),
                                              "timestamp": str(int(time.time()))}}}
            with open(file, "w") as fp:
                json.dump(data, fp)

    def dump_error_file(self, rootcause_error_file, error_code=0):
        file = self._get_error_file_path()
        if file and rootcause_error_file and os.path.exists(rootcause_error_file):
            with open(rootcause_error_file) as src, open(file, "w") as dst:
                dst.write(src.read())


def get_error_handler():
    return ErrorHandler()


class ChildFailedError(Exception):
    """A child process (rank) failed: ``failures`` maps each failed global rank to its failure (any object; a
    torchelastic ``ProcessFailure`` or a message)."""

    def __init__(self, name, failures):
        self.name = name
        self.failures = failures
        if not self.failures:
            raise AssertionError
        super().__init__(self.format_msg())

    def get_first_failure(self):
        rank = min(self.failures.keys(), key=lambda r: getattr(self.failures[r], "timestamp", 0))
        return rank, self.failures[rank]

    def format_msg(self, boarder_delim="=", section_delim="-"):
        title = f"{self.name} FAILED"
        root, _ = self.get_first_failure()
        lines = [f"  rank: {r}{' (root cause)' if r == root else ''}: {getattr(f, 'message', f)}"
                 for r, f in self.failures.items()]
        width = min(max([len(title)] + [len(x) for x in lines]), 60)
        return "\n".join([boarder_delim * width, title, section_delim * width] + lines + [boarder_delim * width])


def record(fn, error_handler=None):
    """Decorate a worker's main: exceptions escaping it are recorded (see the module docstring), then re-raised.

    >>> @record
    ... def main():
    ...     return 1
    >>> main()
    1
    """
    if not error_handler:
        error_handler = get_error_handler()

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        error_handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as se:
            if se.code == 0:
                return None
            raise
        except ChildFailedError as e:
            _, failure = e.get_first_failure()
            error_file = getattr(failure, "error_file", None)
            if error_file:
                error_handler.dump_error_file(error_file, getattr(failure, "exitcode", 0))
            raise
        except Exception as e:
            error_handler.record_exception(e)
            raise

    return wrapper
