#!/usr/bin/python3
"""Runs one test program under mpirun with libbagua-pmpi (through bin/bagua-pmpi)
and checks what the interposer reported (doc/pmpi.md):

  - the program passed its own checks (exit status 0),
  - every rank printed the interposer's summary line, and the number of calls
    it routed equals the number the program expected ("pmpi-test: rank R
    expects routed N" lines), so routing decisions are checked, not assumed,
  - bagua's own setup calls went through the re-entry guard (its counter is
    above 0 whenever something was routed), never recursing into bagua.

With --stack TOOL, the PMPI tool TOOL (test/pmpi/count_tool.c) is preloaded
after the interposer and must have seen exactly the calls the interposer
passed through. With --expect-failure TEXT the job must instead fail and print
TEXT.

usage: run_pmpi.py --launcher bin/bagua-pmpi --lib LIB --np N --mode M [--min-count C]
                   [--stack TOOL] [--expect-failure TEXT] -- PROGRAM [ARGS...]
"""
import argparse
import re
import subprocess
import sys

SUMMARY = re.compile(
    r"bagua-pmpi: rank (\d+): mode (\w+), min count (\d+): routed (\d+) calls .*"
    r"passed (\d+) calls .*bagua's own calls (\d+)")
EXPECTED = re.compile(r"pmpi-test: rank (\d+) expects routed (\d+)")
TOOL = re.compile(r"pmpi-count-tool: rank (\d+) saw (\d+)")


def run(args):
    command = ["mpirun", "-np", str(args.np)]
    if args.stack:
        command += ["env", "LD_PRELOAD=" + args.stack]
    command += [args.launcher, "--lib", args.lib, "--mode", args.mode, "--verbose"]
    if args.min_count is not None:
        command += ["--min-count", str(args.min_count)]
    command += ["--"] + args.program
    print("run_pmpi:", " ".join(command), flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=240)
    print(done.stdout, flush=True)
    return done


def check_failure(done, text):
    if done.returncode == 0:
        return "the job succeeded; expected it to fail with: " + text
    if text not in done.stdout:
        return "the job failed without the message: " + text
    return None


def check_summaries(done, np, stacked):
    if done.returncode != 0:
        return "the program failed (exit status %d)" % done.returncode
    summaries = {int(m[1]): m for m in SUMMARY.finditer(done.stdout)}
    expected = {int(m[1]): int(m[2]) for m in EXPECTED.finditer(done.stdout)}
    if sorted(summaries) != list(range(np)) or sorted(expected) != list(range(np)):
        return "missing summary or expectation lines (ranks %s / %s)" % (sorted(summaries),
                                                                        sorted(expected))
    tool = {int(m[1]): int(m[2]) for m in TOOL.finditer(done.stdout)}
    for rank in range(np):
        routed, passed, inner = (int(summaries[rank][i]) for i in (4, 5, 6))
        if routed != expected[rank]:
            return "rank %d: routed %d calls, the program expected %d" % (rank, routed,
                                                                         expected[rank])
        if routed > 0 and inner == 0:
            return "rank %d: bagua's own calls did not pass the re-entry guard" % rank
        if stacked and tool.get(rank) != passed:
            return "rank %d: the stacked tool saw %s calls, the interposer passed %d" % (
                rank, tool.get(rank), passed)
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--mode", required=True)
    parser.add_argument("--min-count", type=int)
    parser.add_argument("--stack")
    parser.add_argument("--expect-failure")
    parser.add_argument("program", nargs="+")
    args = parser.parse_args()
    done = run(args)
    if args.expect_failure:
        problem = check_failure(done, args.expect_failure)
    else:
        problem = check_summaries(done, args.np, args.stack is not None)
    if problem:
        print("run_pmpi: FAIL:", problem)
        return 1
    print("run_pmpi: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
