// SPDX-License-Identifier: MIT
// volseg-ncio: one configuration of the NCIO benchmark (Ching et al., §4) on
// every rank of MPI_COMM_WORLD. bench/volseg-bench drives the sweeps.
//
// Pattern (P ranks, rank r, `count` regions of `size` bytes, `spacing` bytes
// between regions; Ching et al. Fig. 3):
//   memory c:   one buffer of count*size bytes, region j at j*size;
//   memory nc:  one buffer, region j at j*(size+spacing) (gaps untouched);
//   file c:     rank r writes count*size bytes at r*count*size;
//   file nc:    region j of rank r at (j*P + r)*(size+spacing): the ranks'
//               regions interleave and `spacing` bytes after each stay
//               untouched.
// Methods (every one syncs after its write, as Ching et al. did):
//   posix            one pwrite per contiguous region, own fd per rank, fdatasync
//   listio           pwritev over batches of --batch (64) regions: one call per
//                    file-contiguous run inside a batch, fdatasync
//   listio-uring     io_uring, one submission of up to --batch (64) writes per
//                    batch (a real file offset-length list), fdatasync
//   twophase-<p>     volseg::io::twophase write_all then File::sync, for each
//                    partitioner p (even aligned static-cyclic group-cyclic
//                    persistent auto); `twophase` means all six
//   datatype         MPI_File_set_view (vector filetype) + MPI_File_write with a
//                    vector memory type + MPI_File_sync
//   collective       the same with MPI_File_write_all
// The MPI-IO methods are labelled with the implementation in use: ompio, or
// romio when run with OMPI_MCA_io=romio321.
//
// Each method is first run once untimed over a file pre-filled with 0xA5 and
// every byte of the file is checked (regions hold their pattern, gaps keep
// 0xA5, nothing past the end); a method that fails reports no bandwidth and
// the exit code is 1. Then --reps timed runs per method, interleaved across
// methods, each on a truncated file (or, with --prefill, a file pre-filled
// and synced outside the timing; --cold also evicts it from the page cache): barrier, timer, [set_view], write, sync,
// timer. Bandwidth = bytes of all ranks / the slowest rank's time; the
// highest and lowest of the reps' bandwidths are dropped and the rest
// averaged (Ching et al.). Each method's file is opened (untimed) before every
// timed run and closed after it; --keep-open opens it once for all runs.
// Two-phase columns (tp_*): the first aggregator's requests / exchange / I/O
// seconds (the engine's last_call()), and counters summed over ranks.
//
// Output: one CSV row per case and method on stdout (rank 0), --header adds
// the header line; --csv FILE appends the rows to FILE as well.
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/twophase.hpp"

#include "ncio.hpp"

namespace {

using namespace volseg::bench::ncio;

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

std::vector<std::string> expand_methods(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& name : names) {
    if (name == "all") {
      for (const char* m : {"posix", "listio", "listio-uring"}) out.emplace_back(m);
      for (const char* p : kPartitions) out.push_back(std::string("twophase-") + p);
      out.emplace_back("datatype");
      out.emplace_back("collective");
    } else if (name == "twophase") {
      for (const char* p : kPartitions) out.push_back(std::string("twophase-") + p);
    } else if (name == "mpiio") {
      out.emplace_back("datatype");
      out.emplace_back("collective");
    } else {
      out.push_back(name);
    }
  }
  return out;
}

// Drops the highest and lowest (with 3 or more) and averages the rest.
double trimmed_mean(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  if (values.size() >= 3) values = std::vector<double>(values.begin() + 1, values.end() - 1);
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

const char* kHeader =
    "case,method,impl,ranks,count,size,spacing,bytes,extent,reps,prefill,keep_open,verified,bw_mbs,time_s,write_s,sync_"
    "s,"
    "min_bw_mbs,max_bw_mbs,tp_requests_s,tp_exchange_s,tp_io_s,tp_rounds,tp_io_calls,tp_file_bytes,tp_sieved,"
    "tp_naive,tp_contiguous,tp_partition,note";

struct Result {
  std::vector<double> bw, time, write, sync;   // per rep, slowest rank
  std::vector<double> requests, exchange, io;  // twophase, per rep, slowest rank
  tp::Timing counters;                         // twophase, last rep, summed over ranks
  std::string partition, note;
  bool verified = false, tested = false;
};

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int status = 0;
  try {
    CLI::App app{"volseg-ncio: one NCIO configuration (Ching et al.) on every rank; see bench/ncio/main.cpp"};
    std::string cases_text = "c-c,nc-c,c-nc,nc-nc", methods_text = "all", dir = "/tmp", csv_path;
    std::uint64_t count = 4096, size = 8, spacing = 128, batch = 64;
    int reps = 6, pause_ms = 20;
    bool header = false, no_verify = false, prefill = false, cold = false, verbose = false, keep_open = false;
    std::vector<std::string> hint_items;
    app.add_option("--case", cases_text, "comma list of c-c nc-c c-nc nc-nc");
    app.add_option("--method", methods_text,
                   "comma list: posix listio listio-uring twophase-<partition> twophase (all six) datatype "
                   "collective mpiio (both) all");
    app.add_option("--count", count, "regions per rank (default 4096)")->check(CLI::PositiveNumber);
    app.add_option("--size", size, "bytes per region (default 8)")->check(CLI::PositiveNumber);
    app.add_option("--spacing", spacing, "bytes between regions (default 128)");
    app.add_option("--reps", reps, "timed repetitions per method (default 6; highest and lowest dropped)")
        ->check(CLI::PositiveNumber);
    app.add_option("--pause-ms", pause_ms, "pause after each run (default 20 ms)");
    app.add_option("--batch", batch, "regions per list I/O batch (default 64, Ching et al.)")
        ->check(CLI::PositiveNumber);
    app.add_option("--dir", dir, "where the test file goes (default /tmp)");
    app.add_option("--csv", csv_path, "append the rows to this file too");
    app.add_option("--hint", hint_items, "twophase option key=value (cb_nodes, cb_buffer_size, ds, ds_threshold, ...)");
    app.add_flag("--header", header, "print the CSV header first");
    app.add_flag("--no-verify", no_verify, "skip the verification run");
    app.add_flag("--prefill", prefill, "timed runs overwrite a pre-filled, synced file instead of a truncated one");
    app.add_flag("--cold", cold, "with --prefill: evict the file from the page cache before each timed run");
    app.add_flag("--keep-open", keep_open,
                 "open each method's file once for all timed runs (steady state) instead of once per run");
    app.add_flag("--verbose", verbose, "per-rep lines on stderr");
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int code = rank == 0 ? app.exit(e) : (e.get_exit_code() != 0 ? 1 : 0);
      MPI_Finalize();
      return code;
    }

    volseg::Comm comm(MPI_COMM_WORLD);
    const auto hints = volseg::io::Hints::parse(hint_items);
    const std::string shared_path = comm.broadcast(dir + "/volseg-ncio-" + std::to_string(::getpid()) + ".dat");

    std::vector<std::unique_ptr<Method>> methods;
    for (const auto& name : expand_methods(split(methods_text))) {
      methods.push_back(make_method(name, batch, comm, hints));
    }
    // The hints are the two-phase engine's: checked by name, since a launch
    // of other methods alone (volseg-bench bar runs each in turn) uses none.
    for (const auto& key : hints.keys())
      if (!tp::Options::is_hint(key)) throw volseg::Error("unknown hint '" + key + "' for backend twophase");

    std::ofstream csv;
    if (rank == 0 && !csv_path.empty()) {
      csv.open(csv_path, std::ios::app);
      if (!csv) fail("cannot append to " + csv_path);
    }
    auto emit = [&](const std::string& line) {
      if (rank != 0) return;
      std::cout << line << '\n' << std::flush;
      if (csv.is_open()) csv << line << '\n' << std::flush;
    };
    if (header) emit(kHeader);

    bool any_failed = false;
    for (const auto& case_name : split(cases_text)) {
      const Case kind = parse_case(case_name);
      const Pattern pattern = make_pattern(kind, count, size, spacing, rank, ranks);
      for (auto& m : methods) m->new_case();
      std::vector<Result> results(methods.size());
      // With --keep-open each method has its own file, opened at its first
      // timed run and closed after the last (truncated between runs all the
      // same): the steady state of a file written many times.
      std::vector<char> open_now(methods.size(), 0);
      auto file_of = [&](std::size_t i, bool keep) {
        return keep ? shared_path + "." + std::to_string(i) : shared_path;
      };
      auto run_once = [&](std::size_t i, bool file_prefill, bool keep) {
        Method& m = *methods[i];
        const std::string file = file_of(i, keep);
        prepare_file(file, pattern, file_prefill, file_prefill && cold);
        Run run;
        // Errors of one rank must not leave the others in a collective call:
        // every step is agreed on.
        if (!open_now[i]) volseg::collectively(comm, [&] { m.open(file, pattern); });
        open_now[i] = keep;
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = now();
        volseg::collectively(comm, [&] { m.write(pattern, run); });
        run.total = now() - start;
        if (!keep) volseg::collectively(comm, [&] { m.close(); });
        return run;
      };
      // 1. Verification, untimed, over a pre-filled file.
      for (std::size_t i = 0; i < methods.size(); ++i) {
        Result& res = results[i];
        if (no_verify) {
          res.verified = true;
          res.note = "not verified";
          continue;
        }
        try {
          run_once(i, true, false);  // warm: verification is not timed
          std::string first;
          const std::uint64_t bad = verify_file(shared_path, pattern, first);
          res.verified = bad == 0;
          if (!res.verified) res.note = std::to_string(bad) + " bad bytes; first: " + first;
        } catch (const std::exception& e) {
          res.verified = false;
          res.note = std::string("failed: ") + e.what();
        }
        if (!res.verified) {
          any_failed = true;
          if (rank == 0)
            std::cerr << "volseg-ncio: " << case_name << " " << methods[i]->name()
                      << " FAILED verification: " << res.note << "\n";
        }
      }
      // 2. Timed runs, interleaved across methods.
      for (int rep = 0; rep < reps; ++rep) {
        for (std::size_t i = 0; i < methods.size(); ++i) {
          Result& res = results[i];
          if (!res.verified) continue;
          Run run = run_once(i, prefill, keep_open);
          std::array<double, 3> local{run.total, run.write, run.sync};
          std::array<double, 6> slowest{};
          MPI_Allreduce(local.data(), slowest.data(), 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          // The two-phase breakdown of the first aggregator (the critical path).
          std::array<double, 3> lead{run.timing.requests, run.timing.exchange, run.timing.io};
          MPI_Bcast(lead.data(), 3, MPI_DOUBLE, run.lead, MPI_COMM_WORLD);
          std::copy(lead.begin(), lead.end(), slowest.begin() + 3);
          std::array<std::uint64_t, 7> counters{run.timing.rounds,
                                                run.timing.io_calls,
                                                run.timing.file_bytes,
                                                run.timing.sieved,
                                                run.timing.naive,
                                                run.timing.contiguous,
                                                0};
          MPI_Allreduce(MPI_IN_PLACE, counters.data(), 7, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
          res.tested = true;
          res.time.push_back(slowest[0]);
          res.write.push_back(slowest[1]);
          res.sync.push_back(slowest[2]);
          res.requests.push_back(slowest[3]);
          res.exchange.push_back(slowest[4]);
          res.io.push_back(slowest[5]);
          res.bw.push_back(static_cast<double>(pattern.bytes) / slowest[0] / 1e6);
          res.counters.rounds = counters[0] / static_cast<std::uint64_t>(ranks);  // every rank counts the rounds
          res.counters.io_calls = counters[1];
          res.counters.file_bytes = counters[2];
          res.counters.sieved = counters[3];
          res.counters.naive = counters[4];
          res.counters.contiguous = counters[5];
          res.partition = run.partition;
          if (verbose) {
            std::array<double, 5> mine{run.write, run.sync, run.timing.requests, run.timing.exchange, run.timing.io};
            std::vector<double> all(5 * static_cast<std::size_t>(ranks));
            MPI_Gather(mine.data(), 5, MPI_DOUBLE, all.data(), 5, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (rank == 0) {
              std::fprintf(stderr, "  %s %s rep %d: %.6f s %.3f MB/s; per rank ms write/sync[requests/exchange/io]:",
                           case_name.c_str(), methods[i]->name().c_str(), rep, slowest[0], res.bw.back());
              for (int r = 0; r < ranks; ++r) {
                const double* v = all.data() + 5 * r;
                std::fprintf(stderr, " %d: %.2f/%.2f", r, 1e3 * v[0], 1e3 * v[1]);
                if (!run.partition.empty())
                  std::fprintf(stderr, "[%.2f/%.2f/%.2f]", 1e3 * v[2], 1e3 * v[3], 1e3 * v[4]);
              }
              std::fprintf(stderr, "\n");
            }
          }
          if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        }
      }
      for (std::size_t i = 0; i < methods.size(); ++i)
        if (open_now[i]) {
          volseg::collectively(comm, [&] { methods[i]->close(); });
          open_now[i] = 0;
          if (rank == 0) ::unlink(file_of(i, true).c_str());
        }
      for (std::size_t i = 0; i < methods.size(); ++i) {
        const Result& res = results[i];
        const Method& m = *methods[i];
        const bool is_tp = m.name().rfind("twophase-", 0) == 0;
        std::ostringstream row;
        row.precision(6);
        row << case_name << ',' << m.name() << ',' << (m.impl().empty() ? "mpiio" : m.impl()) << ',' << ranks << ','
            << count << ',' << size << ',' << spacing << ',' << pattern.bytes << ',' << pattern.extent << ',' << reps
            << ',' << (prefill ? (cold ? 2 : 1) : 0) << ',' << (keep_open ? 1 : 0) << ',' << (res.verified ? 1 : 0)
            << ',';
        if (res.tested) {
          row << trimmed_mean(res.bw) << ',' << trimmed_mean(res.time) << ',' << trimmed_mean(res.write) << ','
              << trimmed_mean(res.sync) << ',' << *std::min_element(res.bw.begin(), res.bw.end()) << ','
              << *std::max_element(res.bw.begin(), res.bw.end()) << ',';
        } else {
          row << ",,,,,,";
        }
        if (is_tp && res.tested) {
          row << trimmed_mean(res.requests) << ',' << trimmed_mean(res.exchange) << ',' << trimmed_mean(res.io) << ','
              << res.counters.rounds << ',' << res.counters.io_calls << ',' << res.counters.file_bytes << ','
              << res.counters.sieved << ',' << res.counters.naive << ',' << res.counters.contiguous << ','
              << res.partition << ',';
        } else {
          row << ",,,,,,,,,,";
        }
        row << csv_field(res.note);
        emit(row.str());
      }
    }
    if (rank == 0) ::unlink(shared_path.c_str());
    status = any_failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "volseg-ncio (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return status;
}
