// SPDX-License-Identifier: MIT
// libFuzzer target: opening a NetCDF file (io/backends/pnetcdf.cpp,
// netcdf4.cpp and the conventions they share, netcdf/conventions.cpp). An
// input is a whole file; it is written to /dev/shm and opened as 'volseg
// info' opens a file: the format from its magic bytes, the backend that
// reads it, the variables it lists, then the reader (which checks the
// variable, its shape and type, the file's length and the NUG/CF
// attributes) and the description it prints. Nothing is read past the header.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_support.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"

using namespace volseg::io;

namespace {

const std::string& file_path() {
  static const std::string path = volseg::fuzz::scratch_file("netcdf", ".nc");
  return path;
}

void write_file(const std::uint8_t* data, std::size_t size) { volseg::fuzz::write_scratch(file_path(), data, size); }

// NetCDF-4 files are opened only with VOLSEG_FUZZ_NETCDF4=1. Their mutated
// HDF5 metadata fuzzes HDF5 1.10.8 more than volseg, and its own memory
// errors and leaks (docs/reliability.md), which volseg cannot fix, would
// stop every run before it reached volseg's code.
bool netcdf4_wanted() {
  static const bool wanted = [] {
    const char* value = std::getenv("VOLSEG_FUZZ_NETCDF4");
    return value != nullptr && std::string(value) == "1";
  }();
  return wanted;
}

void open_as_info_does(const volseg::Comm& comm, const std::string& path, FileFormat format) {
  const std::string backend = reading_backend(format);
  const Backend& entry = builtin_registry().get(backend);
  volseg::io::Selection selection;
  if (entry.list_variables) {
    // "name(dim=length, ...) type": with several candidates, name the first
    // as a user would with --var, and with a time axis, choose step 0.
    const auto variables = entry.list_variables(path, comm);
    if (variables.size() > 1) selection.variable = variables.front().substr(0, variables.front().find('('));
    if (!variables.empty() && std::count(variables.front().begin(), variables.front().end(), '=') == 4)
      selection.step = 0;
  }
  auto reader = open_reader(backend, {path, selection}, comm);
  (void)describe(path, format, backend, reader->info());
  reader->close();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)volseg::fuzz::world();
  std::atexit([] { ::unlink(file_path().c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const volseg::Comm& comm = volseg::fuzz::world();
  write_file(data, size);
  const int files_before = volseg::fuzz::open_files();
  FileFormat format = FileFormat::raw;
  try {
    format = detect_format(comm, file_path());
    // NRRD is fuzz_nrrd's part.
    if (format != FileFormat::raw && (format != FileFormat::netcdf4 || netcdf4_wanted()))
      open_as_info_does(comm, file_path(), format);
  } catch (const volseg::Error&) {
  }
  // A refused file must be closed like an accepted one. Not checked for
  // NetCDF-4: netCDF-C 4.9.0 itself keeps a descriptor of every file whose
  // nc_open_par failed in HDF5, and hands back no id to close it with.
  if (format != FileFormat::netcdf4 && volseg::fuzz::open_files() != files_before)
    volseg::fuzz::invariant_broken("a file was left open");
  // libFuzzer ends a timed run without destructors: nothing is left in /dev/shm.
  ::unlink(file_path().c_str());
  return 0;
}
