"""The scheduling input: hosts, switches, full-duplex links, flows and the number of slots.

Seed 003 §5.2: the topology is a graph G = (V, E) with V = S u H; each undirected link is two
directed links (full duplex), and flows run from a source host to a destination host.
Validation names the offending item so a person can fix the file (exit code 2 in the CLI).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tobsched.errors import InputError
from tobsched.jsonio import read_json

Arc = tuple[str, str]


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str


@dataclass
class Network:
    hosts: list[str]
    switches: list[str]
    links: list[tuple[str, str]]
    flows: list[Flow]
    slots: int
    adjacency: dict[str, list[str]] = field(default_factory=dict)
    host_set: frozenset[str] = frozenset()

    @property
    def arcs(self) -> list[Arc]:
        """Directed links, both directions of every link, in a fixed order."""
        out: list[Arc] = []
        for u, v in self.links:
            out.append((u, v))
            out.append((v, u))
        return out

    def is_host(self, node: str) -> bool:
        return node in self.host_set


def _require_list(obj: dict[str, Any], key: str, required: bool = True) -> list[Any]:
    if key not in obj:
        if required:
            raise InputError(f"missing key '{key}'")
        return []
    value = obj[key]
    if not isinstance(value, list):
        raise InputError(f"'{key}' must be a list, got {type(value).__name__}")
    return value


def _parse_slots(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} must be an integer >= 1, got {value!r}")
    if value < 1:
        raise InputError(f"{what} must be an integer >= 1, got {value}")
    return value


def network_from_obj(obj: Any, slots_override: int | None = None) -> Network:
    """Validates a decoded network JSON document; raises InputError naming the bad item."""
    if not isinstance(obj, dict):
        raise InputError("network must be a JSON object")
    hosts_raw = _require_list(obj, "hosts")
    switches_raw = _require_list(obj, "switches", required=False)
    links_raw = _require_list(obj, "links")
    flows_raw = _require_list(obj, "flows")

    names: set[str] = set()
    hosts: list[str] = []
    switches: list[str] = []
    for kind, raw, dest in (("host", hosts_raw, hosts), ("switch", switches_raw, switches)):
        for i, name in enumerate(raw):
            if not isinstance(name, str) or not name:
                raise InputError(f"{kind} {i}: name must be a non-empty string, got {name!r}")
            if name in names:
                raise InputError(f"duplicate node name '{name}'")
            names.add(name)
            dest.append(name)
    if not hosts:
        raise InputError("'hosts' is empty")

    adjacency: dict[str, list[str]] = {n: [] for n in hosts + switches}
    links: list[tuple[str, str]] = []
    seen_links: set[frozenset[str]] = set()
    for i, link in enumerate(links_raw):
        if not isinstance(link, list) or len(link) != 2:
            raise InputError(f"link {i}: must be a list of two node names, got {link!r}")
        u, v = link
        for end in (u, v):
            if not isinstance(end, str) or end not in names:
                raise InputError(f"link {i} {link!r}: unknown node {end!r}")
        if u == v:
            raise InputError(f"link {i} {link!r}: a link must join two different nodes")
        key = frozenset((u, v))
        if key in seen_links:
            raise InputError(f"link {i} {link!r}: duplicate link between '{u}' and '{v}'")
        seen_links.add(key)
        links.append((u, v))
        adjacency[u].append(v)
        adjacency[v].append(u)

    host_set = frozenset(hosts)
    flows: list[Flow] = []
    for i, f in enumerate(flows_raw):
        if not isinstance(f, dict) or "src" not in f or "dst" not in f:
            raise InputError(f"flow {i}: must be an object with 'src' and 'dst', got {f!r}")
        src, dst = f["src"], f["dst"]
        for role, end in (("src", src), ("dst", dst)):
            if not isinstance(end, str) or end not in names:
                raise InputError(f"flow {i}: unknown {role} node {end!r}")
            if end not in host_set:
                raise InputError(f"flow {i}: {role} '{end}' is a switch; flows run between hosts")
        if src == dst:
            raise InputError(f"flow {i}: src and dst are both '{src}'")
        flows.append(Flow(src, dst))

    if slots_override is not None:
        slots = _parse_slots(slots_override, "--slots")
    elif "slots" in obj:
        slots = _parse_slots(obj["slots"], "'slots'")
    else:
        raise InputError("missing key 'slots' (or give --slots)")

    net = Network(hosts, switches, links, flows, slots, adjacency, host_set)
    _check_connected_flows(net)
    return net


def _check_connected_flows(net: Network) -> None:
    """Every flow needs a path whose inner nodes are switches (hosts do not forward)."""
    reach_cache: dict[str, set[str]] = {}
    for i, f in enumerate(net.flows):
        if f.src not in reach_cache:
            seen = {f.src}
            hosts_reached: set[str] = set()
            queue = deque([f.src])
            while queue:
                n = queue.popleft()
                for m in net.adjacency[n]:
                    if m in net.host_set:
                        hosts_reached.add(m)
                    elif m not in seen:
                        seen.add(m)
                        queue.append(m)
            reach_cache[f.src] = hosts_reached
        if f.dst not in reach_cache[f.src]:
            raise InputError(
                f"flow {i} ({f.src} -> {f.dst}): hosts are not connected "
                "(no path through switches)"
            )


def load_network(path: str, slots_override: int | None = None) -> Network:
    obj = read_json(path)
    try:
        return network_from_obj(obj, slots_override)
    except InputError as e:
        raise InputError(f"{path}: {e}") from None


def network_to_obj(net: Network) -> dict[str, Any]:
    return {
        "hosts": list(net.hosts),
        "switches": list(net.switches),
        "links": [[u, v] for u, v in net.links],
        "flows": [{"src": f.src, "dst": f.dst} for f in net.flows],
        "slots": net.slots,
    }
