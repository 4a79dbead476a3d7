"""MindSpore's profiler configured by file or environment: ``MS_PROFILER_OPTIONS`` and ``profiler_config.json``.

* :func:`profiler_options`: ``MS_PROFILER_OPTIONS`` (method 2 of the profiler guide), validated,
  with the first cell it needs;
* :func:`check_config`, :func:`read_config`: a ``profiler_config.json`` (read by
  ``DynamicProfilerMonitor``, method 3), validated.

Both are checked against the same tables, read from the installed MindSpore's own source.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dumps.rendered import Rendered, rendered_by
from ..errors import ProfilerOptionsError
from ..files import read_regular
from ..schema import Field, validate

__all__ = [
    "ProfilerOptions",
    "check_config",
    "config_fields",
    "option_fields",
    "profiler_options",
    "read_config",
]


# --------------------------------------------------------------------------- option tables


# Which settings apply only on Ascend (MindSpore's profiler guide): a note, not a refusal, on CPU.
_ASCEND = {
    "profile_memory", "aic_metrics", "l2_cache", "mstx", "hbm_ddr", "pcie", "sys_io", "sys_interconnection",
    "host_sys", "mstx_domain_include", "mstx_domain_exclude",
}  # fmt: skip
# The list fields EnvProfiler converts item by item, and to which enum (envprofiler.py,
# _convert_options_to_profiler_params); DynamicProfilerConfigContext converts the same ones.
_LIST_ENUMS = {"activities": "ProfilerActivity", "host_sys": "HostSystem", "export_type": "ExportType"}
# Fields of the profiler guide before 2.5 that 2.10 no longer reads (EnvProfiler and the
# dynamic monitor drop them silently); what replaces them is ProfilerParameters' deprecation text.
_RETIRED = {
    "op_time": 'use activities ["NPU"] (and ["CPU"] for the host side)',
    "profile_communication": 'use profiler_level "Level1" or "Level2"',
    "aicore_metrics": "use aic_metrics",
    "timeline_limit": "it has no effect",
    "profile_framework": 'use activities ["CPU"]',
}
# Still read, but MindSpore warns on true (ProfilerParameters._check_deprecated_params).
_DEPRECATED = {"hbm_ddr": "use profile_memory", "pcie": "use sys_interconnection"}
_STEP = "a step number from 1, or -1 for never"


def _field(name: str, kind: str, enums: Mapping[str, tuple]) -> Field:
    """The field for a MindSpore parameter of type ``kind`` (its name in ProfilerParameters.PARAMS)."""
    ascend = name in _ASCEND
    if kind in enums:
        return Field("enum", enums[kind], ascend=ascend)
    if name in _LIST_ENUMS:
        return Field("list", enums[_LIST_ENUMS[name]], nonempty=name != "host_sys", ascend=ascend)
    if kind == "list":
        return Field("list", items="str", ascend=ascend)
    if kind == "str":
        return Field("str", rule=_absolute) if name == "output_path" else Field("str")
    return Field(kind, ascend=ascend)  # bool


def _absolute(value: str, name: str) -> None:
    if not os.path.isabs(value):
        raise ProfilerOptionsError(
            f"{name} must be an absolute path (MindSpore resolves it in the training process, not here), got {value!r}."
        )


def _retired(version: str | None) -> dict[str, Field]:
    return {
        name: Field("retired", says=f"MindSpore {version or '2.10'} no longer reads it; {instead}.")
        for name, instead in _RETIRED.items()
    }


def option_fields() -> dict[str, Field]:
    """What ``MS_PROFILER_OPTIONS`` takes: ``start`` and ``output_path``, which EnvProfiler reads
    itself, then every ``ProfilerParameters.PARAMS`` entry that JSON can hold (not ``schedule``
    nor ``on_trace_ready``), with the enums of the installed MindSpore."""
    from ..backend import installed_version
    from ..backend.profile import profiler_tables

    tables = profiler_tables()
    fields = {"start": Field("bool", required=True)}
    for name, kind in tables["params"].items():
        if kind in ("bool", "str", "list") or kind in tables["enums"]:
            fields[name] = _field(name, kind, tables["enums"])
    return {**fields, **_retired(installed_version())}


def config_fields() -> dict[str, Field]:
    """What ``profiler_config.json`` takes: the keys DynamicProfilerConfigContext writes, typed
    as in ProfilerParameters, and its own (steps, analyse_mode, analyse, prof_path, is_valid)."""
    from ..backend import installed_version
    from ..backend.profile import profiler_tables

    tables = profiler_tables()
    enums = tables["enums"]
    own = {
        "start_step": Field("int", low=-1, says=_STEP, required=True),
        "stop_step": Field("int", low=-1, says=_STEP, required=True),
        "analyse_mode": Field("int", choices=(-1, 0, 1)),  # _convert_analyse_mode: -1 none, 0 sync, 1 async
        # _convert_aic_metrics takes "AiCoreNone" beside AicoreMetrics' values
        "aic_metrics": Field("enum", ("AiCoreNone", *enums["AicoreMetrics"]), ascend=True),
        "analyse": Field("bool", note="true also writes the Chrome trace"),
        "prof_path": Field("str"),
        "is_valid": Field("bool", note="MindSpore ignores the file until this is true"),
    }
    fields = {}
    for name in tables["config"]:
        kind = tables["params"].get(name)
        fields[name] = own.get(name) or _field(name, kind or "bool", enums)
    return {**fields, **_retired(installed_version())}


def _check_fields(where: str, values: Any, table: Mapping[str, Field]) -> list[str]:
    """Raise on the first bad field or a combination MindSpore would reset (its
    ProfilerParameters._handle_compatibility); return the notes on fields that apply only on Ascend."""
    validate(table, values, where, ProfilerOptionsError)

    def fail(text: str) -> None:
        raise ProfilerOptionsError(f"{where}: {text}")

    level = values.get("profiler_level", "Level0")
    for name, instead in _DEPRECATED.items():
        if values.get(name) is True:
            fail(f"{name} true is deprecated in MindSpore (it warns each time); {instead}.")
    if values.get("mstx") is not True:
        for name in ("mstx_domain_include", "mstx_domain_exclude"):
            if values.get(name):
                fail(f"{name} needs mstx true (without it MindSpore resets it to []).")
        if level in ("LevelNone", -1):
            fail('profiler_level "LevelNone" needs mstx true (without it MindSpore uses "Level0").')
    if values.get("mstx_domain_include") and values.get("mstx_domain_exclude"):
        fail("mstx_domain_include and mstx_domain_exclude cannot be set together (MindSpore drops the exclude).")
    if values.get("aic_metrics") not in (None, "None", "AiCoreNone") and level not in ("Level1", "Level2", 1, 2):
        fail('aic_metrics needs profiler_level "Level1" or "Level2" (at other levels MindSpore resets it).')
    if values.get("aic_metrics") in ("None", "AiCoreNone") and level in ("Level1", "Level2", 1, 2):
        fail(f"profiler_level {level!r} needs an aic_metrics other than 'None' (MindSpore uses 'PipeUtilization').")
    if values.get("record_shapes") is True and "CPU" not in values.get("activities", ["CPU"]):
        fail('record_shapes needs "CPU" in activities (without it MindSpore resets it to false).')
    start, stop = values.get("start_step"), values.get("stop_step")
    if isinstance(start, int) and isinstance(stop, int) and -1 not in (start, stop) and stop < start:
        fail(f"stop_step ({stop}) must be >= start_step ({start}).")
    if (start == -1) != (stop == -1) and start is not None and stop is not None:
        fail("start_step and stop_step must both be -1 (off) or both be steps.")
    if start == 0 or stop == 0:
        fail("steps count from 1 (the first training step is 1); 0 never matches.")
    return [
        f"{name} applies only on Ascend; on CPU it is ignored."
        for name, spec in table.items()
        if spec.ascend and name in values and values[name] not in (False, None, [], "AiCoreNone", "None")
    ]


# --------------------------------------------------------------------------- MS_PROFILER_OPTIONS


@dataclass(repr=False)
class ProfilerOptions(Rendered):
    """A validated ``MS_PROFILER_OPTIONS`` and what it does in this process."""

    _views = rendered_by(lambda v: (v.profile.html_options, v.profile.text_options))

    values: dict
    applied: bool
    notes: list[str] = field(default_factory=list)

    @property
    def json(self) -> str:
        return json.dumps(self.values, separators=(", ", ": "))

    @property
    def first_cell(self) -> str:
        """The first cell of a fresh kernel that profiles it from the start."""
        return f"%env MS_PROFILER_OPTIONS={self.json}\nimport mindspore"


def profiler_options(apply: bool = True, **values: Any) -> ProfilerOptions:
    """Validate ``MS_PROFILER_OPTIONS`` (method 2 of the profiler guide) and set it.

    MindSpore reads it once, at ``import mindspore``, and then profiles until the process exits;
    when MindSpore is already imported here the result says so and gives the first cell of a
    fresh kernel instead. ``apply=False`` only validates.
    """
    from ..backend import is_imported

    notes = _check_fields("MS_PROFILER_OPTIONS", values, option_fields())
    result = ProfilerOptions(values=dict(values), applied=False, notes=notes)
    if apply:
        os.environ["MS_PROFILER_OPTIONS"] = result.json
        result.applied = True
        if is_imported():
            result.notes.insert(
                0,
                "MindSpore is already imported in this process and reads MS_PROFILER_OPTIONS only at import: "
                "it takes effect in a fresh kernel whose first cell is shown below.",
            )
    result.notes.append(
        "it profiles from import mindspore to the end of the process; the files appear when the kernel shuts down."
    )
    return result


# --------------------------------------------------------------------------- profiler_config.json


def check_config(values: Any, where: str = "profiler_config.json") -> list[str]:
    """Validate a ``profiler_config.json`` dictionary; returns the Ascend-only notes."""
    return _check_fields(where, values, config_fields())


def read_config(path: str | os.PathLike) -> dict:
    """A ``profiler_config.json``, parsed and validated."""
    path = Path(path)
    # Through the opener: a FIFO there would block open() forever, /dev/zero never ends.
    text = read_regular(path, 1 << 20, ProfilerOptionsError, what="profiler_config.json")
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProfilerOptionsError(f"{path.name}: not JSON ({error.msg} at line {error.lineno}).") from None
    except (ValueError, RecursionError) as error:  # not UTF-8, nested past Python's stack
        raise ProfilerOptionsError(f"{path.name}: not JSON ({str(error)[:200]}).") from None
    check_config(values, path.name)
    return values
