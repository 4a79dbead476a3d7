"""RDR for real, with MindSpore 2.7.0 (the last version that has it). Opt-in:

    MSDEBUG_MS270_PYTHON=$(.ci/ms270) pytest tests/test_rdr_live.py

That interpreter needs mindspore==2.7.0 and numpy<2; msdebug comes from this checkout
(PYTHONPATH). Skipped when the variable is not set.
"""

from __future__ import annotations

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
