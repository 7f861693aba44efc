// SPDX-License-Identifier: MIT
// Who may use a `volseg web` job and which files it may touch: the token
// (compared in constant time), the cookie that carries it after the first
// visit, the WebSocket's Origin, and the folders named on the command line.
// No networking here, so every rule is unit tested on its own.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace volseg::web {

// 24 random bytes from the kernel (getrandom), as 48 hex digits.
std::string new_token();

// Equal strings, in time that depends on their lengths only, never on where
// they first differ (a timing attack learns nothing of the token).
bool same_secret(std::string_view a, std::string_view b);

// The value of `name` in a query string ("a=1&token=x"), percent-decoded;
// nullopt when absent.
std::optional<std::string> query_value(std::string_view query, std::string_view name);
// The value of cookie `name` in a Cookie header ("a=1; b=2").
std::optional<std::string> cookie_value(std::string_view header, std::string_view name);

// Whether a WebSocket's Origin header may open it: absent (not a browser),
// the same origin as Host ("http://HOST" or "https://HOST"), or one of
// `allowed` ("*" allows any).
bool origin_allowed(std::string_view origin, std::string_view host, const std::vector<std::string>& allowed);

// The folders a session may read and write under. A path is taken only if
// it has no ".." component and, with every symbolic link resolved, lies
// inside one of them; a relative path is taken relative to the first.
class Roots {
 public:
  // Throws volseg::Error when a folder does not exist.
  explicit Roots(const std::vector<std::string>& folders);
  const std::vector<std::filesystem::path>& folders() const { return folders_; }
  // An existing file or folder to read: its resolved path. Throws
  // volseg::Error naming the path when it is outside or missing.
  std::filesystem::path input(const std::string& path) const;
  // A file or folder to write: its folder must exist inside a root, and the
  // name itself must not be a symbolic link. Returns the path to write.
  std::filesystem::path output(const std::string& path) const;

 private:
  std::filesystem::path lexical(const std::string& path) const;
  bool inside(const std::filesystem::path& resolved) const;
  std::vector<std::filesystem::path> folders_;
};

}  // namespace volseg::web
