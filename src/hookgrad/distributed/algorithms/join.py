"""The generic join context manager for uneven inputs (torch.distributed.algorithms.join): Join, Joinable,
JoinHook.

Every iteration of a non-joined rank, its first Joinable calls ``Join.notify_join_context`` and all-reduces a 1;
a rank that has run out of inputs leaves the ``with`` block and, in ``__exit__``, all-reduces a 0 (so the sum
counts the ranks still training) and runs each Joinable's ``main_hook`` to shadow the others' collectives,
until the sum is 0; then every ``post_hook(is_last_joiner)`` runs.
"""
import warnings
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

from ... import _creation as C
from .. import distributed_c10d as dist

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """A Joinable's two entry points in the join context manager: ``main_hook``, called while some rank has
    not joined (it shadows one training iteration's collectives), and ``post_hook``, called once all have."""

    def main_hook(self) -> None:
        """Shadow the collective communications of one training iteration of the non-joined ranks."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Called once every rank has joined; ``is_last_joiner`` is True on the ranks that joined last."""


class Joinable(ABC):
    """A class that takes part in Join: ``join_hook(**kwargs)`` returns its JoinHook; ``join_device`` and
    ``join_process_group`` say where the join context manager's own collectives run."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The JoinHook of this Joinable; every Joinable in one Join gets the same ``kwargs``."""
        ...

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join context manager's collectives."""
        ...

    @property
    @abstractmethod
    def join_process_group(self) -> Any:
        """The process group of the join context manager's collectives."""
        ...


class _JoinConfig(NamedTuple):
    """What the join context manager tells each Joinable."""

    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        """The config of a Joinable outside any join context manager."""
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Join:
    """Context manager that lets ranks with fewer inputs keep shadowing the collectives of the ranks still
    training, so uneven inputs neither hang nor fail (``throw_on_early_termination=True``: every rank raises
    instead, once one has run out).

    >>> with Join([model]):                       # doctest: +SKIP
    ...     for x in inputs_of_this_rank:         # ranks may have different numbers of inputs
    ...         model(x).sum().backward()
    """

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [joinable.join_hook(**kwargs) for joinable in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self):
        """Give each Joinable its _JoinConfig; the first one runs the per-iteration notification."""
        is_first_joinable = True
        for joinable in self._joinables:
            joinable._join_config = _JoinConfig(enable=self._enable,
                                                throw_on_early_termination=self._throw_on_early_termination,
                                                is_first_joinable=is_first_joinable)
            is_first_joinable = False

    def _extract_dist_info(self):
        """The one process group of all the Joinables, and the first one's device."""
        process_group = None
        device = None
        for joinable in self._joinables:
            if process_group is None:
                process_group = joinable.join_process_group
            elif process_group != joinable.join_process_group:
                raise ValueError("Using join context manager with multiple process groups")
            if device is None:
                device = joinable.join_device
        self._process_group = process_group
        self._rank = dist.get_rank(self._process_group)
        self._device = device

    def __enter__(self):
        ...

    def __exit__(self, type, value, traceback):
        """Run the main hooks until every rank has joined, then the post-hooks. With
        ``throw_on_early_termination``, raise RuntimeError instead (after telling the other ranks to)."""
        if not self._enable or type:
            return      # an exception raised in the block propagates as it is
        all_procs_joined = False
        is_last_joiner = True
        i = 0
        WARN_THRESHOLD = 1000
        while not all_procs_joined:
            if i > WARN_THRESHOLD:
                warnings.warn(f"Detected uneven input skew of greater than {WARN_THRESHOLD}. This means that rank "
                              f"{self._rank} has at least {WARN_THRESHOLD} fewer inputs than other "
                              "currently-active ranks. This level of skew could lead to performance degradation "
                              "during training.", stacklevel=2)
            num_nonjoined_procs = self._get_num_nonjoined_procs()
            if num_nonjoined_procs == 0:
                all_procs_joined = True
            else:
                if self._throw_on_early_termination:
                    self._notify_procs_to_terminate()
                for join_hook in self._join_hooks:
                    join_hook.main_hook()
                is_last_joiner = False
                i += 1
        for join_hook in self._join_hooks:
            join_hook.post_hook(is_last_joiner)

    def _get_num_nonjoined_procs(self):
        """How many ranks have not joined: this rank's 0 meets the others' notification all_reduce."""
        num_nonjoined_procs = C.zeros(1, device=self._device)
        dist.all_reduce(num_nonjoined_procs, group=self._process_group)
        return num_nonjoined_procs.item()

    def _notify_procs_to_terminate(self):
        """Meet the non-joined ranks' termination check with a 1, then raise."""
        ones = C.ones(1, device=self._device)
        dist.all_reduce(ones, group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable):
        """Tell the join context manager that this rank has not joined yet (call it before each iteration's
        collectives); with ``throw_on_early_termination``, raise RuntimeError if some rank has joined.
        Only the first Joinable of a Join communicates; it gets the async Work of the notification, the others
        None."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the ``Joinable`` constructor")
        join_config = joinable._join_config
        if not join_config.is_first_joinable or not join_config.enable:
            return None
        device = joinable.join_device
        process_group = joinable.join_process_group
        ones = C.ones(1, device=device)
        work = dist.all_reduce(ones, group=process_group, async_op=True)
        if join_config.throw_on_early_termination:
            zeros = C.zeros(1, device=device)
            dist.all_reduce(zeros, group=process_group)
            should_throw = zeros.item()
            if should_throw:
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work
