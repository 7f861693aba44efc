// SPDX-License-Identifier: MIT
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace volseg {

// Every failure the user can cause or meet. The message is one line that
// names the operation, the path and the cause; main prints it as it is.
// Its kind survives an agreement (volseg::agree) as its C++ type: a caller
// decides by catching Cancelled or Interrupted, never by reading the text.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure of this rank's own (a file call, a limit one rank met), where
// the others may have done fine: an agreed error (volseg::agree) then names
// the rank. Other Errors are decisions every rank would make alike, such as
// bad input found on rank 0 for all, and name none.
class RankError : public Error {
 public:
  using Error::Error;
};

// A job the user asked to stop (the GUI's Cancel): it leaves no output.
class Cancelled : public Error {
 public:
  static constexpr const char* message = "cancelled";
  Cancelled() : Error(message) {}
};

// A job stopped by a signal (a scheduler's warning that its time is nearly
// up): "interrupted by SIGUSR1", and whatever the job adds about the partial
// output it kept for a resume. Not a failure: the CLI exits 75 (EX_TEMPFAIL).
class Interrupted : public Error {
 public:
  explicit Interrupted(int signal);
  using Error::Error;
};

// "OP PATH: strerror(errno)", for a failed POSIX call (a RankError).
[[noreturn]] void throw_errno(std::string_view operation, std::string_view path, int errnum);
[[noreturn]] void throw_errno(std::string_view operation, std::string_view path);

}  // namespace volseg
