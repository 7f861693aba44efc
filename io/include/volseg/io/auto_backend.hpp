// SPDX-License-Identifier: MIT
// `--backend auto`: the one rule that picks the backend reading an input, for
// every command (segment, label, pyramid, info, render), the GUI and render
// loading, so the same file read the same way gets the same I/O. It uses what
// is cheap to know before the job: the format, how the caller reads (Access)
// and, for a raw volume read brick by brick, how much of the file is in the
// page cache (mincore on a sample of its pages). The rule, and the
// measurements behind it (the same on 1 and 2 ranks), are in docs/ranged.md
// ("auto"). Writers follow the format (writing_backend in format.hpp).
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

// How the caller reads the input: the one thing besides the file that
// changes which backend serves it best.
enum class Access {
  // Every brick once, used where it lies and let go: segment, label and
  // pyramid jobs (and `volseg info`, which says what they would use). A raw
  // input is mapped when warm (no copy), read with O_DIRECT when cold.
  stream,
  // Each rank's piece copied once into a buffer it keeps (render loading,
  // the GUI's planes): mapping saves no copy there, and mapped pages would
  // count in the rank's resident memory beside the copy, so a raw input is
  // read with pread (posix), whatever the page cache holds.
  copy,
};

struct AutoChoice {
  std::string backend;
  std::string reason;    // one sentence for the summary and the report; empty: named by the user
  double resident = -1;  // sampled page-cache share of a raw input; -1: not sampled
};

// Collective: rank 0 looks, every rank gets its choice. NetCDF and HDF5
// inputs get their format's reader (reading_backend); a raw one the rule of
// `access`. An input that cannot be sampled (a missing or damaged data file)
// gets the format's default backend, whose open then reports the problem.
AutoChoice choose_backend(const Comm& comm, FileFormat format, const std::string& input_path,
                          Access access = Access::stream);

// The one entry for `--backend auto`. Collective when `asked` is "auto":
// then choose_backend of the file's format (detected here, or `format` when
// the caller knows it already); any other name is returned as it is, without
// a reason (nothing was chosen, resident -1).
AutoChoice resolve_backend(const Comm& comm, const std::string& asked, const std::string& input_path, Access access);
AutoChoice resolve_backend(const Comm& comm, const std::string& asked, FileFormat format, const std::string& input_path,
                           Access access);

}  // namespace volseg::io
