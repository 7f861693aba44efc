// SPDX-License-Identifier: MIT
#include "volseg/io/hints.hpp"

#include <cctype>
#include <charconv>
#include <limits>

#include "volseg/io/error.hpp"
#include "volseg/io/selection.hpp"

namespace volseg::io {

Hints Hints::parse(const std::vector<std::string>& items) {
  Hints hints;
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("malformed hint '" + item + "': expected key=value");
    std::string key = item.substr(0, eq);
    if (hints.values_.count(key)) throw Error("hint '" + key + "' given twice");
    hints.set(key, item.substr(eq + 1));
  }
  return hints;
}

void Hints::set(const std::string& key, const std::string& value) {
  values_[key] = value;
  used_[key] = false;
}

bool Hints::has(const std::string& key) const { return values_.count(key) != 0; }

const std::string* Hints::find(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return nullptr;
  used_[key] = true;
  return &it->second;
}

std::string Hints::get_string(const std::string& key, const std::string& fallback) const {
  const std::string* value = find(key);
  return value ? *value : fallback;
}

std::int64_t Hints::get_int(const std::string& key, std::int64_t fallback) const {
  const std::string* value = find(key);
  if (!value) return fallback;
  std::int64_t result = 0;
  auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), result);
  if (ec != std::errc() || end != value->data() + value->size())
    throw Error("hint " + key + "=" + *value + ": not an integer");
  return result;
}

std::int64_t Hints::get_size(const std::string& key, std::int64_t fallback) const {
  const std::string* value = find(key);
  if (!value) return fallback;
  std::int64_t number = 0;
  auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), number);
  std::string suffix(end, value->data() + value->size());
  std::int64_t scale = 1;
  if (suffix.empty() || suffix == "B")
    scale = 1;
  else if (suffix == "K" || suffix == "KiB" || suffix == "k")
    scale = 1LL << 10;
  else if (suffix == "M" || suffix == "MiB")
    scale = 1LL << 20;
  else if (suffix == "G" || suffix == "GiB")
    scale = 1LL << 30;
  else
    ec = std::errc::invalid_argument;
  if (ec != std::errc() || number < 0) throw Error("hint " + key + "=" + *value + ": not a size (e.g. 4096, 16M)");
  if (number > std::numeric_limits<std::int64_t>::max() / scale)
    throw Error("hint " + key + "=" + *value + ": too large (at most 2^63 - 1 bytes)");
  return number * scale;
}

bool Hints::get_bool(const std::string& key, bool fallback) const {
  const std::string* value = find(key);
  if (!value) return fallback;
  if (*value == "1" || *value == "true" || *value == "on" || *value == "yes") return true;
  if (*value == "0" || *value == "false" || *value == "off" || *value == "no") return false;
  throw Error("hint " + key + "=" + *value + ": expected 0 or 1");
}

std::vector<std::pair<std::string, std::string>> Hints::take_matching(bool (*wanted)(const std::string&)) const {
  std::vector<std::pair<std::string, std::string>> result;
  for (const auto& [key, value] : values_) {
    if (!wanted(key)) continue;
    used_[key] = true;
    result.emplace_back(key, value);
  }
  return result;
}

void Hints::reject_unused(std::string_view backend) const {
  for (const auto& [key, used] : used_) {
    if (used) continue;
    if (key == "glob")
      throw Error("--glob names the slices of a folder of TIFF files; backend " + std::string(backend) +
                  " does not read such folders");
    if (key == "var" || key == "time")
      throw Error("--" + key + " names a NetCDF variable or step; backend " + std::string(backend) +
                  " reads raw volumes, which have neither");
    throw Error("unknown hint '" + key + "' for backend " + std::string(backend));
  }
}

std::vector<std::string> Hints::keys() const {
  std::vector<std::string> result;
  for (const auto& [key, value] : values_) result.push_back(key);
  return result;
}

std::vector<std::string> Hints::to_strings() const {
  std::vector<std::string> result;
  for (const auto& [key, value] : values_) result.push_back(key + "=" + value);
  return result;
}

namespace {
bool has_key(const std::string& item, std::string_view key) {
  return item.size() > key.size() && item.compare(0, key.size(), key) == 0 && item[key.size()] == '=';
}
}  // namespace

std::optional<std::string> hint_in(const std::vector<std::string>& items, std::string_view key) {
  std::optional<std::string> value;
  for (const auto& item : items)
    if (has_key(item, key)) value = item.substr(key.size() + 1);
  return value;
}

std::vector<std::string> Selection::record() const {
  std::vector<std::string> items;
  if (!variable.empty()) items.push_back("var=" + variable);
  if (step) items.push_back("time=" + std::to_string(*step));
  return items;
}

Selection Selection::from_record(const std::vector<std::string>& items) {
  Selection selection;
  if (auto value = hint_in(items, "var")) selection.variable = *value;
  if (auto value = hint_in(items, "time")) {
    std::int64_t step = 0;
    const char* end = value->data() + value->size();
    if (auto [at, error] = std::from_chars(value->data(), end, step); error != std::errc() || at != end)
      throw Error("a recorded selection's step is not a number: time=" + *value);
    selection.step = step;
  }
  return selection;
}

}  // namespace volseg::io
