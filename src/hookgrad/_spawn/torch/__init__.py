"""``import torch`` in a child process spawned by a program running under the alias: install it here too."""
import sys

if __name__ == "torch":             # imported as hookgrad._spawn.torch (by a package walk) it does nothing
    del sys.modules["torch"]        # this stand-in; install() puts the alias in its place, which the import returns
    import hookgrad.compat
    hookgrad.compat.install()
