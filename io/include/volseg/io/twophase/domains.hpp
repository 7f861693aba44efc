// SPDX-License-Identifier: MIT
// File domains (Coloma et al.'s "file realms"): which aggregator owns each byte of
// the file for one collective call. Every partitioning method of Liao & Choudhary
// is expressed in one shape, so the engine does its arithmetic once:
//
//   a domain set is a sorted list of segments [begin, end); a segment cuts
//   the file into absolute blocks of `block` bytes (block k is
//   [k*block, (k+1)*block), anchored at byte 0) and deals them round-robin
//   to its members: block k belongs to members[(k - phase) mod members.size()].
//
// even and aligned are one segment per aggregator with one member;
// static-cyclic is one segment with every aggregator; group-cyclic is one
// segment per group; persistent is one segment from byte 0 to the end of
// any file. A domain need not be contiguous, and an aggregator appears in
// at most one segment.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace volseg::io::twophase {

inline constexpr std::uint64_t end_of_file = std::numeric_limits<std::uint64_t>::max();

struct Segment {
  std::uint64_t begin = 0, end = 0;  // [begin, end)
  std::uint64_t block = 0;           // bytes per dealt block; ignored with one member
  std::uint64_t phase = 0;           // block index that goes to members[0]
  std::vector<int> members;          // aggregator indices, not ranks
};

class FileDomains {
 public:
  FileDomains() = default;
  // Checks the shape: segments sorted, disjoint, non-empty member lists,
  // blocks > 0 where dealt, no aggregator in two segments.
  FileDomains(std::vector<Segment> segments, int aggregators);

  int aggregators() const { return aggregators_; }
  const std::vector<Segment>& segments() const { return segments_; }

  // The aggregator that owns byte x; throws if no segment covers x.
  int owner(std::uint64_t x) const;
  // End of the contiguous piece of one owner that holds byte x.
  std::uint64_t piece_end(std::uint64_t x) const;
  // An identifier shared by the bytes of one contiguous piece (for
  // coalescing): bytes in the same piece have the same key.
  std::uint64_t piece_key(std::uint64_t x) const;
  // Bytes of aggregator a's domain that lie below x: the coordinate in
  // which a's collective buffer is packed. Monotone in x, and it grows
  // one for one inside a's own pieces.
  std::uint64_t coordinate(int a, std::uint64_t x) const;
  // Total bytes aggregator a owns in [begin, end).
  std::uint64_t owned(int a, std::uint64_t begin, std::uint64_t end) const;

  // Contiguous single-owner pieces inside [begin, end): one piece of any
  // rank's access can be cut at most this many times, less one.
  std::uint64_t pieces(std::uint64_t begin, std::uint64_t end) const;

  std::string describe() const;  // one line, for reports and errors

 private:
  const Segment& segment_of(std::uint64_t x) const;
  std::vector<Segment> segments_;
  std::vector<int> segment_of_aggregator_;  // -1: owns nothing
  int aggregators_ = 0;
};

}  // namespace volseg::io::twophase
