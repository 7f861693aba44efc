// SPDX-License-Identifier: MIT
// `--backend auto`: the backend for this input, chosen from what is cheap to
// know before the job: the format and how much of the file is in the page
// cache (mincore on a sample of its pages). The rule, and the measurements
// behind it (the same on 1 and 2 ranks), are in docs/ranged.md ("auto").
#pragma once

#include <cstdint>
#include <string>

#include "volseg/io/comm.hpp"
#include "volseg/io/format.hpp"

namespace volseg::io {

struct Residency {
  double fraction = 0;              // of the sampled pages, those in the page cache
  std::uint64_t pages_sampled = 0;  // 0: the file could not be sampled
};

// Not collective. mincore on up to `windows` runs of 16 pages spread evenly
// over the file (the whole file when it is smaller): a few hundred
// microseconds whatever the file's size. Throws volseg::Error naming the
// file when it is not a regular file or cannot be opened or mapped.
Residency sample_residency(const std::string& path, int windows = 256);

struct AutoChoice {
  std::string backend;
  std::string reason;    // one sentence for the summary and the report
  double resident = -1;  // sampled page-cache share of a raw input; -1: not sampled
};

// Collective: rank 0 looks, every rank gets its choice. An input that
// cannot be sampled (a missing or damaged data file) gets the format's
// default backend, whose open then reports the problem.
AutoChoice choose_backend(const Comm& comm, FileFormat format, const std::string& input_path);

}  // namespace volseg::io
