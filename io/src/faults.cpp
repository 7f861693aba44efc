// SPDX-License-Identifier: MIT
#include "volseg/io/faults.hpp"

#include <mpi.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "volseg/io/error.hpp"

namespace volseg::io::faults {
namespace detail {
std::atomic<int> state{0};
}  // namespace detail

namespace {

enum class Kind { eio, enospc, short_io, slow };

struct Rule {
  Call call = Call::read;
  Kind kind = Kind::eio;
  long nth = 0;   // 0: every call
  int rank = -1;  // -1: every rank
  long ms = 100;
};

struct Rules {
  std::mutex mutex;
  std::vector<Rule> rules;
  long counts[6] = {0, 0, 0, 0, 0, 0};
  std::string error;  // a bad VOLSEG_FAULTS, said at the first call
};

Rules& rules() {
  static Rules r;
  return r;
}

Call parse_call(const std::string& word, const std::string& rule) {
  static const char* names[] = {"open", "read", "write", "close", "fsync", "rename"};
  for (int i = 0; i < 6; ++i)
    if (word == names[i]) return static_cast<Call>(i);
  throw Error("VOLSEG_FAULTS: unknown call '" + word + "' in '" + rule + "' (open, read, write, close, fsync, rename)");
}

long parse_number(const std::string& text, const std::string& rule) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0)
    throw Error("VOLSEG_FAULTS: '" + text + "' in '" + rule + "' is not a count");
  return value;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : text) {
    if (c == separator)
      parts.push_back(part), part.clear();
    else if (c != ' ')
      part += c;
  }
  parts.push_back(part);
  return parts;
}

std::vector<Rule> parse(const std::string& spec) {
  std::vector<Rule> out;
  for (const auto& text : split(spec, ';')) {
    if (text.empty()) continue;
    const auto fields = split(text, ',');
    const auto colon = fields[0].find(':');
    if (colon == std::string::npos) throw Error("VOLSEG_FAULTS: '" + text + "' is not CALL:KIND[@N][,rank=R][,ms=M]");
    Rule rule;
    rule.call = parse_call(fields[0].substr(0, colon), text);
    std::string kind = fields[0].substr(colon + 1);
    if (const auto at = kind.find('@'); at != std::string::npos) {
      rule.nth = parse_number(kind.substr(at + 1), text);
      if (rule.nth == 0) throw Error("VOLSEG_FAULTS: '@0' in '" + text + "': calls count from 1");
      kind.erase(at);
    }
    if (kind == "eio")
      rule.kind = Kind::eio;
    else if (kind == "enospc")
      rule.kind = Kind::enospc;
    else if (kind == "short")
      rule.kind = Kind::short_io;
    else if (kind == "slow")
      rule.kind = Kind::slow;
    else
      throw Error("VOLSEG_FAULTS: unknown fault '" + kind + "' in '" + text + "' (eio, enospc, short, slow)");
    if (rule.kind == Kind::short_io && rule.call != Call::read && rule.call != Call::write)
      throw Error("VOLSEG_FAULTS: '" + text + "': only reads and writes can be short");
    for (std::size_t i = 1; i < fields.size(); ++i) {
      const auto eq = fields[i].find('=');
      const std::string key = fields[i].substr(0, eq), value = eq == std::string::npos ? "" : fields[i].substr(eq + 1);
      if (key == "rank")
        rule.rank = static_cast<int>(parse_number(value, text));
      else if (key == "ms")
        rule.ms = parse_number(value, text);
      else
        throw Error("VOLSEG_FAULTS: unknown key '" + key + "' in '" + text + "' (rank, ms)");
    }
    out.push_back(rule);
  }
  return out;
}

int my_rank() {
  int initialized = 0, finalized = 0, rank = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);  // the process's identity, not traffic
  return rank;
}

void load_environment() {
  auto& r = rules();
  std::lock_guard lock(r.mutex);
  if (detail::state.load() != 0) return;
  const char* spec = std::getenv("VOLSEG_FAULTS");
  if (!spec || !*spec) {
    detail::state.store(1);
    return;
  }
  try {
    r.rules = parse(spec);
  } catch (const Error& e) {
    r.error = e.what();
  }
  detail::state.store(2);
}

}  // namespace

namespace detail {

Injected decide(Call call) {
  if (state.load() == 0) load_environment();
  if (state.load() == 1) return {};
  auto& r = rules();
  Injected injected;
  long delay = 0;
  {
    std::lock_guard lock(r.mutex);
    if (!r.error.empty()) throw Error(r.error);
    const long n = ++r.counts[static_cast<int>(call)];
    const int rank = my_rank();
    for (const auto& rule : r.rules) {
      if (rule.call != call || (rule.nth != 0 && rule.nth != n) || (rule.rank >= 0 && rule.rank != rank)) continue;
      switch (rule.kind) {
        case Kind::eio:
          injected.error = EIO;
          break;
        case Kind::enospc:
          injected.error = ENOSPC;
          break;
        case Kind::short_io:
          injected.short_io = true;
          break;
        case Kind::slow:
          delay += rule.ms;
          break;
      }
    }
  }
  if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  return injected;
}

}  // namespace detail

void configure(const std::string& spec) {
  auto& r = rules();
  auto parsed = parse(spec);
  std::lock_guard lock(r.mutex);
  r.rules = std::move(parsed);
  r.error.clear();
  for (auto& count : r.counts) count = 0;
  detail::state.store(r.rules.empty() ? 1 : 2);
}

std::string grammar() {
  return "CALL:KIND[@N][,rank=R][,ms=M] rules separated by ';' with CALL open|read|write|close|fsync|rename and "
         "KIND eio|enospc|short|slow";
}

}  // namespace volseg::io::faults
