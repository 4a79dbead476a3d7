"""The warm interpreters (warm.py) behave as ``python -c`` does: the tests that use them see what
a cold interpreter would show, except for MindSpore's import, which happened before."""

from __future__ import annotations

import json
import os
import signal

import pytest
from warm import zygote

from helpers import Kernel, kernel_env, run_python, text_of

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


# What a kernel can see of how it was started. Both kernels get the same environment from
# Kernel() (jupyter_client adds JPY_PARENT_PID, this process's pid, to both).
_KERNEL_FACTS = """\
import json, os, signal, sys
print(json.dumps({
    "launcher": [os.path.basename(sys.argv[0]), *sys.argv[1:2]],
    "path": sys.path,
    "in its directory": os.getcwd() == %r,
    "leads its process group and session": os.getpgid(0) == os.getsid(0) == os.getpid(),
    "environment": dict(os.environ),
    "handlers": [str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGCHLD, signal.SIGPIPE, signal.SIGTERM)],
    "parent handle": get_ipython().kernel.parent.parent_handle,
    "main": sys.modules["__main__"].__name__,
}))
import mindspore.log
logger = mindspore.log._get_logger()
print(json.dumps({"MindSpore's log": [logger.name.endswith(f".{os.getpid()}"), [h.stream is sys.stderr for h in logger.handlers]]}))
"""


def _facts(kernel) -> list[dict]:
    status, outputs = kernel.run(_KERNEL_FACTS % os.path.realpath(kernel.cwd))
    assert status == "ok", outputs
    return [json.loads(line) for line in text_of(outputs, name="stdout").splitlines()]


def test_a_warm_kernel_shows_what_a_cold_one_shows():
    warm, cold = Kernel(), Kernel(warm=False)
    try:
        assert type(warm.manager.provisioner).__name__ == "WarmProvisioner"
        assert type(cold.manager.provisioner).__name__ == "LocalProvisioner"
        assert warm.evaluate("import sys", "'mindspore' in sys.modules") != cold.evaluate(
            "import sys", "'mindspore' in sys.modules"
        )
        facts = _facts(cold)
        assert facts[1] == {"MindSpore's log": [True, [True]]}
        assert _facts(warm) == facts
    finally:
        warm.close()
        cold.close()


def test_a_warm_kernel_is_interrupted_and_ends_as_a_cold_one():
    for warm in (True, False):
        kernel = Kernel(warm=warm)
        try:
            msg_id = kernel.start_until("open('inside', 'w').close()\nwhile True:\n    pass", "inside")
            kernel.manager.interrupt_kernel()
            status, outputs = kernel.finish(msg_id, 60)
            assert [o["ename"] for o in outputs if o["type"] == "error"] == ["KeyboardInterrupt"], (warm, outputs)
            process = kernel.manager.provisioner.process
            os.kill(process.pid, signal.SIGKILL)
            assert process.wait(60) == -signal.SIGKILL, warm
        finally:
            kernel.close()


def test_a_kernel_with_another_environment_has_a_warm_kernel_of_its_own(monkeypatch):
    """MindSpore reads some variables at import: a kernel gets a zygote of its own environment."""
    first = Kernel()
    monkeypatch.setenv("MSDEBUG_TEST_WARM", "other")
    second = Kernel()
    try:
        values = [k.evaluate("import os", "os.environ.get('MSDEBUG_TEST_WARM')") for k in (first, second)]
        assert values == ["None", "'other'"]
        parents = [k.evaluate("import os", "os.getppid()") for k in (first, second)]
        assert parents[0] != parents[1]  # forked by two zygotes
    finally:
        first.close()
        second.close()
