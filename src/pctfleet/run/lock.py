"""One run changes a container at a time: a lock held inside the container.

Reading facts needs no lock, so a converged container still costs one call.
Before its first change a run takes the lock (a directory created atomically
in /run/pctfleet, with a holder file: run id, lease expiry, the pid of the
script working under it, and who). Every change script renews the lease; the
end of the run releases it. A holder whose lease expired and whose script is
gone (a run killed with SIGKILL, a controller that lost its network) is stale:
the next run takes the lock over, by renaming the directory away atomically.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

from pctfleet.modules.base import q
from pctfleet.transport.base import RunResult, Target

LOCK_DIR = "/run/pctfleet/run.lock"
BUSY = 75  # EX_TEMPFAIL: another live run holds the lock

SHELL = r"""
pctfleet_lock() {  # run_id lease_seconds who
  d=@DIR@
  mkdir -p "${d%/*}"
  if ! mkdir "$d" 2>/dev/null; then
    h_run=; h_exp=0; h_pid=0; h_who=
    read -r h_run h_exp h_pid h_who < "$d/holder" 2>/dev/null
    if [ "$h_run" != "$1" ]; then
      alive=; [ "${h_pid:-0}" -gt 1 ] 2>/dev/null && kill -0 "$h_pid" 2>/dev/null && alive=1
      if [ -n "$alive" ] || [ "${h_exp:-0}" -gt "$(date +%s)" ]; then
        echo "pctfleet-lock-busy run $h_run by $h_who (lease until $h_exp, pid $h_pid)" >&2
        exit 75
      fi
      mv "$d" "$d.stale.$$" 2>/dev/null && rm -rf "$d.stale.$$"
      if ! mkdir "$d" 2>/dev/null; then
        echo "pctfleet-lock-busy run (taken over meanwhile)" >&2; exit 75
      fi
      echo "took over the stale lock of run $h_run by $h_who" >&2
    fi
  fi
  pctfleet_lease "$1" "$2" "$$" "$3"
}
pctfleet_lease() {  # run_id lease_seconds pid who
  echo "$1 $(( $(date +%s) + $2 )) $3 $4" > "@DIR@/holder.tmp"
  mv -f "@DIR@/holder.tmp" "@DIR@/holder"
}
""".replace("@DIR@", LOCK_DIR)

RELEASE = r"""d=@DIR@
h_run=; read -r h_run _ < "$d/holder" 2>/dev/null
[ "$h_run" = "$1" ] && rm -rf "$d"
true
""".replace("@DIR@", LOCK_DIR)


class LockTimeout(Exception):
    """Another run kept the container's lock longer than we were willing to wait."""


@dataclass
class RunLock:
    target: Target
    run_id: str
    lease: float = 60.0  # how long a holder between two calls keeps the lock
    wait: float = 300.0  # how long to wait for another run's lock
    held: bool = False

    @property
    def who(self) -> str:
        return f"{socket.gethostname()}"

    def prefix(self) -> str:
        """Sh that takes or renews the lock before a change script (exits 75 when busy)."""
        return SHELL + f"pctfleet_lock {q(self.run_id)} {int(self.lease)} {q(self.who)}\n"

    def wrap(self, script: str) -> str:
        """The change script under the lock; the lease restarts when it ends, however it ends."""
        renew = f"pctfleet_lease {q(self.run_id)} {int(self.lease)} 0 {q(self.who)}"
        return f"{self.prefix()}(\n{script}\n)\nrc=$?\n{renew}\nexit $rc\n"

    def acquire(self) -> bool:
        """Take the lock, waiting for another run if needed; True when we had to wait."""
        waited, deadline, pause = False, time.monotonic() + self.wait, 0.5
        while True:
            result = self.target.run(["/bin/sh", "-c", self.prefix()], stdin=b"")
            if not busy(result):
                self.held = True
                return waited
            if time.monotonic() > deadline:
                raise LockTimeout(holder(result))
            waited = True
            time.sleep(pause)
            pause = min(pause * 2, 5.0)

    def release(self) -> None:
        if self.held:
            self.target.run(["/bin/sh", "-c", RELEASE, "pctfleet-unlock", self.run_id], stdin=b"")
            self.held = False


def busy(result: RunResult) -> bool:
    return result.exit_code == BUSY and b"pctfleet-lock-busy" in result.stderr


def holder(result: RunResult) -> str:
    for line in result.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("pctfleet-lock-busy"):
            return "container is locked by " + line.removeprefix("pctfleet-lock-busy ").strip()
    return "container is locked by another run"
