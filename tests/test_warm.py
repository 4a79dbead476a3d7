"""The warm interpreters (warm.py) behave as ``python -c`` does: the tests that use them see what
a cold interpreter would show, except for MindSpore's import, which happened before."""

from __future__ import annotations

import pytest
from warm import zygote

from helpers import kernel_env, run_python

CASES = {
    "output and exit 0": "import sys\nprint('out')\nprint('err', file=sys.stderr)",
    "a traceback and exit 1": "def f():\n    raise ValueError('bad')\nf()",
    "sys.exit with a number": "import sys\nsys.exit(3)",
    "sys.exit with a message": "import sys\nsys.exit('stopped here')",
    "an uncaught Ctrl-C ends it by SIGINT": "raise KeyboardInterrupt",
    "atexit runs after the threads end": (
        "import atexit, threading, time\n"
        "atexit.register(print, 'atexit')\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()"
    ),
    "__main__ is fresh": "print(sorted(k for k in globals() if not k.startswith('__')), __name__, __file__ if '__file__' in globals() else '-')",
    "argv, path and cwd": "import os, sys\nprint(sys.argv, sys.path[0], os.getcwd())",
    "unflushed output is written at exit": "import sys\nsys.stdout.write('no newline')",
}


@pytest.mark.parametrize("code", CASES.values(), ids=CASES.keys())
def test_a_warm_interpreter_shows_what_a_cold_one_shows(code):
    assert zygote(kernel_env()) is not None  # this process has its warm interpreter
    cold = run_python(code, warm=False)
    warm = run_python(code)
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)


def test_a_warm_interpreter_has_mindspore_imported_and_a_new_pid_each_time():
    code = "import os, sys\nprint(os.getpid(), 'mindspore' in sys.modules)"
    first, second = run_python(code).stdout.split(), run_python(code).stdout.split()
    assert first[1] == second[1] == "True"
    assert first[0] != second[0]


def test_a_warm_interpreter_past_its_timeout_is_killed():
    import subprocess

    with pytest.raises(subprocess.TimeoutExpired):
        run_python("import time\nprint('started', flush=True)\ntime.sleep(600)", timeout=2)
    assert run_python("print('next')").stdout == "next\n"
