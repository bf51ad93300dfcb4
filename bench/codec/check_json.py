#!/usr/bin/env python3
"""Checks that bagua-bench-codec honours Google Benchmark's output flags:
--benchmark_format=json on stdout and --benchmark_out to a file both hold
valid JSON (nothing printed before it), with the cpu path in the context and
the x_memcpy, traffic and x_stream counters on every row.
  check_json.py <bagua-bench-codec> <scratch dir>"""
import json
import os
import subprocess
import sys

ROWS = "^BM_(memcpy|minmax_encode/q8/avx2:1)"
COUNTERS = ("x_memcpy", "traffic", "x_stream")


def check(doc, where):
    if "cpu_path" not in doc["context"]:
        sys.exit(f"{where}: no cpu_path in the context")
    rows = doc["benchmarks"]
    if len(rows) < 2:
        sys.exit(f"{where}: expected the memcpy and q8 encode rows, got {len(rows)}")
    for row in rows:
        for c in COUNTERS:
            if not row.get(c, 0) > 0:
                sys.exit(f"{where}: row {row['name']} lacks a positive {c}")


def main():
    bench, scratch = sys.argv[1], sys.argv[2]
    out_file = os.path.join(scratch, "bench-codec-out.json")
    args = [bench, "--benchmark_filter=" + ROWS, "--benchmark_min_time=0.01"]
    stdout = subprocess.run(args + ["--benchmark_format=json"], check=True,
                            capture_output=True, text=True).stdout
    check(json.loads(stdout), "--benchmark_format=json")
    subprocess.run(args + ["--benchmark_out=" + out_file], check=True, capture_output=True)
    with open(out_file) as f:
        check(json.load(f), "--benchmark_out")
    print("json output ok")


if __name__ == "__main__":
    main()
