#!/usr/bin/env python3
"""Reads ctest's JUnit file and prints what the suite did: the tests that used an oracle of
tools/oracle/setup.sh (they print "[ oracle ] PART"), grouped by oracle with their times, every
failed test, and the skipped tests grouped by the reason each one gave (GTEST_SKIP's message). In CI (--ci) a skip
counts as a failure unless its reason is the machine's CPU (a kernel path this CPU cannot run):
there every oracle and fixture is installed, so any other skip means one is missing.

usage: test_report.py CTEST_JUNIT.xml [--ci]
Prints the closing line "tests: N passed, N failed, N skipped" last; exits 1 when anything failed.
"""
import collections
import re
import sys
import xml.etree.ElementTree as ET

# The one kind of skip CI accepts: the test names the CPU feature it needs and this CPU lacks.
HARDWARE_SKIP = re.compile(r"^CPU (lacks|has no) ")
# What util/testing_oracles.h prints the first time a test process asks for an oracle part.
ORACLE_MARK = re.compile(r"^\[ oracle \] (\S+)$", re.M)


def skip_reason(output: str) -> str:
    """The message GTEST_SKIP printed: the lines after '...: Skipped' up to gtest's own output."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.endswith(": Skipped") or line.endswith(" Skipped"):
            reason = []
            for follow in lines[i + 1:]:
                if follow.startswith("[  ") or follow.startswith("[ "):
                    break
                reason.append(follow.strip())
            text = " ".join(r for r in reason if r)
            if text:
                return text
    return "(no reason given)"


def shorten(reason: str) -> str:
    """Groups reasons that differ only in a file path."""
    return re.sub(r"(?<![\w-])/[^\s,:;()\"']+", "<path>", reason)


def main() -> int:
    path = sys.argv[1]
    ci = "--ci" in sys.argv[2:]
    cases = ET.parse(path).getroot().iter("testcase")
    passed, failed, skipped = [], [], []
    by_oracle = collections.defaultdict(list)  # part -> [(seconds, test)]
    for case in cases:
        name = case.get("name")
        status = case.get("status", "")
        out = "".join(e.text or "" for e in case.iter("system-out"))
        for part in sorted(set(ORACLE_MARK.findall(out))):
            by_oracle[part].append((float(case.get("time") or 0), name))
        if case.find("failure") is not None or status == "fail":
            failed.append(name)
        elif case.find("skipped") is not None or status in ("skipped", "notrun", "disabled"):
            skipped.append((name, skip_reason(out)))
        else:
            passed.append(name)
    if by_oracle:
        print("tests that used an oracle (tools/oracle/setup.sh part: tests, seconds each):")
        for part, tests in sorted(by_oracle.items()):
            print(f"  {part}: {len(tests)} tests, {sum(t for t, _ in tests):.1f} s in all")
            for seconds, name in sorted(tests, reverse=True):
                print(f"    {seconds:7.1f} s  {name}")
    by_reason = collections.defaultdict(list)
    for name, reason in skipped:
        by_reason[shorten(reason)].append(name)
    refused = []
    if skipped:
        print(f"skipped tests by reason ({len(skipped)}):")
        for reason, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            accepted = not ci or HARDWARE_SKIP.match(reason)
            mark = "" if accepted else "  <- a failure in CI: an oracle or fixture is missing"
            print(f"  {len(names):4d}  {reason}{mark}")
            for n in names[:3]:
                print(f"          {n}")
            if len(names) > 3:
                print(f"          ... and {len(names) - 3} more")
            if not accepted:
                refused.extend(names)
    for name in failed:
        print(f"failed: {name}")
    n_failed = len(failed) + len(refused)
    n_skipped = len(skipped) - len(refused)
    print(f"tests: {len(passed)} passed, {n_failed} failed, {n_skipped} skipped")
    return 1 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
