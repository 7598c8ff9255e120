#!/usr/bin/env python3
"""tools/ctest_costs.py end to end: a scratch CTest project of three tests
named with spaces (as doctest's cases are), declared shortest first, runs
them longest first once the costs the tool wrote from a JUnit report are
included; a name the project lacks is skipped, and a report that is not XML
is refused with its name."""
import argparse
import re
import subprocess
import sys
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--tool", required=True)
parser.add_argument("--scratch", required=True, type=Path)
args = parser.parse_args()
source, build = args.scratch / "source", args.scratch / "build"
source.mkdir(parents=True, exist_ok=True)
names = ["a quick one", "a middling one", "the long one, with \"quotes\""]
# Declared in a CTest script, as doctest_discover_tests declares its cases.
(source / "discovered.cmake").write_text("".join(f"add_test([==[{n}]==] true)\n" for n in names))
(source / "CMakeLists.txt").write_text("""cmake_minimum_required(VERSION 3.16)
project(costs NONE)
enable_testing()
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${CMAKE_CURRENT_SOURCE_DIR}/discovered.cmake
                                                         ${CMAKE_CURRENT_BINARY_DIR}/measured_costs.cmake)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/measured_costs.cmake "")
""")
subprocess.run(["cmake", "-S", source, "-B", build], check=True, capture_output=True)

junit = args.scratch / "junit.xml"
cases = [("a quick one", 0.5), ("a middling one", 3.0), ('the long one, with "quotes"', 40.0), ("not in the project", 99)]
junit.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="x">\n' + "".join(
    f'<testcase name="{n.replace(chr(34), "&quot;")}" classname="x" time="{t}" status="run"/>\n' for n, t in cases)
    + "</testsuite>\n")
subprocess.run([sys.executable, args.tool, junit, build / "measured_costs.cmake"], check=True)
run = subprocess.run(["ctest", "--test-dir", build, "-j1"], capture_output=True, text=True)
if run.returncode != 0:
    sys.exit(f"ctest failed with the measured costs included:\n{run.stdout}{run.stderr}")
started = re.findall(r"Start +\d+: (.*)", run.stdout)
expected = list(reversed(names))
if started != expected:
    sys.exit(f"expected the longest first, {expected}; ctest started {started}")

bad = args.scratch / "not_junit.xml"
bad.write_text("this is no XML")
refused = subprocess.run([sys.executable, args.tool, bad, build / "unused.cmake"], capture_output=True, text=True)
if refused.returncode == 0 or str(bad) not in refused.stderr:
    sys.exit(f"a report that is not XML must be refused with its name; got {refused.returncode}: {refused.stderr}")
print("ctest_costs: longest first, unknown names skipped, a bad report refused")
