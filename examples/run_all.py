"""Run every example script in this folder (the seed documents' examples first) and tell what each shows.

Each script runs unchanged; this runner prints the script's opening comment (what it demonstrates and, where
the script fails on purpose, why), then its output. Long outputs are cut (run the script alone to see all
of it), and a warning that PyTorch gives in the same place is shown as one explained line instead of a
traceback-style dump.
"""
import contextlib
import io
import os
import runpy
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_LINES = 24          # more than this is cut to its head and a count


def scripts():
    names = sorted(f for f in os.listdir(HERE) if f.endswith(".py") and f != "run_all.py")
    return [n for n in names if n.startswith("seed")] + [n for n in names if not n.startswith("seed")]


def story(path):
    """The script's opening comment lines (or its docstring's first paragraph)."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    lines = []
    for line in src.splitlines():
        if line.startswith("#"):
            lines.append(line.lstrip("# ").rstrip())
        elif lines or line.strip():
            break
    if not lines and src.startswith('"""'):
        lines = src[3:src.index('"""', 3)].strip().split("\n\n")[0].splitlines()
    return lines


def shorten(text):
    lines = text.rstrip("\n").splitlines()
    if len(lines) > MAX_LINES:        # the head and the tail (where a result or an error is printed)
        head, tail = MAX_LINES // 2, MAX_LINES // 4
        cut = len(lines) - head - tail
        lines = lines[:head] + [f"    ... ({cut} lines cut; run the script alone to see them all)"] + lines[-tail:]
    return "\n".join(lines)


def explain(caught):
    """One line per distinct warning: the category and the first sentence of PyTorch's text."""
    seen = []
    for w in caught:
        first = str(w.message).split(". ")[0].rstrip(".") + "."
        line = f"  [{w.category.__name__}, as PyTorch warns here too] {first}"
        if line not in seen:
            seen.append(line)
    return seen


def run(name):
    path = os.path.join(HERE, name)
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                raise RuntimeError(f"exited with status {e.code}") from None
    return out.getvalue(), explain(caught)


def main():
    failed = []
    for name in scripts():
        print(f"\n===== examples/{name}")
        for line in story(os.path.join(HERE, name)):
            print(f"  | {line}")
        sys.stdout.flush()
        try:
            text, notes = run(name)
        except Exception as e:  # an example that breaks is reported, and the demo fails at the end
            print(f"!! {name} failed: {type(e).__name__}: {e}")
            failed.append(name)
            continue
        if text.strip():
            print(shorten(text))
        for line in notes:
            print(line)
    if failed:
        print(f"\n{len(failed)} example(s) failed: {', '.join(failed)}")
        sys.exit(1)
    print(f"\nall {len(scripts())} examples ran.")


if __name__ == "__main__":
    main()
