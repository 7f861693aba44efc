// SPDX-License-Identifier: MIT
// What every raw backend shares: opening a NRRD-described data file on all
// ranks, cutting an extent into contiguous runs of the file, and the output
// protocol.
//
// Output protocol (no half-written file may look finished):
//   1. rank 0 refuses an existing output unless overwrite was asked, creates
//      ".NAME.raw.volseg-tmp-PID" beside the target with O_EXCL and reserves
//      its full size with fallocate, so a full disk fails here, cleanly,
//      rather than as SIGBUS under a write mapping;
//   2. the other ranks open the temporary file;
//   3. ranks write their extents;
//   4. close(): every rank flushes (fdatasync with hint fsync=1) and closes,
//      checking both; if every rank succeeded, rank 0 writes the header under a
//      temporary name and renames data, then header, to their final names
//      (a NIfTI output, NAME.nii, is one file: rank 0 writes its header into
//      the temporary before the flush, and renames that one file)
//      (io::commit_together; with fsync=1 the folder is synced after);
//      otherwise rank 0 removes the temporary files and every rank throws.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/volume.hpp"

namespace volseg::io::raw {

// Calls fn(file_byte_offset, value_count, index_in_extent) for each
// contiguous piece of extent in a [z][y][x] volume of dims; merges whole rows
// and planes into one run.
void for_each_run(const Index3& dims, const Extent& extent, std::size_t element_size, std::uint64_t base_offset,
                  const std::function<void(std::uint64_t, std::int64_t, std::int64_t)>& fn);

// The file byte offset of extent's first voxel (its lowest corner), as
// for_each_run computes it; where a trace record of a whole-extent call starts.
std::uint64_t first_byte(const Index3& dims, const Extent& extent, std::size_t element_size, std::uint64_t base_offset);

// posix_fadvise(WILLNEED) on each contiguous piece of extent, as for_each_run
// finds them in the file behind fd: the kernel reads them ahead.
void advise_ranges(int fd, const Index3& dims, const Extent& extent, std::size_t element_size,
                   std::uint64_t base_offset, const std::string& path);

void swap_bytes(void* data, std::int64_t count, std::size_t element_size);
void copy_swapped(void* destination, const void* source, std::int64_t count, std::size_t element_size);
// Copies a window's values into a packed buffer of the extent, in native
// byte order (what read() hands back).
void copy_out(const Mapping& window, void* buffer, std::size_t element_size);

// pread/pwrite until done; throw naming the path on error or early end.
void read_fully(int fd, void* buffer, std::size_t length, std::uint64_t offset, const std::string& path);
void write_fully(int fd, const void* buffer, std::size_t length, std::uint64_t offset, const std::string& path,
                 std::size_t align = 1);

// Collective. Rank 0 reads and checks the header and the data file's size;
// every rank opens the data file read-only.
class RawInput {
 public:
  // open_data=false: only the header is read and checked (a backend that
  // opens the data file its own way, like MPI-IO).
  // array: a .vti file's point data array (--var), empty for the default.
  RawInput(const std::string& header_path, const Comm& comm, bool open_data = true, const std::string& array = {});
  RawInput(const RawInput&) = delete;
  RawInput& operator=(const RawInput&) = delete;
  ~RawInput();

  const NrrdHeader& header() const { return header_; }
  std::vector<std::string> files() const { return {header_path_, header_.data_path}; }
  int fd() const { return fd_; }
  const Comm& comm() const { return comm_; }
  bool needs_swap() const { return header_.info.byte_order != native_byte_order(); }
  void close();  // collective, checked

 private:
  Comm comm_;
  std::string header_path_;
  NrrdHeader header_;
  int fd_ = -1;
};

// Collective. Implements the output protocol above.
class RawOutput {
 public:
  // direct_writes: write whole-plane extents with O_DIRECT where the file
  // system allows it and a plane is a whole number of its blocks (see
  // raw_volume.cpp); other extents, and every write elsewhere, are buffered.
  RawOutput(const CreateRequest& request, const Comm& comm, bool fsync_on_close, bool direct_writes = false);
  RawOutput(const RawOutput&) = delete;
  RawOutput& operator=(const RawOutput&) = delete;
  ~RawOutput();  // removes the temporary files if close() did not finish

  const VolumeInfo& info() const { return info_; }
  int fd() const { return fd_; }
  const std::string& data_path() const { return data_path_; }            // final name, for messages
  const std::string& temp_data_path() const { return temp_data_path_; }  // where data goes until close
  // Where the voxels start in the data file: 0, a NIfTI output's 352, or
  // after a .vti output's XML header.
  std::uint64_t data_offset() const { return data_offset_; }
  // pwrite of every run of extent from packed native-order values, swapped
  // to file order where needed.
  void write(const Extent& extent, const void* buffer);
  bool needs_swap() const { return info_.byte_order != native_byte_order(); }
  // Bytes written with O_DIRECT so far (the rest went through the page cache).
  std::uint64_t direct_bytes() const { return direct_bytes_; }
  void close();  // collective

 private:
  void open_direct();
  bool write_direct(const Extent& extent, const std::byte* source);

  Comm comm_;
  VolumeInfo info_;
  std::string header_path_, data_path_, temp_data_path_;
  AtomicCommit data_commit_;  // rank 0's: the data file's temporary, until close() renames it
  Partial partial_ = Partial::none;
  bool fsync_on_close_ = false;
  bool attached_ = false;         // a NIfTI (.nii) or VTK (.vti) output: header and voxels in one file
  std::string attached_header_;   // its header, written at close
  std::string attached_trailer_;  // and what follows the voxels (.vti)
  std::uint64_t file_bytes() const { return data_offset_ + info_.bytes() + attached_trailer_.size(); }
  std::uint64_t data_offset_ = 0;
  int fd_ = -1;
  int direct_fd_ = -1;  // the same file opened O_DIRECT, when direct writes apply
  std::size_t direct_memory_align_ = 0, direct_offset_align_ = 0;
  std::uint64_t direct_bytes_ = 0;
  std::vector<std::byte> scratch_;  // swapped values on their way out
  std::byte* staging_ = nullptr;    // aligned copy for direct writes from unaligned memory
  std::size_t staging_size_ = 0;
};

// The header of a raw volume, read by rank 0 and shared as it is: a NRRD
// header's text (up to its blank line or max_bytes), or a NIfTI file's
// header bytes (volseg/io/nifti.hpp), and what either says.
std::string read_header_text(const std::string& path, std::size_t max_bytes);
// array: a .vti's point data array (--var); refused for the other formats, which hold one.
// file_size: the data file's size where known, which the header's claim must fit.
NrrdHeader parse_raw_header(const std::string& text, const std::string& path, const std::string& array = {},
                            const DataFileSize& file_size = {});

}  // namespace volseg::io::raw
