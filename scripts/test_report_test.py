#!/usr/bin/env python3
"""Tests of scripts/test_report.py on JUnit files shaped like ctest's: counts, skip reasons, and
the CI rule (a skip is a failure unless the CPU is the reason). Run by ctest (TestReport.*)."""
import os
import subprocess
import sys
import tempfile
import unittest

REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_report.py")


def case(name, status, out="", time="0.1"):
    skipped = '<skipped message="Skipped"/>' if status == "notrun" else ""
    failure = '<failure message="Failed"/>' if status == "fail" else ""
    return (f'<testcase name="{name}" classname="{name}" time="{time}" status="{status}">'
            f"{skipped}{failure}<system-out>{out}</system-out></testcase>")


def skip_output(name, reason):
    return (f"[ RUN      ] {name}\n/src/x_test.cc:12: Skipped\n{reason}\n\n"
            f"[  SKIPPED ] {name} (0 ms)\n")


ORACLE = "oracle unavailable: oracle setup: llama.cpp: building failed (see /root/x/build.log)"
CASES = [
    case("A.Passes", "run", "[ RUN      ] A.Passes\n[       OK ] A.Passes (1 ms)"),
    case("B.NeedsOracle", "notrun", skip_output("B.NeedsOracle", ORACLE)),
    case("C.NeedsOracleToo", "notrun",
         skip_output("C.NeedsOracleToo", ORACLE.replace("/root/x", "/tmp/y"))),
    case("D.NeedsAmx", "notrun", skip_output("D.NeedsAmx", "CPU lacks AMX-BF16 / AVX-512 BF16")),
    case("E.Fails", "fail", "[ RUN      ] E.Fails\n[  FAILED  ] E.Fails (1 ms)"),
]


def run(cases, *flags):
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="t">'
                + "".join(cases) + "</testsuite>\n")
    try:
        done = subprocess.run([sys.executable, REPORT, f.name, *flags], capture_output=True,
                              text=True)
    finally:
        os.unlink(f.name)
    return done.returncode, done.stdout


class TestReport(unittest.TestCase):
    def test_oracle_tests_are_listed_by_part_with_their_times(self):
        cases = [
            case("H.Live", "run", "[ RUN      ] H.Live\n[ oracle ] python\n[       OK ]", "12.5"),
            case("T.Tok", "run", "[ oracle ] python\n[ oracle ] tokenizers\n", "2.0"),
            case("A.Plain", "run", "[       OK ] A.Plain", "1.0"),
        ]
        status, out = run(cases)
        self.assertEqual(status, 0, out)
        self.assertIn("  python: 2 tests, 14.5 s in all", out)
        self.assertIn("  tokenizers: 1 tests, 2.0 s in all", out)
        lines = out.splitlines()
        first = lines.index("  python: 2 tests, 14.5 s in all")
        self.assertEqual(lines[first + 1].split(), ["12.5", "s", "H.Live"])
        self.assertEqual(lines[first + 2].split(), ["2.0", "s", "T.Tok"])
        self.assertNotIn("A.Plain", out)

    def test_outside_ci_every_skip_is_a_skip(self):
        status, out = run(CASES[:4])
        self.assertEqual(status, 0, out)
        self.assertEqual(out.splitlines()[-1], "tests: 1 passed, 0 failed, 3 skipped")

    def test_in_ci_only_cpu_skips_are_accepted(self):
        status, out = run(CASES[:4], "--ci")
        self.assertEqual(status, 1, out)
        self.assertEqual(out.splitlines()[-1], "tests: 1 passed, 2 failed, 1 skipped")
        self.assertIn("a failure in CI", out)

    def test_reasons_that_differ_in_a_path_are_one_group(self):
        _, out = run(CASES[:4])
        self.assertIn("     2  oracle unavailable: oracle setup: llama.cpp: building failed "
                      "(see <path>)", out)
        self.assertIn("     1  CPU lacks AMX-BF16 / AVX-512 BF16", out)

    def test_a_failed_test_is_named_and_fails_the_report(self):
        status, out = run(CASES, "--ci")
        self.assertEqual(status, 1)
        self.assertIn("failed: E.Fails", out)
        self.assertEqual(out.splitlines()[-1], "tests: 1 passed, 3 failed, 1 skipped")


if __name__ == "__main__":
    unittest.main()
