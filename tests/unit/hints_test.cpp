// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>
#include <optional>

#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/registry.hpp"

using volseg::Error;
using volseg::io::Hints;

TEST(Hints, ParsesAndReadsTypedValues) {
  Hints hints = Hints::parse({"cb_nodes=4", "cb_buffer_size=16M", "fsync=1", "partition=even"});
  EXPECT_EQ(hints.get_int("cb_nodes", 1), 4);
  EXPECT_EQ(hints.get_size("cb_buffer_size", 0), 16 << 20);
  EXPECT_TRUE(hints.get_bool("fsync", false));
  EXPECT_EQ(hints.get_string("partition", "x"), "even");
  EXPECT_EQ(hints.get_int("absent", 7), 7);
  EXPECT_NO_THROW(hints.reject_unused("test"));
}

TEST(Hints, UnknownKeyIsAnError) {
  Hints hints = Hints::parse({"advise_depth=2", "typo=1"});
  hints.get_int("advise_depth", 1);
  try {
    hints.reject_unused("mmap-advise");
    FAIL() << "an unread hint was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("typo"), std::string::npos);
  }
}

TEST(Hints, MalformedInputIsRefused) {
  EXPECT_THROW(Hints::parse({"novalue"}), Error);
  EXPECT_THROW(Hints::parse({"=1"}), Error);
  EXPECT_THROW(Hints::parse({"a=1", "a=2"}), Error);
  Hints hints = Hints::parse({"n=12x", "s=3Q", "b=maybe"});
  EXPECT_THROW(hints.get_int("n", 0), Error);
  EXPECT_THROW(hints.get_size("s", 0), Error);
  EXPECT_THROW(hints.get_bool("b", false), Error);
}

// Found by fuzz_hints: the scaled size overflowed (undefined behaviour).
TEST(Hints, SizeTooLargeIsRefused) {
  Hints hints = Hints::parse({"a=9223372036854GiB", "b=8589934591G", "c=8589934592G", "d=9223372036854775807"});
  try {
    hints.get_size("a", 0);
    FAIL() << "an overflowing size was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "hint a=9223372036854GiB: too large (at most 2^63 - 1 bytes)");
  }
  EXPECT_EQ(hints.get_size("b", 0), 8589934591LL << 30);
  EXPECT_THROW(hints.get_size("c", 0), Error);
  EXPECT_EQ(hints.get_size("d", 0), 9223372036854775807LL);
}

// Hints are checked per role: a reader refuses a hint only writers read
// (segment --in-hint append=1), naming the role and the backend, before it
// opens anything; a writer refuses a reader's.
TEST(Hints, EachRoleRefusesTheOtherRolesHints) {
  const volseg::Comm comm(MPI_COMM_SELF);
  auto refusal = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal([&] {
              volseg::io::open_reader("pnetcdf", {"absent.nc", {}}, comm, Hints::parse({"append=1"}));
            }),
            "hint append= is for writers (pnetcdf)");
  EXPECT_EQ(refusal([&] {
              volseg::io::open_reader("posix", {"absent.nhdr", {}}, comm, Hints::parse({"fsync=1"}));
            }),
            "hint fsync= is for writers (posix)");
  EXPECT_EQ(
      refusal([&] {
        volseg::io::create_writer("ranged-mmap", {"absent.nhdr", {}, false}, comm, Hints::parse({"queue_depth=4"}));
      }),
      "hint queue_depth= is for readers (ranged-mmap)");
}

// Hints given to both roles at once (segment --hint): each role keeps those
// it knows and those nobody knows (refused later as unknown), and drops the
// other role's.
TEST(Hints, SharedHintsReachTheRoleThatKnowsThem) {
  using volseg::io::hints_for;
  using volseg::io::Role;
  const std::vector<std::string> shared = {"append=1", "nonblocking=1", "cb_nodes=2", "typo=1"};
  EXPECT_EQ(hints_for("pnetcdf", Role::reader, shared),
            (std::vector<std::string>{"nonblocking=1", "cb_nodes=2", "typo=1"}));
  EXPECT_EQ(hints_for("pnetcdf", Role::writer, shared), shared);
  EXPECT_EQ(hints_for("posix", Role::reader, {"fsync=1", "direct_write=0"}), std::vector<std::string>{});
  EXPECT_EQ(hints_for("mmap-advise", Role::writer, {"advise_depth=2", "populate=0"}),
            std::vector<std::string>{"populate=0"});
}

TEST(Hints, HintListsAreReadByKeyNotByPrefix) {
  using volseg::io::hint_in;
  const std::vector<std::string> items{"level=T", "levels=5", "cache=1", "cache_size=0", "cache=3", "levelx=x"};
  EXPECT_EQ(hint_in(items, "cache"), std::optional<std::string>("3"));  // the last one, not "cache_size"
  EXPECT_EQ(hint_in(items, "level"), std::optional<std::string>("T"));  // not "levels" or "levelx"
  EXPECT_EQ(hint_in(items, "glob"), std::nullopt);
}

TEST(Hints, APyramidIndexRecordsItsSelectionAsItAlwaysHas) {
  volseg::io::Selection selection;
  selection.variable = "u";
  selection.step = 4;
  EXPECT_EQ(selection.record().size(), 2u);
  EXPECT_EQ(volseg::io::Selection::from_record(selection.record()), selection);
  EXPECT_THROW(volseg::io::Selection::from_record({selection.record()[0], selection.record()[1] + "x"}), volseg::Error);
}
