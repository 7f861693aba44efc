// SPDX-License-Identifier: MIT
// Every output volseg writes follows one protocol, so that a failure leaves
// nothing that looks finished (docs/reliability.md):
//   - it is written under a temporary name beside its final one: the hidden
//     DIR/.NAME.volseg-tmp-PID of the process that writes it (temporary_path),
//     or, for an output a job may resume, the fixed DIR/.NAME.volseg-partial
//     (partial_path);
//   - once whole, it is renamed to its final name (AtomicCommit::commit; an
//     output of two files, commit_together), and with fsync asked the folder
//     is synced after the rename, so the new name itself survives a crash;
//   - an output that is a folder (a Zarr store, a series' folder) is built
//     the same way under its temporary name and put in place by the same
//     AtomicCommit, which moves an old one aside first (see commit);
//   - on failure the temporary is removed, unless it is a partial output
//     kept for --resume.
// An existing output is replaced only when the user asked (refuse_existing).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace volseg::io {

// True when path names an existing character device, FIFO or socket
// (/dev/null, /dev/stdout, a named pipe): an output there is written in
// place, never replaced by a rename, which would put a regular file where
// the device was (as root, a /dev/null that fills memory).
bool is_stream(const std::string& path);

// What to do with a stream path when an output would replace what exists.
enum class Streams {
  refused,           // a device or pipe is refused like a file
  written_in_place,  // the caller writes a stream in place (reports, traces)
};

// volseg::Error "PATH exists (use --force to replace it)" when path exists
// and the user did not ask to replace it (force).
void refuse_existing(const std::string& path, bool force, Streams streams = Streams::refused);

// DIR/.NAME.volseg-tmp-PID for DIR/NAME: an output's name until it is whole.
std::string temporary_path(const std::string& path);

// fsync of the folder that holds path, so that a file created or renamed in it
// survives a crash; throws a RankError naming path. A file system that cannot
// sync a folder (EINVAL) has nothing to sync.
void sync_folder_of(const std::string& path);

// One output's temporary, from its creation to its commit: a file, or a
// folder and all it holds. Rank 0 of a parallel writer holds the real one,
// the other ranks an empty one: the rename and the removal happen once.
class AtomicCommit {
 public:
  // What becomes of the temporary when the output is not committed.
  enum class Uncommitted {
    removed,  // this process's own temporary (temporary_path)
    kept,     // a partial output, for --resume (partial_path)
  };

  AtomicCommit() = default;  // nothing to commit (another rank's, or an output written in place)
  AtomicCommit(std::string path, std::string temporary, Uncommitted uncommitted = Uncommitted::removed);
  AtomicCommit(AtomicCommit&& other) noexcept;
  AtomicCommit& operator=(AtomicCommit&& other) noexcept;
  AtomicCommit(const AtomicCommit&) = delete;
  AtomicCommit& operator=(const AtomicCommit&) = delete;
  ~AtomicCommit();  // discard()

  const std::string& path() const { return path_; }
  const std::string& temporary() const { return temporary_; }
  bool pending() const { return !temporary_.empty(); }
  bool kept() const { return uncommitted_ == Uncommitted::kept; }

  // Renames the temporary to path, then with sync_folder syncs the folder.
  // A file replaces a file at once (one rename(2) is atomic). A folder, or
  // anything replacing one, cannot be put in place by one rename(2), which
  // does not replace a folder that holds files: with sync_folder every file
  // and folder under the temporary is synced first; then the old output is
  // renamed aside to the hidden .NAME.volseg-old-PID, the temporary renamed
  // to path, and only then the old one removed. A job killed between those
  // two renames leaves no PATH but both outputs whole under their hidden
  // names, never neither. A failed rename puts the old output back, discards
  // the temporary and throws RankError "rename away the old PATH: ..." or
  // "rename to PATH: ...".
  void commit(bool sync_folder);
  // Removes the temporary (a folder with all it holds) now, unless it is kept.
  void discard();
  // The temporary is no longer this object's: renamed by another way, or
  // never created by this process.
  void release() { temporary_.clear(); }

 private:
  std::string path_, temporary_;
  Uncommitted uncommitted_ = Uncommitted::removed;
};

// Commits an output of several files (a raw header and its data) as nearly
// at once as two renames allow. The last file is the one whose presence says
// the output is complete (the header). Files being replaced are first moved
// aside under hidden .NAME.volseg-old-PID names, from the last file to the
// first (from then on the old output no longer looks complete); then each
// temporary takes its name, first to last; only then are the old files
// deleted. If any rename fails, what was placed is removed (or, kept, goes
// back to its temporary name), the old files go back, and a RankError
// "rename to NAME: ..." is thrown: the old output is never lost before the
// new one is complete. A directory or device under a name is refused, never
// moved. With sync_folder the folder is synced after the last rename.
void commit_together(std::span<AtomicCommit* const> files, bool sync_folder);

// A file written in pieces under temporary_path(path) and renamed to path by
// commit(); destroyed uncommitted, it removes the temporary. Every write and
// the close are checked (volseg::Error "write PATH: ..."). A stream path is
// written in place.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();
  void write(const void* data, std::size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();

 private:
  void discard();
  std::string path_;
  bool stream_;
  AtomicCommit commit_;  // empty for a stream
  int fd_ = -1;
};

// Writes size bytes to temporary_path(path), then renames it to path; on any
// failure removes the temporary and throws volseg::Error ("write PATH: ...").
// A stream path (is_stream) is written in place.
void write_file_atomically(const std::string& path, const void* data, std::size_t size);
inline void write_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, text.data(), text.size());
}

// The fixed, hidden name a resumable output's data file has until it is
// complete: DIR/.NAME.volseg-partial for DIR/NAME (see Partial).
std::string partial_path(const std::string& data_file);

}  // namespace volseg::io
