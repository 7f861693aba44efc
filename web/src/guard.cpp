// SPDX-License-Identifier: MIT
#include "volseg/web/guard.hpp"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "volseg/io/error.hpp"

namespace volseg::web {
namespace fs = std::filesystem;

std::string new_token() {
  std::array<unsigned char, 24> bytes{};
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("web: no random bytes for the token: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string token;
  for (const unsigned char b : bytes) {
    token += hex[b >> 4];
    token += hex[b & 15];
  }
  return token;
}

bool same_secret(std::string_view a, std::string_view b) {
  // Every byte of the longer is visited whatever the contents.
  const std::size_t n = std::max(a.size(), b.size());
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference = static_cast<unsigned char>(difference | (x ^ y));
  }
  return difference == 0;
}

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 && hex_digit(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
      i += 2;
    } else {
      out += text[i] == '+' ? ' ' : text[i];
    }
  }
  return out;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of `name` among `separator`-separated name=value pairs.
std::optional<std::string_view> pair_value(std::string_view list, char separator, std::string_view name) {
  while (!list.empty()) {
    const auto end = list.find(separator);
    const std::string_view item = trimmed(list.substr(0, end));
    const auto eq = item.find('=');
    if (eq != std::string_view::npos && item.substr(0, eq) == name) return item.substr(eq + 1);
    if (end == std::string_view::npos) break;
    list.remove_prefix(end + 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> query_value(std::string_view query, std::string_view name) {
  const auto value = pair_value(query, '&', name);
  if (!value) return std::nullopt;
  return percent_decoded(*value);
}

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
  const auto value = pair_value(header, ';', name);
  if (!value) return std::nullopt;
  return std::string(*value);
}

bool origin_allowed(std::string_view origin, std::string_view host, const std::vector<std::string>& allowed) {
  if (origin.empty()) return true;
  for (const auto& a : allowed)
    if (a == "*" || a == origin) return true;
  if (host.empty()) return false;
  const std::string h(host);
  return origin == "http://" + h || origin == "https://" + h;
}

Roots::Roots(const std::vector<std::string>& folders) {
  for (const auto& folder : folders) {
    std::error_code error;
    const fs::path resolved = fs::canonical(folder, error);
    if (error || !fs::is_directory(resolved))
      throw Error("web: --root " + folder + " is not a folder" + (error ? ": " + error.message() : std::string()));
    folders_.push_back(resolved);
  }
  if (folders_.empty()) throw Error("web: no folder to open files under (--root)");
}

fs::path Roots::lexical(const std::string& path) const {
  if (path.empty()) throw Error("no path given");
  if (path.find('\0') != std::string::npos) throw Error("path '" + path + "' has a NUL byte");
  const fs::path p(path);
  for (const auto& part : p)
    if (part == "..") throw Error("path '" + path + "' has a '..' component: name it from its root folder");
  return p.is_absolute() ? p : folders_.front() / p;
}

bool Roots::inside(const fs::path& resolved) const {
  for (const auto& root : folders_) {
    auto r = root.begin();
    auto p = resolved.begin();
    for (; r != root.end() && p != resolved.end() && *r == *p; ++r, ++p) {
    }
    if (r == root.end()) return true;
  }
  return false;
}

fs::path Roots::input(const std::string& path) const {
  const fs::path p = lexical(path);
  std::error_code error;
  const fs::path resolved = fs::canonical(p, error);
  if (error) throw Error("cannot open '" + path + "': " + error.message());
  if (!inside(resolved)) throw Error("'" + path + "' is outside the folders this job may open (--root)");
  return resolved;
}

fs::path Roots::output(const std::string& path) const {
  const fs::path p = lexical(path);
  if (!p.has_filename()) throw Error("output '" + path + "' names a folder, not a file");
  std::error_code error;
  const fs::path folder = fs::canonical(p.parent_path(), error);
  if (error) throw Error("cannot write '" + path + "': its folder: " + error.message());
  if (!inside(folder)) throw Error("'" + path + "' is outside the folders this job may write (--root)");
  const fs::path target = folder / p.filename();
  if (fs::is_symlink(fs::symlink_status(target, error)))
    throw Error("output '" + path + "' is a symbolic link: name the file it points to");
  return target;
}

}  // namespace volseg::web
