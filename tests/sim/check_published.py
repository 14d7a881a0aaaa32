#!/usr/bin/env python3
"""Independent checker for `tob-sim --ic --published FILE`.

Each line is `period node key value`: a value a correct node published for the IC instance of
that period (value: `0x..` hex bytes for majority keys, a decimal number for numeric keys, `-`
for a failed reduction). Comment lines start with `#`; `# correct nodes: 0 1 3` names the
correct nodes (without it, the nodes that appear in the file).

Verifies from the outside, without the simulator's code, that every correct node published
exactly the same (key, value) list in every period, and that every value is well-formed.
Exit 0 when that holds and the file has at least one publication.

    check_published.py FILE
"""
import re
import sys
from collections import defaultdict

VALUE = re.compile(r"^(-|0x([0-9a-f]{2})*|-?[0-9]+|-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?|-?inf|nan)$")


def main(path: str) -> int:
    correct: set[int] | None = None
    published: dict[int, dict[int, list[tuple[str, str]]]] = defaultdict(lambda: defaultdict(list))
    problems = 0
    lines = 0
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("# correct nodes:"):
                correct = {int(x) for x in line.split(":", 1)[1].split()}
                continue
            if line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 4 or not parts[0].isdigit() or not parts[1].isdigit():
                print(f"{path}:{lineno}: expected `period node key value`, got {line!r}")
                return 1
            period, node, key, value = int(parts[0]), int(parts[1]), parts[2], parts[3]
            if not VALUE.match(value):
                print(f"{path}:{lineno}: malformed value {value!r}")
                problems += 1
            if correct is not None and node not in correct:
                print(f"{path}:{lineno}: node {node} is not among the correct nodes {sorted(correct)}")
                problems += 1
            published[period][node].append((key, value))
            lines += 1
    nodes = sorted(correct) if correct is not None else sorted({n for p in published.values() for n in p})
    for period in sorted(published):
        lists = {n: sorted(published[period].get(n, [])) for n in nodes}
        first = nodes[0]
        for n in nodes[1:]:
            if lists[n] != lists[first]:
                only_a = sorted(set(lists[first]) - set(lists[n]))[:3]
                only_b = sorted(set(lists[n]) - set(lists[first]))[:3]
                print(f"period {period}: nodes {first} and {n} published different values: "
                      f"{only_a} vs {only_b}")
                problems += 1
    failed = sum(1 for p in published.values() for vs in p.values() for _, v in vs if v == "-")
    print(f"check_published: {len(nodes)} correct nodes, {len(published)} periods, {lines} publications "
          f"({failed} failed reductions), {problems} problems")
    return 0 if problems == 0 and lines > 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
