"""tests/conftest.py puts this folder on PYTHONPATH, so that every test subprocess runs this at start-up:
torchvision can then import beside the CPU torch oracle (see _before_torchvision.py)."""
import _before_torchvision

_before_torchvision.install()
