"""MindSpore's context keys, declared once as data.

Parsing, validation, help, completion and the context table are all derived from
:data:`CATALOG`; look a key up with :func:`lookup`.

* :mod:`.kinds`: the value kinds (:class:`Flag`, :class:`Integer`, :class:`Choice`, :class:`Table` ...);
* :mod:`.context`: what a context key is (:class:`ContextKey`), and the ``set_context`` keys;
* :mod:`.parallel`: the ``set_auto_parallel_context`` keys;
* :mod:`.catalog`: both as one :data:`CATALOG`, with :data:`ENTRIES`, :data:`SHORTHANDS` and :func:`lookup`.
"""

from ..errors import did_you_mean as did_you_mean  # read here by the readers
from .catalog import CATALOG, ENTRIES, SHORTHANDS, lookup
from .context import ASCEND as ASCEND
from .context import GPU as GPU
from .context import GPU_ASCEND as GPU_ASCEND
from .context import GROUPS, ContextKey, version_tuple
from .kinds import (
    ALL_DEVICES,
    UNREAD,
    UNSET,
    Choice,
    DeviceSpec,
    Flag,
    Integer,
    Kind,
    Opaque,
    Option,
    Size,
    Table,
    Text,
    literal,
    load_json,
)
from .kinds import DatasetStrategy as DatasetStrategy
from .kinds import IntegerList as IntegerList
from .kinds import OptimizerConfig as OptimizerConfig
from .kinds import PipelineConfig as PipelineConfig

__all__ = [
    "ALL_DEVICES",
    "CATALOG",
    "ENTRIES",
    "literal",
    "load_json",
    "GROUPS",
    "SHORTHANDS",
    "Choice",
    "ContextKey",
    "DeviceSpec",
    "Flag",
    "Integer",
    "Kind",
    "Opaque",
    "Option",
    "Size",
    "Table",
    "Text",
    "UNREAD",
    "UNSET",
    "lookup",
    "version_tuple",
]
