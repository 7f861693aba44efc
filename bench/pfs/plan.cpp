// SPDX-License-Identifier: MIT
// volseg-twophase-plan: the two-phase engine's plan for one collective call
// of an access pattern at any rank count, without MPI and without I/O, for
// the parallel-file-system simulator (bench/pfs/pfs_sim.py).
//
// It runs the engine's own planning code on every rank's pieces at once:
// the aggregate access region, the partitioner's file domains, each
// aggregator's requests, its rounds' windows (place_windows), the cut into
// rounds (cut_into_rounds) and the coalescing into file accesses with the
// conditional data-sieving rule (coalesce). What it prints is what the
// aggregators would hand to the file system, round by round, so 16 to 4096
// ranks cost seconds, not a cluster.
//
// Patterns:
//   ncio       Ching et al.'s NCIO file pattern: count regions of size bytes
//              per rank, spacing bytes apart, interleaved across ranks
//              (file noncontiguous) or one block per rank (contiguous).
//   coll_perf  ROMIO's coll_perf, as Liao & Choudhary ran it: a 3D array of
//              4-byte integers block-partitioned along all three dimensions,
//              n^3 elements per rank (the global array grows with the ranks).
//   realms     Coloma et al.'s persistent-file-realm test: one collective
//              write per time step, each rank an interleaved share of the
//              elements of every data point (--step picks the call; a
//              persistent partitioner is first asked for step 0, as the
//              engine's first call of the file would).
//
// Output (CSV on stdout or --out): comment lines "# key=value" with the
// plan's facts, then rows
//   aggregator,round,op,offset,length,pieces,clients
// op is read or write: a file access of the aggregator (a data-sieving
// write is a read of its covering range, then a write of it; reads of holes
// come first). pieces/clients: how many client pieces and client ranks the
// access carries, for the exchange phase.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "../../io/twophase/file_io.hpp"
#include "../../io/twophase/round_exchange.hpp"
#include "../../io/twophase/rounds.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/twophase.hpp"
#include "volseg/io/twophase/partitioner.hpp"

namespace {

namespace tp = volseg::io::twophase;
namespace detail = volseg::io::twophase::detail;

struct Request {
  std::uint64_t offset = 0, length = 0;
};

struct PatternSpec {
  std::string name = "ncio";
  bool file_nc = true, memory_nc = true;
  std::uint64_t count = 4096, size = 8, spacing = 128;                              // ncio
  std::uint64_t edge = 128;                                                         // coll_perf: n per rank
  std::uint64_t points = 2048, elements = 100, element = 32, steps = 32, step = 0;  // realms
};

// Three factors of p, as balanced as MPI_Dims_create makes them, largest first.
std::array<std::uint64_t, 3> dims_of(int p) {
  std::array<std::uint64_t, 3> d{1, 1, 1};
  std::vector<int> primes;
  for (int n = p, f = 2; n > 1;) {
    if (n % f == 0) {
      primes.push_back(f);
      n /= f;
    } else {
      ++f;
    }
  }
  std::sort(primes.rbegin(), primes.rend());
  for (int f : primes) *std::min_element(d.begin(), d.end()) *= static_cast<std::uint64_t>(f);
  std::sort(d.rbegin(), d.rend());
  return d;
}

// Rank r's file pieces, in file order.
template <class Emit>
void pieces_of(const PatternSpec& s, int ranks, int r, Emit&& emit) {
  const auto P = static_cast<std::uint64_t>(ranks), R = static_cast<std::uint64_t>(r);
  if (s.name == "ncio") {
    // As volseg-ncio hands them to the engine: one piece per region, merged
    // only where neighbours are contiguous in both memory and file (c-c).
    if (!s.file_nc && !s.memory_nc) {
      emit(R * s.count * s.size, s.count * s.size);
      return;
    }
    for (std::uint64_t j = 0; j < s.count; ++j)
      emit(s.file_nc ? (j * P + R) * (s.size + s.spacing) : (R * s.count + j) * s.size, s.size);
    return;
  }
  if (s.name == "realms") {
    // Coloma et al. §6.4: data points of `elements` elements, every time
    // step of a point kept together; call `step` writes element e of every
    // point from rank e mod ranks.
    for (std::uint64_t d = 0; d < s.points; ++d)
      for (std::uint64_t e = R; e < s.elements; e += P)
        emit(((d * s.steps + s.step) * s.elements + e) * s.element, s.element);
    return;
  }
  // coll_perf: rank r at block coordinates (x, y, z) of dims d, C order.
  const auto d = dims_of(ranks);
  const std::uint64_t n = s.edge, x = R / (d[1] * d[2]), y = (R / d[2]) % d[1], z = R % d[2];
  const std::uint64_t Y = d[1] * n, Z = d[2] * n, element = 4;
  for (std::uint64_t i = 0; i < n; ++i)
    for (std::uint64_t j = 0; j < n; ++j)
      emit((((x * n + i) * Y) + (y * n + j)) * Z * element + z * n * element, n * element);
}

struct Sink {
  std::ofstream file;
  std::ostream* out = &std::cout;
  explicit Sink(const std::string& path) {
    if (path.empty()) return;
    file.open(path);
    if (!file) throw volseg::Error("cannot write " + path);
    out = &file;
  }
  void finish() {
    out->flush();
    if (!*out) throw volseg::Error("writing the plan failed");
  }
};

int independent_plan(const PatternSpec& spec, int ranks, tp::Direction direction, const tp::Options& options,
                     bool interleaved, const std::string& out_path, const std::string& case_text, std::uint64_t lo,
                     std::uint64_t hi, std::uint64_t bytes) {
  Sink sink(out_path);
  std::ostream& out = *sink.out;
  const char* op = direction == tp::Direction::read ? "read" : "write";
  out << "# pattern=" << spec.name << "\n# ranks=" << ranks
      << "\n# aggregators=0\n# mode=independent\n# direction=" << op << "\n# cb_buffer_size=" << options.cb_buffer_size
      << "\n# region=" << lo << "-" << hi << "\n# bytes=" << bytes << "\n# case=" << case_text << "\n";
  out << "aggregator,round,op,offset,length,pieces,clients\n";
  std::uint64_t accesses = 0, max_chunks = 0;
  const bool sieve_writes = !interleaved;
  for (int r = 0; r < ranks; ++r) {
    std::vector<Request> pieces;
    pieces_of(spec, ranks, r, [&](std::uint64_t o, std::uint64_t n) { pieces.push_back(Request{o, n}); });
    std::uint64_t chunk = 0;
    for (std::size_t i = 0; i < pieces.size();) {
      // One chunk: consecutive pieces whose file span fits the buffer; runs merged.
      std::vector<std::pair<Request, std::size_t>> runs;  // run, pieces in it
      const std::uint64_t begin = pieces[i].offset;
      for (; i < pieces.size() && pieces[i].offset + pieces[i].length - begin <= options.cb_buffer_size; ++i) {
        if (!runs.empty() && pieces[i].offset <= runs.back().first.offset + runs.back().first.length) {
          auto& run = runs.back();
          run.first.length = std::max(run.first.length, pieces[i].offset + pieces[i].length - run.first.offset);
          ++run.second;
        } else {
          runs.push_back({pieces[i], 1});
        }
      }
      if (runs.empty()) runs.push_back({pieces[i++], 1});  // one piece longer than the buffer
      const std::uint64_t end = runs.back().first.offset + runs.back().first.length;
      const bool sieve =
          (direction == tp::Direction::read || sieve_writes) && detail::sieve_access(begin, end, runs.size(), options);
      std::size_t n = 0;
      for (const auto& run : runs) n += run.second;
      if (sieve || runs.size() == 1) {
        if (sieve && direction == tp::Direction::write) {
          out << r << ',' << chunk << ",read," << begin << ',' << end - begin << ",0,0\n";
          ++accesses;
        }
        out << r << ',' << chunk << ',' << op << ',' << begin << ',' << end - begin << ',' << n << ",1\n";
        ++accesses;
      } else {
        for (const auto& run : runs) {
          out << r << ',' << chunk << ',' << op << ',' << run.first.offset << ',' << run.first.length << ','
              << run.second << ",1\n";
          ++accesses;
        }
      }
      ++chunk;
    }
    max_chunks = std::max(max_chunks, chunk);
  }
  out << "# accesses=" << accesses << "\n# rounds=" << max_chunks << "\n";
  sink.finish();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"volseg-twophase-plan: the two-phase engine's plan for one collective call, without MPI or I/O"};
  int ranks = 16, aggregators = 0, per_node = 4;
  std::string direction_text = "write", out_path, case_text = "nc-nc";
  std::vector<std::string> hint_items;
  PatternSpec spec;
  app.add_option("--ranks", ranks, "MPI ranks of the job")->check(CLI::Range(1, 1 << 20));
  app.add_option("--ranks-per-node", per_node,
                 "ranks per node: one aggregator per node by default (4: Jaguar's quad-core nodes)")
      ->check(CLI::PositiveNumber);
  app.add_option("--aggregators", aggregators, "aggregators (cb_nodes); 0: ranks / ranks-per-node");
  app.add_option("--direction", direction_text, "read | write")->check(CLI::IsMember({"read", "write"}));
  app.add_option("--pattern", spec.name, "ncio | coll_perf | realms")
      ->check(CLI::IsMember({"ncio", "coll_perf", "realms"}));
  app.add_option("--case", case_text,
                 "ncio: c-c | nc-c | c-nc | nc-nc (memory-file; memory only decides which pieces merge)");
  app.add_option("--count", spec.count, "ncio: regions per rank")->check(CLI::PositiveNumber);
  app.add_option("--size", spec.size, "ncio: bytes per region")->check(CLI::PositiveNumber);
  app.add_option("--spacing", spec.spacing, "ncio: bytes between regions");
  app.add_option("--edge", spec.edge, "coll_perf: subarray edge per rank (n^3 ints)")->check(CLI::PositiveNumber);
  app.add_option("--points", spec.points, "realms: data points")->check(CLI::PositiveNumber);
  app.add_option("--elements", spec.elements, "realms: elements per data point")->check(CLI::PositiveNumber);
  app.add_option("--element", spec.element, "realms: bytes per element")->check(CLI::PositiveNumber);
  app.add_option("--steps", spec.steps, "realms: time steps in the file")->check(CLI::PositiveNumber);
  app.add_option("--step", spec.step, "realms: the call (time step) to plan");
  app.add_option("--hint", hint_items,
                 "two-phase hints: partition=, cb_buffer_size=, lock_size=, io_servers=, fs_profile=, ds=...");
  app.add_option("--out", out_path, "CSV file (default: standard output)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (case_text != "c-c" && case_text != "nc-c" && case_text != "c-nc" && case_text != "nc-nc")
      throw volseg::Error("--case " + case_text + " is not c-c, nc-c, c-nc or nc-nc");
    spec.file_nc = case_text.size() > 3 && case_text.compare(case_text.size() - 3, 3, "-nc") == 0;
    spec.memory_nc = case_text.rfind("nc-", 0) == 0;
    const auto hints = volseg::io::Hints::parse(hint_items);
    tp::Options options = tp::Options::from_hints(hints);
    hints.reject_unused("volseg-twophase-plan");
    const tp::Direction direction = direction_text == "read" ? tp::Direction::read : tp::Direction::write;
    const int A = std::min(ranks, aggregators > 0        ? aggregators
                                  : options.cb_nodes > 0 ? options.cb_nodes
                                                         : std::max(1, ranks / per_node));
    const std::uint64_t window = options.cb_buffer_size;

    // 1. Every rank's extent, and the aggregate access region.
    std::uint64_t lo = UINT64_MAX, hi = 0, bytes = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> extents;
    for (int r = 0; r < ranks; ++r) {
      std::pair<std::uint64_t, std::uint64_t> e{UINT64_MAX, 0};
      pieces_of(spec, ranks, r, [&](std::uint64_t o, std::uint64_t n) {
        e.first = std::min(e.first, o);
        e.second = std::max(e.second, o + n);
        bytes += n;
      });
      if (e.second == 0) continue;
      extents.push_back(e);
      lo = std::min(lo, e.first);
      hi = std::max(hi, e.second);
    }
    // The engine's independent path (engine.cpp, independent.cpp): no two
    // ranks' extents interleave and cb_read/cb_write is automatic, or
    // aggregation is disabled. Every rank then accesses its own pieces in
    // chunks of at most cb_buffer_size bytes of file, each sieved or done
    // per run by the same rule (writes sieved only where not interleaved).
    std::sort(extents.begin(), extents.end());
    bool interleaved = false;
    for (std::size_t i = 1; i < extents.size(); ++i)
      interleaved = interleaved || extents[i].first < extents[i - 1].second;
    const tp::Aggregation aggregation = direction == tp::Direction::read ? options.cb_read : options.cb_write;
    if (aggregation == tp::Aggregation::disable || (aggregation == tp::Aggregation::automatic && !interleaved))
      return independent_plan(spec, ranks, direction, options, interleaved, out_path, case_text, lo, hi, bytes);

    // 2. File domains, by the engine's partitioner.
    tp::PartitionContext context;
    context.aggregators = A;
    context.lock_size = options.lock_size ? options.lock_size : 4096;
    context.io_servers = options.io_servers;
    context.file_size = 0;  // a new file
    context.realm_size = options.realm_size;
    context.fs_profile = options.fs_profile;
    auto partitioner = tp::make_partitioner(options.partition);
    if (spec.name == "realms" && spec.step > 0) {  // the file's first call, as the engine saw it
      PatternSpec first = spec;
      first.step = 0;
      std::uint64_t flo = UINT64_MAX, fhi = 0;
      for (int r = 0; r < ranks; ++r)
        pieces_of(first, ranks, r, [&](std::uint64_t o, std::uint64_t n) {
          flo = std::min(flo, o);
          fhi = std::max(fhi, o + n);
        });
      partitioner->partition(tp::Region{flo, fhi}, direction, context);
    }
    const tp::FileDomains domains = partitioner->partition(tp::Region{lo, hi}, direction, context);

    // 3. Each aggregator's requests, per client, in the client's file order.
    std::vector<std::vector<std::vector<Request>>> from(static_cast<std::size_t>(A));
    for (auto& per_client : from) per_client.resize(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r)
      pieces_of(spec, ranks, r, [&](std::uint64_t o, std::uint64_t n) {
        for (std::uint64_t at = o, end = o + n; at < end;) {
          const std::uint64_t stop = std::min(end, domains.piece_end(at));
          from[static_cast<std::size_t>(domains.owner(at))][static_cast<std::size_t>(r)].push_back(
              Request{at, stop - at});
          at = stop;
        }
      });

    Sink sink(out_path);
    std::ostream& out = *sink.out;
    out << "# pattern=" << spec.name << "\n# ranks=" << ranks << "\n# aggregators=" << A
        << "\n# mode=collective\n# direction=" << direction_text << "\n# partition=" << partitioner->chosen()
        << "\n# domains=" << domains.describe() << "\n# cb_buffer_size=" << window
        << "\n# lock_size=" << context.lock_size << "\n# region=" << lo << "-" << hi << "\n# bytes=" << bytes << "\n";
    if (spec.name == "ncio")
      out << "# case=" << case_text << "\n# count=" << spec.count << "\n# size=" << spec.size
          << "\n# spacing=" << spec.spacing << "\n";
    else if (spec.name == "realms")
      out << "# step=" << spec.step << "\n# steps=" << spec.steps << "\n";
    else
      out << "# edge=" << spec.edge << "\n";
    out << "aggregator,round,op,offset,length,pieces,clients\n";

    std::uint64_t accesses = 0, max_rounds = 0;
    for (int a = 0; a < A; ++a) {
      auto& clients = from[static_cast<std::size_t>(a)];
      // 4. The rounds' windows over requested coordinates only.
      std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
      std::vector<std::size_t> starts;
      for (const auto& list : clients) {
        starts.push_back(spans.size());
        for (const auto& q : list) {
          const std::uint64_t c = domains.coordinate(a, q.offset);
          spans.emplace_back(c, c + q.length);
        }
      }
      starts.push_back(spans.size());
      if (spans.empty()) continue;
      detail::merge_runs(spans, std::move(starts), std::less<>{});
      std::uint64_t used = 0;
      const auto windows = detail::place_windows(spans, window, used);
      spans = {};
      max_rounds = std::max<std::uint64_t>(max_rounds, windows.size());
      std::vector<detail::RoundCursor> cursors(clients.size());
      for (std::size_t r = 0; r < clients.size(); ++r)
        cursors[r] = detail::RoundCursor(detail::cut_into_rounds(
            clients[r], windows, window, [&](std::uint64_t x) { return domains.coordinate(a, x); }));
      // 5. Each round's file accesses, coalesced and sieved as the engine does.
      for (std::uint64_t round = 0; round < windows.size(); ++round) {
        std::vector<detail::Slot> all;
        std::vector<std::size_t> bounds;
        for (std::size_t r = 0; r < clients.size(); ++r) {
          bounds.push_back(all.size());
          cursors[r].take(round, [&](const detail::Cut& cut) {
            const auto& q = clients[r][cut.item];
            all.push_back(detail::Slot{q.offset + cut.skip, cut.length, cut.position, static_cast<int>(r), 0});
          });
        }
        bounds.push_back(all.size());
        detail::merge_runs(all, std::move(bounds),
                           [](const detail::Slot& x, const detail::Slot& y) { return x.offset < y.offset; });
        // Pieces and distinct clients per access: the group's runs carry
        // the slots merged into them in order.
        std::size_t next = 0;
        const auto groups = detail::coalesce(all, domains, options);
        auto row = [&](const char* op, std::uint64_t o, std::uint64_t n, std::size_t pieces, std::size_t clients_n) {
          out << a << ',' << round << ',' << op << ',' << o << ',' << n << ',' << pieces << ',' << clients_n << '\n';
          ++accesses;
        };
        for (const auto& group : groups) {
          std::vector<int> sources;
          for (std::size_t k = 0; k < group.slots; ++k) sources.push_back(all[next + k].source);
          next += group.slots;
          std::sort(sources.begin(), sources.end());
          const auto distinct = static_cast<std::size_t>(std::unique(sources.begin(), sources.end()) - sources.begin());
          if (group.runs.size() == 1 || group.sieve) {
            if (group.sieve && direction == tp::Direction::write)
              row("read", group.begin(), group.end() - group.begin(), 0, 0);
            row(direction_text.c_str(), group.begin(), group.end() - group.begin(), group.slots, distinct);
            continue;
          }
          // Naive: one access per run; the pieces go with their run.
          std::size_t k = next - group.slots;
          for (const auto& run : group.runs) {
            std::size_t pieces = 0;
            std::vector<int> run_sources;
            for (; k < next && all[k].offset < run.offset + run.length; ++k, ++pieces)
              run_sources.push_back(all[k].source);
            std::sort(run_sources.begin(), run_sources.end());
            row(direction_text.c_str(), run.offset, run.length, pieces,
                static_cast<std::size_t>(std::unique(run_sources.begin(), run_sources.end()) - run_sources.begin()));
          }
        }
      }
      clients = {};
    }
    out << "# accesses=" << accesses << "\n# rounds=" << max_rounds << "\n";
    sink.finish();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "volseg-twophase-plan: " << e.what() << "\n";
    return 1;
  }
}
