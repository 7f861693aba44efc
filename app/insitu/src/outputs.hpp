// SPDX-License-Identifier: MIT
// The hook's small outputs, written by rank 0: the time series (a CSV line
// per in-situ step, streamed to its temporary DIR/.NAME.volseg-tmp-PID and
// committed at finalize, so a run that dies keeps every finished line under
// a name that says it is not done; a JSON with the histograms at finalize)
// and ParaView's series index of the masks.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "volseg/insitu/insitu.hpp"
#include "volseg/io/files.hpp"

namespace volseg::insitu::detail {

// "mask_%06d.nc" with step 42 -> "mask_000042.nc" (segment::step_path, as
// the batch jobs' --time series name their files). Throws volseg::Error
// unless the pattern has exactly one %d (flags and width allowed; %% is %).
std::string format_step(const std::string& pattern, std::int64_t step);

class TimeSeries {
 public:
  TimeSeries() = default;
  // Creates PATH's temporary (refusing an existing PATH unless force).
  TimeSeries(const std::string& path, bool force);
  ~TimeSeries();
  TimeSeries(const TimeSeries&) = delete;
  TimeSeries& operator=(const TimeSeries&) = delete;

  void append(const StepRecord& record);
  // Closes the CSV (checked) and commits it; writes the JSON beside it.
  void finish(const std::vector<StepRecord>& records, double create_seconds, const Options& options);

 private:
  // The file the lines go to: the temporary, or a stream itself.
  const std::string& written() const { return stream_ ? path_ : commit_.temporary(); }

  std::string path_;
  bool stream_ = false;      // a device or pipe: written in place, no summary beside it
  io::AtomicCommit commit_;  // kept when not committed: the lines of a run that died
  std::FILE* file_ = nullptr;
};

// ParaView's index of the masks, in its file-series format (a JSON
// NAME.nc.series that ParaView's NetCDF readers open as a time series; a
// .pvd collection would not do: ParaView reads only VTK XML files through
// one). Written atomically.
void write_series_index(const std::string& path, const std::vector<StepRecord>& records);

}  // namespace volseg::insitu::detail
