// SPDX-License-Identifier: MIT
// Backend "gzip": a gzip-compressed raw layout, a ".nii.gz" (NIfTI-1 or
// NIfTI-2, volseg/io/nifti.hpp). A gzip stream has no index, so a rank
// cannot start at its own bytes: every rank inflates the stream from its
// start (zlib's gzread), throwing away what lies before its next run, and
// goes on forward from there. Bricks in file order cost one pass; a run
// behind the stream's position rewinds it to the start. The rank whose
// bricks lie last in the file inflates all of it, so the job takes at least
// one whole decompression however many ranks share it (docs/formats.md).
// Rank 0 reads the header and shares it, as the raw backends do.
//
// Writing (.nii.gz masks, labels, conversions): a gzip file may hold several
// gzip members one after another, and every gzip reader (zlib's gzread,
// Python's gzip, nibabel, ITK, FSL) reads them as one stream. So each rank
// compresses each brick it writes into a member of its own, in parallel,
// into a scratch file beside the output; at close the ranks agree on where
// each member goes (the NIfTI header's first, then the bricks in file
// order) and copy theirs there. Memory stays one brick's; a brick must be
// one run of the file (whole rows: x whole, and y whole or one plane).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/io/nifti.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::io {
namespace {

// One rank's position in the decompressed stream, which must end at end
// (the header's vox_offset and voxels): nothing past it is decoded.
class GzStream {
 public:
  GzStream(const std::string& path, unsigned buffer_bytes, std::uint64_t end) : path_(path), end_(end) {
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      if (errno != 0) throw_errno("open", path);
      throw Error("open " + path + ": zlib cannot allocate its state");
    }
    gzbuffer(file_, buffer_bytes);
  }
  GzStream(const GzStream&) = delete;
  GzStream& operator=(const GzStream&) = delete;
  ~GzStream() {
    if (file_) gzclose_r(file_);
  }

  // Exactly length decompressed bytes from offset on (an earlier offset
  // starts the stream again); throws naming the file on a corrupt or short stream.
  void read(std::uint64_t offset, void* into, std::uint64_t length) {
    if (offset > end_ || length > end_ - offset)
      throw Error(path_ + ": internal error: a read of bytes " + std::to_string(offset) + " to " +
                  std::to_string(offset + length) + " past the volume's end at " + std::to_string(end_));
    if (offset < position_) {
      if (gzrewind(file_) != 0) fail("rewind");
      position_ = 0;
    }
    skip(offset - position_);
    pull(static_cast<char*>(into), length);
  }

  std::uint64_t compressed_offset() const { return static_cast<std::uint64_t>(std::max<z_off_t>(gzoffset(file_), 0)); }

  void close() {
    gzFile file = file_;
    file_ = nullptr;
    if (file && gzclose_r(file) != Z_OK) throw Error("close " + path_ + ": zlib could not close the stream");
  }

 private:
  void skip(std::uint64_t bytes) {
    scratch_.resize(std::size_t{1} << 20);
    while (bytes > 0) {
      const std::uint64_t piece = std::min<std::uint64_t>(bytes, scratch_.size());
      pull(scratch_.data(), piece);
      bytes -= piece;
    }
  }

  // The next length decompressed bytes.
  void pull(char* out, std::uint64_t length) {
    while (length > 0) {
      const unsigned ask = static_cast<unsigned>(std::min<std::uint64_t>(length, 1u << 30));
      const int got = gzread(file_, out, ask);
      if (got < 0) fail("decompress");
      if (got == 0)
        throw Error(path_ + ": the gzip stream ends at byte " + std::to_string(position_) +
                    " of its decompressed data, before the voxels the header describes (a truncated file?)");
      out += got;
      length -= static_cast<std::uint64_t>(got);
      position_ += static_cast<std::uint64_t>(got);
    }
    if (position_ == end_) check_end();
  }

  // The stream must end with the voxels: one more byte means it goes on
  // (a small header in front of a gzip bomb), refused after at most one
  // buffer's worth decoded. Trailing bytes that are no gzip member are
  // ignored, as zlib's gzread and every gzip reader ignore them.
  void check_end() {
    char extra = 0;
    const int got = gzread(file_, &extra, 1);
    if (got < 0) fail("decompress");
    if (got > 0)
      throw Error(path_ + ": the gzip stream goes on past the " + std::to_string(end_) +
                  " bytes that its header's vox_offset and dim[1..3] describe (a gzip bomb, or data that are not "
                  "this header's)");
  }

  [[noreturn]] void fail(const char* what) {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code == Z_ERRNO) throw_errno(std::string(what) + " (read)", path_);
    throw Error(path_ + ": corrupt gzip stream near decompressed byte " + std::to_string(position_) + " (" + what +
                ": " + (message ? message : "zlib error") + ")");
  }

  std::string path_;
  std::uint64_t end_ = 0;
  gzFile file_ = nullptr;
  std::uint64_t position_ = 0;
  std::vector<char> scratch_;
};

// The bytes a header describes (vox_offset and the voxels after it)
// against the compressed file, before a job is planned for them: more than
// deflate can expand its bytes to (1032:1, zlib's documentation), or far
// fewer than its bytes hold, which a gzip bomb behind a small header is.
// Decoding checks the rest: the stream ends where the voxels do
// (GzStream::check_end).
void check_stream_size(const NrrdHeader& header, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw_errno("stat", path);
  const auto compressed = static_cast<std::uint64_t>(st.st_size);
  const std::uint64_t expected = header.byte_skip + header.info.bytes();  // < 2^63: parse_nifti checked it
  const std::string sizes = "dim[1..3] " + sizes_text(header.info);
  const std::string skip = "vox_offset " + std::to_string(header.byte_skip);
  if (expected / 1032 > compressed)
    throw Error(path + ": " + sizes + " need " + claimed_bytes_text(header.info) + " bytes from " + skip +
                ", more than its " + std::to_string(compressed) +
                " bytes of gzip data can hold (deflate expands at most 1032:1)");
  // Every gzip member costs 18 bytes and more around the bytes it holds;
  // 32 times the volume, and 64 KiB for header fields, is far more than
  // any gzip file of it takes.
  if (compressed / 32 > expected + 2048)
    throw Error(path + ": its " + std::to_string(compressed) + " bytes of gzip data are far more than " + sizes +
                " from " + skip + " (" + std::to_string(expected) +
                " bytes) can take: the stream goes on past the volume (a gzip bomb?)");
}

class GzipReader final : public VolumeReader {
 public:
  GzipReader(const std::string& path, const Comm& comm, unsigned buffer_bytes) : path_(path) {
    std::string text;
    collectively(comm, [&] {
      if (comm.rank() != 0) return;
      text.resize(kNiftiHeaderBytes);
      // A NIfTI-1 file may be shorter than NIfTI-2's header size: read what there is.
      gzFile probe = gzopen(path.c_str(), "rb");
      if (!probe) throw_errno("open", path);
      const int got = gzread(probe, text.data(), static_cast<unsigned>(text.size()));
      gzclose_r(probe);
      if (got < 0) throw Error(path + ": corrupt gzip stream at its start");
      text.resize(static_cast<std::size_t>(got));
      if (!is_nifti(text))
        throw Error(path +
                    ": a gzip-compressed file that is not NIfTI; volseg reads gzip-compressed NIfTI (.nii.gz) only");
      check_stream_size(parse_nifti(text, path), path);  // refused here, on rank 0, with its reason
    });
    text = comm.broadcast(text);
    header_ = parse_nifti(text, path);
    if (header_.data_path != path)
      throw Error(path + ": a compressed NIfTI header names a separate .img; volseg reads .nii.gz files only");
    const std::uint64_t end = header_.byte_skip + header_.info.bytes();
    collectively(comm, [&] { stream_ = std::make_unique<GzStream>(path, buffer_bytes, end); });
  }

  const VolumeInfo& info() const override { return header_.info; }
  std::string backend_name() const override { return "gzip"; }
  std::uint64_t bytes_read() const override { return stream_ ? stream_->compressed_offset() : 0; }
  std::vector<std::string> files() const override { return {path_}; }

 protected:
  void do_read(const Extent& extent, void* buffer) override {
    const std::size_t size = dtype_size(info().dtype);
    const bool swap = info().byte_order != native_byte_order();
    auto* out = static_cast<std::byte*>(buffer);
    raw::for_each_run(info().dims, extent, size, header_.byte_skip,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        std::byte* target = out + index * static_cast<std::int64_t>(size);
                        stream_->read(offset, target, static_cast<std::uint64_t>(count) * size);
                        if (swap) raw::swap_bytes(target, count, size);
                      });
  }
  void do_close() override {
    if (stream_) stream_->close();
  }

 private:
  std::string path_;
  NrrdHeader header_;
  std::unique_ptr<GzStream> stream_;
};

// One gzip member of bytes at level.
std::vector<unsigned char> gzip_member(const void* data, std::size_t size, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error("gzip: zlib cannot start a stream");
  std::vector<unsigned char> out(deflateBound(&z, static_cast<uLong>(std::min<std::size_t>(size, 1u << 30))) + 64);
  std::size_t produced = 0;
  const auto* in = static_cast<const unsigned char*>(data);
  std::size_t left = size;
  int rc = Z_OK;
  do {
    const auto piece = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
    z.next_in = const_cast<unsigned char*>(in);
    z.avail_in = piece;
    in += piece;
    left -= piece;
    const int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    do {
      if (out.size() - produced < 65536) out.resize(out.size() * 2);
      z.next_out = out.data() + produced;
      z.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size() - produced, 1u << 30));
      const uInt before = z.avail_out;
      rc = deflate(&z, flush);
      produced += before - z.avail_out;
      if (rc == Z_STREAM_ERROR) break;
    } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  } while (left > 0 && rc != Z_STREAM_ERROR);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw Error("gzip: zlib could not compress a brick");
  out.resize(produced);
  return out;
}

class GzipWriter final : public VolumeWriter {
 public:
  GzipWriter(const CreateRequest& request, const Comm& comm, int level, bool fsync)
      : comm_(comm.duplicate()), path_(request.path), info_(request.info), level_(level), fsync_(fsync) {
    if (request.partial != Partial::none)
      throw Error(path_ + ": a .nii.gz output cannot be resumed (write .nii, then gzip it)");
    if (request.bricks && !one_run(*request.bricks))
      throw Error(path_ +
                  ": a .nii.gz output is written a brick at a time as gzip members, so a brick must be whole "
                  "rows of the volume (--brick Z,Y,X with X = " +
                  std::to_string(info_.dims[2]) + ", and Y = " + std::to_string(info_.dims[1]) + " or Z = 1)");
    header_ = format_nifti(info_);  // refuses what NIfTI-1 cannot hold, before anything is created
    collectively(comm_, [&] {
      if (comm_.rank() != 0) return;
      refuse_existing(path_, request.overwrite);
      commit_ = AtomicCommit(path_, temporary_path(path_));
      temp_path_ = commit_.temporary();
      const int fd = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) throw_errno("create", temp_path_);
      if (::close(fd) != 0) throw_errno("close", temp_path_);
    });
    temp_path_ = comm_.broadcast(temp_path_);
    struct CloseOnThrow {  // the destructor does not run when the constructor throws
      GzipWriter* w;
      bool armed = true;
      ~CloseOnThrow() {
        if (!armed) return;
        if (w->scratch_fd_ >= 0) ::close(std::exchange(w->scratch_fd_, -1));
        if (w->fd_ >= 0) ::close(std::exchange(w->fd_, -1));
      }
    } guard{this};
    collectively(comm_, [&] {
      // This rank's members until close: an unnamed file beside the output.
      const std::string folder = std::filesystem::path(path_).parent_path().empty()
                                     ? std::string(".")
                                     : std::filesystem::path(path_).parent_path().string();
      scratch_fd_ = ::open(folder.c_str(), O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
      if (scratch_fd_ < 0) {  // a file system without O_TMPFILE: a named one, unlinked at once
        std::string name = temporary_path(path_) + ".rank" + std::to_string(comm_.rank());
        scratch_fd_ = ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (scratch_fd_ < 0) throw_errno("create", name);
        ::unlink(name.c_str());
      }
      fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) throw_errno("open", temp_path_);
    });
    guard.armed = false;
  }
  ~GzipWriter() override {
    if (fd_ >= 0) ::close(fd_);
    if (scratch_fd_ >= 0) ::close(scratch_fd_);
  }

  const VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return "gzip"; }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 protected:
  void do_write(const Extent& extent, const void* buffer) override {
    if (!one_run(extent.count))
      throw Error(path_ + ": a .nii.gz output takes bricks of whole rows (this brick is " +
                  std::to_string(extent.count[2]) + " of " + std::to_string(info_.dims[2]) + " x-values wide)");
    const std::size_t size = dtype_size(info_.dtype);
    const std::size_t bytes = static_cast<std::size_t>(extent.voxels()) * size;
    const void* data = buffer;
    if (info_.byte_order != native_byte_order()) {
      swapped_.resize(bytes);
      raw::copy_swapped(swapped_.data(), buffer, extent.voxels(), size);
      data = swapped_.data();
    }
    const auto member = gzip_member(data, bytes, level_);
    raw::write_fully(scratch_fd_, member.data(), member.size(), scratch_size_, path_ + " (scratch)");
    pieces_.push_back({raw::first_byte(info_.dims, extent, size, 0), bytes, member.size(), scratch_size_});
    scratch_size_ += member.size();
    bytes_written_ += member.size();
  }

  void do_close() override {
    collectively(comm_, [&] { place_members(); });
    collectively(comm_, [&] {
      if (fsync_ && ::fdatasync(fd_) != 0) throw_errno("fsync", temp_path_);
      const int fd = std::exchange(fd_, -1);
      if (::close(fd) != 0) throw_errno("close", temp_path_);
      const int scratch = std::exchange(scratch_fd_, -1);
      if (::close(scratch) != 0) throw_errno("close", path_ + " (scratch)");
    });
    collectively(comm_, [&] { commit_.commit(fsync_); });  // rank 0's
  }

 private:
  struct Piece {
    std::uint64_t data_offset, data_bytes, size, scratch_offset;
  };

  bool one_run(const Index3& count) const {
    return count[2] == info_.dims[2] && (count[1] == info_.dims[1] || count[0] == 1);
  }

  // Rank 0 learns every member's data offset and size (16 bytes a brick,
  // through the chunked helpers of messages.hpp), checks that they cover the
  // voxels once and hands each rank where its members go, after the
  // header's; then each rank copies its own there.
  void place_members() {
    std::vector<std::uint64_t> mine;
    for (const auto& p : pieces_) mine.insert(mine.end(), {p.data_offset, p.data_bytes, p.size});
    const auto mine_bytes = std::as_bytes(std::span(mine));
    const auto sizes = gather_sizes(comm_.get(), mine_bytes.size());
    std::vector<std::uint64_t> all;
    if (comm_.rank() == 0) {
      std::uint64_t total = 0;
      for (auto n : sizes) total += n;
      all.resize(total / sizeof(std::uint64_t));
    }
    gather_bytes(comm_.get(), mine_bytes, reinterpret_cast<std::byte*>(all.data()), sizes);
    const auto header = gzip_member(header_.data(), header_.size(), level_);
    std::vector<std::uint64_t> places;  // rank 0: every member's output offset, rank by rank
    std::string problem;
    if (comm_.rank() == 0) {
      struct Member {
        std::uint64_t data_offset, data_bytes, size, index;  // index into places
      };
      std::vector<Member> members;
      for (std::size_t i = 0; i + 2 < all.size(); i += 3) members.push_back({all[i], all[i + 1], all[i + 2], i / 3});
      std::sort(members.begin(), members.end(),
                [](const Member& a, const Member& b) { return a.data_offset < b.data_offset; });
      places.assign(members.size(), 0);
      std::uint64_t at = header.size();
      std::uint64_t covered = 0;
      for (std::size_t i = 0; i < members.size() && problem.empty(); ++i) {
        if (members[i].data_offset != covered) problem = "at byte " + std::to_string(covered);
        covered = members[i].data_offset + members[i].data_bytes;
        places[members[i].index] = at;
        at += members[i].size;
      }
      if (problem.empty() && covered != info_.bytes()) problem = "they end at byte " + std::to_string(covered);
    }
    problem = comm_.broadcast(problem);
    if (!problem.empty())
      throw Error(path_ + ": internal error: the bricks written do not tile the volume (" + problem + ")");
    std::vector<std::uint64_t> mine_places(pieces_.size()), place_sizes;
    for (auto n : sizes) place_sizes.push_back(n / 3);  // one offset for every three numbers sent
    scatter_bytes(comm_.get(), reinterpret_cast<const std::byte*>(places.data()), place_sizes,
                  std::as_writable_bytes(std::span(mine_places)));
    if (comm_.rank() == 0) raw::write_fully(fd_, header.data(), header.size(), 0, temp_path_);
    std::vector<unsigned char> copy;
    for (std::size_t k = 0; k < pieces_.size(); ++k) {
      const Piece& p = pieces_[k];
      copy.resize(p.size);
      raw::read_fully(scratch_fd_, copy.data(), p.size, p.scratch_offset, path_ + " (scratch)");
      raw::write_fully(fd_, copy.data(), p.size, mine_places[k], temp_path_);
    }
  }

  Comm comm_;
  std::string path_, temp_path_, header_;
  VolumeInfo info_;
  int level_ = 1;
  bool fsync_ = false;
  AtomicCommit commit_;
  int fd_ = -1, scratch_fd_ = -1;
  std::uint64_t scratch_size_ = 0;
  std::vector<Piece> pieces_;
  std::vector<std::byte> swapped_;
  std::atomic<std::uint64_t> bytes_written_{0};
};

}  // namespace

Backend make_gzip_backend() {
  Backend backend;
  backend.name = "gzip";
  backend.formats = "gzip-compressed NIfTI (.nii.gz)";
  backend.extension = ".nii.gz";
  backend.description =
      "reads: each rank inflates the stream from its start to its own bricks (hint buffer=256KiB), at least one whole "
      "decompression a job; writes: each brick a gzip member, compressed in parallel (hints level=1, fsync=1)";
  backend.hints = {{"buffer", HintFor::readers}, {"level", HintFor::writers}, {"fsync", HintFor::writers}};
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    const std::int64_t buffer = hints.get_size("buffer", std::int64_t{256} << 10);
    if (buffer < 8192 || buffer > (std::int64_t{1} << 30))
      throw Error("hint buffer=" + std::to_string(buffer) + " is not between 8 KiB and 1 GiB");
    request.selection.refuse_step_and_glob("gzip");
    request.selection.refuse_variable("gzip");
    hints.reject_unused("gzip");
    return std::make_unique<GzipReader>(request.path, comm, static_cast<unsigned>(buffer));
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    const auto level = hints.get_int("level", 1);  // nibabel's default
    if (level < 1 || level > 9) throw Error("hint level=" + std::to_string(level) + " is not 1 to 9");
    const bool fsync = hints.get_bool("fsync", false);
    hints.reject_unused("gzip");
    return std::make_unique<GzipWriter>(request, comm, static_cast<int>(level), fsync);
  };
  return backend;
}

}  // namespace volseg::io
