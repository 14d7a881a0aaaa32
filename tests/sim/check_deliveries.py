#!/usr/bin/env python3
"""Independent checker for `tob-sim --deliveries FILE` (lines `node cycle sender msg_id`).

Verifies from the outside, without the simulator's code: integrity (no node delivers a
message twice), FIFO (per node and sender, msg_ids increase), and total order (any two nodes
deliver their common messages in the same relative order). Exit 0 when all hold.
`--no-fifo` skips FIFO: the otfp engine proposes a message left out of a decided instance
again, after newer ones, and promises agreement, total order and exactly-once, not FIFO.

    check_deliveries.py [--no-fifo] FILE
"""
import sys
from collections import defaultdict


def main(path: str, fifo: bool = True) -> int:
    seqs: dict[int, list[tuple[int, int]]] = defaultdict(list)
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 4 or not all(p.isdigit() for p in parts):
                print(f"{path}:{lineno}: expected 4 decimal fields, got {line!r}")
                return 1
            node, _cycle, sender, msg_id = map(int, parts)
            seqs[node].append((sender, msg_id))
    problems = 0
    for node, seq in seqs.items():
        if len(set(seq)) != len(seq):
            print(f"node {node}: a message delivered twice")
            problems += 1
        last: dict[int, int] = {}
        for sender, msg_id in seq:
            if fifo and msg_id <= last.get(sender, -1):
                print(f"node {node}: FIFO broken for sender {sender} at {msg_id}")
                problems += 1
            last[sender] = msg_id
    nodes = sorted(seqs)
    for i, a in enumerate(nodes):
        pos_a = {m: k for k, m in enumerate(seqs[a])}
        for b in nodes[i + 1:]:
            common = [pos_a[m] for m in seqs[b] if m in pos_a]
            if any(x >= y for x, y in zip(common, common[1:])):
                print(f"nodes {a} and {b}: common messages in different order")
                problems += 1
    total = sum(len(s) for s in seqs.values())
    print(f"check_deliveries: {len(seqs)} nodes, {total} deliveries, {problems} problems")
    return 0 if problems == 0 and total > 0 else 1


if __name__ == "__main__":
    args = sys.argv[1:]
    no_fifo = "--no-fifo" in args
    files = [a for a in args if a != "--no-fifo"]
    if len(files) != 1:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(files[0], fifo=not no_fifo))
