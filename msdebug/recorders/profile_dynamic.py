"""Dynamic profiling: MindSpore's ``DynamicProfilerMonitor`` with its ``profiler_config.json`` at hand.

:func:`dynamic_profile` starts the monitor (method 3 of the profiler guide); the config it polls is
validated before every write, and what it recorded opens as a :class:`~msdebug.dumps.profile.ProfileReport`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..dumps.profile import _TOP, ProfileReport, _check_top, find_runs, read_profile
from ..errors import InvalidValueError, ProfilerError, ProfilerOptionsError
from ..files import refuse_special
from .profile import _silenced
from .profile_options import check_config, read_config

__all__ = ["DynamicProfile", "dynamic_profile"]


_WATCHED = ("start_step", "stop_step", "is_valid")  # what must have reached the monitor for dp.wait_read()


class DynamicProfile:
    """MindSpore's ``DynamicProfilerMonitor`` (method 3 of the guide) with its config file at hand.

    ``dp.callback`` goes into ``Model.train(callbacks=[...])``; in a hand-written loop call
    ``dp.step()`` once per step. ``dp.edit(start_step=2, stop_step=3)`` validates and rewrites
    ``profiler_config.json``; the monitor's poller picks it up within ``poll_interval`` seconds.
    ``dp.report()`` reads what it recorded.
    """

    def __init__(self, cfg_path: str, output_path: str, poll_interval: int, verbose: bool) -> None:
        from ..backend.profile import dynamic_monitor

        self.cfg_path, self.output_path, self.poll_interval = Path(cfg_path), Path(output_path), poll_interval
        self.verbose = verbose
        self.log: list[str] = []
        with _silenced(self.log, verbose):
            self.callback = dynamic_monitor(str(self.cfg_path), str(self.output_path), poll_interval)
        self._wrap_callback()

    @property
    def config_path(self) -> Path:
        return self.cfg_path / "profiler_config.json"

    @property
    def config(self) -> dict:
        return read_config(self.config_path)

    def _wrap_callback(self) -> None:
        # MindSpore prints "[Dynamic Profiler] ..." at every start and stop: keep it in dp.log.
        monitor = self.callback
        for name in ("step_begin", "step_end", "on_train_step_begin", "on_train_step_end", "step"):
            original = getattr(monitor, name, None)
            if original is None:
                continue

            def quiet(*args, _original=original, **kwargs):
                with _silenced(self.log, self.verbose):
                    return _original(*args, **kwargs)

            setattr(monitor, name, quiet)

    def edit(self, **changes: Any) -> dict:
        """Validate the config with ``changes`` applied and write it (``is_valid`` defaults to true).
        The monitor reads it within ``poll_interval`` seconds: :meth:`wait_read` waits for that."""
        values = read_config(self.config_path) if self.config_path.exists() else {}
        values.update(changes)
        values.setdefault("is_valid", True)
        if "is_valid" not in changes:
            values["is_valid"] = True
        check_config(values, self.config_path.name)
        temporary = self.config_path.with_name(self.config_path.name + ".msdebug-new")
        refuse_special(temporary, ProfilerOptionsError)  # a FIFO there would block the write
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(values, handle, indent=4)
        # One rename: the poller never reads a half-written file.
        os.replace(temporary, self.config_path)
        return values

    def step(self) -> None:
        """Mark one step of a hand-written loop."""
        self.callback.step()

    def wait_read(self, timeout: float = 60.0) -> dict:
        """Wait until the monitor's poller has read the config as it is on disk now (after
        :meth:`edit`, it does so within ``poll_interval`` seconds); returns what it read."""
        from ..backend.profile import monitor_config

        wanted = {key: value for key, value in read_config(self.config_path).items() if key in _WATCHED}
        deadline = time.monotonic() + timeout
        while True:
            seen = monitor_config(self.callback)
            if all(seen.get(key) == value for key, value in wanted.items()):
                return seen
            if time.monotonic() > deadline:
                raise ProfilerError(
                    f"the monitor has not read {self.config_path} in {timeout:g} s (its poll interval is "
                    f"{self.poll_interval} s); is its poller process running?"
                )
            time.sleep(0.05)

    def runs(self) -> list[Path]:
        """The ``rank<N>_start<a>_stop<b>`` folders written so far."""
        if not self.output_path.is_dir():
            return []
        return sorted(path for path in self.output_path.iterdir() if path.is_dir() and find_runs(path))

    def report(self, top: int = _TOP) -> ProfileReport:
        """The report of the latest recorded range."""
        runs = self.runs()
        if not runs:
            raise ProfilerError(
                f"nothing recorded under {self.output_path} yet: set start_step/stop_step with dp.edit(), call "
                f"dp.wait_read() (the monitor reads the file every {self.poll_interval} s), then run those steps."
            )
        latest = max(runs, key=lambda path: path.stat().st_mtime)
        return ProfileReport(read_profile(latest), top=_check_top(top), log="".join(self.log))

    def close(self) -> None:
        """Stop the monitor's poller process."""
        clean = getattr(self.callback, "_clean_resource", None)
        if clean is not None:
            with _silenced(self.log, self.verbose):
                clean()

    def __repr__(self) -> str:
        return f"DynamicProfile(config={str(self.config_path)!r}, output={str(self.output_path)!r})"


def dynamic_profile(
    cfg_path: str | os.PathLike = "./dyn_cfg",
    output_path: str | os.PathLike = "./dyn_profile_data",
    poll_interval: int = 2,
    verbose: bool = False,
) -> DynamicProfile:
    """Start MindSpore's ``DynamicProfilerMonitor`` with its ``profiler_config.json`` in ``cfg_path``."""
    if isinstance(poll_interval, bool) or not isinstance(poll_interval, int) or poll_interval < 1:
        raise InvalidValueError(f"poll_interval must be a whole number of seconds from 1, got {poll_interval!r}.")
    cfg = Path(cfg_path).expanduser().absolute()
    config = cfg / "profiler_config.json"
    if os.path.lexists(config):
        read_config(config)  # a bad file is reported now, not silently ignored by the monitor
    return DynamicProfile(str(cfg), str(Path(output_path).expanduser().absolute()), poll_interval, verbose)
