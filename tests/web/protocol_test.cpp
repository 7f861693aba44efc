// SPDX-License-Identifier: MIT
// The page's messages, checked before any rank sees them, and the frames
// going back.
#include "volseg/web/protocol.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "volseg/io/error.hpp"
#include "volseg/session/command_line.hpp"

namespace fs = std::filesystem;
using volseg::web::Json;
using volseg::web::parse_message;

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("volseg-protocol-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    roots.emplace(std::vector<std::string>{dir.string()});
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string error_of(const Json& message) {
    try {
      parse_message(message.dump(), *roots, "");
    } catch (const volseg::Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir;
  std::optional<volseg::web::Roots> roots;
};

TEST_F(ProtocolTest, SegmentBecomesARequestWithAResolvedOutput) {
  const auto m = parse_message(R"({"type":"segment","id":7,"lo":1.5,"hi":2,"output":"m.nc"})", *roots, "");
  EXPECT_EQ(m.type, "segment");
  EXPECT_EQ(m.id, 7);
  ASSERT_TRUE(m.request.has_value());
  const auto* segment = std::get_if<volseg::session::SegmentRequest>(&*m.request);
  ASSERT_NE(segment, nullptr);
  EXPECT_EQ(segment->lo, 1.5);
  EXPECT_EQ(segment->hi, 2);
  EXPECT_EQ(segment->output, (fs::canonical(dir) / "m.nc").string());
  EXPECT_FALSE(segment->force);
}

TEST_F(ProtocolTest, EveryPageTypeIsAKindOfTheSessionsTable) {
  // Each kind the page may send parses into that kind (and no other).
  const std::map<std::string, Json> messages{{"open", {{"path", "v.nc"}}},
                                             {"segment", {{"lo", 0}, {"hi", 1}, {"output", "m.nc"}}},
                                             {"label", {{"output", "l.nc"}}},
                                             {"surface", Json::object()},
                                             {"frame", {{"width", 64}, {"height", 64}, {"camera", Json::object()}}},
                                             {"slices", {{"at", {0.5, 0.5, 0.5}}}},
                                             {"split", {{"object", 3}, {"h", 0.5}}},
                                             {"edit", {{"op", "merge"}, {"ids", {2, 3}}, {"base", 1}}}};
  std::ofstream(dir / "v.nc") << "x";
  int page_kinds = 0;
  for (const auto& kind : volseg::session::kinds) {
    if (kind.page_type.empty()) continue;
    ++page_kinds;
    const std::string type(kind.page_type);
    ASSERT_TRUE(messages.count(type)) << type << " has no message in this test";
    Json message = messages.at(type);
    message["type"] = type;
    message["id"] = 1;
    const auto m = parse_message(message.dump(), *roots, "");
    ASSERT_TRUE(m.request.has_value());
    EXPECT_EQ(volseg::session::kind_of(*m.request).name, kind.name);
  }
  EXPECT_EQ(page_kinds, static_cast<int>(messages.size()));
}

// The page (web/page/*.js) sends only the message types of the table, and
// every one of them.
TEST(PageProtocol, ThePageSendsTheTablesTypes) {
  std::string page;
  for (const char* script : {"app.js", "view3d.js"}) {
    std::ifstream in(std::string(VOLSEG_SOURCE_DIR) + "/web/page/" + script);
    ASSERT_TRUE(in) << script;
    page.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::set<std::string> sent;
  const std::regex type(R"(\{type: '([a-z]+)')");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), type); it != std::sregex_iterator(); ++it)
    sent.insert((*it)[1]);
  std::set<std::string> table{"hello", "cancel"};  // the page's own, no session request
  for (const auto& kind : volseg::session::kinds)
    if (!kind.page_type.empty()) table.insert(std::string(kind.page_type));
  EXPECT_EQ(sent, table);
}

TEST_F(ProtocolTest, BadMessagesNameTheirFault) {
  EXPECT_NE(error_of(Json::array()), "");
  EXPECT_EQ(error_of({{"id", 1}}), "'type' is missing");
  EXPECT_EQ(error_of({{"type", "segment"}, {"id", 1}, {"lo", 1}, {"output", "m.nc"}}), "'hi' is missing");
  EXPECT_EQ(error_of({{"type", "segment"}, {"id", 1}, {"lo", "1"}, {"hi", 2}, {"output", "m.nc"}}),
            "'lo' must be a number");
  EXPECT_EQ(error_of({{"type", "segment"}, {"id", 1}, {"lo", 3}, {"hi", 2}, {"output", "m.nc"}}), "'lo' is above 'hi'");
  EXPECT_EQ(error_of({{"type", "segment"}, {"id", 1}, {"lo", 1}, {"hi", 2}, {"output", "m.nc"}, {"extra", 1}}),
            "unknown field 'extra'");
  EXPECT_EQ(error_of({{"type", "launch"}, {"id", 1}}), "unknown message type 'launch'");
  EXPECT_EQ(error_of({{"type", "frame"}, {"id", 1}, {"width", 5000}, {"height", 10}, {"camera", Json::object()}}),
            "'width' must be in 16..2048");
  EXPECT_EQ(error_of({{"type", "label"}, {"id", 1}, {"output", "l.nc"}, {"connectivity", 8}}),
            "'connectivity' must be 6, 18 or 26");
  EXPECT_EQ(error_of({{"type", "slices"}, {"id", 1}, {"at", {0.5, 2, 0}}}), "'at' must be 3 numbers in [0, 1]");
  EXPECT_EQ(error_of({{"type", "open"}, {"id", 1}, {"path", "x.nc"}, {"expr", "a+b"}, {"where", "a>0"}}).substr(0, 14),
            "cannot open 'x");
  EXPECT_NE(error_of({{"type", "segment"}, {"id", 1}, {"lo", 1}, {"hi", 2}, {"output", "/etc/m.nc"}}).find("outside"),
            std::string::npos);
  EXPECT_THROW(parse_message(std::string(volseg::web::max_message_bytes + 1, ' '), *roots, ""), volseg::Error);
  EXPECT_THROW(parse_message("{\"type\": \"hello\", \"id\": 1", *roots, ""), volseg::Error);
}

TEST_F(ProtocolTest, MessageIdSurvivesABadMessage) {
  EXPECT_EQ(volseg::web::message_id(R"({"type":"segment","id":42})"), 42);
  EXPECT_EQ(volseg::web::message_id("not json"), 0);
}

TEST(Frames, HeaderPaddedSoThePayloadIsAligned) {
  const std::string payload = "abcdefgh";
  for (const std::string name : {"a", "ab", "abc", "abcd"}) {
    const std::string frame = volseg::web::binary_frame({{"type", name}}, {&payload});
    std::uint32_t n = 0;
    std::memcpy(&n, frame.data(), 4);
    EXPECT_EQ((4 + n) % 4, 0u);
    EXPECT_EQ(Json::parse(frame.substr(4, n)).at("type"), name);
    EXPECT_EQ(frame.substr(4 + n), payload);
  }
}

TEST(Frames, SlicesMapTheRangeToBytes) {
  volseg::session::Planes planes;
  for (std::size_t p = 0; p < 3; ++p) {
    planes.rows[p] = 1;
    planes.columns[p] = 3;
    planes.values[p] = {0.0f, 10.0f, std::numeric_limits<float>::quiet_NaN()};
  }
  const std::string frame = volseg::web::slices_frame({{"type", "slices"}}, planes, {0, 10});
  std::uint32_t n = 0;
  std::memcpy(&n, frame.data(), 4);
  const std::string values = frame.substr(4 + n);
  ASSERT_EQ(values.size(), 9u);  // no mask
  EXPECT_EQ(static_cast<unsigned char>(values[0]), 0);
  EXPECT_EQ(static_cast<unsigned char>(values[1]), 254);
  EXPECT_EQ(static_cast<unsigned char>(values[2]), 255);
}

TEST(Frames, JpegStartsAndEndsAsOne) {
  volseg::render::Image image;
  image.width = 32;
  image.height = 16;
  image.rgba.assign(32 * 16 * 4, 200);
  const std::string j = volseg::web::jpeg(image, 85);
  ASSERT_GT(j.size(), 4u);
  EXPECT_EQ(static_cast<unsigned char>(j[0]), 0xFF);
  EXPECT_EQ(static_cast<unsigned char>(j[1]), 0xD8);
  EXPECT_EQ(static_cast<unsigned char>(j[j.size() - 1]), 0xD9);
}

TEST(Commands, QuotedSoAShellRunsThemAsShown) {
  using volseg::session::shell_quoted;
  EXPECT_EQ(shell_quoted("/data/a.nc"), "/data/a.nc");
  EXPECT_EQ(shell_quoted("my file.nc"), "'my file.nc'");
  EXPECT_EQ(shell_quoted("it's"), "'it'\\''s'");
  volseg::session::OpenRequest open;
  open.path = "/d/v.nc";
  open.selection.variable = "temp";
  open.selection.step = 2;
  volseg::session::SegmentRequest segment;
  segment.lo = 0.1;
  segment.hi = 3.0;
  segment.output = "/d/m.nc";
  EXPECT_EQ(volseg::session::segment_command_line(open, segment),
            "volseg segment /d/v.nc --var temp --time 2 --lo 0.1 --hi 3 --out /d/m.nc");
  volseg::session::LabelRequest label;
  label.output = "/d/l.nc";
  EXPECT_EQ(volseg::session::label_command_line(segment, label),
            "volseg label /d/m.nc --mask-input --connectivity 26 --out /d/l.nc");
}
