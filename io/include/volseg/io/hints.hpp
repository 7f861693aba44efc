// SPDX-License-Identifier: MIT
// key=value hints, like MPI_Info, but strict: a backend reads the keys it
// knows, and any key left unread is an error ("unknown hint"), not ignored.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace volseg::io {

// Which side of a job a hint is for: a reader, a writer, or both. Each
// backend lists the keys it knows with their role (Backend::hints), so a
// reader refuses a writer's hint by name and a hint given to both roles at
// once (segment --hint) reaches only the role that knows it.
enum class Role { reader, writer };
enum class HintFor { readers, writers, both };
struct KnownHint {
  std::string key;
  HintFor role = HintFor::both;
};

class Hints {
 public:
  Hints() = default;
  // Parses "key=value" strings; throws volseg::Error on a malformed one or a
  // key given twice.
  static Hints parse(const std::vector<std::string>& items);

  void set(const std::string& key, const std::string& value);
  bool has(const std::string& key) const;

  // Readers mark the key as used. A malformed value is an error naming the key.
  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  std::int64_t get_size(const std::string& key, std::int64_t fallback) const;  // accepts 16M, 4KiB
  bool get_bool(const std::string& key, bool fallback) const;

  // Every key for which wanted(key) is true, marked as read: hints a backend
  // passes through to a library (MPI_Info) without knowing each one.
  std::vector<std::pair<std::string, std::string>> take_matching(bool (*wanted)(const std::string&)) const;

  // Throws volseg::Error naming the first key nobody read.
  void reject_unused(std::string_view backend) const;
  std::vector<std::string> to_strings() const;
  std::vector<std::string> keys() const;

 private:
  std::map<std::string, std::string> values_;
  mutable std::map<std::string, bool> used_;
  const std::string* find(const std::string& key) const;
};

// The value of the last "key=value" item of `items` with that key (not a
// longer key that starts with it), if any.
std::optional<std::string> hint_in(const std::vector<std::string>& items, std::string_view key);

}  // namespace volseg::io
