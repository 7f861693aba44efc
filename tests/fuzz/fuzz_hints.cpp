// SPDX-License-Identifier: MIT
// libFuzzer target: backend hints (io/src/hints.cpp). An input is a list of
// --hint arguments, one per line. Every key is then read with each typed
// getter, as the backends read them; afterwards no key may be left unread,
// and the hints must print back to strings that parse to the same hints.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"

using volseg::io::Hints;

namespace {

std::vector<std::string> lines(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> result;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    result.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return result;
}

template <class Read>
void read_quietly(Read read) {
  try {
    read();
  } catch (const volseg::Error&) {
  }
}

bool every_key(const std::string&) { return true; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Hints hints;
  try {
    hints = Hints::parse(lines(data, size));
  } catch (const volseg::Error&) {
    return 0;
  }
  const std::vector<std::string> items = hints.to_strings();
  for (const auto& item : items) {
    const std::string key = item.substr(0, item.find('='));
    if (!hints.has(key)) volseg::fuzz::invariant_broken("hint '" + key + "' lost");
    read_quietly([&] { (void)hints.get_int(key, 0); });
    read_quietly([&] { (void)hints.get_size(key, 0); });
    read_quietly([&] { (void)hints.get_bool(key, false); });
    (void)hints.get_string(key, "");
  }
  hints.reject_unused("fuzz");  // every key was read: must not throw
  if (hints.take_matching(every_key).size() != items.size())
    volseg::fuzz::invariant_broken("take_matching missed a hint");
  if (Hints::parse(items).to_strings() != items) volseg::fuzz::invariant_broken("hints do not print back");
  return 0;
}
