"""Tab completion through a real kernel's complete_request, as JupyterLab sends it; and, in
process, that a cell magic's body still completes as Python."""

from __future__ import annotations

import pytest
from IPython.core.completer import provisionalcompleter

from helpers import Kernel

CASES = [
    ("%mscontext mo", ["mode="], "mo"),
    ("%msprint ", ["on", "off", "status", "--help"], ""),
    ("%msprint o", ["on", "off"], "o"),
    ("%%msprint --f", ["--file"], "--f"),
    ("%mscontext dev", ["device=", "device_target=", "device_id=", "device_num="], "dev"),
    ("%mscontext parallel_mode=semi", ["semi_auto_parallel"], "semi"),
    ("%mscontext dataset_strategy=", ["data_parallel", "full_batch"], ""),
    ("%mscontext mode=", ["graph", "pynative"], ""),
    ("%mscontext mode=py", ["pynative"], "py"),
    ("%mscontext mode=graph pynative_s", ["pynative_synchronize="], "pynative_s"),
    ("%mscontext pynative_synchronize=", ["true", "false"], ""),
    ("%mscontext device=CPU:", ["CPU:0"], "CPU:"),
    ("%mscontext device_target=", ["CPU", "GPU", "Ascend"], ""),
    ("%mscontext jit_level=O", ["O0", "O1", "O2"], "O"),
    ("%mscontext save_graphs=", ["0", "1", "2", "3"], ""),
    ("%mscontext --ch", ["--changed"], "--ch"),
    ("%mscontext --pa", ["--panel"], "--pa"),
    ("%%mscontext jit_syntax_level=", ["strict", "compatible", "lax"], ""),
]


@pytest.fixture(scope="module")
def loaded():
    kernel = Kernel()
    assert kernel.run("%load_ext msdebug")[0] == "ok"
    yield kernel
    kernel.close()


@pytest.mark.parametrize("code, matches, replaced", CASES, ids=[code for code, _, _ in CASES])
def test_completion(loaded, code, matches, replaced):
    found, fragment = loaded.complete(code)
    assert (sorted(found), fragment) == (sorted(matches), replaced)  # IPython sorts matches


def test_removed_keys_are_not_offered(loaded):
    found, _ = loaded.complete("%mscontext enable_")
    assert "enable_dump=" not in found and "enable_sparse=" not in found  # removed in 2.5; ignored
    assert "enable_graph_kernel=" in found


def test_the_body_of_a_scoped_cell_completes_as_python(shell):
    # In process: a kernel's complete_request asks this same Completer.completions, and in a
    # fresh kernel jedi's first completion alone can take 10 s.
    code = "%%mscontext mode=graph\nimpo"
    with provisionalcompleter():
        found = [completion.text for completion in shell.Completer.completions(code, len(code))]
    assert "import" in found
