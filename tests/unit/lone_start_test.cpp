// SPDX-License-Identifier: MIT
// prefer_lone_start: the Open MPI settings of a process no launcher started,
// and none for one it did; a setting the user made stays theirs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "volseg/io/comm.hpp"

namespace {

const char* const launcher_variables[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID"};
const char* const settings[] = {
    "OMPI_MCA_ess_singleton_isolated", "OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_MCA_orte_top_session_dir",
    "OMPI_MCA_orte_tmpdir_base",       "TMPDIR"};

// Saves the variables the test touches, clears them, and puts them back.
class Environment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : launcher_variables) save(name);
    for (const char* name : settings) save(name);
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_)
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
  }
  static std::string get(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "(unset)";
  }

 private:
  void save(const char* name) {
    const char* value = std::getenv(name);
    saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
    ::unsetenv(name);
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(Environment, ASingletonStartsWithoutDaemonOrFabrics) {
  EXPECT_TRUE(volseg::prefer_lone_start());
  EXPECT_EQ(get("OMPI_MCA_ess_singleton_isolated"), "1");
  EXPECT_EQ(get("OMPI_MCA_pml"), "ob1");
  EXPECT_EQ(get("OMPI_MCA_btl"), "self");
}

// Isolated singletons are all job [0,1]; in one session folder, one that ends
// removes it under one that starts. Each gets its own, named by its pid.
TEST_F(Environment, ASingletonHasItsOwnSessionFolder) {
  ::setenv("TMPDIR", "/scratch/alice", 1);
  EXPECT_TRUE(volseg::prefer_lone_start());
  const std::string folder = get("OMPI_MCA_orte_top_session_dir");
  const std::string pid = "." + std::to_string(::getpid());
  EXPECT_EQ(folder.rfind("/scratch/alice/ompi.", 0), 0u) << folder;
  EXPECT_EQ(folder.compare(folder.size() - pid.size(), pid.size(), pid), 0) << folder;
  EXPECT_NE(folder.find("." + std::to_string(::getuid()) + "."), std::string::npos) << folder;
}

TEST_F(Environment, TheSessionFolderFollowsOpenMpisTmpdirBase) {
  ::setenv("TMPDIR", "/scratch/alice", 1);
  ::setenv("OMPI_MCA_orte_tmpdir_base", "/local/ssd", 1);
  EXPECT_TRUE(volseg::prefer_lone_start());
  EXPECT_EQ(get("OMPI_MCA_orte_top_session_dir").rfind("/local/ssd/ompi.", 0), 0u);
  ::setenv("OMPI_MCA_orte_top_session_dir", "/mine", 1);
  EXPECT_TRUE(volseg::prefer_lone_start());
  EXPECT_EQ(get("OMPI_MCA_orte_top_session_dir"), "/mine");
}

TEST_F(Environment, TheUsersChoiceStays) {
  ::setenv("OMPI_MCA_pml", "ucx", 1);
  EXPECT_TRUE(volseg::prefer_lone_start());
  EXPECT_EQ(get("OMPI_MCA_pml"), "ucx");
  EXPECT_EQ(get("OMPI_MCA_btl"), "self");
}

TEST_F(Environment, AProcessALauncherStartedIsLeftAlone) {
  for (const char* name : launcher_variables) {
    ::setenv(name, "0", 1);
    EXPECT_FALSE(volseg::prefer_lone_start()) << name;
    for (const char* setting : settings) EXPECT_EQ(get(setting), "(unset)") << name << ": " << setting;
    ::unsetenv(name);
  }
}

}  // namespace
