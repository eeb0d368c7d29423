"""The broker under test: a real process started like the end-to-end tests
start it (tests/broker_process.py), plus what /proc says about it."""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from broker_process import BrokerProcess  # noqa: E402  (reused, not copied)


class ProcStats:
    """What /proc says about the process `self.pid` (a broker under test)."""

    pid: int

    def rss_mb(self) -> float:
        """Resident set size (VmRSS) in MiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
        return -1.0

    def open_fds(self) -> int:
        """Open file descriptors (entries of /proc/PID/fd)."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def cpu_seconds(self) -> float:
        """utime + stime of the whole process, in seconds."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class SuiteBroker(ProcStats, BrokerProcess):
    """BrokerProcess whose command is `headrace broker` from the installed
    package, or `broker_cmd` (a command prefix; the suite appends
    --data-dir and --listen, like the CLI takes them)."""

    def __init__(self, data_dir, *extra_args: str, broker_cmd: str | None = None):
        super().__init__(data_dir, *extra_args)
        self.broker_cmd = shlex.split(broker_cmd) if broker_cmd else None

    def command(self) -> list[str]:
        if self.broker_cmd is None:
            return super().command()
        return [*self.broker_cmd, "--data-dir", str(self.data_dir), "--listen", self.listen,
                *self.extra_args]

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid
