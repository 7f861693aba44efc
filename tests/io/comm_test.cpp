// SPDX-License-Identifier: MIT
// volseg::agree: what one rank meets arrives on every rank as the same C++
// type with the same message (a Cancelled, an Interrupted, a RankError naming
// the rank), so callers decide by type, never by reading the text.
#include <gtest/gtest.h>
#include <mpi.h>

#include <csignal>
#include <exception>
#include <stdexcept>
#include <string>

#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"

using namespace volseg;

namespace {

// Runs agree with `error` met on the last rank only (every rank when there
// is one) and returns what this rank then caught.
std::exception_ptr agreed(const Comm& comm, std::exception_ptr error) {
  try {
    agree(comm, comm.rank() == comm.size() - 1 ? error : nullptr);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

template <class Expected>
void expect_agreed_as(std::exception_ptr caught, const std::string& message) {
  ASSERT_TRUE(caught) << "agree returned on a rank";
  try {
    std::rethrow_exception(caught);
  } catch (const Expected& e) {
    EXPECT_EQ(e.what(), message);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "caught another type, with message: " << e.what();
  }
}

TEST(Agree, NothingFailedReturnsEverywhere) {
  Comm comm(MPI_COMM_WORLD);
  EXPECT_NO_THROW(agree(comm, nullptr));
}

TEST(Agree, CancelledArrivesOnEveryRankAsCancelled) {
  Comm comm(MPI_COMM_WORLD);
  expect_agreed_as<Cancelled>(agreed(comm, std::make_exception_ptr(Cancelled())), "cancelled");
}

TEST(Agree, InterruptedArrivesOnEveryRankAsInterrupted) {
  Comm comm(MPI_COMM_WORLD);
  expect_agreed_as<Interrupted>(agreed(comm, std::make_exception_ptr(Interrupted(SIGUSR1))), "interrupted by SIGUSR1");
}

TEST(Agree, RankErrorNamesTheRankWhenOthersSucceeded) {
  Comm comm(MPI_COMM_WORLD);
  const auto caught = agreed(comm, std::make_exception_ptr(RankError("write /x: No space left on device")));
  const std::string suffix = comm.size() > 1 ? " (on rank " + std::to_string(comm.size() - 1) + ")" : "";
  expect_agreed_as<RankError>(caught, "write /x: No space left on device" + suffix);
}

TEST(Agree, OtherErrorsArriveAsPlainErrors) {
  Comm comm(MPI_COMM_WORLD);
  const auto caught = agreed(comm, std::make_exception_ptr(std::invalid_argument("bad input")));
  expect_agreed_as<Error>(caught, "bad input");
  try {
    std::rethrow_exception(caught);
  } catch (const Cancelled&) {
    ADD_FAILURE() << "a plain error arrived as Cancelled";
  } catch (const Interrupted&) {
    ADD_FAILURE() << "a plain error arrived as Interrupted";
  } catch (const RankError&) {
    ADD_FAILURE() << "a plain error arrived as a RankError";
  } catch (const Error&) {
  }
}

TEST(Agree, TheLowestFailingRankDecidesTheType) {
  Comm comm(MPI_COMM_WORLD);
  std::exception_ptr error;
  if (comm.rank() == 0)
    error = std::make_exception_ptr(Interrupted(SIGTERM));
  else
    error = std::make_exception_ptr(Cancelled());
  try {
    agree(comm, error);
    ADD_FAILURE() << "agree returned";
  } catch (const Interrupted& e) {
    EXPECT_STREQ(e.what(), "interrupted by SIGTERM");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "caught another type, with message: " << e.what();
  }
}

}  // namespace
