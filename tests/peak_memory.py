"""Running a process and measuring its peak resident memory without psutil: the kernel's
own count for that one child (`wait4`'s rusage), and `VmHWM` in /proc while it runs."""

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


def run_measured(
    argv: list[str], *, env: dict[str, str], cwd: Path, ceiling_mb: int = 600, timeout: float = 120
) -> Measured:
    """Run `argv` to its end and report its peak RSS. A process that grows past
    `ceiling_mb` (a regression that reads without bound) is killed, not left to grow."""
    with tempfile.TemporaryFile() as err, open(os.devnull, "rb") as nothing:
        proc = subprocess.Popen(
            argv, stdin=nothing, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd
        )
        killed = False
        deadline = time.monotonic() + timeout
        while True:
            # Reaped here, not by Popen, so that the rusage is this child's alone.
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if vm_hwm_kb(proc.pid) > ceiling_mb * KIB_PER_MB or time.monotonic() > deadline:
                proc.kill()
                killed = True
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    return Measured(proc.returncode, usage.ru_maxrss / KIB_PER_MB, stderr, killed)
