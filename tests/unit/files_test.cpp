// SPDX-License-Identifier: MIT
// io's one commit protocol (files.hpp): the temporary's name, the refusal of
// an existing output, a commit that renames and one that is discarded, and a
// two-file commit that replaces an old output.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/temp_dir.hpp"
#include "volseg/io/error.hpp"
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

}  // namespace
