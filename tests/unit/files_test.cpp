// SPDX-License-Identifier: MIT
// io's one commit protocol (files.hpp): the temporary's name, the refusal of
// an existing output, a commit that renames and one that is discarded, a
// two-file commit that replaces an old output, and a folder's commit.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/temp_dir.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/faults.hpp"
#include "volseg/io/files.hpp"

using namespace volseg;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
std::string get(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Files, TheTemporaryIsHiddenBesideTheOutputAndNamesTheProcess) {
  EXPECT_EQ(io::temporary_path("dir/o.nc"), "dir/.o.nc.volseg-tmp-" + std::to_string(::getpid()));
  EXPECT_EQ(io::temporary_path("o.raw"), ".o.raw.volseg-tmp-" + std::to_string(::getpid()));
}

TEST(Files, AnExistingOutputIsRefusedUnlessForced) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string path = dir / "o.json";
  EXPECT_NO_THROW(io::refuse_existing(path, false));
  put(path, "old");
  try {
    io::refuse_existing(path, false);
    ADD_FAILURE() << "an existing output was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.what(), path + " exists (use --force to replace it)");
  }
  EXPECT_NO_THROW(io::refuse_existing(path, true));
  EXPECT_THROW(io::refuse_existing("/dev/null", false), Error);
  EXPECT_NO_THROW(io::refuse_existing("/dev/null", false, io::Streams::written_in_place));
}

TEST(Files, ACommitRenamesAndAnUncommittedTemporaryIsRemovedOrKept) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string path = dir / "o.nc";
  {
    io::AtomicCommit commit(path, io::temporary_path(path));
    put(commit.temporary(), "new");
    commit.commit(true);  // and the folder synced
    EXPECT_FALSE(commit.pending());
  }
  EXPECT_EQ(get(path), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
  const std::string removed = io::temporary_path(dir / "p.nc"), kept = io::partial_path(dir / "q.nc");
  {
    io::AtomicCommit one(dir / "p.nc", removed);
    io::AtomicCommit other(dir / "q.nc", kept, io::AtomicCommit::Uncommitted::kept);
    put(removed, "x");
    put(kept, "y");
  }
  EXPECT_FALSE(fs::exists(removed));
  EXPECT_TRUE(fs::exists(kept));
}

TEST(Files, ATwoFileCommitReplacesAnOldOutputAndLeavesNothingElse) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string data = dir / "o.raw", header = dir / "o.nhdr";
  put(data, "old data");
  put(header, "old header");
  io::AtomicCommit data_commit(data, io::temporary_path(data)), header_commit(header, io::temporary_path(header));
  put(data_commit.temporary(), "new data");
  put(header_commit.temporary(), "new header");
  io::AtomicCommit* const files[] = {&data_commit, &header_commit};
  io::commit_together(files, false);
  EXPECT_EQ(get(data), "new data");
  EXPECT_EQ(get(header), "new header");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 2);
}

TEST(Files, ATwoFileCommitRefusesADirectoryAndRemovesItsTemporaries) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string data = dir / "o.raw", header = dir / "o.nhdr";
  fs::create_directory(header);
  io::AtomicCommit data_commit(data, io::temporary_path(data)), header_commit(header, io::temporary_path(header));
  put(data_commit.temporary(), "new data");
  put(header_commit.temporary(), "new header");
  io::AtomicCommit* const files[] = {&data_commit, &header_commit};
  EXPECT_THROW(io::commit_together(files, false), Error);
  EXPECT_FALSE(fs::exists(data));
  EXPECT_TRUE(fs::is_directory(header));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
}

// A folder output (a Zarr store, a series' folder) built under its temporary
// name: a file and a nested folder, each holding text.
void build_folder(const std::string& folder, const std::string& text) {
  fs::create_directories(folder + "/0");
  put(folder + "/.zarray", text);
  put(folder + "/0/0.0.0", text);
}

std::size_t entries(const std::string& folder) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(folder), fs::directory_iterator{}));
}

TEST(Files, AFolderAppearsUnderItsNameOnlyOnCommit) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string path = dir / "o.zarr";
  io::AtomicCommit commit(path, io::temporary_path(path));
  build_folder(commit.temporary(), "new");
  EXPECT_FALSE(fs::exists(path));
  commit.commit(true);  // every file and folder synced, then the name
  EXPECT_FALSE(commit.pending());
  EXPECT_EQ(get(path + "/.zarray"), "new");
  EXPECT_EQ(get(path + "/0/0.0.0"), "new");
  EXPECT_EQ(entries(dir.path()), 1u) << "a temporary was left";
}

TEST(Files, AnAbandonedFolderLeavesNothingBehind) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string path = dir / "o.zarr";
  {
    io::AtomicCommit commit(path, io::temporary_path(path));
    build_folder(commit.temporary(), "new");
  }
  EXPECT_EQ(entries(dir.path()), 0u);
}

TEST(Files, AnExistingFolderIsRefusedWithoutForceAndReplacedWithIt) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string path = dir / "o.zarr";
  build_folder(path, "old");
  put(path + "/only-old", "old");
  try {
    io::refuse_existing(path, false);
    ADD_FAILURE() << "an existing folder was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.what(), path + " exists (use --force to replace it)");
  }
  io::refuse_existing(path, true);
  io::AtomicCommit commit(path, io::temporary_path(path));
  build_folder(commit.temporary(), "new");
  commit.commit(false);
  EXPECT_EQ(get(path + "/.zarray"), "new");
  EXPECT_EQ(get(path + "/0/0.0.0"), "new");
  EXPECT_FALSE(fs::exists(path + "/only-old")) << "the old folder's files were kept";
  EXPECT_EQ(entries(dir.path()), 1u) << "the old folder or the temporary was left";
}

// The first rename moves the old folder aside, the second puts the new one
// in place: either failing leaves the old folder whole under its name.
TEST(Files, AFailedFolderRenameKeepsTheOldFolderAndRemovesTheTemporary) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  const std::string path = dir / "o.zarr";
  build_folder(path, "old");
  for (const char* fault : {"rename:eio@1", "rename:eio@2"}) {
    SCOPED_TRACE(fault);
    io::AtomicCommit commit(path, io::temporary_path(path));
    build_folder(commit.temporary(), "new");
    io::faults::configure(fault);
    try {
      commit.commit(true);
      ADD_FAILURE() << "the injected rename fault was not reported";
    } catch (const RankError& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": Input/output error"), std::string::npos) << e.what();
    }
    io::faults::configure("");
    EXPECT_FALSE(commit.pending());
    EXPECT_EQ(get(path + "/.zarray"), "old");
    EXPECT_EQ(get(path + "/0/0.0.0"), "old");
    EXPECT_EQ(entries(dir.path()), 1u) << "the temporary or the moved-aside folder was left";
  }
}

}  // namespace
