# SPDX-License-Identifier: MIT
"""Tests of the parallel-file-system simulator and of volseg-twophase-plan (ctest bench_pfs_sim).

Run: VOLSEG_BUILD_DIR=build /usr/bin/python3 -m unittest bench/pfs/test_pfs_sim.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pfs_sim as ps  # noqa: E402
import studies  # noqa: E402


def union(ranges):
    out = []
    for b, e in sorted(ranges):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return [tuple(x) for x in out]


class LockRules(unittest.TestCase):
    def test_holder_keeps_the_side_of_its_last_request(self):
        locks = ps.Locks()
        locks.grant(0, 0, 100, 0.0)             # the first writer gets everything: [0, EOF)
        self.assertEqual(locks.items[0][:3], [0, 1 << 62, 0])
        given = locks.revoke(locks.items[0], 500, 600)  # a request after its last one
        self.assertEqual(given, [(100, 1 << 62)])       # it keeps [0, 100), gives up the rest
        locks.grant(1, 500, 600, 0.0)
        self.assertTrue(locks.covered(0, 0, 100))
        self.assertTrue(locks.covered(1, 100, 1000))    # as large as possible: from the holder below
        self.assertFalse(locks.covered(0, 100, 200))

    def test_request_before_the_holders_keeps_its_upper_side(self):
        locks = ps.Locks()
        locks.grant(0, 1000, 1100, 0.0)
        given = locks.revoke(locks.items[0], 0, 10)
        self.assertEqual(given, [(0, 1000)])
        self.assertTrue(locks.covered(0, 1000, 5000))

    def test_overlapping_requests_take_everything(self):
        locks = ps.Locks()
        locks.grant(0, 0, 100, 0.0)
        self.assertEqual(locks.revoke(locks.items[0], 50, 60), [(0, 1 << 62)])
        self.assertEqual(locks.items, [])


class Costs(unittest.TestCase):
    def test_one_read_costs_latency_plus_transfer(self):
        prof = ps.profile("local", read_bw=1e9, read_latency=1e-3, call_cpu=0.0, call_rtt=0.0, free_past_eof=True)
        sim = ps.Sim(prof)
        sim.file_size = 10 ** 9
        self.assertAlmostEqual(sim.call(0, "read", 0, 10 ** 6, 0.0), 1e-3 + 1e-3)

    def test_one_server_serializes_writes(self):
        prof = ps.profile("local", server_bw=1e9, server_latency=0.0, call_cpu=0.0, call_rtt=0.0, sync_latency=0.0,
                          sync_bw=float("inf"))
        sim = ps.Sim(prof)
        a = sim.call(0, "write", 0, 10 ** 6, 0.0)
        b = sim.call(1, "write", 10 ** 6, 10 ** 6, 0.0)
        self.assertAlmostEqual(a, 1e-3)
        self.assertAlmostEqual(b, 2e-3)

    def test_reads_past_the_end_move_nothing_on_a_networked_profile(self):
        sim = ps.Sim(ps.profile("lustre"))
        t = sim.call(0, "read", 0, 64 * ps.MiB, 0.0)
        self.assertLess(t, 1e-3)  # no bytes: only the call's own costs

    def test_seeks_only_for_requests_that_jump(self):
        prof = ps.profile("local", read_bw=1e8, read_latency=0.0, seek=8e-3, read_channels=1, call_cpu=0.0,
                          call_rtt=0.0, free_past_eof=True)
        sim = ps.Sim(prof)
        sim.file_size = 1 << 30
        t = sim.call(0, "read", 0, 10 ** 6, 0.0)         # first: a seek
        t = sim.call(0, "read", 10 ** 6, 10 ** 6, t)     # sequential: none
        self.assertAlmostEqual(t, 8e-3 + 2e-2)
        t2 = sim.call(0, "read", 10 ** 8, 10 ** 6, t)    # a jump: a seek
        self.assertAlmostEqual(t2 - t, 8e-3 + 1e-2)

    def test_write_back_flushes_on_revocation_and_close(self):
        prof = ps.profile("lustre", stripe_count=1, write_back=True)
        sim = ps.Sim(prof)
        sim.call(0, "write", 0, 4 * ps.MiB, 0.0)
        self.assertEqual(sim.stats.get("flushed", 0), 0)      # still cached
        sim.call(1, "write", 0, 4096, 1.0)                   # overlaps: client 0 writes its pages back
        self.assertGreaterEqual(sim.stats["flushed"], 4096)
        sim.flush_all(2.0)
        self.assertFalse(any(sim.dirty.values()))


@unittest.skipUnless(os.access(os.path.join(studies.build_dir(), "bench", "volseg-twophase-plan"), os.X_OK),
                     "volseg-twophase-plan is not built")
class Plans(unittest.TestCase):
    def check_covers(self, facts, plan, pieces_of, ranks):
        """Every byte any rank asked for is written by exactly one aggregator's writes."""
        writes = [(o, o + n) for rounds in plan.values() for acc in rounds.values() for op, o, n, _, _ in acc
                  if op == "write"]
        self.assertEqual(len(union(writes)), len(union(writes)))
        total = sum(e - b for b, e in writes)
        self.assertEqual(total, sum(e - b for b, e in union(writes)), "two aggregators write the same byte")
        wanted = union((o, o + n) for r in range(ranks) for o, n in pieces_of(r))
        covered = union(writes)
        for b, e in wanted:
            self.assertTrue(any(x <= b and e <= y for x, y in covered), "bytes %d-%d written by nobody" % (b, e))

    def test_ncio_nc_nc_is_sieved_and_covers_every_piece(self):
        facts, plan = studies.plan(4, "ncio", "write", ["lock_size=4096"], aggregators=1, ranks_per_node=4,
                                   case="nc-nc", count=256, size=8, spacing=128)
        self.assertEqual(facts["mode"], "collective")
        ops = [x[0] for acc in plan[0].values() for x in acc]
        self.assertEqual(ops, ["read", "write"])  # one covering range, read then written (sieved)
        self.check_covers(facts, plan, ps.ncio_pieces("nc-nc", 256, 8, 128, 4), 4)
        self.assertEqual(sum(x[3] for acc in plan[0].values() for x in acc), 4 * 256)  # every piece exchanged

    def test_contiguous_ranks_go_independent(self):
        facts, plan = studies.plan(4, "ncio", "write", [], ranks_per_node=4, case="nc-c", count=64, size=8,
                                   spacing=0)
        self.assertEqual(facts["mode"], "independent")
        self.assertEqual(sorted(plan), [0, 1, 2, 3])
        self.check_covers(facts, plan, ps.ncio_pieces("nc-c", 64, 8, 0, 4), 4)

    def test_cyclic_domains_cover_coll_perf_and_group_cyclic_spares_lustre_locks(self):
        prof = ps.profile("lustre", stripe_size=64 * ps.KiB, stripe_count=4)
        stats = {}
        for part in ("even", "static-cyclic", "group-cyclic"):
            facts, plan = studies.plan(64, "coll_perf", "write",
                                       ["partition=" + part, "lock_size=65536", "io_servers=4", "cb_buffer_size=256K"],
                                       ranks_per_node=4, edge=64)
            self.assertEqual(int(facts["aggregators"]), 16)
            writes = [(o, o + n) for r in plan.values() for acc in r.values() for op, o, n, _, _ in acc]
            self.assertEqual(sum(e - b for b, e in union(writes)), int(facts["bytes"]))  # dense: every byte once
            _, sim = ps.simulate_plan(prof, facts, plan, ranks_per_node=4)
            stats[part] = sim.stats["revocations"]
        # 16 aggregators on 4 servers: static-cyclic interleaves 4 aggregators' stripes in every object
        self.assertLess(stats["group-cyclic"] * 4, stats["static-cyclic"])

    def test_aligned_needs_fewer_gpfs_tokens_than_cyclic(self):
        prof = ps.profile("gpfs", stripe_size=64 * ps.KiB, stripe_count=4)
        rpcs = {}
        for part in ("aligned", "static-cyclic"):
            facts, plan = studies.plan(64, "coll_perf", "write",
                                       ["partition=" + part, "lock_size=65536", "io_servers=4", "cb_buffer_size=256K"],
                                       ranks_per_node=4, edge=64)
            _, sim = ps.simulate_plan(prof, facts, plan, ranks_per_node=4)
            rpcs[part] = sim.stats["lock_rpcs"]
        self.assertLess(rpcs["aligned"] * 4, rpcs["static-cyclic"])


if __name__ == "__main__":
    unittest.main()
