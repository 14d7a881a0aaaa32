"""What the comparison needs of a system (perf/compare/README.md "Systems"): prepare it once,
start its members in the namespaces, name the command of its benchmark client on each node, say
who leads, kill a member, stop everything. compare.py runs the clients and the workloads; the
drivers (sys_tob.py, sys_cpg.py, sys_etcd.py) know only their system."""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path


class System(ABC):
    name: str = ""
    clock: str = "realtime"      # the clock of the client's instants: "realtime" or "tai"
    members: tuple[int, ...] = (0, 1, 2, 3)  # the nodes that run a member (clients run on all 4)
    leader_role: str = "leader"  # what leader() names: "coordinator", "leader", "ring representative"

    @abstractmethod
    def prepare(self, work: Path) -> None:
        """Install and build what the system needs (idempotent); raise procs.Unavailable."""

    @abstractmethod
    def start(self, run: Path) -> None:
        """Start the members in cmp-nK, logs under run; return once the group is formed (every
        member in it), RuntimeError after 60 s."""

    @abstractmethod
    def client_cmd(self, k: int, common: list[str]) -> list[str]:
        """The full command (with `ip netns exec cmp-nK`) of node k's benchmark client, given the
        contract's common options."""

    @abstractmethod
    def leader(self) -> int:
        """The member that holds the leader role now."""

    @abstractmethod
    def kill(self, k: int) -> None:
        """kill -9 of member k's server process(es) (not its client)."""

    @abstractmethod
    def stop(self) -> None:
        """Stop every process it started, by PID; leave no state behind for the next start."""

    def write_events(self, k: int, path: Path) -> None:
        """After a run: make sure node k's contract events file exists at path. The default: the
        client wrote it (--events); a system whose events come from elsewhere converts them."""

    def run_facts(self) -> dict:
        """After a run, before stop(): figures of the run the system itself counted."""
        return {}

    def info(self) -> dict:
        """Facts of this run to report beside the results (versions, settings, counters)."""
        return {}
