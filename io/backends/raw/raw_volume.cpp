// SPDX-License-Identifier: MIT
#include "raw_volume.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "volseg/io/byteswap.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/faults.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/nifti.hpp"
#include "volseg/io/tiff.hpp"
#include "volseg/io/trace.hpp"
#include "volseg/io/vti.hpp"

namespace volseg::io::raw {

void for_each_run(const Index3& dims, const Extent& extent, std::size_t element_size, std::uint64_t base_offset,
                  const std::function<void(std::uint64_t, std::int64_t, std::int64_t)>& fn) {
  if (extent.empty()) return;
  // Not a structured binding: lambdas capture those only from clang 16 on.
  const std::int64_t ny = dims[1], nx = dims[2];
  const auto& o = extent.offset;
  const auto& c = extent.count;
  auto file_offset = [&](std::int64_t z, std::int64_t y, std::int64_t x) {
    return base_offset + static_cast<std::uint64_t>((z * ny + y) * nx + x) * element_size;
  };
  if (c[2] == nx && c[1] == ny) {  // whole planes: one run
    fn(file_offset(o[0], 0, 0), extent.voxels(), 0);
  } else if (c[2] == nx) {  // whole rows: one run per plane
    for (std::int64_t z = 0; z < c[0]; ++z) fn(file_offset(o[0] + z, o[1], 0), c[1] * nx, z * c[1] * nx);
  } else {
    std::int64_t index = 0;
    for (std::int64_t z = 0; z < c[0]; ++z)
      for (std::int64_t y = 0; y < c[1]; ++y, index += c[2]) fn(file_offset(o[0] + z, o[1] + y, o[2]), c[2], index);
  }
}

std::uint64_t first_byte(const Index3& dims, const Extent& extent, std::size_t element_size,
                         std::uint64_t base_offset) {
  const auto& o = extent.offset;
  return base_offset + static_cast<std::uint64_t>((o[0] * dims[1] + o[1]) * dims[2] + o[2]) * element_size;
}

void swap_bytes(void* data, std::int64_t count, std::size_t element_size) {
  copy_swapped(data, data, count, element_size);
}

template <class U>
static void swap_copy(void* destination, const void* source, std::int64_t count) {
  const auto* in = static_cast<const U*>(source);
  auto* out = static_cast<U*>(destination);
  for (std::int64_t i = 0; i < count; ++i) {
    U value;
    std::memcpy(&value, in + i, sizeof(U));
    value = byteswap(value);
    std::memcpy(out + i, &value, sizeof(U));
  }
}

void copy_swapped(void* destination, const void* source, std::int64_t count, std::size_t element_size) {
  switch (element_size) {
    case 1:
      if (destination != source) std::memmove(destination, source, static_cast<std::size_t>(count));
      break;
    case 2:
      swap_copy<std::uint16_t>(destination, source, count);
      break;
    case 4:
      swap_copy<std::uint32_t>(destination, source, count);
      break;
    case 8:
      swap_copy<std::uint64_t>(destination, source, count);
      break;
    default:
      throw Error("byte swap: unsupported element size " + std::to_string(element_size));
  }
}

void copy_out(const Mapping& window, void* buffer, std::size_t element_size) {
  for (const Run& run : window.runs()) {
    void* target = static_cast<std::byte*>(buffer) + run.index * static_cast<std::int64_t>(element_size);
    if (window.needs_swap())
      copy_swapped(target, run.data, run.count, element_size);
    else
      std::memcpy(target, run.data, static_cast<std::size_t>(run.count) * element_size);
  }
}

void read_fully(int fd, void* buffer, std::size_t length, std::uint64_t offset, const std::string& path) {
  auto* out = static_cast<char*>(buffer);
  while (length > 0) {
    trace::Span span(trace::Op::read, static_cast<std::int64_t>(offset));
    const auto fault = faults::at(faults::Call::read);
    const std::size_t asked = fault.short_io ? std::max<std::size_t>(length / 2, 1) : length;
    ssize_t got = fault.error ? (errno = fault.error, -1) : ::pread(fd, out, asked, static_cast<off_t>(offset));
    if (got > 0) span.set_bytes(static_cast<std::uint64_t>(got));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_errno("read", path);
    }
    if (got == 0) throw Error("read " + path + ": unexpected end of file at byte " + std::to_string(offset));
    out += got;
    length -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

void write_fully(int fd, const void* buffer, std::size_t length, std::uint64_t offset, const std::string& path,
                 std::size_t align) {
  const auto* in = static_cast<const char*>(buffer);
  while (length > 0) {
    trace::Span span(trace::Op::write, static_cast<std::int64_t>(offset));
    const auto fault = faults::at(faults::Call::write);
    // An injected short write stays a whole number of blocks (O_DIRECT).
    const std::size_t asked = fault.short_io ? std::max<std::size_t>(length / 2 / align * align, align) : length;
    ssize_t put = fault.error ? (errno = fault.error, -1) : ::pwrite(fd, in, asked, static_cast<off_t>(offset));
    if (put > 0) span.set_bytes(static_cast<std::uint64_t>(put));
    if (put < 0) {
      if (errno == EINTR) continue;
      throw_errno("write", path);
    }
    in += put;
    length -= static_cast<std::size_t>(put);
    offset += static_cast<std::uint64_t>(put);
  }
}

NrrdHeader parse_raw_header(const std::string& text, const std::string& path, const std::string& array,
                            const DataFileSize& file_size) {
  if (is_vti(text)) return parse_vti(text, path, array, file_size);
  if (!array.empty())
    throw Error("--var " + array + ": " + path +
                " holds one volume (--var names a NetCDF or HDF5 variable, or a "
                ".vti file's point data array)");
  if (is_nifti(text)) return parse_nifti(text, path, file_size);
  return parse_nrrd(text, path, file_size);
}

std::string read_header_text(const std::string& path, std::size_t max_bytes) {
  int fd = -1;
  {
    trace::Span span(trace::Op::open);
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) throw_errno("open", path);
  std::string text;
  char chunk[4096];
  while (text.size() < max_bytes) {
    trace::Span span(trace::Op::read, static_cast<std::int64_t>(text.size()));
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got > 0) span.set_bytes(static_cast<std::uint64_t>(got));
    if (got < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      throw_errno("read", path, saved);
    }
    if (got == 0) break;
    text.append(chunk, static_cast<std::size_t>(got));
    // A NIfTI file: its header alone (the first read holds all of it).
    if (is_nifti(text)) {
      text.resize(std::min(text.size(), kNiftiHeaderBytes));
      break;
    }
    // A VTK image data file: up to its appended data's "_", and the first
    // array's byte count after it where this read holds it.
    if (is_vti(text)) {
      if (const std::size_t length = vti_header_length(text); length > 0) {
        text.resize(std::min(text.size(), length + 8));
        break;
      }
      continue;
    }
    // An attached .nrrd: the header ends at the first blank line.
    if (text.find("\n\n") != std::string::npos) break;
  }
  if (trace::Span span(trace::Op::close); ::close(fd) != 0) throw_errno("close", path);
  if (is_nifti(text)) return text;
  if (is_vti(text)) return text;  // without appended data: parse_vti says what the file has instead
  if (auto blank = text.find("\n\n"); blank != std::string::npos)
    text.resize(blank + 2);
  else if (text.size() >= max_bytes)
    throw Error(path + ": not a NRRD header (no end of header in the first " + std::to_string(max_bytes) + " bytes)");
  return text;
}

RawInput::RawInput(const std::string& header_path, const Comm& comm, bool open_data, const std::string& array)
    : comm_(comm.duplicate()), header_path_(header_path) {
  // Rank 0 alone reads the header and checks the data file, then shares the
  // header: one metadata request instead of one per rank (Fogal & Krüger, §3).
  std::string text;
  collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    text = read_header_text(header_path, 1 << 20);
    // The header's sizes are checked against the data file before anything
    // is sized from them; a file that is missing is reported below.
    const DataFileSize file_size = [](const std::string& data_path) -> std::optional<std::uint64_t> {
      struct stat st {};
      if (::stat(data_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
      return static_cast<std::uint64_t>(st.st_size);
    };
    NrrdHeader header = parse_raw_header(text, header_path, array, file_size);
    struct stat st {};
    if (::stat(header.data_path.c_str(), &st) != 0) throw_errno("open", header.data_path);
    if (!S_ISREG(st.st_mode)) throw Error(header_path + ": data file " + header.data_path + " is not a regular file");
    std::uint64_t expected = header.byte_skip + header.info.bytes();
    if (static_cast<std::uint64_t>(st.st_size) != expected && header.data_path != header_path)
      throw Error(header_path + ": header and data size disagree: " + header.data_path + " has " +
                  std::to_string(st.st_size) + " bytes, the header describes " + std::to_string(expected));
    if (static_cast<std::uint64_t>(st.st_size) < expected)
      throw Error(header_path + ": header and data size disagree: file has " + std::to_string(st.st_size) +
                  " bytes, the header describes " + std::to_string(expected));
  });
  text = comm_.broadcast(text);
  header_ = parse_raw_header(text, header_path, array);
  if (!open_data) return;
  collectively(comm_, [&] {
    trace::Span span(trace::Op::open);
    fd_ = ::open(header_.data_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw_errno("open", header_.data_path);
  });
}

RawInput::~RawInput() {
  if (fd_ >= 0) ::close(fd_);
}

void RawInput::close() {
  collectively(comm_, [&] {
    int fd = std::exchange(fd_, -1);
    if (fd < 0) return;
    trace::Span span(trace::Op::close);
    if (::close(fd) != 0) throw_errno("close", header_.data_path);
  });
}

RawOutput::RawOutput(const CreateRequest& request, const Comm& comm, bool fsync_on_close, bool direct_writes)
    : comm_(comm.duplicate()),
      info_(request.info),
      header_path_(request.path),
      partial_(request.partial),
      fsync_on_close_(fsync_on_close) {
  namespace fs = std::filesystem;
  data_path_ = data_path_for_header(header_path_);
  const std::string extension = fs::path(header_path_).extension().string();
  attached_ = extension == ".nii" || extension == ".vti" || tiff_extension(header_path_);
  if (extension == ".nii") {
    attached_header_ = format_nifti(info_);  // refuses what NIfTI-1 cannot hold, before anything is created
    data_offset_ = kNiftiDataOffset;
  } else if (extension == ".vti") {
    VtiFrame frame = format_vti(info_);
    attached_header_ = std::move(frame.header);
    attached_trailer_ = std::move(frame.trailer);
    data_offset_ = attached_header_.size();
  } else if (attached_) {  // .tif: every page's directory first, the planes after
    attached_header_ = format_tiff(info_);
    data_offset_ = attached_header_.size();
  }
  collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    if (!attached_ && fs::path(header_path_).extension() != ".nhdr")
      throw Error(header_path_ +
                  ": a raw output is named by its header, NAME.nhdr (data goes to NAME.raw), or is "
                  "a NIfTI file, NAME.nii, VTK image data, NAME.vti, or TIFF, NAME.tif");
    for (const auto& path : attached_ ? std::vector{data_path_} : std::vector{header_path_, data_path_}) {
      refuse_existing(path, request.overwrite);
      // Refused now, not at the commit after the whole job.
      std::error_code ec;
      const auto status = fs::symlink_status(path, ec);
      if (!ec && fs::exists(status) && !fs::is_regular_file(status) && !fs::is_symlink(status))
        throw Error(path + " exists and is not a file: --force replaces files only");
    }
    temp_data_path_ = partial_ == Partial::none ? temporary_path(data_path_) : partial_path(data_path_);
    const auto uncommitted =
        partial_ == Partial::none ? AtomicCommit::Uncommitted::removed : AtomicCommit::Uncommitted::kept;
    if (partial_ == Partial::reopen) {
      // An earlier job's data, kept for this one: it must be this volume's size.
      trace::Span span(trace::Op::open);
      fd_ = ::open(temp_data_path_.c_str(), O_RDWR | O_CLOEXEC);
      if (fd_ < 0) throw_errno("open the partial output", temp_data_path_);
      struct stat st;
      if (::fstat(fd_, &st) != 0) throw_errno("stat", temp_data_path_);
      if (static_cast<std::uint64_t>(st.st_size) != file_bytes())
        throw Error(temp_data_path_ + " has " + std::to_string(st.st_size) + " bytes, not the " +
                    std::to_string(file_bytes()) + " of this mask: it is not this job's partial output");
      data_commit_ = AtomicCommit(data_path_, temp_data_path_, uncommitted);
      return;
    }
    // One open record for the create and its reservation.
    trace::Span span(trace::Op::open);
    fd_ = ::open(temp_data_path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      const std::string path = std::exchange(temp_data_path_, {});  // not ours to remove
      throw_errno("create", path);
    }
    auto size = static_cast<off_t>(file_bytes());
    // fallocate, not posix_fallocate: glibc's emulation writes zeros where
    // the file system cannot reserve; then a plain ftruncate is all we do.
    int rc = 0;
    if (size > 0 && ::fallocate(fd_, 0, 0, size) != 0) {
      rc = errno;
      if (rc == EOPNOTSUPP || rc == ENOSYS) rc = ::ftruncate(fd_, size) == 0 ? 0 : errno;
    }
    if (rc != 0) {
      ::close(std::exchange(fd_, -1));
      ::unlink(temp_data_path_.c_str());
      temp_data_path_.clear();
      throw_errno("cannot reserve " + std::to_string(file_bytes()) + " bytes for", data_path_, rc);
    }
    data_commit_ = AtomicCommit(data_path_, temp_data_path_, uncommitted);
  });
  temp_data_path_ = comm_.broadcast(temp_data_path_);
  collectively(comm_, [&] {
    if (comm_.rank() == 0) return;
    trace::Span span(trace::Op::open);
    fd_ = ::open(temp_data_path_.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) throw_errno("open", temp_data_path_);
  });
  if (direct_writes && request.whole_planes) open_direct();
}

// Direct mask writes. A mask is written once and not read again by the
// job, and creating its page-cache pages is what a warm segment spends most
// on here: on a virtual machine every fresh page is a fault in the host as
// well (docs/ranged.md, "Writing the mask"). O_DIRECT writes go from the
// job's own (reused) buffers to the device without a copy. They are used
// only when the job promised whole-plane writes (CreateRequest::whole_planes)
// and a plane is a whole number of the file system's direct-I/O blocks
// (statx STATX_DIOALIGN) and of pages: then every write covers whole blocks
// that no other write touches and nothing is written through the page
// cache, which the kernel cannot keep coherent with concurrent direct
// writes to the same folio. A file system without O_DIRECT (tmpfs) leaves
// every write buffered.
void RawOutput::open_direct() {
  const std::uint64_t plane = static_cast<std::uint64_t>(info_.dims[1] * info_.dims[2]) * dtype_size(info_.dtype);
  struct statx st {};
  std::size_t memory_align = 4096, offset_align = 4096;
  if (::statx(fd_, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) == 0 && (st.stx_mask & STATX_DIOALIGN) != 0) {
    if (st.stx_dio_offset_align == 0) return;  // the file system says: no direct I/O on this file
    memory_align = std::max<std::size_t>(st.stx_dio_mem_align, alignof(std::max_align_t));
    offset_align = st.stx_dio_offset_align;
  }
  if (plane == 0 || plane % offset_align != 0 || plane % static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) != 0)
    return;
  if (data_offset_ % offset_align != 0) return;  // a NIfTI file's voxels start at byte 352
  const int fd = ::open(temp_data_path_.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return;  // EINVAL: no O_DIRECT here; buffered writes it is
  direct_fd_ = fd;
  direct_memory_align_ = memory_align;
  direct_offset_align_ = offset_align;
}

bool RawOutput::write_direct(const Extent& extent, const std::byte* source) {
  if (direct_fd_ < 0 || extent.empty()) return false;
  if (extent.count[1] != info_.dims[1] || extent.count[2] != info_.dims[2])
    throw Error("write " + data_path_ + ": a part of a plane, from a job that said it writes whole planes only");
  const std::size_t size = dtype_size(info_.dtype);
  const std::size_t length = static_cast<std::size_t>(extent.voxels()) * size;
  const std::uint64_t offset =
      data_offset_ + static_cast<std::uint64_t>(extent.offset[0] * info_.dims[1] * info_.dims[2]) * size;
  const bool aligned = reinterpret_cast<std::uintptr_t>(source) % direct_memory_align_ == 0;
  if (needs_swap() || !aligned) {  // through an aligned staging buffer, a piece at a time
    constexpr std::size_t kStaging = std::size_t{8} << 20;
    const std::size_t piece_max = std::max(kStaging / direct_offset_align_, std::size_t{1}) * direct_offset_align_;
    if (!staging_) {
      staging_size_ = piece_max;
      staging_ = static_cast<std::byte*>(
          std::aligned_alloc(direct_memory_align_,
                             (staging_size_ + direct_memory_align_ - 1) / direct_memory_align_ * direct_memory_align_));
      if (!staging_) throw Error("cannot allocate " + std::to_string(staging_size_) + " bytes to write " + data_path_);
    }
    for (std::size_t done = 0; done < length;) {
      const std::size_t piece = std::min(staging_size_, length - done);
      if (needs_swap())
        copy_swapped(staging_, source + done, static_cast<std::int64_t>(piece / size), size);
      else
        std::memcpy(staging_, source + done, piece);
      write_fully(direct_fd_, staging_, piece, offset + done, data_path_, direct_offset_align_);
      done += piece;
    }
  } else {
    write_fully(direct_fd_, source, length, offset, data_path_, direct_offset_align_);
  }
  direct_bytes_ += length;
  return true;
}

void RawOutput::write(const Extent& extent, const void* buffer) {
  const std::size_t size = dtype_size(info_.dtype);
  const auto* in = static_cast<const std::byte*>(buffer);
  if (write_direct(extent, in)) return;
  for_each_run(info_.dims, extent, size, data_offset_,
               [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                 const std::byte* source = in + index * static_cast<std::int64_t>(size);
                 std::size_t length = static_cast<std::size_t>(count) * size;
                 if (needs_swap()) {
                   scratch_.resize(length);
                   copy_swapped(scratch_.data(), source, count, size);
                   source = scratch_.data();
                 }
                 write_fully(fd_, source, length, offset, data_path_);
               });
}

RawOutput::~RawOutput() {
  if (fd_ >= 0) ::close(fd_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
  std::free(staging_);
  // data_commit_ removes the temporary data file of a job that failed; a
  // partial output stays for a rerun with --resume (its job decides).
}

namespace {

// A call that fault injection may fail: -1 with errno set, like the call.
int checked_close(int fd) {
  const auto fault = faults::at(faults::Call::close);
  const int rc = ::close(fd);
  if (fault.error) return errno = fault.error, -1;
  return rc;
}
int checked_fdatasync(int fd) {
  const auto fault = faults::at(faults::Call::fsync);
  return fault.error ? (errno = fault.error, -1) : ::fdatasync(fd);
}

}  // namespace

void RawOutput::close() {
  std::exception_ptr local;
  try {
    // Direct writes are on the device already; its close is checked all the same.
    if (const int direct = std::exchange(direct_fd_, -1); direct >= 0 && checked_close(direct) != 0)
      throw_errno("close", data_path_);
    int fd = std::exchange(fd_, -1);
    // A NIfTI or VTK file's header (and trailer) go in last: rank 0 writes them.
    if (attached_ && comm_.rank() == 0) {
      try {
        write_fully(fd, attached_header_.data(), attached_header_.size(), 0, data_path_);
        if (!attached_trailer_.empty())
          write_fully(fd, attached_trailer_.data(), attached_trailer_.size(), data_offset_ + info_.bytes(), data_path_);
      } catch (...) {
        ::close(fd);
        throw;
      }
    }
    if (fsync_on_close_) {
      trace::Span span(trace::Op::sync);
      if (checked_fdatasync(fd) != 0) {
        int saved = errno;
        ::close(fd);
        throw_errno("fdatasync", data_path_, saved);
      }
    }
    if (trace::Span span(trace::Op::close); checked_close(fd) != 0) throw_errno("close", data_path_);
  } catch (...) {
    local = std::current_exception();
  }
  agree(comm_, local);  // throws on every rank if any rank failed; ~RawOutput cleans up

  // Rank 0 writes the header under a temporary name, then commits both
  // files: an output being replaced (--force) is moved aside first, so the old
  // output is never lost before the new one is complete (commit_together; a
  // job killed in between leaves the old files under .volseg-old- names).
  collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    if (attached_) {
      AtomicCommit* const files[] = {&data_commit_};
      commit_together(files, fsync_on_close_);
      return;
    }
    AtomicCommit header(header_path_, temporary_path(header_path_));
    std::string text = format_nrrd(info_, std::filesystem::path(data_path_).filename().string());
    int fd = -1;
    {
      trace::Span span(trace::Op::open);
      fd = ::open(header.temporary().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    }
    if (fd < 0) {
      header.release();  // not created
      throw_errno("create", header_path_);
    }
    try {
      write_fully(fd, text.data(), text.size(), 0, header_path_);
      if (fsync_on_close_) {
        trace::Span span(trace::Op::sync);
        if (::fsync(fd) != 0) throw_errno("fsync", header_path_);
      }
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (trace::Span span(trace::Op::close); checked_close(fd) != 0) throw_errno("close", header_path_);
    AtomicCommit* const files[] = {&data_commit_, &header};
    commit_together(files, fsync_on_close_);
  });
}

void advise_ranges(int fd, const Index3& dims, const Extent& extent, std::size_t element_size,
                   std::uint64_t base_offset, const std::string& path) {
  for_each_run(dims, extent, element_size, base_offset, [&](std::uint64_t offset, std::int64_t count, std::int64_t) {
    const auto bytes = static_cast<std::uint64_t>(count) * element_size;
    trace::Span span(trace::Op::advise, static_cast<std::int64_t>(offset), bytes);
    const int rc = ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(bytes), POSIX_FADV_WILLNEED);
    if (rc != 0) throw_errno("posix_fadvise", path, rc);
  });
}

}  // namespace volseg::io::raw
