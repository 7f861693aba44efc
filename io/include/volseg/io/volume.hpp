// SPDX-License-Identifier: MIT
// The one interface every backend implements. Data passed through read() and
// write() are packed (x fastest) in native byte order; a Mapping hands out the
// file's own bytes in place, in file byte order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "volseg/io/types.hpp"

namespace volseg::io {

// A contiguous piece of a mapped extent: `count` values at `data`, which are
// values [index, index + count) of the extent in packed x-fastest order.
struct Run {
  std::byte* data = nullptr;
  std::int64_t count = 0;
  std::int64_t index = 0;
};

// A zero-copy window on an extent of a file. Move-only. release() returns the
// window (munmap) and reports its error; the destructor releases quietly and
// is meant only for error paths.
class Mapping {
 public:
  using Releaser = std::function<void()>;  // throws volseg::Error on failure

  Mapping() = default;
  Mapping(std::vector<Run> runs, bool needs_swap, Releaser releaser);
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  std::span<const Run> runs() const { return runs_; }
  bool needs_swap() const { return needs_swap_; }  // file order differs from native
  void release();

 private:
  std::vector<Run> runs_;
  bool needs_swap_ = false;
  Releaser releaser_;
};

// An extent whose values are all available, from VolumeReader::read_any():
// its index in the list given, and a window on its values (file byte order).
struct Arrival {
  std::size_t index = 0;
  Mapping values;
};

// Extents handed out in the order their data become available (Fogal & Krüger's
// readanyv), not in the order asked.
class Arrivals {
 public:
  virtual ~Arrivals() = default;
  // The next extent that is all there; nullopt once every one was handed out.
  // Release each Arrival's window when done with it.
  virtual std::optional<Arrival> next() = 0;
  // Completes the reads and reports every error. Once, after the last next().
  virtual void close() = 0;
  // Extents handed out so far before one that was asked for earlier.
  virtual std::uint64_t out_of_order() const = 0;
};

// What an I/O method can do beyond read and write, and how callers should
// drive it: every "can you" question, answered once when it is opened (each
// backend fills one value, in its constructor). Callers ask
// reader.capabilities().x before they choose how to run (segment:
// collective, any-order, mapped or buffered); a call the method cannot make
// is refused by the base class, naming the backend.
struct Capabilities {
  // read_all/write_all are MPI collective: callers run them in rounds that
  // every rank joins (io::Rounds), from the thread that initialised MPI.
  // read()/write() still work, but may switch the library's data mode, which
  // is itself collective: every rank must then call them equally often.
  bool collective = false;
  bool map = false;       // map() hands out zero-copy windows (mmap)
  bool read_any = false;  // read_any() hands extents out as their data arrive (ranged)
  // Whether read() touches nothing collective, so that a rank may call it
  // for any part of its extents, as often as it likes: every independent
  // reader (the base class sets it when `collective` is not), and a
  // collective one that reads its file by pread (a contiguous NetCDF-4
  // dataset). An expression reads such operands a cache-sized piece at a time.
  bool reads_locally = false;
  // Whether will_need reaches the kernel: the reader knows where an
  // extent's bytes lie in its file (raw, CDF, contiguous NetCDF-4 datasets).
  bool reads_ahead = false;
  // How many extents ahead the caller should announce with will_need().
  int prefetch_depth = 0;
  // The shape (z, y, x) of the stored chunks, where the format has them
  // (Zarr, compressed TIFF): bricks of whole chunks read each chunk once.
  std::optional<Index3> chunks = std::nullopt;
  // Bytes read from storage and held for each voxel besides the value
  // handed out: 0, or more where a reader computes each voxel from several
  // stored ones (an expression of three variables holds their three values).
  // Collective pipelines size their rounds by the value's size plus this,
  // so --batch-bytes bounds what is held.
  std::size_t extra_staged_bytes_per_voxel = 0;
};

// One named figure of a backend's own, for reports.
struct Metric {
  std::string name;  // as the report writes it: "io_s", "rounds"
  double value = 0;
  bool whole = false;  // a count (calls, bytes): reported as an integer
};

// A backend's own figures of its calls on this rank (the two-phase engine's
// phase times of each collective call), so that reports can carry them
// without a backend's type in this interface.
struct Metrics {
  std::string source;                         // what kept them, the report's key ("twophase"); empty: none
  std::vector<Metric> totals;                 // over every call so far
  std::string per_call_name;                  // what each row of per_call holds, the report's key
  std::vector<std::vector<double>> per_call;  // one row per call
};

// The I/O method's engine, as ADIOS2's core::Engine: the public calls are not
// virtual; each checks its arguments once (extents inside the volume, lists
// of equal length, buffers given, nothing after close) and then calls the
// backend's protected do_* function, so a backend never repeats a check and
// every backend refuses a bad call with the same message.
//
// What the calls throw (error.hpp), as each says below: volseg::Error for a
// call that is wrong whatever the file holds (an extent outside the volume,
// a call after close, a call the backend cannot make) and for data that are
// not what the format says (a damaged chunk or strip, one past the memory
// budget); RankError for a failure of this rank's storage or library call (a
// short read, EIO, a library's error code). A collective call agrees on the
// outcome first: every rank throws the lowest failing rank's message and
// kind, and a RankError met by some ranks only names that rank.
class VolumeReader {
 public:
  virtual ~VolumeReader() = default;
  virtual const VolumeInfo& info() const = 0;
  virtual std::string backend_name() const = 0;
  // What the method can do and how to drive it, fixed when it was opened.
  const Capabilities& capabilities() const { return capabilities_; }

  // Independent. Fills buffer with extent.voxels() values, packed, native
  // order. Throws Error for an extent outside the volume, a null buffer for
  // a non-empty extent, a call after close, or damaged data; RankError when
  // the storage or the library fails on this rank. Nothing is agreed: the
  // caller's rounds carry it to the other ranks.
  void read(const Extent& extent, void* buffer);
  // Collective where capabilities().collective: every rank calls it, with
  // its own (possibly empty) list; elsewhere read() of each extent. Throws
  // Error, on this rank alone and before any communication, for lists of
  // unequal length or a bad extent or buffer, as read(); then, where
  // collective, what the lowest failing rank met, agreed by every rank.
  void read_all(std::span<const Extent> extents, std::span<void* const> buffers);

  // Prefetch hint for an extent needed soon (capabilities().reads_ahead:
  // it reaches the kernel; else ignored). Throws Error for an extent outside
  // the volume or a call after close; RankError when the kernel refuses
  // the advice (posix_fadvise, madvise).
  void will_need(const Extent& extent);

  // Zero-copy access, where capabilities().map (mmap). Throws Error where
  // the backend cannot map, for an extent outside the volume or after
  // close; RankError when mmap fails. The window's release() throws
  // RankError when munmap fails.
  Mapping map(const Extent& extent);

  // Independent, where capabilities().read_any: the extents in the order
  // their data arrive (ranged backends). Throws Error where the backend
  // reads in order only, for an extent outside the volume or after close;
  // the reads' failures come from Arrivals::next() and close() as RankError.
  std::unique_ptr<Arrivals> read_any(std::span<const Extent> extents);

  // What did the I/O ("OMPIO", "ROMIO", a library version), for reports.
  virtual std::string implementation() const { return backend_name(); }
  // The backend's own figures of its calls so far (none by default).
  virtual Metrics metrics() const { return {}; }

  // Collective. Reports every error (Fogal & Krüger: always check close):
  // agreed by every rank, what the lowest failing rank met closing its file
  // (RankError). Once: a second call, or any call after it, throws Error.
  void close();

  // Bytes moved from storage by this rank so far.
  virtual std::uint64_t bytes_read() const = 0;

  // Every file the volume is stored in (a raw volume: header and data), so
  // callers can refuse to write over them.
  virtual std::vector<std::string> files() const = 0;

 protected:
  explicit VolumeReader(Capabilities capabilities = {}) { set_capabilities(capabilities); }
  // For a backend that knows what it can do only once its file is open:
  // once, in its constructor.
  void set_capabilities(Capabilities capabilities);

  // Called with arguments already checked.
  virtual void do_read(const Extent& extent, void* buffer) = 0;
  virtual void do_read_all(std::span<const Extent> extents, std::span<void* const> buffers);  // do_read each
  virtual void do_will_need(const Extent&) {}
  virtual Mapping do_map(const Extent& extent);                                    // refuses
  virtual std::unique_ptr<Arrivals> do_read_any(std::span<const Extent> extents);  // refuses
  virtual void do_close() = 0;

 private:
  void check_open(const char* call) const;
  Capabilities capabilities_;
  bool closed_ = false;
};

// A writer's calls throw as a reader's (see VolumeReader): Error for a call
// that is wrong whatever the file holds, RankError for this rank's storage
// or library failing, agreed by every rank in the collective calls.
// One object of a label volume, as the label job's table describes it.
struct SegmentInfo {
  std::uint64_t id = 0, voxels = 0;
  std::array<double, 3> centroid{};  // z, y, x, in voxels
  Index3 lo{}, hi{};                 // bounding box z, y, x, inclusive
};

// The colour of object `id` wherever volseg draws or records labels
// (OME-Zarr's image-label colours, rendered meshes): hues a golden angle
// apart, so neighbouring ids differ. RGBA, 0..255.
std::array<int, 4> segment_rgba(std::uint64_t id);

class VolumeWriter {
 public:
  virtual ~VolumeWriter() = default;
  virtual const VolumeInfo& info() const = 0;
  virtual std::string backend_name() const = 0;
  // As VolumeReader's; a writer answers collective and map only.
  const Capabilities& capabilities() const { return capabilities_; }

  // Independent. buffer holds extent.voxels() packed values in native order.
  // Throws Error for an extent outside the volume, a null buffer for a
  // non-empty extent, or a call after close; RankError when the storage or
  // the library fails on this rank (ENOSPC, EIO), not agreed.
  void write(const Extent& extent, const void* buffer);
  // Collective where capabilities().collective, every rank with its own
  // (possibly empty) list; elsewhere write() of each extent. Throws Error,
  // on this rank alone and before any communication, for lists of unequal
  // length or a bad extent or buffer; then, where collective, what the
  // lowest failing rank met, agreed by every rank.
  void write_all(std::span<const Extent> extents, std::span<const void* const> buffers);

  // A writable window, where capabilities().map; the caller fills it in
  // file byte order. Throws as VolumeReader::map.
  Mapping map(const Extent& extent);

  virtual Metrics metrics() const { return {}; }

  // Labels: what each object is (rank 0's list counts), recorded where the
  // format keeps it: OME-Zarr's image-label properties, Neuroglancer's
  // segment_properties. Before close(); other formats ignore it.
  virtual void describe_segments(std::vector<SegmentInfo> segments) { (void)segments; }

  // Collective: flushes and closes on every rank and, only if every rank
  // succeeded, renames the temporary output to its final name. Throws,
  // agreed by every rank, any rank's failure (RankError: a flush, fsync,
  // close or rename that failed), leaving no output behind. Once: a second
  // call, or any call after it, throws Error.
  void close();

  virtual std::uint64_t bytes_written() const = 0;

 protected:
  explicit VolumeWriter(Capabilities capabilities = {}) : capabilities_(capabilities) {}

  // Called with arguments already checked.
  virtual void do_write(const Extent& extent, const void* buffer) = 0;
  virtual void do_write_all(std::span<const Extent> extents, std::span<const void* const> buffers);  // do_write each
  virtual Mapping do_map(const Extent& extent);                                                      // refuses
  virtual void do_close() = 0;

 private:
  void check_open(const char* call) const;
  Capabilities capabilities_;
  bool closed_ = false;
};

// How a writer names and keeps the temporary file its data go to until
// close() renames it (segment --resume, docs/reliability.md).
enum class Partial {
  none,    // a name of this process's own (.NAME.volseg-tmp-PID), removed when the job fails
  create,  // partial_path(data file), created anew and kept when the job fails
  reopen,  // partial_path(data file), the one an earlier job left, opened as it is
};

// What a writer is asked to create.
struct CreateRequest {
  std::string path;        // final path the user named
  VolumeInfo info;         // dims, dtype, byte order, attributes
  bool overwrite = false;  // replace an existing output (--force)
  Partial partial = Partial::none;
  // The caller's promise that every write of the job, on every rank, is of
  // whole planes (z-slabs): raw writers may then write with O_DIRECT (hint
  // direct_write=1, default off), which is safe only when no block of the file
  // is written both directly and through the page cache.
  bool whole_planes = false;
  // The shape of the job's bricks, when every write of the job is one brick
  // of that grid (z, y, x): chunked writers (zarr) align their chunks to it,
  // so that each chunk has one writer.
  std::optional<Index3> bricks = std::nullopt;
};

}  // namespace volseg::io
