// SPDX-License-Identifier: MIT
#include <set>
#include <sstream>

#include "volseg/io/error.hpp"
#include "volseg/io/twophase.hpp"

namespace volseg::io::twophase {
namespace {

std::vector<int> parse_ranks(const std::string& text) {
  std::vector<int> ranks;
  std::set<int> seen;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    std::size_t used = 0;
    int rank = -1;
    try {
      rank = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || rank < 0)
      throw Error("twophase: cb_config=" + text + " must list ranks as non-negative integers, like 0,2,4");
    if (!seen.insert(rank).second) throw Error("twophase: cb_config=" + text + " names rank " + item + " twice");
    ranks.push_back(rank);
  }
  if (ranks.empty()) throw Error("twophase: cb_config is empty");
  return ranks;
}

Aggregation aggregation(const Hints& hints, const std::string& key) {
  const std::string value = hints.get_string(key, "automatic");
  if (value == "automatic") return Aggregation::automatic;
  if (value == "enable") return Aggregation::enable;
  if (value == "disable") return Aggregation::disable;
  throw Error("twophase: " + key + "=" + value + " is not automatic, enable or disable");
}

}  // namespace

bool Options::is_hint(const std::string& key) {
  static const std::set<std::string> keys{"cb_nodes",   "cb_config",  "cb_buffer_size", "exchange",   "partition",
                                          "lock_size",  "io_servers", "fs_profile",     "ds",         "ds_threshold",
                                          "realm_size", "cb_read",    "cb_write",       "max_pieces", "direct_write"};
  return keys.count(key) != 0;
}

Options Options::from_hints(const Hints& hints) {
  Options options;
  options.cb_nodes = static_cast<int>(hints.get_int("cb_nodes", 0));
  if (options.cb_nodes < 0) throw Error("twophase: cb_nodes must be 1 or more");
  if (hints.has("cb_config")) options.cb_config = parse_ranks(hints.get_string("cb_config", ""));
  const auto buffer = hints.get_size("cb_buffer_size", static_cast<std::int64_t>(options.cb_buffer_size));
  if (buffer <= 0 || buffer > (std::int64_t{1} << 30))
    throw Error("twophase: cb_buffer_size must be between 1 byte and 1 GiB");
  options.cb_buffer_size = static_cast<std::uint64_t>(buffer);
  options.max_pieces = hints.get_int("max_pieces", options.max_pieces);
  if (options.max_pieces < 1 || options.max_pieces > (std::int64_t{1} << 30))
    throw Error("twophase: max_pieces must be between 1 and 2^30");
  const std::string exchange = hints.get_string("exchange", "alltoallw");
  if (exchange == "alltoallw")
    options.exchange = Exchange::alltoallw;
  else if (exchange == "p2p")
    options.exchange = Exchange::p2p;
  else
    throw Error("twophase: exchange=" + exchange + " is not alltoallw or p2p");
  options.partition = hints.get_string("partition", options.partition);
  make_partitioner(options.partition);  // refuses unknown names now, not at the first call
  const auto lock = hints.get_size("lock_size", 0);
  if (lock < 0) throw Error("twophase: lock_size must not be negative");
  options.lock_size = static_cast<std::uint64_t>(lock);
  options.io_servers = static_cast<int>(hints.get_int("io_servers", 1));
  if (options.io_servers < 1) throw Error("twophase: io_servers must be 1 or more");
  options.fs_profile = hints.get_string("fs_profile", options.fs_profile);
  if (options.fs_profile != "lustre" && options.fs_profile != "gpfs" && options.fs_profile != "local")
    throw Error("twophase: fs_profile=" + options.fs_profile + " is not lustre, gpfs or local");
  const std::string ds = hints.get_string("ds", "auto");
  if (ds == "auto")
    options.sieving = Sieving::conditional;
  else if (ds == "always")
    options.sieving = Sieving::always;
  else if (ds == "never")
    options.sieving = Sieving::never;
  else
    throw Error("twophase: ds=" + ds + " is not auto, always or never");
  const auto threshold = hints.get_size("ds_threshold", static_cast<std::int64_t>(options.ds_threshold));
  if (threshold < 0) throw Error("twophase: ds_threshold must not be negative");
  options.ds_threshold = static_cast<std::uint64_t>(threshold);
  const auto realm = hints.get_size("realm_size", 0);
  if (realm < 0) throw Error("twophase: realm_size must not be negative");
  options.realm_size = static_cast<std::uint64_t>(realm);
  options.cb_read = aggregation(hints, "cb_read");
  options.cb_write = aggregation(hints, "cb_write");
  options.direct_write = hints.get_bool("direct_write", options.direct_write);
  return options;
}

void Timing::add(const Timing& other) {
  requests += other.requests;
  exchange += other.exchange;
  io += other.io;
  total += other.total;
  calls += other.calls;
  rounds += other.rounds;
  io_calls += other.io_calls;
  file_bytes += other.file_bytes;
  sieved += other.sieved;
  naive += other.naive;
  contiguous += other.contiguous;
  independent += other.independent;
}

}  // namespace volseg::io::twophase
