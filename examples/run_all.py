"""Run every example script in this folder (the seed documents' examples first) and show its output."""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def scripts():
    names = sorted(f for f in os.listdir(HERE) if f.endswith(".py") and f != "run_all.py")
    return [n for n in names if n.startswith("seed")] + [n for n in names if not n.startswith("seed")]


def main():
    failed = []
    for name in scripts():
        print(f"\n===== examples/{name}")
        sys.stdout.flush()
        try:
            runpy.run_path(os.path.join(HERE, name), run_name="__main__")
        except Exception as e:  # an example that breaks is reported, and the demo fails at the end
            print(f"!! {name} failed: {type(e).__name__}: {e}")
            failed.append(name)
    if failed:
        print(f"\n{len(failed)} example(s) failed: {', '.join(failed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
