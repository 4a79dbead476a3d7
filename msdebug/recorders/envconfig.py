"""env_config.json: read, validate, write and apply it, with MindSpore's own rules.

MindSpore (1.6 to 2.7.0) reads ``rdr.enable``, ``rdr.mode``, ``rdr.path`` and
``sys.mem_reuse``. It only *logs* a bad value and then silently uses a default (a relative
``rdr.path`` becomes the process's working directory); msdebug reports the same mistakes
as errors before MindSpore sees them. Facts that change between versions:

* RDR was removed after 2.7.0: 2.7.1 and later read only ``sys.mem_reuse``;
* MindSpore reads the environment first and the file second, so a file value wins over
  the ``MS_RDR_*`` variable of the same key;
* both are read once, at the first graph compile of the process.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import backend as _backend
from ..dumps.rendered import Rendered, rendered_by
from ..errors import InvalidValueError, MsDebugError, echo
from ..files import MiB, read_regular, refuse_special
from ..keys import did_you_mean, load_json, version_tuple
from ..schema import Field, check, validate

__all__ = [
    "ENV_VARS",
    "EnvConfig",
    "EnvConfigError",
    "RdrStatus",
    "RdrWarning",
    "check_path",
    "env_settings",
    "rdr_status",
    "rdr_supported",
    "rdr_unavailable",
]

LAST_RDR_VERSION = (2, 7, 0)
ENV_VARS = {"enable": "MS_RDR_ENABLE", "mode": "MS_RDR_MODE", "path": "MS_RDR_PATH"}
DEFAULTS = {"rdr.enable": False, "rdr.mode": 1, "rdr.path": "(the working directory)", "sys.mem_reuse": True}
MODES = {1: "exceptional: export when a run fails", 2: "normal: export after each compile and at exit, and on failure"}
_PATH_CHARS = re.compile(r"^[A-Za-z0-9_./-]+$")
_MAX_PATH = 1024
_MAX_COMPONENT = 255


ENV_CONFIG_LIMIT = 16 * MiB  # env_config.json files are a few hundred bytes


class EnvConfigError(InvalidValueError):
    """An env_config.json or a value for it that MindSpore would refuse or ignore."""


class RdrWarning(UserWarning):
    """RDR settings that will not take effect: ignored by this MindSpore, or too late."""


# --------------------------------------------------------------------------- rules


def check_path(value: Any, what: str = "rdr.path") -> str:
    """MindSpore's rules for ``rdr.path`` (``EnvConfigParser::ParseRdrPath`` / ``CheckJsonStringType``).

    A string, absolute, at most 1024 characters, only ``A-Z a-z 0-9 - _ . /``, every
    component at most 255 characters. Returns the path with a trailing ``/``, as MindSpore
    stores it.
    """
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise EnvConfigError(f"{what} must be a string (an absolute directory), got {_show(value)}.")
    if not value:
        raise EnvConfigError(f"{what} is empty; give an absolute directory such as /tmp/rdr.")
    if not value.startswith("/"):
        raise EnvConfigError(
            f"{what} must be absolute (start with '/'), got {echo(value)}; MindSpore would silently write to "
            f"the working directory instead. Did you mean {echo(os.path.abspath(value))}?"
        )
    if len(value) > _MAX_PATH:
        raise EnvConfigError(f"{what} is {len(value)} characters long; MindSpore allows at most {_MAX_PATH}.")
    if not _PATH_CHARS.match(value):
        bad = sorted({c for c in value if not re.match(r"[A-Za-z0-9_./-]", c)})
        raise EnvConfigError(
            f"{what} may use only letters, digits and - _ . / (MindSpore's rule); {echo(value)} has "
            + ", ".join(repr(c) for c in bad[:10])
            + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
            + "."
        )
    long = [part for part in value.split("/") if len(part) > _MAX_COMPONENT]
    if long:
        raise EnvConfigError(
            f"{what}: the component {long[0][:20]!r}... is {len(long[0])} characters long; at most {_MAX_COMPONENT}."
        )
    return value if value.endswith("/") else value + "/"


_BOOL = Field("bool", says="true or false (a JSON boolean)")
# MindSpore's EnvConfigParser (mindspore/ccsrc/utils/env_config_parser.cc) has no table in Python:
# the sections and keys it reads, 1.6 to 2.7.0.
SPEC = {
    "rdr": Field(
        "object",
        fields={
            "enable": _BOOL,
            # EnvConfigParser::ParseRdrMode (mindspore/ccsrc/common/debug/env_config_parser.cc:255-262, 2.6 to
            # 2.7.0) checks no type: `if (content != Exceptional && content != Normal)` warns, else
            # `rdr_mode_ = content`. nlohmann 3.10.1 compares numbers by value, so 2.0 is mode 2 (2.7.0 logs
            # "rdr mode: 2", tests/test_rdr_live.py) and true, 2.5 or "2" keep mode 1 with a warning.
            "mode": Field("int", choices=tuple(MODES), floats=True, says=f"1 ({MODES[1]}) or 2 ({MODES[2]})"),
            "path": Field(
                "str", rule=lambda value, name: check_path(value, name), says="a string (an absolute directory)"
            ),
        },
    ),
    "sys": Field("object", fields={"mem_reuse": _BOOL}),
}


def _checked(section: str, key: str, value: Any) -> Any:
    check(SPEC[section].fields[key], value, f"{section}.{key}", error=EnvConfigError, show=_show)
    return int(value) if isinstance(value, float) else value  # a mode of 2.0 is written as 2


def _show(value: Any) -> str:
    try:
        text = json.dumps(value) if isinstance(value, (str, int, float, bool, type(None), list, dict)) else repr(value)
    except (ValueError, RecursionError):  # an integer of thousands of digits, a list nested too deep
        text = f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:39] + "…"


def rdr_supported(version: str | None = None) -> bool:
    """Whether this MindSpore version has RDR (it was removed after 2.7.0)."""
    version = version or _backend.installed_version()
    return version is not None and version_tuple(version) <= LAST_RDR_VERSION


def rdr_unavailable(version: str) -> str:
    """Why RDR cannot be used with MindSpore ``version``, or ``""`` where it exists."""
    if rdr_supported(version):
        return ""
    return (
        f"MindSpore {version} has no Running Data Recorder (removed after 2.7.0); "
        "it ignores the rdr section of env_config.json"
    )


def _ignored_note(version: str | None) -> str:
    return (
        f"MindSpore {version} ignores RDR (removed after 2.7.0): rdr.enable, rdr.mode, rdr.path and MS_RDR_* "
        "have no effect here; only sys.mem_reuse is read. Record with MindSpore 2.7.0, read with msdebug.open_dump."
    )


_TOO_LATE = (
    "a graph has already been compiled in this process, and MindSpore reads RDR settings once, at the first "
    "compile: this takes effect only after a kernel restart (apply it in the first cell)."
)


# --------------------------------------------------------------------------- EnvConfig

_WRITTEN: set[Path] = set()  # files EnvConfig.write created or rewrote in this process


class EnvConfig:
    """The contents of an env_config.json, validated the way MindSpore validates them.

    >>> cfg = msdebug.EnvConfig(rdr_enable=True, rdr_mode=2, rdr_path="/tmp/rdr")
    >>> cfg.write("mindspore_config.json"); cfg.apply()

    Keys left as None are not written, and MindSpore keeps its default (or the env var).

    Raises
    ------
    EnvConfigError
        For a value MindSpore would reject; the message says what is allowed.
    """

    def __init__(
        self,
        rdr_enable: bool | None = None,
        rdr_mode: int | None = None,
        rdr_path: str | os.PathLike | None = None,
        mem_reuse: bool | None = None,
    ) -> None:
        self.rdr_enable = None if rdr_enable is None else _checked("rdr", "enable", rdr_enable)
        self.rdr_mode = None if rdr_mode is None else _checked("rdr", "mode", rdr_mode)
        self.rdr_path = None if rdr_path is None else check_path(rdr_path)
        self.mem_reuse = None if mem_reuse is None else _checked("sys", "mem_reuse", mem_reuse)
        self.path: Path | None = None  # the file it was read from or last written to
        self.ignored_sections: tuple[str, ...] = ()

    # -- reading

    @classmethod
    def from_dict(cls, data: Any, where: str = "env_config") -> EnvConfig:
        """Validate a parsed env_config.json. Unknown keys inside ``rdr`` and ``sys`` are
        errors (MindSpore would silently ignore a misspelt key); unknown sections are kept
        in :attr:`ignored_sections`, as MindSpore ignores them."""
        validate(SPEC, data, where, EnvConfigError, extra="keep", show=_show)
        values = {f"{section}.{key}": value for section in SPEC for key, value in data.get(section, {}).items()}
        try:
            config = cls(
                rdr_enable=values.get("rdr.enable"),
                rdr_mode=values.get("rdr.mode"),
                rdr_path=values.get("rdr.path"),
                mem_reuse=values.get("sys.mem_reuse"),
            )
        except EnvConfigError as error:
            raise EnvConfigError(f"{where}: {error}") from None
        config.ignored_sections = tuple(name for name in data if name not in SPEC)
        return config

    @classmethod
    def read(cls, path: str | os.PathLike) -> EnvConfig:
        """Read and validate a file; malformed JSON names its line and column."""
        name = os.path.abspath(os.fspath(path))
        raw = read_regular(name, ENV_CONFIG_LIMIT, EnvConfigError, "env_config file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise EnvConfigError(f"{name}: not UTF-8 text (byte {error.start}).") from None
        data = load_json(text, EnvConfigError, name)
        config = cls.from_dict(data, name)
        config.path = Path(name)
        return config

    # -- writing

    def to_dict(self) -> dict[str, dict[str, Any]]:
        data: dict[str, dict[str, Any]] = {}
        rdr = {
            k: v
            for k, v in (("enable", self.rdr_enable), ("mode", self.rdr_mode), ("path", self.rdr_path))
            if v is not None
        }
        if rdr:
            data["rdr"] = rdr
        if self.mem_reuse is not None:
            data["sys"] = {"mem_reuse": self.mem_reuse}
        return data

    def flat(self) -> dict[str, Any]:
        """``{"rdr.enable": ..., "rdr.mode": ..., "rdr.path": ..., "sys.mem_reuse": ...}``, None when unset."""
        return {
            "rdr.enable": self.rdr_enable,
            "rdr.mode": self.rdr_mode,
            "rdr.path": self.rdr_path,
            "sys.mem_reuse": self.mem_reuse,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def write(self, path: str | os.PathLike, overwrite: bool = False) -> Path:
        """Write the file (absolute path returned). An existing file with other contents is
        kept unless ``overwrite=True``."""
        target = Path(os.path.abspath(os.fspath(path)))
        refuse_special(target)
        text = self.to_json()
        if target.exists():
            try:
                same = read_regular(target, ENV_CONFIG_LIMIT).decode("utf-8") == text
            except (MsDebugError, UnicodeDecodeError):
                same = False
            if not same and not overwrite:
                raise MsDebugError(f"{target} exists with other contents; pass overwrite=True or choose another name.")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, scratch = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(scratch, target)
        except OSError as error:
            raise MsDebugError(f"{target}: cannot write it ({error.strerror or error}).") from None
        self.path = target
        _WRITTEN.add(target)
        return target

    @staticmethod
    def wrote(path: str | os.PathLike) -> bool:
        """Whether msdebug wrote the file at ``path`` in this process (so it may rewrite it)."""
        return Path(os.path.abspath(os.fspath(path))) in _WRITTEN

    # -- applying

    def apply(self, via: str = "file", path: str | os.PathLike | None = None) -> RdrStatus:
        """Make MindSpore use this configuration in this process.

        ``via="file"``: ``set_context(env_config_path=...)`` with the file last written
        (or ``path``, written now). ``via="env"``: the ``MS_RDR_*`` variables (``sys.mem_reuse``
        has none). Warns (:class:`RdrWarning`, one line each) when this MindSpore ignores RDR
        or a graph was already compiled; the returned status says what wins.
        """
        if via not in ("file", "env"):
            raise EnvConfigError(f"via must be 'file' or 'env', got {via!r}." + did_you_mean(str(via), ("file", "env")))
        notes = self.warnings()
        if via == "env":
            if self.mem_reuse is not None:
                notes.append("sys.mem_reuse has no environment variable; use via='file' to set it.")
            for key, name in ENV_VARS.items():
                value = getattr(self, f"rdr_{key}")
                if value is not None:
                    os.environ[name] = _env_text(key, value)
        else:
            if path is not None:
                self.write(path, overwrite=True)
            if self.path is None:
                raise MsDebugError("write the file first, cfg.write('mindspore_config.json'), or pass apply(path=...).")
            if not self.path.exists():
                self.write(self.path)
            from .. import settings

            settings.apply({"env_config_path": str(self.path)})
        for note in notes:
            warnings.warn(note, RdrWarning, stacklevel=2)
        return rdr_status(notes=tuple(notes))

    def warnings(self) -> list[str]:
        """Why this configuration would not take effect if applied now (one line each)."""
        notes = []
        version = _backend.installed_version()
        touches_rdr = any(v is not None for v in (self.rdr_enable, self.rdr_mode, self.rdr_path))
        if touches_rdr and version is not None and not rdr_supported(version):
            notes.append(_ignored_note(version))
        elif touches_rdr and _backend.graph_compiled():
            notes.append(_TOO_LATE)
        return notes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EnvConfig) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        parts = [f"{k}={getattr(self, k)!r}" for k in ("rdr_enable", "rdr_mode", "rdr_path", "mem_reuse")]
        return f"EnvConfig({', '.join(p for p in parts if not p.endswith('=None'))})"


def _env_text(key: str, value: Any) -> str:
    if key == "enable":
        return "1" if value else "0"
    if key == "path":
        return value.rstrip("/") or "/"
    return str(value)


def env_settings(environ: dict[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The RDR settings MindSpore takes from ``MS_RDR_*``, and its complaints about them.

    ``MS_RDR_ENABLE``: only "1" enables; ``MS_RDR_MODE``: "2" is normal, anything else 1;
    ``MS_RDR_PATH``: the path rules; an empty variable counts as unset.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    notes: list[str] = []
    enable, mode, path = (environ.get(ENV_VARS[k], "") for k in ("enable", "mode", "path"))
    if enable:
        values["rdr.enable"] = enable == "1"
        if enable not in ("0", "1"):
            notes.append(f"MS_RDR_ENABLE={enable!r}: only 1 enables RDR (MindSpore reads it as off).")
    if mode:
        values["rdr.mode"] = 2 if mode == "2" else 1
        if mode not in ("1", "2"):
            notes.append(f"MS_RDR_MODE={mode!r}: MindSpore uses mode 1 for anything but 2.")
    if path:
        try:
            values["rdr.path"] = check_path(path, "MS_RDR_PATH")
        except EnvConfigError as error:
            notes.append(f"{error} MindSpore uses the working directory.")
    return values, notes


# --------------------------------------------------------------------------- status


@dataclass(frozen=True)
class Effective:
    key: str
    value: Any
    source: str  # "file", "env" or "default"
    overridden: str = ""  # what lost, e.g. "MS_RDR_PATH=/a"


@dataclass(frozen=True, repr=False)
class RdrStatus(Rendered):
    """What RDR will do in this process, and what it has exported so far."""

    _views = rendered_by(lambda v: (v.rdr.html_rdr_status, v.rdr.text_rdr_status))

    version: str | None
    supported: bool
    compiled: bool
    config_file: str
    settings: tuple[Effective, ...]
    exported: tuple[str, ...]  # files under <path>/rank_*/rdr/
    output: str
    notes: tuple[str, ...] = field(default=())

    def value(self, key: str) -> Any:
        for setting in self.settings:
            if setting.key == key:
                return setting.value
        raise KeyError(key)


def rdr_status(notes: tuple[str, ...] = (), environ: dict[str, str] | None = None) -> RdrStatus:
    """RDR in this process: the settings MindSpore will use (file over env over default),
    why they may not take effect, and the files exported so far."""
    version = _backend.installed_version()
    supported = rdr_supported(version)
    compiled = _backend.graph_compiled()
    env_values, env_notes = env_settings(environ)
    config_file = ""
    file_config: EnvConfig | None = None
    extra = list(notes)
    if _backend.is_imported() and version is not None:
        from .. import settings

        try:
            config_file = settings.get("env_config_path") or ""
        except MsDebugError:
            config_file = ""
    if config_file:
        try:
            file_config = EnvConfig.read(config_file)
        except MsDebugError as error:
            extra.append(str(error))
    file_values = {k: v for k, v in (file_config.flat() if file_config else {}).items() if v is not None}
    effective = []
    for key in ("rdr.enable", "rdr.mode", "rdr.path", "sys.mem_reuse"):
        env_name = ENV_VARS.get(key.partition(".")[2]) if key.startswith("rdr.") else None
        if key in file_values:
            source = os.environ if environ is None else environ
            lost = f"{env_name}={source.get(env_name, '')}" if key in env_values else ""
            effective.append(Effective(key, file_values[key], "file", lost))
        elif key in env_values:
            effective.append(Effective(key, env_values[key], "env"))
        else:
            effective.append(Effective(key, DEFAULTS[key], "default"))
    for setting in effective:
        if setting.overridden:
            extra.append(
                f"{setting.overridden} is set, but the file's {setting.key}={setting.value!r} wins "
                "(MindSpore reads the environment first, then the file)."
            )
    extra += env_notes
    if not supported and version is not None and not any("ignores RDR" in n for n in extra):
        extra.insert(0, _ignored_note(version))
    path = next(s.value for s in effective if s.key == "rdr.path")
    output = path if isinstance(path, str) and path.startswith("/") else os.getcwd()
    exported: tuple[str, ...] = ()
    from ..dumps.rdr import find_rdr

    try:
        tree = find_rdr(output)
    except OSError:
        tree = None
    if tree is not None:
        exported = tuple(str(f.path) for r in tree.ranks for f in r.files)
    return RdrStatus(version, supported, compiled, config_file, tuple(effective), exported, output, tuple(extra))
