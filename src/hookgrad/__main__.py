"""``python -m hookgrad script.py [args...]``: run an unmodified PyTorch program on hookgrad.

Installs the ``torch`` alias (hookgrad.compat), then runs the program as ``python`` would: as
``__main__``, with ``sys.argv``, ``sys.path[0]`` (the script's folder), exit status and traceback as
``python script.py`` gives them. ``python -m hookgrad -m module [args...]`` runs a module as ``python -m``
does, ``python -m hookgrad -c "code" [args...]`` runs a string. ``--lazy`` first turns on lazy mode: torch names
hookgrad lacks raise only where the program uses them, not where it names them (see hookgrad._missing).
"""
import os
import runpy
import sys
import types

USAGE = """usage: python -m hookgrad script.py [args ...]
       python -m hookgrad -m module [args ...]
       python -m hookgrad -c command [args ...]
       python -m hookgrad --lazy script.py|-m module|-c command [args ...]
Runs the program with `import torch` meaning hookgrad (hookgrad.compat.install()).
--lazy: a torch name hookgrad lacks raises NotImplementedName where the program uses it, not where it names it."""


def _fresh_main(file=None, spec=None, loader=None):
    """A new ``__main__`` module in sys.modules for the program (this file's own module steps aside)."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=__builtins__, __spec__=spec, __loader__=loader, __package__=None,
                         __cached__=None)
    if file is not None:
        main.__file__ = file
    if spec is not None:
        main.__package__ = spec.parent
    sys.modules["__main__"] = main
    return main


def _run_script(path):
    if os.path.isdir(path) or not path.endswith((".py", ".pyw")) and _is_zip(path):
        sys.path[0] = path                     # a folder or zip with __main__.py, as python runs it
        return runpy.run_path(path, run_name="__main__")
    import importlib.machinery
    path = os.path.abspath(path)
    sys.path[0] = os.path.dirname(path)
    with open(path, "rb") as f:
        source = f.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main = _fresh_main(path, loader=importlib.machinery.SourceFileLoader("__main__", path))
    exec(code, main.__dict__)


def _is_zip(path):
    import zipfile
    return os.path.isfile(path) and zipfile.is_zipfile(path)


def _run_module(name):
    try:
        name, spec, code = runpy._get_module_details(name)
    except ImportError as e:
        sys.exit(f"{sys.executable}: {e}")
    sys.argv[0] = spec.origin
    main = _fresh_main(spec.origin, spec, spec.loader)
    exec(code, main.__dict__)


def _run_command(command):
    sys.argv[0] = "-c"
    sys.path[0] = ""
    code = compile(command, "<string>", "exec", dont_inherit=True)
    exec(code, _fresh_main().__dict__)


def _print_user_traceback(exc):
    """Python's own report of an uncaught exception, without this runner's frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__):
        tb = tb.tb_next
    if tb is not None:
        exc.__traceback__ = tb
    sys.excepthook(type(exc), exc, exc.__traceback__)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    lazy = bool(argv) and argv[0] == "--lazy"
    if lazy:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] in ("-m", "-c") and len(argv) < 2:
        print(f"Argument expected for the {argv[0]} option\n{USAGE}", file=sys.stderr)
        return 2
    from . import compat
    compat.install(lazy=lazy)
    if argv[0] == "-m":
        sys.argv = [argv[1]] + argv[2:]
        run, target = _run_module, argv[1]
    elif argv[0] == "-c":
        sys.argv = ["-c"] + argv[2:]
        run, target = _run_command, argv[1]
    else:
        if not os.path.exists(argv[0]):
            print(f"{sys.executable}: can't open file {os.path.abspath(argv[0])!r}: "
                  f"[Errno 2] No such file or directory", file=sys.stderr)
            return 2
        sys.argv = argv
        run, target = _run_script, argv[0]
    try:
        run(target)
    except SystemExit:
        raise
    except BaseException as e:                 # KeyboardInterrupt included, as python reports it
        _print_user_traceback(e)
        return 130 if isinstance(e, KeyboardInterrupt) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
