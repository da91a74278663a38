"""torch.hub offline: entry points from a local hubconf.py (or a repository already in the hub cache) and
checkpoints already in ``<hub_dir>/checkpoints``. hookgrad never goes to the network: where PyTorch would
download, it raises a clear error saying which file to place where.
"""
import contextlib
import errno
import hashlib
import os
import re
import shutil
import sys
import warnings
import zipfile
from urllib.error import HTTPError, URLError  # noqa: F401  (PyTorch's hub exposes them)
from urllib.parse import urlparse

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
READ_DATA_CHUNK = 128 * 1024
_hub_dir = None


def _get_torch_home():
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME,
                                                                               DEFAULT_CACHE_DIR), "torch")))


def get_dir():
    """The hub cache directory: set_dir()'s, else $TORCH_HOME/hub (default ~/.cache/torch/hub)."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


# ---- hubconf entry points
@contextlib.contextmanager
def _add_to_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_module(name, path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise AssertionError(f"failed to load spec from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_attr_from_module(module, func_name):
    if func_name not in dir(module):
        return None
    return getattr(module, func_name)


def _check_module_exists(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None


def _check_dependencies(m):
    dependencies = _load_attr_from_module(m, VAR_DEPENDENCY)
    if dependencies is not None:
        missing_deps = [pkg for pkg in dependencies if not _check_module_exists(pkg)]
        if missing_deps:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing_deps)}")


def _load_entry_from_hubconf(m, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    _check_dependencies(m)
    func = _load_attr_from_module(m, model)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _hubconf(repo_dir):
    with _add_to_sys_path(repo_dir):
        return _import_module(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))


def _parse_repo_info(github):
    if ":" in github:
        repo_info, ref = github.split(":")
    else:
        repo_info, ref = github, None
    repo_owner, repo_name = repo_info.split("/")
    return repo_owner, repo_name, ref


def _get_cache_or_reload(github, force_reload, trust_repo, calling_fn="load", verbose=True, skip_validation=False):
    """The cached checkout ``<hub_dir>/<owner>_<name>_<ref>`` of a GitHub repository; hookgrad cannot fetch one."""
    hub_dir = get_dir()
    repo_owner, repo_name, ref = _parse_repo_info(github)
    refs = [ref] if ref is not None else ["main", "master"]
    for r in refs:
        repo_dir = os.path.join(hub_dir, "_".join([repo_owner, repo_name, r.replace("/", "_")]))
        if os.path.exists(repo_dir) and not force_reload:
            if verbose:
                sys.stderr.write(f"Using cache found in {repo_dir}\n")
            return repo_dir
    raise RuntimeError(f"It looks like there is no internet connection and the repo could not be found in the cache "
                       f"({hub_dir}) (hookgrad: torch.hub never downloads; put a checkout of {github} in "
                       f"{os.path.join(hub_dir, '_'.join([repo_owner, repo_name, refs[0]]))}, or pass the directory "
                       f"with source='local')")


def _repo_dir(repo_or_dir, source, force_reload, trust_repo, verbose, skip_validation, calling_fn):
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        return _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, calling_fn, verbose, skip_validation)
    return repo_or_dir


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """Names of the entry points (public callables) in the repository's hubconf.py."""
    hub_module = _hubconf(_get_cache_or_reload(github, force_reload, trust_repo, "list", verbose, skip_validation))
    return [f for f in dir(hub_module) if callable(getattr(hub_module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """The docstring of entry point `model`."""
    hub_module = _hubconf(_get_cache_or_reload(github, force_reload, trust_repo, "help", True, skip_validation))
    return _load_entry_from_hubconf(hub_module, model).__doc__


def _load_local(hubconf_dir, model, *args, **kwargs):
    with _add_to_sys_path(hubconf_dir):
        hub_module = _import_module(MODULE_HUBCONF, os.path.join(hubconf_dir, MODULE_HUBCONF))
        entry = _load_entry_from_hubconf(hub_module, model)
        return entry(*args, **kwargs)


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """Call entry point `model` of hubconf.py in a local directory (source='local') or in a GitHub
    repository already in the hub cache, with *args and **kwargs."""
    repo_dir = _repo_dir(repo_or_dir, source, force_reload, trust_repo, verbose, skip_validation, "load")
    return _load_local(repo_dir, model, *args, **kwargs)


# ---- files
def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Copy the object at `url` to `dst` (file:// URLs only: hookgrad never uses the network)."""
    if urlparse(url).scheme not in ("file", ""):
        raise URLError(f"hookgrad does not download: {url} would need a network. Download it yourself and place it "
                       f"at {dst}")
    dst = os.path.expanduser(dst)
    tmp_dst = dst + ".partial"
    sha256 = hashlib.sha256() if hash_prefix is not None else None
    try:
        from urllib.request import urlopen     # on use: urllib.request pulls in http, email and ssl (7 MB)
        with urlopen(url) as u, open(tmp_dst, "wb") as f:
            while True:
                buffer = u.read(READ_DATA_CHUNK)
                if len(buffer) == 0:
                    break
                f.write(buffer)
                if sha256 is not None:
                    sha256.update(buffer)
        if sha256 is not None:
            digest = sha256.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(tmp_dst, dst)
    finally:
        if os.path.exists(tmp_dst):
            os.remove(tmp_dst)


def _is_legacy_zip_format(filename):
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            infolist = zf.infolist()
        return len(infolist) == 1 and not infolist[0].is_dir()
    return False


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False, file_name=None,
                             weights_only=False):
    """Load the object saved at `url` from the hub cache (``<hub_dir>/checkpoints/<file name>``), where
    PyTorch keeps downloaded checkpoints; a file not there would need a download, which raises."""
    from .serialization import load as _load
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    try:
        os.makedirs(model_dir)
    except OSError as e:
        if e.errno != errno.EEXIST:
            raise
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            r = HASH_REGEX.search(filename)
            hash_prefix = r.group(1) if r else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached_file):
        with zipfile.ZipFile(cached_file) as f:
            member = f.infolist()[0]
            f.extract(member, model_dir)
        cached_file = os.path.join(model_dir, member.filename)
    return _load(cached_file, map_location=map_location, weights_only=weights_only)


def __getattr__(name):
    if name == "urlopen":             # PyTorch's hub has it (from urllib.request), imported on first use here
        from urllib.request import urlopen
        return urlopen
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
