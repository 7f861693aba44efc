// SPDX-License-Identifier: MIT
#include "volseg/io/error.hpp"

#include <cerrno>
#include <cstring>
#include <string>

namespace volseg {

Interrupted::Interrupted(int signal)
    : Error("interrupted by SIG" + std::string(sigabbrev_np(signal) ? sigabbrev_np(signal) : "NAL")) {}

void throw_errno(std::string_view operation, std::string_view path, int errnum) {
  const char* reason = std::strerror(errnum);
  std::string message;
  message.reserve(operation.size() + path.size() + std::strlen(reason) + 3);
  message.append(operation);
  if (!path.empty()) message.append(1, ' ').append(path);
  message.append(": ").append(reason);
  throw RankError(message);
}

void throw_errno(std::string_view operation, std::string_view path) { throw_errno(operation, path, errno); }

}  // namespace volseg
