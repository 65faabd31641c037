"""Running a Python module as a process and measuring its peak resident memory without
psutil: the process reads its own `VmHWM` from /proc as it exits, and the parent polls the
same figure while it runs (to stop one that grows without bound).

Not `wait4`'s ru_maxrss: Linux carries a process's high-water mark across exec, so a child
forked from a large test process reports the parent's size (seen: 399 MB for a 60 MB child
late in the suite). VmHWM belongs to the address space, which exec replaces."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

KIB_PER_MB = 1024  # ru_maxrss and VmHWM count kibibytes


@dataclass
class Measured:
    returncode: int
    peak_mb: float
    stderr: str
    killed: bool  # it grew past the ceiling (or the time) and was stopped


def vm_hwm_kb(pid: int) -> int:
    """Peak resident memory of a running process so far, in KiB (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1])


# Runs `python -m MODULE ARGS` in this process and writes its VmHWM (KiB) to a file at exit.
_WRAPPER = """
import atexit, runpy, sys
def _report(path=sys.argv[1]):
    with open("/proc/self/status") as status:
        peak = next(x for x in status if x.startswith("VmHWM:")).split()[1]
    with open(path, "w") as out:
        out.write(peak)
atexit.register(_report)
sys.argv = sys.argv[2:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def run_measured(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    ceiling_mb: int = 600,
    timeout: float = 120,
    stdin: Path | None = None,
) -> Measured:
    """Run `argv` (`[python, "-m", module, *args]`) to its end, reading `stdin` (a file;
    nothing by default), and report its peak RSS. A process that grows past `ceiling_mb`
    (a regression that reads without bound) is killed, not left to grow."""
    python, flag, module, *args = argv
    assert flag == "-m", "run_measured runs a Python module"
    with (
        tempfile.TemporaryFile() as err,
        open(stdin or os.devnull, "rb") as nothing,
        tempfile.TemporaryDirectory() as tmp,
    ):
        report = Path(tmp) / "peak"
        proc = subprocess.Popen(
            [python, "-c", _WRAPPER, str(report), module, *args],
            stdin=nothing, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd,
        )  # fmt: skip
        killed, polled = False, 0
        deadline = time.monotonic() + timeout
        while True:
            pid, status = os.waitpid(proc.pid, os.WNOHANG)
            if pid:
                break
            polled = max(polled, vm_hwm_kb(proc.pid))
            if polled > ceiling_mb * KIB_PER_MB or time.monotonic() > deadline:
                proc.kill()
                killed = True
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
        own = int(report.read_text()) if report.exists() else 0  # none when killed
    return Measured(proc.returncode, max(own, polled) / KIB_PER_MB, stderr, killed)
