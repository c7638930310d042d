#!/usr/bin/env python3
"""report.py's issue-17 goal check on synthetic clients results: met, missed, refused for
load, and incomplete plans. Writes only to a temporary directory.

    python3 bench/scripts/test_report.py
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import report  # noqa: E402

CALLERS = (1, 16, 64, 256)


def clients_result(load_start, load_end, redline_factor, quick=False, rounds=3,
                   modes=("standalone", "cluster"), others=0.05):
    """A full clients result where redline does `redline_factor` x the best Rust peer."""
    runs = []
    for mode in modes:
        for op in ("get", "set", "mixed"):
            for callers in CALLERS:
                for r in range(rounds):
                    for client, ops in (("redline", 100_000 * redline_factor),
                                        ("redis-rs", 100_000), ("fred", 90_000),
                                        ("rueidis", 80_000), ("go-redis", 50_000)):
                        runs.append({"client": client, "op": op, "callers": callers,
                                     "mode": mode, "round": r, "ops_per_sec": ops,
                                     "p99_us": 500.0, "loadavg": load_end,
                                     "others_cpu": others * r})
    return {"section": "clients", "quick": quick, "started": "2099-01-01T00:00:00Z",
            "seconds": 1.0, "runs": runs, "notes": [],
            "flags": {"rounds": rounds, "duration_secs": 3.0, "warmup_secs": 1.0,
                      "value_size": 64, "keys": 10000, "server": "redis-server 7.0",
                      "cluster_nodes": "3 masters, no replicas"},
            "machine": {"cores": 2, "loadavg_start": load_start, "loadavg_end": load_end}}


class GoalCheck(unittest.TestCase):
    def render(self, data):
        with tempfile.TemporaryDirectory() as d:
            report.RESULTS, report.REPORT = d, os.path.join(d, "REPORT.md")
            with open(os.path.join(d, "clients.json"), "w") as f:
                json.dump(data, f)
            report.write()
            with open(report.REPORT) as f:
                return f.read()

    def test_quiet_full_run_is_judged_and_met(self):
        text = self.render(clients_result(0.4, 1.9, 2.0))
        self.assertIn("24 of 24 cells met, 0 missed.", text)
        self.assertIn("Issue 17's goal is met in every cell", text)
        self.assertIn("**✓ ≥ 1.5x**", text)
        self.assertIn("**✓ ≥ 1.0x**", text)

    def test_quiet_run_below_the_bar_is_missed(self):
        text = self.render(clients_result(0.4, 1.9, 1.2))
        # 1.2x meets the 1-caller bar (1.0x) only: 6 cells of 24.
        self.assertIn("6 of 24 cells met, 18 missed.", text)
        self.assertIn("**✗ < 1.5x**", text)
        self.assertIn("Issue 17's goal is **not** shown met: cells are missed.", text)

    def test_noise_columns(self):
        text = self.render(clients_result(0.4, 1.9, 2.0))
        self.assertIn("| run load | others' CPU |", text)
        # The worst of the cell's three rounds: 0.05 * 2.
        self.assertIn("| 1.90 | 0.10 |", text)

    def test_own_load_alone_does_not_refuse(self):
        # The run's own client and server push the end load past the core count; nobody
        # else used the CPU, so the cells are judged.
        text = self.render(clients_result(0.4, 3.7, 2.0))
        self.assertIn("24 of 24 cells met, 0 missed.", text)

    def test_others_cpu_refuses(self):
        text = self.render(clients_result(0.4, 3.7, 2.0, others=0.45))
        self.assertIn("0 of 24 cells met, 0 missed, 24 not judged (others used 0.90 cores "
                      "during a run)", text)
        self.assertNotIn("✓", text)
        self.assertIn("the machine was not quiet", text)
        self.assertIn("**not quiet**", text)

    def test_load_at_start_counts_too(self):
        text = self.render(clients_result(2.5, 1.0, 2.0))
        self.assertIn("24 not judged (load 2.50 > 2 cores at the start)", text)

    def test_section_without_others_cpu_is_judged_on_its_load(self):
        data = clients_result(0.4, 3.7, 2.0)
        for r in data["runs"]:
            del r["others_cpu"]
        text = self.render(data)
        self.assertIn("24 not judged (load 3.70 > 2 cores)", text)

    def test_quick_or_partial_run_is_not_enough(self):
        text = self.render(clients_result(0.4, 1.0, 2.0, quick=True, rounds=2,
                                          modes=("standalone",)))
        self.assertIn("12 of 12 cells met", text)
        self.assertIn("the clients result is a quick run; it has 2 rounds, not 3+; 12 of the "
                      "24 goal cells are absent", text)


if __name__ == "__main__":
    unittest.main()
