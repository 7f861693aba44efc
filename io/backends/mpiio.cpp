// SPDX-License-Identifier: MIT
// Backend "mpiio": raw volumes through the MPI library's own MPI-IO, the
// reference the two-phase engine is measured against. Collective access is
// MPI_File_read_all/write_all through a subarray file view per extent; the
// library picks the implementation (Open MPI: OMPIO by default, ROMIO with
// OMPI_MCA_io=romio321), and implementation() says which one ran.
// Independent read()/write() go through a second handle opened on
// MPI_COMM_SELF, so they never depend on the collective handle's view.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <vector>

#include "mpi_support.hpp"
#include "raw/raw_volume.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/io/trace.hpp"

namespace volseg::io {
namespace {

// An MPI datatype that frees itself.
class Datatype {
 public:
  Datatype() = default;
  explicit Datatype(MPI_Datatype type) : type_(type) { check_mpi(MPI_Type_commit(&type_), "MPI_Type_commit"); }
  Datatype(const Datatype&) = delete;
  Datatype& operator=(const Datatype&) = delete;
  ~Datatype() {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

MPI_Datatype element_type(std::size_t size) {
  MPI_Datatype type;
  check_mpi(MPI_Type_contiguous(static_cast<int>(size), MPI_BYTE, &type), "MPI_Type_contiguous");
  return type;
}

MPI_Datatype subarray_type(const Index3& dims, const Extent& extent, MPI_Datatype element) {
  int sizes[3], subsizes[3], starts[3];
  for (int a = 0; a < 3; ++a) {
    if (dims[a] > INT32_MAX) throw Error("mpiio: an axis longer than 2^31 voxels does not fit MPI's int counts");
    sizes[a] = static_cast<int>(dims[a]);
    subsizes[a] = static_cast<int>(extent.count[a]);
    starts[a] = static_cast<int>(extent.offset[a]);
  }
  MPI_Datatype type;
  check_mpi(MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, element, &type),
            "MPI_Type_create_subarray");
  return type;
}

int checked_count(std::int64_t voxels) {
  if (voxels > INT32_MAX) throw Error("mpiio: an extent of more than 2^31 voxels does not fit MPI's int counts");
  return static_cast<int>(voxels);
}

// "CALL PATH: the library's error string", for a failed MPI-IO call.
void check_io(int code, const char* call, const std::string& path) {
  if (code == MPI_SUCCESS) return;
  try {
    check_mpi(code, (std::string(call) + " " + path).c_str());
  } catch (const Error& e) {
    throw RankError(e.what());  // this rank's file call failed
  }
}

// The bytes a data access moved, by its status (the basic elements of a
// type built from MPI_BYTE are bytes).
std::uint64_t moved_bytes(const MPI_Status& status, MPI_Datatype type) {
  MPI_Count count = 0;
  check_mpi(MPI_Get_elements_x(&status, type, &count), "MPI_Get_elements_x");
  return count == MPI_UNDEFINED || count < 0 ? 0 : static_cast<std::uint64_t>(count);
}

// Open MPI 4.1's OMPIO returns MPI_SUCCESS from a call whose pread or
// pwrite failed or came back short, and says so only in the status's count
// (and a line on stderr). So every data access checks what it moved: a short
// one is finished with independent calls at explicit offsets, each resumed
// like a short pread, and a call that moves nothing is an error. Through a
// file view OMPIO's collective calls report the full count even then, which
// no check can see (docs/reliability.md). ROMIO resumes short transfers
// itself and reports errors.
class Transfer {
 public:
  enum class Direction { read, write };
  Transfer(MPI_File file, Direction direction, std::string path)
      : file_(file), direction_(direction), path_(std::move(path)) {}

  // Moves length bytes at a file offset, resumed until done.
  void fully(std::uint64_t offset, std::byte* memory, std::uint64_t length) const {
    const char* call = direction_ == Direction::read ? "MPI_File_read_at" : "MPI_File_write_at";
    while (length > 0) {
      const int asked = static_cast<int>(std::min<std::uint64_t>(length, std::uint64_t{1} << 30));
      MPI_Status status;
      const int code =
          direction_ == Direction::read
              ? MPI_File_read_at(file_, static_cast<MPI_Offset>(offset), memory, asked, MPI_BYTE, &status)
              : MPI_File_write_at(file_, static_cast<MPI_Offset>(offset), memory, asked, MPI_BYTE, &status);
      check_io(code, call, path_);
      const std::uint64_t moved = moved_bytes(status, MPI_BYTE);
      if (moved == 0)
        throw RankError(std::string(call) + " " + path_ + ": moved 0 of " + std::to_string(length) +
                        " bytes at offset " + std::to_string(offset) +
                        " and reported no error (OMPIO hides the cause; ROMIO, " + "OMPI_MCA_io=romio321, reports it)");
      memory += moved;
      offset += moved;
      length -= moved;
    }
  }

  // After a collective call through a subarray view of extent moved `done`
  // of its bytes (in the extent's order), moves the rest.
  void rest(const Index3& dims, const Extent& extent, std::size_t size, std::uint64_t base, std::byte* memory,
            std::uint64_t done) const {
    raw::for_each_run(dims, extent, size, base, [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
      const std::uint64_t begin = static_cast<std::uint64_t>(index) * size;
      const std::uint64_t end = begin + static_cast<std::uint64_t>(count) * size;
      if (end <= done) return;
      const std::uint64_t skip = done > begin ? done - begin : 0;
      fully(offset + skip, memory + begin + skip, end - begin - skip);
    });
  }

 private:
  MPI_File file_;
  Direction direction_;
  std::string path_;
};

// MPI_File_get_info names no implementation here, so ask the library:
// Open MPI's "io" control variable holds the component asked for (empty: the
// default, OMPIO in Open MPI 4).
std::string which_implementation() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  if (std::string(version, static_cast<std::size_t>(length)).find("Open MPI") == std::string::npos) return "MPI-IO";
  std::string selected;
  if (const char* asked = std::getenv("OMPI_MCA_io")) {  // mpirun passes --mca io / OMPI_MCA_io this way
    selected = asked;
    return selected.find("romio") != std::string::npos && selected.find('^') == std::string::npos ? "ROMIO" : "OMPIO";
  }
  // Otherwise ask the library (an MCA parameter file may have chosen); this
  // costs about 0.2 s in MPI_T_init, so it is done only when asked.
  int provided = 0, index = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "Open MPI io";
  if (MPI_T_cvar_get_index("io", &index) == MPI_SUCCESS) {
    MPI_T_cvar_handle handle;
    int count = 0;
    if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
      // For a string variable, count is the length of its buffer.
      std::vector<char> value(static_cast<std::size_t>(std::max(count, 1)) + 1, '\0');
      if (MPI_T_cvar_read(handle, value.data()) == MPI_SUCCESS) selected = value.data();
      MPI_T_cvar_handle_free(&handle);
    }
  }
  MPI_T_finalize();
  if (selected.find("romio") != std::string::npos && selected.find('^') == std::string::npos) return "ROMIO";
  return "OMPIO";
}

// The collective handle (views) and the independent one (explicit offsets).
class MpiFiles {
 public:
  MpiFiles(const Comm& comm, const std::string& path, int mode, const std::string& name_in_messages)
      : path_(name_in_messages) {
    collectively(comm, [&] {
      int rc = MPI_SUCCESS;
      {
        trace::Span span(trace::Op::open);
        rc = MPI_File_open(comm.get(), path.c_str(), mode, MPI_INFO_NULL, &collective_);
      }
      if (rc != MPI_SUCCESS) check_mpi(rc, ("MPI_File_open " + name_in_messages).c_str());
      {
        trace::Span span(trace::Op::open);
        rc = MPI_File_open(MPI_COMM_SELF, path.c_str(), mode, MPI_INFO_NULL, &independent_);
      }
      if (rc != MPI_SUCCESS) check_mpi(rc, ("MPI_File_open " + name_in_messages).c_str());
    });
  }
  MpiFiles(const MpiFiles&) = delete;
  MpiFiles& operator=(const MpiFiles&) = delete;
  ~MpiFiles() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (independent_ != MPI_FILE_NULL) MPI_File_close(&independent_);
    if (collective_ != MPI_FILE_NULL) MPI_File_close(&collective_);
  }
  MPI_File collective() const { return collective_; }
  MPI_File independent() const { return independent_; }

  // Collective. Closes both handles, reporting the first error.
  void close(const Comm& comm) {
    collectively(comm, [&] {
      auto close_one = [](MPI_File& file) {
        if (file == MPI_FILE_NULL) return MPI_SUCCESS;
        trace::Span span(trace::Op::close);
        return MPI_File_close(&file);
      };
      int a = close_one(independent_);
      int b = close_one(collective_);
      check_mpi(a, ("MPI_File_close " + path_).c_str());
      check_mpi(b, ("MPI_File_close " + path_).c_str());
    });
  }

 private:
  std::string path_;
  MPI_File collective_ = MPI_FILE_NULL, independent_ = MPI_FILE_NULL;
};

class MpiioReader final : public VolumeReader {
 public:
  MpiioReader(const std::string& path, const Comm& comm, const std::string& array)
      : VolumeReader({.collective = true}),
        input_(path, comm, /*open_data=*/false, array),
        comm_(comm.duplicate()),
        files_(comm_, input_.header().data_path, MPI_MODE_RDONLY, input_.header().data_path),
        element_(element_type(dtype_size(input_.header().info.dtype))) {}

  const VolumeInfo& info() const override { return input_.header().info; }
  std::string backend_name() const override { return "mpiio"; }
  std::string implementation() const override {
    static const std::string implementation = which_implementation();  // cannot change in a process
    return implementation;
  }

  void do_read(const Extent& extent, void* buffer) override {
    const std::size_t size = dtype_size(info().dtype);
    const Transfer transfer(files_.independent(), Transfer::Direction::read, path());
    raw::for_each_run(info().dims, extent, size, input_.header().byte_skip,
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        auto* target = static_cast<std::byte*>(buffer) + index * static_cast<std::int64_t>(size);
                        trace::Span span(trace::Op::read, static_cast<std::int64_t>(offset),
                                         static_cast<std::uint64_t>(count) * size);
                        transfer.fully(offset, target, static_cast<std::uint64_t>(count) * size);
                      });
    finish(extent, buffer);
  }

  void do_read_all(std::span<const Extent> extents, std::span<void* const> buffers) override {
    in_rounds(comm_, extents, buffers, [&](const Extent* joined, void* buffer) {
      const Extent extent = joined ? *joined : Extent{};
      MPI_File file = files_.collective();
      const auto disp = static_cast<MPI_Offset>(input_.header().byte_skip);
      if (extent.empty()) {
        check_io(MPI_File_set_view(file, disp, element_.get(), element_.get(), "native", MPI_INFO_NULL),
                 "MPI_File_set_view", path());
        trace::Span span(trace::Op::read);  // this rank's part of the collective: nothing
        check_io(MPI_File_read_all(file, nullptr, 0, element_.get(), MPI_STATUS_IGNORE), "MPI_File_read_all", path());
        return;
      }
      Datatype view(subarray_type(info().dims, extent, element_.get()));
      check_io(MPI_File_set_view(file, disp, element_.get(), view.get(), "native", MPI_INFO_NULL), "MPI_File_set_view",
               path());
      const std::size_t size = dtype_size(info().dtype);
      const std::uint64_t bytes = static_cast<std::uint64_t>(extent.voxels()) * size;
      {
        trace::Span span(
            trace::Op::read,
            static_cast<std::int64_t>(raw::first_byte(info().dims, extent, size, input_.header().byte_skip)), bytes);
        MPI_Status status;
        check_io(MPI_File_read_all(file, buffer, checked_count(extent.voxels()), element_.get(), &status),
                 "MPI_File_read_all", path());
        if (const std::uint64_t done = moved_bytes(status, element_.get()); done < bytes)
          Transfer(files_.independent(), Transfer::Direction::read, path())
              .rest(info().dims, extent, size, input_.header().byte_skip, static_cast<std::byte*>(buffer), done);
      }
      finish(extent, buffer);
    });
  }

  void do_close() override { files_.close(comm_); }
  std::uint64_t bytes_read() const override { return bytes_read_; }
  std::vector<std::string> files() const override { return input_.files(); }

 private:
  const std::string& path() const { return input_.header().data_path; }
  void finish(const Extent& extent, void* buffer) {
    if (input_.needs_swap()) raw::swap_bytes(buffer, extent.voxels(), dtype_size(info().dtype));
    bytes_read_ += static_cast<std::uint64_t>(extent.voxels()) * dtype_size(info().dtype);
  }

  raw::RawInput input_;
  Comm comm_;
  MpiFiles files_;
  Datatype element_;
  std::atomic<std::uint64_t> bytes_read_{0};
};

class MpiioWriter final : public VolumeWriter {
 public:
  MpiioWriter(const CreateRequest& request, const Comm& comm, bool fsync)
      : VolumeWriter({.collective = true}),
        output_(request, comm, fsync),
        comm_(comm.duplicate()),
        files_(comm_, output_.temp_data_path(), MPI_MODE_WRONLY, output_.data_path()),
        element_(element_type(dtype_size(request.info.dtype))) {}

  const VolumeInfo& info() const override { return output_.info(); }
  std::string backend_name() const override { return "mpiio"; }

  void do_write(const Extent& extent, const void* buffer) override {
    const std::size_t size = dtype_size(info().dtype);
    const void* source = swapped(extent, buffer);
    const Transfer transfer(files_.independent(), Transfer::Direction::write, output_.data_path());
    raw::for_each_run(info().dims, extent, size, output_.data_offset(),
                      [&](std::uint64_t offset, std::int64_t count, std::int64_t index) {
                        // Transfer takes writable memory for both directions; a write only reads it.
                        auto* from = const_cast<std::byte*>(static_cast<const std::byte*>(source)) +
                                     index * static_cast<std::int64_t>(size);
                        trace::Span span(trace::Op::write, static_cast<std::int64_t>(offset),
                                         static_cast<std::uint64_t>(count) * size);
                        transfer.fully(offset, from, static_cast<std::uint64_t>(count) * size);
                      });
    bytes_written_ += static_cast<std::uint64_t>(extent.voxels()) * size;
  }

  void do_write_all(std::span<const Extent> extents, std::span<const void* const> buffers) override {
    in_rounds(comm_, extents, buffers, [&](const Extent* joined, const void* buffer) {
      const Extent extent = joined ? *joined : Extent{};
      MPI_File file = files_.collective();
      const std::string& path = output_.data_path();
      if (extent.empty()) {
        check_io(MPI_File_set_view(file, 0, element_.get(), element_.get(), "native", MPI_INFO_NULL),
                 "MPI_File_set_view", path);
        trace::Span span(trace::Op::write);  // this rank's part of the collective: nothing
        check_io(MPI_File_write_all(file, nullptr, 0, element_.get(), MPI_STATUS_IGNORE), "MPI_File_write_all", path);
        return;
      }
      Datatype view(subarray_type(info().dims, extent, element_.get()));
      const auto disp = static_cast<MPI_Offset>(output_.data_offset());
      check_io(MPI_File_set_view(file, disp, element_.get(), view.get(), "native", MPI_INFO_NULL), "MPI_File_set_view",
               path);
      const void* source = swapped(extent, buffer);
      const std::size_t size = dtype_size(info().dtype);
      const std::uint64_t bytes = static_cast<std::uint64_t>(extent.voxels()) * size;
      trace::Span span(trace::Op::write,
                       static_cast<std::int64_t>(raw::first_byte(info().dims, extent, size, output_.data_offset())),
                       bytes);
      MPI_Status status;
      check_io(MPI_File_write_all(file, source, checked_count(extent.voxels()), element_.get(), &status),
               "MPI_File_write_all", path);
      if (const std::uint64_t done = moved_bytes(status, element_.get()); done < bytes)
        Transfer(files_.independent(), Transfer::Direction::write, path)
            .rest(info().dims, extent, size, output_.data_offset(),
                  const_cast<std::byte*>(static_cast<const std::byte*>(source)), done);
      bytes_written_ += bytes;
    });
  }

  void do_close() override {
    files_.close(comm_);
    output_.close();
  }
  std::uint64_t bytes_written() const override { return bytes_written_; }

 private:
  // The values in file byte order: the caller's buffer, or a swapped copy.
  const void* swapped(const Extent& extent, const void* buffer) {
    if (!output_.needs_swap()) return buffer;
    const std::size_t size = dtype_size(info().dtype);
    scratch_.resize(static_cast<std::size_t>(extent.voxels()) * size);
    raw::copy_swapped(scratch_.data(), buffer, extent.voxels(), size);
    return scratch_.data();
  }

  raw::RawOutput output_;
  Comm comm_;
  MpiFiles files_;
  Datatype element_;
  std::vector<std::byte> scratch_;
  std::atomic<std::uint64_t> bytes_written_{0};
};

}  // namespace

Backend make_mpiio_backend() {
  Backend backend;
  backend.name = "mpiio";
  backend.formats = "raw (NRRD .nhdr)";
  backend.extension = ".nhdr";
  backend.raw_layout = true;
  backend.description = "MPI_File_read_all/write_all with subarray views (the MPI library's OMPIO or ROMIO)";
  backend.hints = {{"fsync", HintFor::writers}};
  backend.open = [](const OpenRequest& request, const Comm& comm, const Hints& hints) -> std::unique_ptr<VolumeReader> {
    request.selection.refuse_step_and_glob("mpiio");
    hints.reject_unused("mpiio");
    return std::make_unique<MpiioReader>(request.path, comm, request.selection.variable);
  };
  backend.create = [](const CreateRequest& request, const Comm& comm,
                      const Hints& hints) -> std::unique_ptr<VolumeWriter> {
    bool fsync = hints.get_bool("fsync", false);
    hints.reject_unused("mpiio");
    return std::make_unique<MpiioWriter>(request, comm, fsync);
  };
  return backend;
}

}  // namespace volseg::io
