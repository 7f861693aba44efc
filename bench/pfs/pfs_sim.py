# SPDX-License-Identifier: MIT
"""A discrete-event model of a striped parallel file system, for what one local disk cannot show.

The file is cut into stripes of `stripe_size` bytes dealt round-robin over `stripe_count` servers
(Lustre OSTs, GPFS NSD servers). Every call of a client goes through:

  1. the client: `call_cpu` seconds of CPU on one of its node's `cores`, then `call_rtt` seconds of
     network round trip (an NFS-like per-call latency when the RTT dominates);
  2. locks, for writes (reads take shared locks, which never conflict here):
       lustre  server-based extent locks: each server manages the locks of its own object. A lock is
               granted as large as possible; a conflicting holder is called back (one `lock_rtt`) and
               keeps the side of its last request, giving up the rest (Liao & Choudhary §II.B). A write
               holds the locks of every server it touches until all its data are on the servers.
       gpfs    token-based byte ranges over the whole file, at block (stripe) granularity: a request
               not covered by the client's own tokens goes to the token manager (one `lock_rtt`,
               serialized there), which revokes conflicting ranges from their holders (one more
               `lock_rtt`, after the holder's in-flight writes to them end). A partial block another
               client wrote must be read before it is written (read-modify-write).
       none    no locks (PVFS, or a local file system whose writes serialize in the page cache);
  3. the data: pieces cut at stripe boundaries, sent through the client node's link (`client_bw`)
     and queued at their server, which serves `channels` requests at a time, each costing
     `server_latency` plus bytes / `server_bw`.

Calls are started in order of their ready time and take the resources they need in that order
(list scheduling), so every server queue, lock manager and client link is first come, first served.
Two kinds of input:

  plans   the two-phase engine's own plan of one collective call (volseg-twophase-plan): each
          aggregator's file accesses per round, after an exchange phase costed from the pieces and
          bytes it receives (`piece_cpu` per piece, `exchange_bw`), with the engine's pipeline (round
          r+1's exchange overlaps round r's I/O) and `collectives` synchronizations per call;
  traces  volseg's own --trace CSV: each rank's calls in order, the gaps between them kept as
          measured (compute), the calls simulated.

The profiles are models, not measurements of a machine: `local` is fitted on this machine's NCIO
figures by `volseg-bench pfs-sim validate`; `lustre` and `gpfs` take Liao & Choudhary's testbeds'
shapes (64 OSTs / 54 servers, 512 KiB stripes) with link and server speeds of their era.
"""
import bisect
import csv
import dataclasses
import heapq
import math

KiB, MiB, GiB = 1024, 1024 ** 2, 1024 ** 3
DIRTY_UNIT = 4096  # a client cache's page


@dataclasses.dataclass
class Profile:
    name: str
    stripe_size: int = 512 * KiB
    stripe_count: int = 64
    server_bw: float = 200e6        # bytes/s per server
    server_latency: float = 200e-6  # s per request at a server
    channels: int = 1               # write requests a server serves at once
    read_channels: int = 0          # read requests a server serves at once (0: as channels)
    read_bw: float = 0.0            # bytes/s per server for reads (0: as server_bw)
    read_latency: float = -1.0      # s per read request at a server (negative: as server_latency)
    alloc_partial: float = 0.0      # s per new 4 KiB block a write covers in part (local: ext4 delalloc)
    alloc_full: float = 0.0         # s per new 4 KiB block a write covers whole
    bounce: float = 0.0             # s per 4 KiB block another client wrote last (its cache lines move)
    client_bw: float = 1.5e9        # bytes/s of one client node's link
    call_cpu: float = 5e-6          # s of client CPU per call
    call_rtt: float = 50e-6         # s of round trip per call (no CPU)
    cores: int = 4                  # CPUs per client node
    write_back: bool = False        # clients cache writes (Lustre, GPFS pagepool) under their locks
    cache_bw: float = 2e9           # bytes/s into a client's cache
    seek: float = 0.0               # s a disk server pays for a request not following its last one
    free_past_eof: bool = True      # a read past the end of the file moves nothing (local: the engine's
                                    # memset of the holes costs as much as a read, so False)
    lock: str = "lustre"            # lustre | gpfs | none
    lock_rtt: float = 100e-6        # s per lock RPC (request, callback or grant)
    lock_unit: int = 4096           # lustre: page granularity in object space; gpfs: the block
    piece_cpu: float = 0.1e-6       # two-phase: s of CPU per piece exchanged (pack, cut, coalesce)
    pack_cpu: float = 0.02e-6       # two-phase's independent path: s of CPU per piece copied to a buffer
    exchange_bw: float = 1.5e9      # two-phase: bytes/s into an aggregator during the exchange
    collective: float = 20e-6       # two-phase: s per synchronizing collective step (x log2 ranks)
    collectives: int = 7            # synchronizing collectives per two-phase call
    sync_latency: float = 0.0       # s of a sync after the call (NCIO syncs after every write)
    sync_bw: float = float("inf")   # bytes/s the sync writes dirty data back at

    def server_of(self, offset):
        return (offset // self.stripe_size) % self.stripe_count

    def object_offset(self, offset):
        stripe = offset // self.stripe_size
        return (stripe // self.stripe_count) * self.stripe_size + offset % self.stripe_size


PROFILES = {
    # Liao & Choudhary's Jaguar: Cray XT4, SeaStar links, Lustre with 64 OSTs of 512 KiB stripes.
    "lustre": Profile("lustre", stripe_size=512 * KiB, stripe_count=64, server_bw=250e6, server_latency=100e-6,
                      client_bw=1.5e9, call_cpu=5e-6, call_rtt=30e-6, lock="lustre", lock_rtt=100e-6,
                      lock_unit=4096),
    # Their Mercury: Myrinet, GPFS 3.1 with 54 NSD servers of 512 KiB blocks.
    "gpfs": Profile("gpfs", stripe_size=512 * KiB, stripe_count=54, server_bw=120e6, server_latency=150e-6,
                    client_bw=250e6, call_cpu=5e-6, call_rtt=30e-6, lock="gpfs", lock_rtt=150e-6,
                    lock_unit=512 * KiB),
    # Ching et al.'s networked file system: no locks, one cost per call (set by --latency).
    "nfs": Profile("nfs", stripe_size=64 * KiB, stripe_count=8, server_bw=100e6, server_latency=20e-6,
                   client_bw=1e9, call_cpu=2e-6, call_rtt=100e-6, lock="none"),
    # This machine: one page cache whose writes to one file serialize (the inode lock); fitted.
    "local": Profile("local", stripe_size=1 << 62, stripe_count=1, server_bw=2e9, server_latency=0.0, channels=1,
                     client_bw=float("inf"), call_cpu=1.5e-6, call_rtt=0.0, cores=2, lock="none", free_past_eof=False,
                     piece_cpu=0.15e-6, exchange_bw=4e9, collective=30e-6, collectives=7,
                     sync_latency=1e-3, sync_bw=2e9),
}


def profile(name, **overrides):
    base = PROFILES[name]
    return dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})


class Locks:
    """Extent locks of one lock space (a Lustre server's object, or a GPFS file): sorted, disjoint
    [begin, end) ranges, each with its holder, the holder's last request and when its in-flight
    write under it ends."""

    def __init__(self):
        self.begins, self.items = [], []  # items: [begin, end, holder, last_b, last_e, busy_until]

    def covered(self, client, b, e):
        i = bisect.bisect_right(self.begins, b) - 1
        while 0 <= i < len(self.items) and self.items[i][0] < e:
            it = self.items[i]
            if it[2] != client or it[0] > b:
                return False
            if it[1] >= e:
                return True
            b = it[1]
            i += 1
        return False

    def conflicts(self, client, b, e):
        i = max(0, bisect.bisect_right(self.begins, b) - 1)
        out = []
        while i < len(self.items) and self.items[i][0] < e:
            it = self.items[i]
            if it[1] > b and it[2] != client:
                out.append(it)
            i += 1
        return out

    def _remove(self, it):
        i = self.items.index(it)
        del self.items[i], self.begins[i]

    def _insert(self, it):
        i = bisect.bisect_left(self.begins, it[0])
        self.items.insert(i, it)
        self.begins.insert(i, it[0])

    def revoke(self, it, b, e):
        """The holder of `it` gives up what a request [b, e) needs: it keeps the side of its last
        request away from the new one (nothing, when the two requests overlap)."""
        self._remove(it)
        begin, end, holder, lb, le, busy = it
        if b >= le:           # the new request lies after the holder's last: it keeps [begin, le)
            keep = (begin, min(end, le))
        elif e <= lb:         # before it: it keeps [lb, end)
            keep = (max(begin, lb), end)
        else:
            keep = None
        if keep and keep[0] < keep[1] and (keep[1] <= b or keep[0] >= e):
            self._insert([keep[0], keep[1], holder, lb, le, busy])
        else:
            keep = (begin, begin)
        return [(x, y) for x, y in ((begin, keep[0]), (keep[1], end)) if x < y]  # what it gives up

    def grant(self, client, b, e, busy):
        """As large as possible: from the end of the lock below to the start of the lock above."""
        i = bisect.bisect_right(self.begins, b) - 1
        lo = 0
        if i >= 0:
            lo = max(lo, self.items[i][1]) if self.items[i][1] <= b else b
        j = bisect.bisect_left(self.begins, e)
        hi = self.items[j][0] if j < len(self.items) else 1 << 62
        lo, hi = min(lo, b), max(hi, e)
        # merge with this client's own neighbours, and drop its pieces inside
        for it in [x for x in self.items if x[2] == client and x[1] >= lo and x[0] <= hi]:
            lo, hi = min(lo, it[0]), max(hi, it[1])
            self._remove(it)
        self._insert([lo, hi, client, b, e, busy])

    def touch(self, client, b, e, busy):
        """A covered request: record it as the holder's last, and its in-flight end."""
        i = bisect.bisect_right(self.begins, b) - 1
        while 0 <= i < len(self.items) and self.items[i][0] < e:
            it = self.items[i]
            if it[2] == client:
                it[3], it[4], it[5] = b, e, max(it[5], busy)
            i += 1


class Sim:
    """One run: servers, client links and CPUs, lock spaces. call() costs one file call."""

    def __init__(self, prof, node_of=lambda c: c):
        self.p = prof
        self.node_of = node_of
        self.server_free = [[0.0] * prof.channels for _ in range(prof.stripe_count)]
        self.read_free = [[0.0] * (prof.read_channels or prof.channels) for _ in range(prof.stripe_count)]
        self.link_free = {}
        self.cpu_free = {}
        self.lock_spaces = {}
        self.manager_free = {}  # per lock manager (a Lustre server, the GPFS token manager)
        self.written_by = {}    # gpfs: block -> last client that wrote part of it
        self.allocated = {}     # local: 4 KiB block -> the client that wrote it last
        self.file_size = 0      # a new (truncated) file, as NCIO's runs start
        self.head = {}          # disk servers: where the last request ended
        self.dirty = {}         # write-back: (client, lock space) -> its dirty pages there
        self.stats = {"calls": 0, "lock_rpcs": 0, "revocations": 0, "rmw_reads": 0, "bytes": 0}

    def _cpu(self, client, t, seconds):
        node = self.node_of(client)
        free = self.cpu_free.setdefault(node, [0.0] * self.p.cores)
        k = min(range(len(free)), key=free.__getitem__)
        start = max(t, free[k])
        free[k] = start + seconds
        return start + seconds

    def _serve(self, server, t, nbytes, kind="write", pages=0.0, offset=None):
        reading = kind == "read" and (self.p.read_channels or self.p.read_bw)
        q = self.read_free[server] if reading else self.server_free[server]
        k = min(range(len(q)), key=q.__getitem__)
        start = max(t, q[k])
        bw = (self.p.read_bw or self.p.server_bw) if kind == "read" else self.p.server_bw
        latency = self.p.read_latency if kind == "read" and self.p.read_latency >= 0 else self.p.server_latency
        if self.p.seek and offset is not None:
            if self.head.get(server) != offset:
                latency += self.p.seek
            self.head[server] = offset + nbytes
        q[k] = start + latency + nbytes / bw + pages
        return q[k]

    def _allocate(self, client, offset, length):
        """Seconds a write spends on the blocks it touches: allocating those it is the first to
        touch, and taking over those another client wrote last."""
        first, last = offset // 4096, (offset + length - 1) // 4096
        cost = 0.0
        for blk in range(first, last + 1):
            writer = self.allocated.get(blk)
            self.allocated[blk] = client
            if writer is None:
                whole = offset <= blk * 4096 and offset + length >= (blk + 1) * 4096
                cost += self.p.alloc_full if whole else self.p.alloc_partial
            elif writer != client:
                cost += self.p.bounce
        return cost

    def _pieces(self, offset, length):
        p, out = self.p, []
        end = offset + length
        while offset < end:
            stop = min(end, (offset // p.stripe_size + 1) * p.stripe_size)
            out.append((offset, stop - offset))
            offset = stop
        return out

    def _lock(self, space, manager, client, b, e, t):
        """Time at which `client` holds [b, e) of `space` exclusively. The caller marks the lock busy
        until its write ends (Locks.touch)."""
        locks = self.lock_spaces.setdefault(space, Locks())
        if locks.covered(client, b, e):
            locks.touch(client, b, e, 0.0)
            return t, locks
        self.stats["lock_rpcs"] += 1
        start = max(t, self.manager_free.get(manager, 0.0))
        ready = start + self.p.lock_rtt
        self.manager_free[manager] = start + self.p.lock_rtt / 2  # the manager's share of the RPC
        for it in locks.conflicts(client, b, e):
            self.stats["revocations"] += 1
            holder = it[2]
            ready = max(ready, it[5] + self.p.lock_rtt, start + 2 * self.p.lock_rtt)  # callback after its I/O
            given = locks.revoke(it, b, e)
            if self.p.write_back:  # the holder writes back its dirty data under what it gives up first
                ready = max(ready, self._flush(holder, space, given, start + self.p.lock_rtt))
        locks.grant(client, b, e, 0.0)
        return ready, locks

    def _file_offset(self, space, ob):
        """A lock space's coordinate back to the file's: Lustre objects hold every stripe_count-th stripe."""
        if space == "file":
            return ob
        p, server = self.p, space[1]
        return ((ob // p.stripe_size) * p.stripe_count + server) * p.stripe_size + ob % p.stripe_size

    def _flush(self, client, space, ranges, t):
        """client writes back its dirty blocks of `space` inside `ranges`; returns when they are on
        the servers."""
        dirty = self.dirty.get((client, space))
        if not dirty:
            return t
        unit = DIRTY_UNIT
        out = sorted(blk for blk in dirty if any(x <= blk * unit < y for x, y in ranges))
        dirty.difference_update(out)
        return self._write_through(client, [(self._file_offset(space, blk * unit), unit) for blk in out], t)

    def _write_through(self, client, pieces, t):
        node = self.node_of(client)
        link = self.link_free.get(node, 0.0)
        end = t
        for o, n in pieces:
            link = max(link, t) + n / self.p.client_bw
            end = max(end, self._serve(self.p.server_of(o), link, n, "write", 0.0, o))
        self.link_free[node] = link
        self.stats["flushed"] = self.stats.get("flushed", 0) + sum(n for _, n in pieces)
        return end

    def flush_all(self, t):
        """A sync: every client writes back all its dirty data; returns when all of it is on the servers."""
        end = t
        for (client, space), dirty in sorted(self.dirty.items(), key=lambda kv: str(kv[0])):
            pieces = [(self._file_offset(space, blk * DIRTY_UNIT), DIRTY_UNIT) for blk in sorted(dirty)]
            end = max(end, self._write_through(client, pieces, t))
        self.dirty = {}
        return end

    def call(self, client, kind, offset, length, t):
        """One read or write call of `client` ready at t; returns when it completes."""
        p = self.p
        self.stats["calls"] += 1
        self.stats["bytes"] += length
        t = self._cpu(client, t, p.call_cpu) + p.call_rtt
        if length == 0:
            return t
        pieces = self._pieces(offset, length)
        held = []
        if kind == "write" and p.lock == "lustre":
            by_server = {}
            for o, n in pieces:
                s = p.server_of(o)
                ob = p.object_offset(o)
                b, e = by_server.get(s, (ob, ob + n))
                by_server[s] = (min(b, ob), max(e, ob + n))
            for s in sorted(by_server):  # in resource order, all held to the end (atomicity)
                b, e = by_server[s]
                b, e = b // p.lock_unit * p.lock_unit, -(-e // p.lock_unit) * p.lock_unit
                t, locks = self._lock(("obj", s), ("srv", s), client, b, e, t)
                held.append((locks, b, e))
        elif kind == "write" and p.lock == "gpfs":
            u = p.lock_unit
            b, e = offset // u * u, -(-(offset + length) // u) * u
            t, locks = self._lock("file", "tm", client, b, e, t)
            held.append((locks, b, e))
            for blk in {offset // u, (offset + length - 1) // u}:  # partial blocks at either end
                lo, hi = blk * u, (blk + 1) * u
                partial = offset > lo or offset + length < hi
                if partial and self.written_by.get(blk, client) != client:
                    self.stats["rmw_reads"] += 1
                    t = self._serve(p.server_of(lo), t + p.call_rtt, u, "read")
            for blk in range(offset // u, (offset + length - 1) // u + 1):
                self.written_by[blk] = client
        if kind == "read" and p.free_past_eof:  # past the end a read returns nothing (sieving a new file)
            pieces = [(o, max(0, min(n, self.file_size - o))) for o, n in pieces]
        else:
            self.file_size = max(self.file_size, offset + length)
        if kind == "write" and p.write_back:  # into the client's cache; written back on revocation or sync
            for o, n in pieces:  # dirty 4 KiB pages, in the lock space's coordinates
                key = (client, ("obj", p.server_of(o)) if p.lock == "lustre" else "file")
                ob = p.object_offset(o) if p.lock == "lustre" else o
                self.dirty.setdefault(key, set()).update(range(ob // DIRTY_UNIT, (ob + n - 1) // DIRTY_UNIT + 1))
            end = t + length / p.cache_bw
            for locks, b, e in held:
                locks.touch(client, b, e, end)
            return end
        node = self.node_of(client)
        link = self.link_free.get(node, 0.0)
        end = t
        for o, n in pieces:
            link = max(link, t) + n / p.client_bw
            alloc = (self._allocate(client, o, n) if kind == "write" and (p.alloc_partial or p.alloc_full or p.bounce)
                     else 0.0)
            end = max(end, self._serve(p.server_of(o), link, n, kind, alloc, o))
        self.link_free[node] = link
        for locks, b, e in held:
            locks.touch(client, b, e, end)
        return end


# ---------------------------------------------------------------------------------------------------
# Inputs

def read_plan(path_or_lines):
    """volseg-twophase-plan's CSV: (facts, {aggregator: {round: [(op, offset, length, pieces, clients)]}})."""
    lines = open(path_or_lines).read().splitlines() if isinstance(path_or_lines, str) else path_or_lines
    facts, rows = {}, {}
    body = []
    for line in lines:
        if line.startswith("#"):
            if "=" in line:
                k, v = line[1:].strip().split("=", 1)
                facts[k] = v
        else:
            body.append(line)
    for r in csv.DictReader(body):
        a, k = int(r["aggregator"]), int(r["round"])
        rows.setdefault(a, {}).setdefault(k, []).append(
            (r["op"], int(r["offset"]), int(r["length"]), int(r["pieces"]), int(r["clients"])))
    return facts, rows


def simulate_plan(prof, facts, plan, ranks_per_node=1, sim=None, t_start=0.0, flush=True):
    """Seconds of one two-phase collective call: the synchronizing collectives and the clients' share
    of the planning, then every aggregator's rounds (round r+1's exchange overlapping round r's I/O,
    two buffers), then a sync. Pass `sim` to carry lock state from call to call; flush=False leaves
    cached writes in the clients (a call that is not the file's last before close)."""
    ranks = int(facts["ranks"])
    sim = sim or Sim(prof, node_of=lambda a: a)  # aggregators: one per node
    pieces = sum(x[3] for rounds in plan.values() for accesses in rounds.values() for x in accesses)
    oversubscribed = max(1.0, min(ranks, ranks_per_node) / prof.cores)
    independent = facts.get("mode") == "independent"  # no rounds, no exchange: each rank alone
    steps = max(1, math.ceil(math.log2(max(ranks, 2))))
    if independent:  # the extents' allgather and the closing agreement
        t0 = t_start + 2 * prof.collective * steps
    else:
        t0 = (t_start + prof.collectives * prof.collective * steps
              + pieces / ranks * prof.piece_cpu * oversubscribed)
    reading = facts.get("direction") == "read"
    if reading and "region" in facts:  # a file read back exists: its bytes are all there
        sim.file_size = max(sim.file_size, int(facts["region"].split("-")[1]))
    state = {a: {"rounds": sorted(rounds), "k": 0, "i": 0, "io_end": [], "ex_end": []} for a, rounds in plan.items()}
    heap = [(t0, a) for a in plan]
    heapq.heapify(heap)
    finish = {}

    def exchange_end(st, k, rounds):
        # after round k-1's exchange, and once round k-2's I/O has freed its buffer
        prev = st["ex_end"][k - 1] if k > 0 else t0
        buf = st["io_end"][k - 2] if k >= 2 else t0
        accesses = rounds[st["rounds"][k]]
        n_pieces = sum(x[3] for x in accesses)
        moved = sum(x[2] for x in accesses if x[3] > 0)  # the accesses that carry client data
        if independent:  # copying the rank's own pieces into one buffer: no planning
            return max(prev, buf) + (n_pieces * prof.pack_cpu + moved / prof.exchange_bw) * oversubscribed
        return max(prev, buf) + prof.collective + n_pieces * prof.piece_cpu + moved / prof.exchange_bw

    while heap:
        t, a = heapq.heappop(heap)
        st, rounds = state[a], plan[a]
        k = st["k"]
        if st["i"] == 0 and len(st["ex_end"]) == k and not reading:
            st["ex_end"].append(exchange_end(st, k, rounds))
            t = max(t, st["ex_end"][k])
        accesses = rounds[st["rounds"][k]]
        op, off, n, _, _ = accesses[st["i"]]
        t = sim.call(a, op, off, n, t)
        st["i"] += 1
        if st["i"] == len(accesses):
            if reading:  # reads: the round's exchange follows its I/O, and overlaps the next round's
                prev = st["ex_end"][-1] if st["ex_end"] else t0
                st["ex_end"].append(max(t, prev) + prof.collective + sum(x[3] for x in accesses) * prof.piece_cpu
                                    + sum(x[2] for x in accesses) / prof.exchange_bw)
            st["io_end"].append(t)
            st["k"], st["i"] = k + 1, 0
            if st["k"] == len(st["rounds"]):
                finish[a] = st["ex_end"][-1] if reading else t
                continue
        heapq.heappush(heap, (t, a))
    end = max(finish.values(), default=t0)
    if prof.write_back and flush:  # the close (or sync) writes back what the clients cached
        end = sim.flush_all(end)
    written = sum(x[2] for rounds in plan.values() for acc in rounds.values() for x in acc if x[0] == "write")
    return end + sync_time(prof, written), sim


def sync_time(prof, dirty):
    """A sync after the call writes the dirty bytes back."""
    if dirty == 0 or (prof.sync_latency == 0 and prof.sync_bw == float("inf")):
        return 0.0
    return prof.sync_latency + dirty / prof.sync_bw


def simulate_posix(prof, ranks, pieces_of, sync_bytes=None, sim=None):
    """Every rank one call per region (Ching et al.'s POSIX method), all ranks at once, then a sync of
    sync_bytes (default: the bytes written). Pass `sim` to place ranks on nodes your own way."""
    sim = sim or Sim(prof, node_of=(lambda r: 0) if prof.stripe_count == 1 else (lambda r: r))
    heap = [(0.0, r, 0) for r in range(ranks)]
    lists = {r: pieces_of(r) for r in range(ranks)}
    end = 0.0
    written = 0
    while heap:
        t, r, i = heapq.heappop(heap)
        o, n = lists[r][i]
        t = sim.call(r, "write", o, n, t)
        written += n
        end = max(end, t)
        if i + 1 < len(lists[r]):
            heapq.heappush(heap, (t, r, i + 1))
    return end + sync_time(prof, written if sync_bytes is None else sync_bytes), sim


def ncio_pieces(case, count, size, spacing, ranks):
    """Each rank's calls in volseg-ncio's POSIX method: one per region, merged only where neighbours
    are contiguous in both memory and file (c-c)."""
    memory_nc, file_nc = case.startswith("nc-"), case.endswith("-nc")
    if file_nc:
        return lambda r: [((j * ranks + r) * (size + spacing), size) for j in range(count)]
    if memory_nc:
        return lambda r: [((r * count + j) * size, size) for j in range(count)]
    return lambda r: [(r * count * size, count * size)]


def read_trace(path):
    """volseg's --trace CSV: {rank: [(op, start, duration, offset, bytes)]} for reads and writes."""
    calls = {}
    with open(path) as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for r in rows:
            if r["op"] not in ("read", "write"):
                continue
            calls.setdefault(int(r["rank"]), []).append(
                (r["op"], float(r["start_s"]), float(r["duration_s"]), int(r["offset"]), int(r["bytes"])))
    for v in calls.values():
        v.sort(key=lambda x: x[1])
    return calls


def simulate_trace(prof, calls, ranks_per_node=None):
    """Replays each rank's reads and writes in order, keeping the measured gaps between them
    (compute); returns (simulated I/O seconds per rank, measured I/O seconds per rank)."""
    rpn = ranks_per_node or len(calls)
    sim = Sim(prof, node_of=lambda r: r // rpn)
    heap = [(calls[r][0][1], r, 0) for r in calls if calls[r]]
    heapq.heapify(heap)
    io_sim = {r: 0.0 for r in calls}
    io_meas = {r: sum(c[2] for c in calls[r]) for r in calls}
    while heap:
        t, r, i = heapq.heappop(heap)
        op, start, dur, off, n = calls[r][i]
        end = sim.call(r, op, max(off, 0), n, t)
        io_sim[r] += end - t
        if i + 1 < len(calls[r]):
            nxt = calls[r][i + 1]
            gap = max(0.0, nxt[1] - (start + dur))
            heapq.heappush(heap, (end + gap, r, i + 1))
    return io_sim, io_meas


def simulate_bricks(prof, ranks, volume, brick, compute_bw, advised, window=128 * KiB):
    """Fogal & Krüger's reader: each rank thresholds its contiguous share of a cold volume brick by
    brick. Raw (mmap): page faults read readahead windows one after another, each followed by its
    compute. Advised: posix_fadvise(WILLNEED) on the next brick before computing this one, so the
    disk reads a whole brick while the CPU works. One disk: requests that do not follow the last one
    pay a seek. Returns seconds."""
    sim = Sim(prof, node_of=lambda r: 0)
    sim.file_size = volume
    share = volume // ranks
    heap = []
    for r in range(ranks):
        heap.append((0.0, r, 0, None))
    heapq.heapify(heap)
    end = 0.0
    bricks = share // brick
    while heap:
        t, r, k, pending = heapq.heappop(heap)
        if not advised:  # one readahead window, then its compute
            done = sim.call(r, "read", r * share + k * window, window, t) + window / compute_bw
            if k + 1 < share // window:
                heapq.heappush(heap, (done, r, k + 1, None))
            else:
                end = max(end, done)
            continue
        base = r * share + k * brick
        ready = pending if pending is not None else sim.call(r, "read", base, brick, t)
        start = max(t, ready)
        nxt_ready = sim.call(r, "read", base + brick, brick, start) if k + 1 < bricks else None
        done = start + brick / compute_bw
        if k + 1 < bricks:
            heapq.heappush(heap, (done, r, k + 1, nxt_ready))
        else:
            end = max(end, done)
    return end
