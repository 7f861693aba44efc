// SPDX-License-Identifier: MIT
// main() for GoogleTest binaries that run under mpirun: every rank runs every
// test; rank 0 prints the usual report, the other ranks print only their
// failures (prefixed with the rank); the exit code fails if any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

namespace volseg::testing {
// What is left of the command line after GoogleTest took its flags.
std::vector<std::string> arguments;
}  // namespace volseg::testing

namespace {

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  // The test is remembered here: UnitTest::current_test_info() takes the
  // lock that GoogleTest holds while it reports a part result, so calling it
  // from OnTestPartResult deadlocks the rank (and hangs the job).
  void OnTestStart(const ::testing::TestInfo& test) override { test_ = &test; }
  void OnTestEnd(const ::testing::TestInfo&) override { test_ = nullptr; }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s.%s: %s:%d: %s\n", rank_, test_ ? test_->test_suite_name() : "?",
                 test_ ? test_->name() : "?", result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
  const ::testing::TestInfo* test_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) volseg::testing::arguments.emplace_back(argv[i]);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_failed && rank == 0 && !failed) std::fprintf(stderr, "a test failed on another rank\n");
  MPI_Finalize();
  return any_failed;
}
