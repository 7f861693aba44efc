// SPDX-License-Identifier: MIT
#include "volseg/io/twophase/domains.hpp"

#include <algorithm>

#include "volseg/io/error.hpp"

namespace volseg::io::twophase {
namespace {

std::uint64_t member_position(const Segment& segment, int aggregator) {
  auto it = std::find(segment.members.begin(), segment.members.end(), aggregator);
  return static_cast<std::uint64_t>(it - segment.members.begin());
}

// Bytes below y that fall in blocks dealt to the member at position m.
std::uint64_t dealt_below(const Segment& segment, std::uint64_t m, std::uint64_t y) {
  const std::uint64_t g = segment.members.size();
  if (g == 1) return y;
  const std::uint64_t t = (segment.phase % g + m) % g;  // this member's blocks are k = t (mod g)
  const std::uint64_t q = y / segment.block, r = y % segment.block;
  const std::uint64_t whole = q > t ? (q - t + g - 1) / g : 0;
  return whole * segment.block + (q % g == t ? r : 0);
}

}  // namespace

FileDomains::FileDomains(std::vector<Segment> segments, int aggregators)
    : segments_(std::move(segments)),
      segment_of_aggregator_(static_cast<std::size_t>(aggregators), -1),
      aggregators_(aggregators) {
  for (std::size_t s = 0; s < segments_.size(); ++s) {
    const Segment& segment = segments_[s];
    if (segment.begin >= segment.end) throw Error("twophase: empty file domain segment");
    if (s > 0 && segments_[s - 1].end > segment.begin) throw Error("twophase: file domain segments overlap");
    if (segment.members.empty()) throw Error("twophase: file domain segment without aggregators");
    if (segment.members.size() > 1 && segment.block == 0) throw Error("twophase: cyclic segment with block size 0");
    for (int member : segment.members) {
      if (member < 0 || member >= aggregators) throw Error("twophase: file domain names a missing aggregator");
      if (segment_of_aggregator_[static_cast<std::size_t>(member)] != -1)
        throw Error("twophase: an aggregator appears in two file domain segments");
      segment_of_aggregator_[static_cast<std::size_t>(member)] = static_cast<int>(s);
    }
  }
}

const Segment& FileDomains::segment_of(std::uint64_t x) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), x,
                             [](std::uint64_t value, const Segment& segment) { return value < segment.begin; });
  if (it == segments_.begin() || x >= std::prev(it)->end)
    throw Error("twophase: byte " + std::to_string(x) + " lies in no file domain (" + describe() + ")");
  return *std::prev(it);
}

int FileDomains::owner(std::uint64_t x) const {
  const Segment& segment = segment_of(x);
  const std::uint64_t g = segment.members.size();
  if (g == 1) return segment.members[0];
  const std::uint64_t k = x / segment.block;
  return segment.members[static_cast<std::size_t>((k % g + g - segment.phase % g) % g)];
}

std::uint64_t FileDomains::piece_end(std::uint64_t x) const {
  const Segment& segment = segment_of(x);
  if (segment.members.size() == 1) return segment.end;
  const std::uint64_t k = x / segment.block;
  const std::uint64_t block_end = k + 1 > end_of_file / segment.block ? end_of_file : (k + 1) * segment.block;
  return std::min(segment.end, block_end);
}

std::uint64_t FileDomains::piece_key(std::uint64_t x) const {
  const Segment& segment = segment_of(x);
  if (segment.members.size() == 1) return segment.begin;
  return std::max(segment.begin, x / segment.block * segment.block);
}

std::uint64_t FileDomains::pieces(std::uint64_t begin, std::uint64_t end) const {
  std::uint64_t n = 0;
  for (const auto& segment : segments_) {
    const std::uint64_t b = std::max(begin, segment.begin), e = std::min(end, segment.end);
    if (b >= e) continue;
    n += segment.members.size() == 1 ? 1 : (e - 1) / segment.block - b / segment.block + 1;
  }
  return n;
}

std::uint64_t FileDomains::coordinate(int a, std::uint64_t x) const {
  const int s = segment_of_aggregator_.at(static_cast<std::size_t>(a));
  if (s < 0) return 0;
  const Segment& segment = segments_[static_cast<std::size_t>(s)];
  const std::uint64_t m = member_position(segment, a);
  const std::uint64_t y = std::clamp(x, segment.begin, segment.end);
  return dealt_below(segment, m, y) - dealt_below(segment, m, segment.begin);
}

std::uint64_t FileDomains::owned(int a, std::uint64_t begin, std::uint64_t end) const {
  return coordinate(a, end) - coordinate(a, begin);
}

std::string FileDomains::describe() const {
  std::string text = std::to_string(segments_.size()) + " segment(s):";
  std::size_t shown = 0;
  for (const auto& segment : segments_) {
    if (++shown > 8) {
      text += " ...";
      break;
    }
    text += " [" + std::to_string(segment.begin) + "," +
            (segment.end == end_of_file ? std::string("EOF") : std::to_string(segment.end)) + ")";
    if (segment.members.size() > 1)
      text += " cyclic " + std::to_string(segment.block) + " B over " + std::to_string(segment.members.size());
    else
      text += " agg " + std::to_string(segment.members[0]);
  }
  return text;
}

}  // namespace volseg::io::twophase
