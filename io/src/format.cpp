// SPDX-License-Identifier: MIT
#include "volseg/io/format.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"

namespace volseg::io {

std::string format_name(FileFormat format) {
  switch (format) {
    case FileFormat::raw: return "raw";
    case FileFormat::cdf1: return "cdf1";
    case FileFormat::cdf2: return "cdf2";
    case FileFormat::cdf5: return "cdf5";
    case FileFormat::netcdf4: return "netcdf4";
  }
  return "?";
}

FileFormat parse_format(const std::string& name) {
  if (name == "raw") return FileFormat::raw;
  if (name == "cdf2") return FileFormat::cdf2;
  if (name == "cdf5") return FileFormat::cdf5;
  if (name == "netcdf4") return FileFormat::netcdf4;
  throw Error("unknown format '" + name + "' (known: raw, cdf2, cdf5, netcdf4)");
}

static FileFormat detect_on_this_rank(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open", path);
  struct stat st{};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error("open " + path + ": is a directory");
  }
  unsigned char magic[8] = {};
  ssize_t got = ::read(fd, magic, sizeof magic);
  int saved = errno;
  if (::close(fd) != 0) throw_errno("close", path);
  if (got < 0) throw_errno("read", path, saved);
  if (got >= 4 && std::memcmp(magic, "NRRD", 4) == 0) return FileFormat::raw;
  if (got >= 4 && std::memcmp(magic, "CDF", 3) == 0) {
    if (magic[3] == 1) return FileFormat::cdf1;
    if (magic[3] == 2) return FileFormat::cdf2;
    if (magic[3] == 5) return FileFormat::cdf5;
  }
  if (got == 8 && std::memcmp(magic, "\x89HDF\r\n\x1a\n", 8) == 0) return FileFormat::netcdf4;
  throw Error(path + ": not a volume volseg reads (neither a NRRD header, a NetCDF classic file nor HDF5/NetCDF-4)");
}

FileFormat detect_format(const Comm& comm, const std::string& path) {
  std::string name;
  collectively(comm, [&] {
    if (comm.rank() == 0) name = format_name(detect_on_this_rank(path));
  });
  name = comm.broadcast(name);
  return name == "cdf1" ? FileFormat::cdf1 : parse_format(name);
}

std::string reading_backend(FileFormat format) {
  switch (format) {
    case FileFormat::raw: return "mmap-advise";
    case FileFormat::cdf1:
    case FileFormat::cdf2:
    case FileFormat::cdf5: return "pnetcdf";
    case FileFormat::netcdf4: return "netcdf4";
  }
  return "posix";
}

Writing writing_backend(FileFormat format, const std::string& input_backend) {
  switch (format) {
    case FileFormat::raw: {
      const Backend& backend = builtin_registry().get(input_backend);
      return {backend.extension == ".nhdr" ? input_backend : "mmap-advise", {}};
    }
    case FileFormat::cdf1:  // twophase writes CDF through its byte offsets too
    case FileFormat::cdf2: return {input_backend == "twophase" ? "twophase" : "pnetcdf", {"format=cdf2"}};
    case FileFormat::cdf5: return {input_backend == "twophase" ? "twophase" : "pnetcdf", {"format=cdf5"}};
    case FileFormat::netcdf4: return {"netcdf4", {}};
  }
  return {"posix", {}};
}

}  // namespace volseg::io
