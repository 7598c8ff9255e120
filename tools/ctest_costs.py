#!/usr/bin/env python3
"""Writes a CTest script that gives each test its measured time as its COST.

    ctest_costs.py JUNIT_XML OUT.cmake

CTest starts the costliest tests first when it runs in parallel, so that no
long test starts last and runs alone on one core at the end. It learns the
costs from its own Testing/Temporary/CTestCostData.txt, but that file splits
each line at spaces, so a test whose name has a space (every doctest case)
never gets its cost back and runs in declaration order. This reads the times
of a run from CTest's JUnit report (ctest --output-junit) instead and sets
them as the COST property; tests/CMakeLists.txt includes OUT.cmake, when it
exists, after the tests are discovered. A test of the report that the
including directory lacks is set nothing: set_tests_properties skips a name
CTest does not know.
"""
import sys
import xml.etree.ElementTree as ElementTree


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    junit, out = sys.argv[1], sys.argv[2]
    try:
        cases = ElementTree.parse(junit).getroot().iter("testcase")
    except (OSError, ElementTree.ParseError) as error:
        print(f"ctest_costs.py: cannot read the JUnit report {junit}: {error}", file=sys.stderr)
        return 1
    lines = ["# Written by tools/ctest_costs.py: each test's time in a measured run, as its COST."]
    for case in cases:
        name, seconds = case.get("name"), case.get("time")
        if not name or seconds is None or "]==]" in name:
            continue
        lines.append(f"set_tests_properties([==[{name}]==] PROPERTIES COST {float(seconds):g})")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
