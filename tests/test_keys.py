"""The key catalog: complete for the installed MindSpore, and values parse as people type them."""

from __future__ import annotations

import pytest

from msdebug import keys
from msdebug.backend import get_backend
from msdebug.errors import InvalidValueError, UnknownKeyError
from msdebug.ipython.magics.context import CONTEXT
from msdebug.keys import CATALOG, GROUPS, SHORTHANDS, UNSET, lookup


def test_every_live_key_of_the_installed_mindspore_is_described():
    backend = get_backend()
    assert sorted(set(backend.live_keys()) - set(CATALOG)) == []


def test_every_key_the_catalog_calls_available_is_live():
    backend = get_backend()
    available = {
        name
        for name, key in CATALOG.items()
        if key.available_in(backend.version) and not key.ignored and name != "exception_dump"
    }
    assert sorted(available - set(backend.live_keys())) == []


def test_the_seed_documents_keys_are_all_in_the_catalog():
    # r1.2 "Running Management" / mindspore.context pages and the pre-1.0 API page.
    seed_keys = {
        "mode", "device_target", "device_id", "save_graphs", "save_graphs_path", "enable_dump",
        "save_dump_path", "enable_profiling", "profiling_options", "print_file_path",
        "env_config_path", "precompile_only", "reserve_class_name_in_scope", "pynative_synchronize",
        "enable_graph_kernel", "graph_kernel_flags", "enable_reduce_precision", "auto_tune_mode",
        "check_bprop", "max_call_depth", "enable_sparse", "grad_for_scalar", "enable_compile_cache",
        "compile_cache_path", "max_device_memory", "variable_memory_max_size", "mempool_block_size",
        "save_ms_model", "save_ms_model_path", "enable_auto_mixed_precision",
    }  # fmt: skip
    assert sorted(seed_keys - set(CATALOG)) == []


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_entry_is_complete(name):
    key = CATALOG[name]
    assert key.help and key.help.endswith((".", ")")), name
    assert key.group in dict(GROUPS)
    assert set(key.platforms) <= {"CPU", "GPU", "Ascend"}
    assert key.default is not None or key.default_note, f"{name}: a dynamic default needs a note"
    if key.part_of:
        assert key.part_of[0] in CATALOG
    if key.default in (None, UNSET) or name in _UNSETTABLE_DEFAULTS:
        return
    assignments = CONTEXT.parse(f"{name}={key.kind.typed(key.default)}").settings
    assert key.coerce(assignments[name]) == key.default


# Defaults that mean "not set" and that MindSpore does not accept back (an empty path).
_UNSETTABLE_DEFAULTS = {"print_file_path", "env_config_path", "op_precision_mode", "variable_memory_max_size"}


@pytest.mark.parametrize(
    "typed, expected",
    [
        ("graph", 0),
        ("GRAPH", 0),
        ("GRAPH_MODE", 0),
        ("0", 0),
        ("pynative", 1),
        ("PYNATIVE_MODE", 1),
        ("1", 1),
        (0, 0),
        (1, 1),
    ],
)
def test_mode_spellings(typed, expected):
    assert CATALOG["mode"].coerce(typed) == expected


@pytest.mark.parametrize("typed", ["true", "True", "on", "ON", "yes", "1", True, 1])
def test_booleans_true(typed):
    assert CATALOG["pynative_synchronize"].coerce(typed) is True


@pytest.mark.parametrize("typed", ["false", "off", "no", "0", False, 0])
def test_booleans_false(typed):
    assert CATALOG["pynative_synchronize"].coerce(typed) is False


def test_bool_is_not_an_integer_choice():
    with pytest.raises(InvalidValueError, match="True is not allowed"):
        CATALOG["mode"].coerce(True)


def test_save_graphs_accepts_true_as_two_like_mindspore():
    assert CATALOG["save_graphs"].coerce(True) == 2
    assert CATALOG["save_graphs"].coerce("false") == 0


@pytest.mark.parametrize(
    "typed, expected", [("CPU", ("CPU", None)), ("cpu:0", ("CPU", 0)), ("Ascend:3", ("Ascend", 3))]
)
def test_device_shorthand(typed, expected):
    assert SHORTHANDS["device"].coerce(typed) == expected


def test_dicts_take_python_or_json_literals():
    jit = CATALOG["jit_config"]
    assert jit.coerce("{'jit_level': 'O1'}") == {"jit_level": "O1"}
    assert jit.coerce('{"jit_level": "o2", "infer_boost": "off"}') == {"jit_level": "O2", "infer_boost": "off"}
    assert CATALOG["gpu_config"].coerce('{"conv_allow_tf32": false}') == {"conv_allow_tf32": False}


def test_sizes_keep_mindspores_gb_format():
    assert CATALOG["max_device_memory"].coerce("3.5gb") == "3.5GB"
    assert CATALOG["mempool_block_size"].kind.from_raw(1.0) == "1GB"
    with pytest.raises(InvalidValueError, match="at least 1GB"):
        CATALOG["mempool_block_size"].coerce("0.5GB")


def test_unknown_key_suggests_the_closest():
    with pytest.raises(UnknownKeyError, match=r"Did you mean 'pynative_synchronize'\?"):
        lookup("pynative_sync")


def test_status_phrases():
    assert CATALOG["mode"].status() == "current"
    assert CATALOG["pynative_synchronize"].status() == (
        "deprecated since MindSpore 2.5; use mindspore.runtime.launch_blocking()"
    )
    assert CATALOG["grad_for_scalar"].status().startswith("removed in MindSpore 2.10")
    assert CATALOG["save_ms_model"].status().startswith("removed before MindSpore 1.2")
    assert CATALOG["enable_sparse"].status() == "accepted but ignored"


def test_availability_by_version():
    assert CATALOG["grad_for_scalar"].available_in("2.9.0")
    assert not CATALOG["grad_for_scalar"].available_in("2.10.0")
    assert CATALOG["memory_offload"].available_in("2.7.0")
    assert not CATALOG["memory_offload"].available_in("2.8.0")
    assert keys.version_tuple("2.10.0rc1") == (2, 10, 0)
