// SPDX-License-Identifier: MIT
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace volseg {

// Every failure the user can cause or meet. The message is one line that
// names the operation, the path and the cause; main prints it as it is.
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

// "OP PATH: strerror(errno)", for a failed POSIX call (a RankError).
[[noreturn]] void throw_errno(std::string_view operation, std::string_view path, int errnum);
[[noreturn]] void throw_errno(std::string_view operation, std::string_view path);

}  // namespace volseg
