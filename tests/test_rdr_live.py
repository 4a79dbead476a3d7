"""RDR for real, with MindSpore 2.7.0 (the last version that has it). Opt-in:

    MSDEBUG_MS270_PYTHON=$(.ci/ms270) pytest tests/test_rdr_live.py

That interpreter needs mindspore==2.7.0 and numpy<2; msdebug comes from this checkout
(PYTHONPATH). Skipped when the variable is not set.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

PYTHON = os.environ.get("MSDEBUG_MS270_PYTHON", "")
ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not PYTHON, reason="set MSDEBUG_MS270_PYTHON to a Python with MindSpore 2.7.0")

SCRIPT = """
import os, warnings
import numpy as np
import msdebug
from msdebug.recorders.envconfig import RdrWarning, rdr_status

cfg = msdebug.EnvConfig(rdr_enable=True, rdr_mode=2, rdr_path=os.path.abspath("first"))
cfg.write("mindspore_config.json")
import mindspore as ms
from mindspore import nn

with warnings.catch_warnings():
    warnings.simplefilter("error", RdrWarning)  # nothing to warn about before the first compile
    status = cfg.apply()
print("VERSION", status.version, status.supported, status.compiled)

class Net(nn.Cell):
    def construct(self, x):
        return x * 2

ms.set_context(mode=ms.GRAPH_MODE)
Net()(ms.Tensor(np.ones(3, np.float32))).asnumpy()

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    msdebug.EnvConfig(rdr_path=os.path.abspath("second")).apply(via="env")
print("WARNED", [str(w.message)[:49] for w in caught])

class Other(nn.Cell):
    def construct(self, x):
        return x + 1

Other()(ms.Tensor(np.ones(3, np.float32))).asnumpy()
status = rdr_status()
print("STATUS", status.compiled, status.value("rdr.path"), len(status.exported))
print("SECOND", os.path.isdir("second"))
explorer = msdebug.open_dump("first")
print("ORDER", [row.op for row in explorer.exec_order().rows])
print(repr(explorer).splitlines()[0])
"""


def test_rdr_exports_where_the_file_says_and_later_settings_are_too_late(tmp_path):
    (tmp_path / "live.py").write_text(textwrap.dedent(SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOG_v": "3"}
    for name in ("MS_RDR_ENABLE", "MS_RDR_MODE", "MS_RDR_PATH"):
        env.pop(name, None)
    result = subprocess.run([PYTHON, "live.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert lines["VERSION"] == "2.7.0 True False"
    assert lines["WARNED"] == "['a graph has already been compiled in this process']"
    compiled, path, exported = lines["STATUS"].split()
    # The file's path wins over the MS_RDR_PATH set too late, and MindSpore kept the first one.
    assert (compiled, path) == ("True", f"{tmp_path}/first/")
    assert int(exported) >= 2 * 24 and lines["SECOND"] == "False"
    assert lines["ORDER"] == "['PrimFunc_Mul']"
    files = list((tmp_path / "first/rank_0/rdr").iterdir())
    assert all(f.stat().st_mode & 0o777 == 0o400 for f in files)  # MindSpore writes them read-only
    shown = int(lines["RDR"].split()[2])  # "tree first: N files, ..."
    assert lines["RDR"].startswith("tree first: ") and 2 * 24 <= shown <= len(files)  # mode 2 exports at exit too


# --------------------------------------------------------------------------- env_config agreement

AGREEMENT = """
import json, os, sys
import numpy as np
from msdebug.recorders.envconfig import EnvConfig, EnvConfigError

config = json.loads(sys.argv[1])

def verdict(data):
    try:
        EnvConfig.from_dict(data)
        return "accepted"
    except EnvConfigError as error:
        return str(error)

keys = {f"{s}.{k}": verdict({s: {k: v}}) for s, section in config.items() for k, v in section.items()}
print("MSDEBUG", json.dumps({"file": verdict(config), "keys": keys}), flush=True)
with open("env.json", "w") as handle:
    json.dump(config, handle)
import mindspore as ms
from mindspore import nn

ms.set_context(env_config_path=os.path.abspath("env.json"), mode=ms.GRAPH_MODE)

class Net(nn.Cell):
    def construct(self, x):
        return x * 2

Net()(ms.Tensor(np.ones(3, np.float32))).asnumpy()
"""

# What MindSpore 2.7.0's EnvConfigParser logs when it drops a value, by the key msdebug names
# (ParseSysMemReuse calls sys.mem_reuse 'enable'; a misspelt key leaves the real one "not found").
COMPLAINTS = {
    "rdr.enable": ("'enable' in rdr should be boolean", "'enable' not found in 'rdr'"),
    "rdr.enabel": ("'enable' not found in 'rdr'",),
    "rdr.mode": ("'mode' in rdr should be 1 or 2",),
    "rdr.path": ("RDR path parse failed",),
    "sys.mem_reuse": ("'enable' in sys should be boolean",),
}


def _mindspore_reads(tmp_path, config: dict) -> tuple[dict, list[str], tuple[str, str, str]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "agreement.py").write_text(AGREEMENT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOG_v": "1"}  # the parser says what it took at INFO
    for name in ("MS_RDR_ENABLE", "MS_RDR_MODE", "MS_RDR_PATH"):
        env.pop(name, None)
    done = subprocess.run(
        [PYTHON, "agreement.py", json.dumps(config)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    msdebug = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("MSDEBUG "))[8:])
    said = [line for line in done.stderr.splitlines() if "env_config_parser.cc" in line or "IsPathValid" in line]
    said += [line for line in done.stderr.splitlines() if "IsEveryFilenameValid" in line]
    parsed = next(line for line in said if "After parsed," in line).split("After parsed, ")[1]
    enable, mode, path = (part.split(": ", 1)[1] for part in parsed.split(", "))
    return msdebug, [line for line in said if "failed" in line], (enable, mode, path)


def test_env_config_msdebug_accepts_mindspore_2_7_takes_and_exports_where_it_says(tmp_path):
    config = {"rdr": {"enable": True, "mode": 2.0, "path": f"{tmp_path}/x.y"}, "sys": {"mem_reuse": False}}
    msdebug, complaints, parsed = _mindspore_reads(tmp_path, config)
    assert msdebug == {"file": "accepted", "keys": dict.fromkeys(msdebug["keys"], "accepted")}, msdebug
    assert complaints == [] and parsed == ("1", "2", f"{tmp_path}/x.y/")
    assert len(list((tmp_path / "x.y/rank_0/rdr").iterdir())) >= 24


def test_env_config_values_msdebug_refuses_mindspore_2_7_drops_with_a_complaint(tmp_path):
    # One process per file (the file is parsed once); each file has one bad value per key.
    for number, config in enumerate(
        (
            {"rdr": {"enabel": True, "mode": True, "path": "relative"}, "sys": {"mem_reuse": 1}},
            {"rdr": {"enable": 1, "mode": 3, "path": f"{tmp_path}/a b"}, "sys": {"mem_reuse": "no"}},
            {"rdr": {"enable": "true", "mode": 0, "path": f"{tmp_path}/{'a' * 256}"}},
        )
    ):
        msdebug, complaints, parsed = _mindspore_reads(tmp_path / str(number), config)
        assert msdebug["file"] != "accepted" and "\n" not in msdebug["file"], msdebug
        for key, refused in msdebug["keys"].items():
            assert refused != "accepted", (key, config)
            assert any(words in line for line in complaints for words in COMPLAINTS[key]), (key, complaints)
        assert parsed[0] == "0" and parsed[2] == "./", parsed  # MindSpore's defaults took their place
