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

// "OP PATH: strerror(errno)", for a failed POSIX call.
[[noreturn]] void throw_errno(std::string_view operation, std::string_view path, int errnum);
[[noreturn]] void throw_errno(std::string_view operation, std::string_view path);

}  // namespace volseg
