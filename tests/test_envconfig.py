"""env_config.json and the %msrdr / %msgraphs magics, against the installed MindSpore (2.10).

2.10 ignores RDR, so what only 2.7.0 does (the "too late" warning for real, exports) is in
test_rdr_live.py, which runs when a MindSpore 2.7.0 interpreter is given.
"""

from __future__ import annotations

import json
import os

import pytest
from IPython.core.error import UsageError

import msdebug
from msdebug import backend
from msdebug.recorders import envconfig
from msdebug.recorders.envconfig import EnvConfig, EnvConfigError, RdrWarning, env_settings, rdr_status

LONG = "/" + "a" * 1030
COMPONENT = "/tmp/" + "b" * 256

# (env_config.json contents, what the error says)
BAD_CONFIGS = [
    ({"rdr": {"enable": 1}}, "rdr.enable must be true or false (a JSON boolean), got 1."),
    ({"rdr": {"enable": "true"}}, 'rdr.enable must be true or false (a JSON boolean), got "true".'),
    ({"rdr": {"enable": None}}, "rdr.enable is null; leave the key out to keep MindSpore's default."),
    (
        {"rdr": {"mode": 3}},
        "rdr.mode must be 1 (exceptional: export when a run fails) or 2 (normal: export after each compile and at exit, and on failure), got 3.",
    ),
    (
        {"rdr": {"mode": "2"}},
        'rdr.mode must be 1 (exceptional: export when a run fails) or 2 (normal: export after each compile and at exit, and on failure), got "2".',
    ),
    ({"rdr": {"mode": 2.5}}, "got 2.5."),  # 2.0 is mode 2 for MindSpore 2.7.0 (test_rdr_live)
    ({"rdr": {"mode": True}}, "got true."),
    ({"rdr": {"mode": 0}}, "got 0."),
    (
        {"rdr": {"path": "rdr"}},
        "rdr.path must be absolute (start with '/'), got 'rdr'; MindSpore would silently write to the working directory instead. Did you mean",
    ),
    ({"rdr": {"path": "~/rdr"}}, "rdr.path must be absolute (start with '/'), got '~/rdr'"),
    ({"rdr": {"path": ""}}, "rdr.path is empty; give an absolute directory such as /tmp/rdr."),
    ({"rdr": {"path": 7}}, "rdr.path must be a string (an absolute directory), got 7."),
    (
        {"rdr": {"path": "/tmp/my rdr"}},
        "rdr.path may use only letters, digits and - _ . / (MindSpore's rule); '/tmp/my rdr' has ' '.",
    ),
    (
        {"rdr": {"path": "/tmp/данные"}},
        "rdr.path may use only letters, digits and - _ . / (MindSpore's rule); '/tmp/данные' has",
    ),
    ({"rdr": {"path": "/tmp/a:b"}}, "has ':'."),
    ({"rdr": {"path": LONG}}, "rdr.path is 1031 characters long; MindSpore allows at most 1024."),
    ({"rdr": {"path": COMPONENT}}, "is 256 characters long; at most 255."),
    (
        {"rdr": {"enabel": True}},
        "unknown key rdr.enabel (MindSpore would ignore it); rdr takes enable, mode, path. Did you mean 'enable'?",
    ),
    (
        {"sys": {"mem_Reuse": False}},
        "unknown key sys.mem_Reuse (MindSpore would ignore it); sys takes mem_reuse. Did you mean 'mem_reuse'?",
    ),
    ({"sys": {"mem_reuse": "no"}}, 'sys.mem_reuse must be true or false (a JSON boolean), got "no".'),
    ({"rdr": [True, 2]}, "rdr must be an object, got [true, 2]."),
    ([{"rdr": {}}], "the top level must be a JSON object {...}, got list."),
]


@pytest.mark.parametrize(("config", "message"), BAD_CONFIGS, ids=[m[:40] for _, m in BAD_CONFIGS])
def test_bad_configs_are_refused_with_mindspores_rule(tmp_path, config, message):
    path = tmp_path / "env_config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(EnvConfigError) as info:
        EnvConfig.read(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text
    assert "\n" not in text


def test_the_same_rules_for_keyword_arguments():
    with pytest.raises(EnvConfigError, match="^rdr.mode must be 1"):
        EnvConfig(rdr_mode=3)
    with pytest.raises(EnvConfigError, match=r"Did you mean '/.+/rel'\?$"):
        EnvConfig(rdr_path="rel")
    assert EnvConfig(rdr_path="/tmp/rdr").rdr_path == "/tmp/rdr/"  # MindSpore appends the slash


def test_a_mode_of_2_0_is_mode_2_as_mindspore_2_7_applies_it(tmp_path):
    # ParseRdrMode compares by value and checks no type (envconfig.SPEC cites the line): MindSpore 2.7.0
    # logs "rdr mode: 2" for this file, without a warning (test_rdr_live.py asks it). read reports
    # what MindSpore applies, and msdebug writes it back as 2; true and 2.5 keep mode 1 there, and are refused.
    path = tmp_path / "env_config.json"
    path.write_text(json.dumps({"rdr": {"enable": True, "mode": 2.0, "path": str(tmp_path)}}))
    config = EnvConfig.read(path)
    assert config.rdr_mode == 2 and type(config.rdr_mode) is int
    assert config.to_dict()["rdr"]["mode"] == 2 and '"mode": 2,' in config.to_json()
    assert EnvConfig(rdr_enable=True, rdr_mode=2.0).rdr_mode == 2
    assert envconfig._env_text("mode", EnvConfig(rdr_mode=2.0).rdr_mode) == "2"  # MS_RDR_MODE=2.0 is mode 1
    for value in (True, 2.5, 1.0000001):
        with pytest.raises(EnvConfigError, match=r"^rdr\.mode must be 1 .* or 2 .*, got "):
            EnvConfig(rdr_mode=value)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"rdr": {"enable": true,}}', "line 1 column 25: Expecting property name enclosed in double quotes."),
        ('{\n  "rdr": {\n    "mode": 2\n  }\n  "sys": {}\n}', "line 5 column 3: Expecting ',' delimiter."),
        ("", "line 1 column 1: Expecting value."),
    ],
)
def test_malformed_json_names_line_and_column(tmp_path, text, where):
    path = tmp_path / "broken.json"
    path.write_text(text)
    with pytest.raises(EnvConfigError, match="^" + str(path).replace(".", r"\.") + ": " + where.replace("(", r"\(")):
        EnvConfig.read(path)


def test_read_write_round_trip_never_overwrites(tmp_path):
    cfg = EnvConfig(rdr_enable=True, rdr_mode=2, rdr_path=str(tmp_path / "rdr"), mem_reuse=False)
    path = cfg.write(tmp_path / "cfg.json")
    assert json.loads(path.read_text()) == {
        "rdr": {"enable": True, "mode": 2, "path": f"{tmp_path}/rdr/"},
        "sys": {"mem_reuse": False},
    }
    assert EnvConfig.read(path) == cfg
    cfg.write(path)  # same contents: fine
    other = EnvConfig(rdr_mode=1)
    with pytest.raises(msdebug.errors.MsDebugError, match="exists with other contents; pass overwrite=True"):
        other.write(path)
    assert EnvConfig.read(path) == cfg
    other.write(path, overwrite=True)
    assert EnvConfig.read(path).to_dict() == {"rdr": {"mode": 1}}
    unknown = tmp_path / "extra.json"
    unknown.write_text('{"rdr": {"mode": 2}, "dump": {"x": 1}}')
    assert EnvConfig.read(unknown).ignored_sections == ("dump",)


def test_environment_variables_read_the_way_mindspore_reads_them():
    values, notes = env_settings({"MS_RDR_ENABLE": "true", "MS_RDR_MODE": "3", "MS_RDR_PATH": "rdr"})
    assert values == {"rdr.enable": False, "rdr.mode": 1}
    assert notes[0] == "MS_RDR_ENABLE='true': only 1 enables RDR (MindSpore reads it as off)."
    assert notes[1] == "MS_RDR_MODE='3': MindSpore uses mode 1 for anything but 2."
    assert notes[2].startswith("MS_RDR_PATH must be absolute") and notes[2].endswith("uses the working directory.")
    assert env_settings({"MS_RDR_ENABLE": "", "MS_RDR_MODE": "2"}) == ({"rdr.mode": 2}, [])  # empty = unset


def test_file_wins_over_environment_key_by_key(ip, tmp_path):
    cfg = EnvConfig(rdr_enable=True, rdr_path=str(tmp_path / "from_file"))
    cfg.write(tmp_path / "cfg.json")
    with pytest.warns(RdrWarning):
        cfg.apply()
    environ = {"MS_RDR_ENABLE": "0", "MS_RDR_MODE": "2", "MS_RDR_PATH": str(tmp_path / "from_env")}
    status = rdr_status(environ=environ)
    assert [(s.key, s.value, s.source) for s in status.settings] == [
        ("rdr.enable", True, "file"),
        ("rdr.mode", 2, "env"),
        ("rdr.path", f"{tmp_path}/from_file/", "file"),
        ("sys.mem_reuse", True, "default"),
    ]
    assert status.config_file == str(tmp_path / "cfg.json")
    assert f"MS_RDR_PATH={tmp_path}/from_env is set, but the file's rdr.path='{tmp_path}/from_file/' wins" in repr(
        status
    )
    assert "MS_RDR_ENABLE=0 is set, but the file's rdr.enable=True wins" in repr(status)


def test_ignored_by_this_version_is_one_line(monkeypatch, tmp_path):
    for name in envconfig.ENV_VARS.values():
        monkeypatch.setenv(name, "")  # empty counts as unset; monkeypatch puts the real state back
    with pytest.warns(RdrWarning) as caught:
        status = EnvConfig(rdr_enable=True, rdr_mode=2, rdr_path=str(tmp_path)).apply(via="env")
    (warning,) = caught
    message = str(warning.message)
    assert message.startswith(f"MindSpore {backend.installed_version()} ignores RDR (removed after 2.7.0)")
    assert "\n" not in message
    assert os.environ["MS_RDR_MODE"] == "2" and os.environ["MS_RDR_PATH"] == str(tmp_path)
    assert (
        repr(status).splitlines()[0]
        == f"RDR: ignored by MindSpore {backend.installed_version()} (it exists up to 2.7.0)"
    )
    assert EnvConfig(mem_reuse=False).warnings() == []  # sys.mem_reuse is still read


def test_too_late_after_a_graph_compile(ip, monkeypatch):
    # Fake backend: MindSpore 2.7.0 is not installed here, so pretend the version; the
    # compile is real. test_rdr_live.py checks the same against a real 2.7.0.
    monkeypatch.setattr(backend, "installed_version", lambda: "2.7.0")
    ip.run_cell(
        "import numpy as np, mindspore as ms\nfrom mindspore import nn\n"
        "class Twice(nn.Cell):\n    def construct(self, x):\n        return x * 2\n"
        "ms.set_context(mode=ms.GRAPH_MODE)\nTwice()(ms.Tensor(np.ones(2, np.float32))).asnumpy()\n"
    ).raise_error()
    assert backend.graph_compiled()
    (note,) = EnvConfig(rdr_mode=2).warnings()
    assert note.startswith("a graph has already been compiled in this process, and MindSpore reads RDR settings once")
    assert "\n" not in note


# --------------------------------------------------------------------------- magics


def test_msrdr_on_makes_the_path_absolute(ip, monkeypatch, tmp_path):
    for name in envconfig.ENV_VARS.values():
        monkeypatch.setenv(name, "")  # empty counts as unset; monkeypatch puts the real state back
    status = ip.run_line_magic("msrdr", "on --mode 2 --path ./rdr")
    assert os.environ["MS_RDR_PATH"] == str(tmp_path / "rdr")
    assert (os.environ["MS_RDR_ENABLE"], os.environ["MS_RDR_MODE"]) == ("1", "2")
    assert status.value("rdr.path") == f"{tmp_path}/rdr/"
    assert "ignores RDR" in repr(status)  # shown once, in the output, not as a warning
    assert "rdr.path" in status._repr_html_()
    assert ip.run_line_magic("msrdr", "").value("rdr.mode") == 2
    ip.run_line_magic("msrdr", "off")
    assert os.environ["MS_RDR_ENABLE"] == "0"


def test_msrdr_via_file_never_overwrites(ip, monkeypatch, tmp_path):
    ip.run_line_magic("msrdr", "on --mode 2 --path rdr --via file")
    written = json.loads((tmp_path / "mindspore_config.json").read_text())
    assert written == {"rdr": {"enable": True, "mode": 2, "path": f"{tmp_path}/rdr/"}}
    with pytest.raises(UsageError, match="exists with other contents"):
        ip.run_line_magic("msrdr", "on --mode 1 --via file")
    assert json.loads((tmp_path / "mindspore_config.json").read_text()) == written


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("onn", "%msrdr: unknown word 'onn'; use on or off. Did you mean 'on'?"),
        (
            "on --mod 2",
            "%msrdr: unknown option --mod; use --mode 1|2, --path DIR, --via env|file, --file JSON. Did you mean '--mode'?",
        ),
        ("on --mode 3", "%msrdr: --mode is 1 (export on failure) or 2 (also after each compile), got '3'."),
        ("on --path", "%msrdr: --path needs a value: --path DIR."),
        ("on off", "%msrdr: one of on, off at a time, got 'on' and 'off'."),
        ("on --mode 1 --mode 2", "%msrdr: --mode is given twice."),
        ("on --via fil", "%msrdr: --via is env or file, got 'fil'. Did you mean 'file'?"),
        ("off --mode 2", "%msrdr off takes no --mode or --path."),
        ("--mode 2", "%msrdr: options go with on, e.g. %msrdr on --mode 2 --path ./rdr"),
        (
            'on --path "/tmp/my rdr"',
            "rdr.path may use only letters, digits and - _ . / (MindSpore's rule); '/tmp/my rdr' has ' '.",
        ),
        ('on --path "/tmp/x', 'unclosed quote in: on --path "/tmp/x'),
    ],
)
def test_msrdr_bad_input_is_one_usage_error(ip, line, message):
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("msrdr", line)
    assert type(info.value) is UsageError and str(info.value) == message


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("on --level 5", "%msgraphs: --level is 1, 2 or 3, got '5'."),
        ("of", "%msgraphs: unknown word 'of'; use on or off. Did you mean 'off'?"),
        ("on --lvl 2", "%msgraphs: unknown option --lvl; use --level 1|2|3, --path DIR. Did you mean '--level'?"),
        ("off --level 2", "%msgraphs off takes no options."),
        ("--path g", "%msgraphs: options go with on, e.g. %msgraphs on --level 2 --path ./graphs"),
    ],
)
def test_msgraphs_bad_input_is_one_usage_error(ip, line, message):
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("msgraphs", line)
    assert str(info.value) == message


def test_msgraphs_saves_the_next_compile_and_open_dump_reads_it(ip, tmp_path):
    status = ip.run_line_magic("msgraphs", "on --level 1 --path g")
    assert (status.level, status.path, status.via, status.files) == (1, str(tmp_path / "g"), "context", 0)
    ip.run_cell(
        "import numpy as np, mindspore as ms\nfrom mindspore import nn\n"
        "class Plus(nn.Cell):\n    def construct(self, x):\n        return x + 3\n"
        "ms.set_context(mode=ms.GRAPH_MODE)\nPlus()(ms.Tensor(np.ones(2, np.float32))).asnumpy()\n"
    ).raise_error()
    status = ip.run_line_magic("msgraphs", "")
    assert status.files > 50 and dict(status.families)["stage"] == 25
    assert f"msdebug.open_dump({str(tmp_path / 'g')!r})" in repr(status)
    explorer = msdebug.open_dump(tmp_path / "g")
    (add,) = explorer.graph("24_execute", op="PrimFunc_Add").rows
    assert add.scope == "Default/Add-op0" and add.output_type == "(<Tensor[Float32], (2)>)"
    assert ip.run_line_magic("msgraphs", "off").level == 0


def test_help_prints_the_usage(ip, capsys):
    ip.run_line_magic("msrdr", "--help")
    ip.run_line_magic("msgraphs", "--help")
    out = capsys.readouterr().out
    assert "%msrdr on [--mode 1|2]" in out and "%msgraphs on [--level 1|2|3]" in out
