"""save_graphs for the next compiles: switch it on and off, and see what it wrote.

Measured on 2.7.0 and 2.10 (CPU): ``set_context(save_graphs=..., save_graphs_path=...)``
takes effect at the next compile at any time, while ``MS_DEV_SAVE_GRAPHS`` is read once,
at the first compile of the process. msdebug therefore uses the context keys while the
installed MindSpore accepts them, and the environment variables otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .. import backend as _backend
from ..dumps.rendered import Rendered, rendered_by
from ..errors import MsDebugError
from ..files import ascii_number

__all__ = ["SaveGraphsStatus", "configure", "status"]

ENV_LEVEL, ENV_PATH = "MS_DEV_SAVE_GRAPHS", "MS_DEV_SAVE_GRAPHS_PATH"
LEVELS = {0: "off", 1: "compile stages", 2: "stages and backend passes", 3: "stages, passes and .dot graphs"}


@dataclass(frozen=True, repr=False)
class SaveGraphsStatus(Rendered):
    _views = rendered_by(lambda v: (v.graphs.html_save_graphs, v.graphs.text_save_graphs))

    level: int
    path: str
    via: str  # "context" or "env"
    files: int
    families: tuple[tuple[str, int], ...]
    notes: tuple[str, ...] = ()

    @property
    def level_name(self) -> str:
        """What the level dumps: ``"compile stages"`` ... (``"off"`` for 0)."""
        return LEVELS.get(self.level, "?")


def _context_keys() -> bool:
    from ..keys import CATALOG

    version = _backend.installed_version()
    key = CATALOG["save_graphs"]
    return version is not None and key.available_in(version) and not key.ignored


def configure(level: int, path: str | None = None) -> SaveGraphsStatus:
    """Dump the IR of the next compiles at ``level`` (0 switches it off) into ``path``."""
    if level not in LEVELS:
        raise MsDebugError(f"save_graphs level must be 0, 1, 2 or 3, got {level!r}.")
    notes = []
    if _context_keys():
        from .. import settings

        values: dict = {"save_graphs": level}
        if path:
            values["save_graphs_path"] = path
        settings.apply(values)
    else:
        os.environ[ENV_LEVEL] = str(level)
        if path:
            os.environ[ENV_PATH] = path
        if _backend.graph_compiled():
            notes.append(
                f"{ENV_LEVEL} is read at the first compile and a graph was compiled already: restart the kernel."
            )
    return status(tuple(notes))


def status(notes: tuple[str, ...] = ()) -> SaveGraphsStatus:
    """The save_graphs level and directory in effect, and the files there so far."""
    from ..dumps.graphs import read_graphs_dir

    notes = list(notes)
    if _context_keys() and _backend.is_imported():
        from .. import settings

        level, path, via = int(settings.get("save_graphs")), settings.get("save_graphs_path"), "context"
        env = os.environ.get(ENV_LEVEL)
        if env and env != "0" and not level:
            from_env = ascii_number(env, 99)
            level = level if from_env is None else from_env
            path, via = os.environ.get(ENV_PATH, path), "env"
    else:
        text = os.environ.get(ENV_LEVEL, "0")
        level = ascii_number(text, 99) or 0
        path, via = os.environ.get(ENV_PATH, "."), "env"
    path = os.path.abspath(path or ".")
    families: dict[str, int] = {}
    count = 0
    if os.path.isdir(path):
        try:
            listing = read_graphs_dir(path)
        except MsDebugError as error:
            notes.append(str(error))
        else:
            for f in listing.files:
                if f.family != "other":
                    families[f.family] = families.get(f.family, 0) + 1
                    count += 1
    return SaveGraphsStatus(level, path, via, count, tuple(families.items()), tuple(notes))
