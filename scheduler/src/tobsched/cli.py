"""`tob-schedule`: solve, verify, generate, export. Exit codes: 0 ok, 1 the verifier found
violations, 2 bad input (the message names the item; nothing is written)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from tobsched.errors import InputError
from tobsched.export import Timing, ini_section, taprio_commands
from tobsched.generate import MODELS, TopologyParams, generate
from tobsched.highs_model import SolveOptions
from tobsched.jsonio import read_json, write_json_atomic, write_text_atomic
from tobsched.network import load_network, network_to_obj
from tobsched.solve import FORMULATIONS, solve
from tobsched.verify import verify_schedule

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tob-schedule",
        description="Routes and time slots for time-triggered flows (TSSDN, seed 003) for dpdk-tob.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("solve", help="compute a schedule")
    s.add_argument("--network", required=True, help="network JSON")
    s.add_argument("--formulation", required=True, choices=FORMULATIONS)
    s.add_argument("--slots", type=int, help="number of slots (overrides the file's 'slots')")
    s.add_argument("--time-limit", type=float, default=60.0, help="seconds for the whole solve (default 60)")
    s.add_argument("--mip-gap", type=float, default=0.0, help="relative MIP gap at which to stop (default 0)")
    s.add_argument("--threads", type=int, default=1, help="HiGHS threads (default 1)")
    s.add_argument("--out", required=True, help="schedule JSON to write")
    s.add_argument("-v", "--verbose", action="store_true",
                   help="print each step of the solve on stderr as it is taken, with the time since the start")

    v = sub.add_parser("verify", help="check a schedule against its network")
    v.add_argument("--network", required=True)
    v.add_argument("--schedule", required=True)

    g = sub.add_parser("generate", help="random topology and flows (seeded)")
    g.add_argument("--model", choices=MODELS, default="er")
    g.add_argument("--hosts", type=int, default=24)
    g.add_argument("--switches", type=int, default=6)
    g.add_argument("--switch-links", type=int, help="er: switch-switch links (default 2 x switches)")
    g.add_argument("--degree", type=int, default=3, help="rrg: switch degree")
    g.add_argument("--ba-m", type=int, default=2, help="ba: links per new switch")
    g.add_argument("--waxman-alpha", type=float, default=0.4, help="waxman: link probability scale")
    g.add_argument("--waxman-beta", type=float, default=0.4, help="waxman: distance scale")
    g.add_argument("--links", type=int, help="total links; extra host links are added to reach it")
    g.add_argument("--flows", type=int, default=50)
    g.add_argument("--slots", type=int, default=5)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", required=True)

    e = sub.add_parser("export", help="dpdk-tob INI section and tc taprio commands")
    e.add_argument("--network", required=True)
    e.add_argument("--schedule", required=True)
    e.add_argument("--slot-ns", type=int, required=True, help="slot length in ns")
    e.add_argument("--cycle-ns", type=int, help="cycle (base period) in ns (default slots x slot)")
    e.add_argument("--base-time-ns", type=int, default=0, help="taprio base-time (TAI ns)")
    e.add_argument("--dev", default="eth0", help="interface name in the tc commands")
    e.add_argument("--ini", help="file for the dpdk-tob INI section")
    e.add_argument("--taprio", help="file for the tc taprio commands")
    return p


def _check_out_dir(path: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise InputError(f"{path}: directory {d} does not exist")


def _cmd_solve(a: argparse.Namespace) -> int:
    if a.time_limit <= 0:
        raise InputError(f"--time-limit must be > 0, got {a.time_limit}")
    if a.mip_gap < 0:
        raise InputError(f"--mip-gap must be >= 0, got {a.mip_gap}")
    if a.threads < 1:
        raise InputError(f"--threads must be >= 1, got {a.threads}")
    _check_out_dir(a.out)
    net = load_network(a.network, a.slots)
    t0 = time.perf_counter()

    def report(step: str) -> None:
        print(f"tob-schedule solve: {time.perf_counter() - t0:8.3f} s  {step}", file=sys.stderr, flush=True)

    sched = solve(net, a.formulation, SolveOptions(a.time_limit, a.mip_gap, a.threads, report if a.verbose else None))
    write_json_atomic(a.out, sched.to_obj(net))
    bound = f", upper bound {sched.upper_bound}" if sched.upper_bound is not None else ""
    print(
        f"{a.formulation}: {sched.scheduled} of {len(net.flows)} flows in {net.slots} slots"
        f"{bound}, proven optimal: {str(sched.proven_optimal).lower()}, {sched.solve_s:.3f} s"
    )
    return EXIT_OK


def _load_pair(network: str, schedule: str) -> tuple[dict[str, object], object]:
    net = load_network(network, slots_override=None if _has_slots(network) else 1)
    return network_to_obj(net), read_json(schedule)


def _has_slots(path: str) -> bool:
    obj = read_json(path)
    return isinstance(obj, dict) and "slots" in obj


def _cmd_verify(a: argparse.Namespace) -> int:
    net_obj, sched_obj = _load_pair(a.network, a.schedule)
    problems = verify_schedule(net_obj, sched_obj)
    if problems:
        for msg in problems:
            print(f"violation: {msg}")
        print(f"{a.schedule}: INVALID ({len(problems)} violation(s))")
        return EXIT_INVALID
    assert isinstance(sched_obj, dict)
    print(f"{a.schedule}: valid, {sched_obj['scheduled']} flows scheduled in {sched_obj['slots']} slots")
    return EXIT_OK


def _cmd_generate(a: argparse.Namespace) -> int:
    _check_out_dir(a.out)
    params = TopologyParams(
        model=a.model,
        hosts=a.hosts,
        switches=a.switches,
        switch_links=a.switch_links,
        degree=a.degree,
        ba_m=a.ba_m,
        waxman_alpha=a.waxman_alpha,
        waxman_beta=a.waxman_beta,
        links_total=a.links,
    )
    obj = generate(params, a.flows, a.slots, a.seed)
    write_json_atomic(a.out, obj)
    print(f"{a.out}: {a.model}, {a.hosts} hosts, {a.switches} switches, {len(obj['links'])} links, {a.flows} flows")
    return EXIT_OK


def _cmd_export(a: argparse.Namespace) -> int:
    if not a.ini and not a.taprio:
        raise InputError("give --ini FILE and/or --taprio FILE")
    for path in (a.ini, a.taprio):
        if path:
            _check_out_dir(path)
    net_obj, sched_obj = _load_pair(a.network, a.schedule)
    problems = verify_schedule(net_obj, sched_obj)
    if problems:
        raise InputError(f"{a.schedule}: not a valid schedule for {a.network}: {problems[0]}")
    assert isinstance(sched_obj, dict)
    timing = Timing.make(int(sched_obj["slots"]), a.slot_ns, a.cycle_ns, a.base_time_ns)
    # Build both texts before writing either, so an error writes nothing.
    ini = ini_section(sched_obj, timing, a.network, a.schedule) if a.ini else None
    tc = taprio_commands(sched_obj, timing, a.dev, a.schedule) if a.taprio else None
    if ini is not None:
        write_text_atomic(a.ini, ini)
        print(f"{a.ini}: [timing] and {len(sched_obj['flows'])} [node.K] sections")
    if tc is not None:
        write_text_atomic(a.taprio, tc)
        print(f"{a.taprio}: taprio commands")
    return EXIT_OK


def _quiet_highs_banner() -> None:
    """HiGHS prints its banner on stdout when the process creates its first solver, before any
    option can turn output off; the CLI's stdout is its result line, so that first solver is
    created with stdout pointed at /dev/null."""
    import ctypes

    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        highspy.Highs()  # type: ignore[no-untyped-call]
        ctypes.CDLL(None).fflush(None)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "solve":
        _quiet_highs_banner()
    handlers = {"solve": _cmd_solve, "verify": _cmd_verify, "generate": _cmd_generate, "export": _cmd_export}
    try:
        return handlers[args.command](args)
    except InputError as e:
        print(f"tob-schedule {args.command}: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
