// SPDX-License-Identifier: MIT
// The session without a front end (no Qt, no browser), on 1 to 3 ranks:
// open -> segment -> label -> draw -> slices -> surface, each reply checked
// against what the batch jobs give for the same request; bad requests come
// back as one error on every rank and the session goes on; requests survive
// the trip to the other ranks (transport) field for field.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "support/temp_dir.hpp"
#include "volseg/datasets/generate.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/segment.hpp"
#include "volseg/session/requests.hpp"
#include "volseg/session/session.hpp"
#include "volseg/session/transport.hpp"

using namespace volseg;

namespace {

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io::VolumeInfo info;
    info.dims = dims_;
    info.dtype = io::DType::f32;
    info.variable = "u";
    auto writer = io::create_writer("pnetcdf", {input_, info, false}, comm_);
    datasets::generate(comm_, {datasets::Field::shells, width_, 1}, *writer, segment::ProgressMode::none);
    writer->close();
  }

  session::OpenRequest open_request() const {
    session::OpenRequest open;
    open.path = input_;
    open.selection.variable = "u";
    return open;
  }

  Comm comm_{MPI_COMM_WORLD};
  volseg::testing::SharedTempDir dir_{MPI_COMM_WORLD};
  const io::Index3 dims_{21, 26, 30};  // no side divides evenly by 2 or 3 ranks
  const std::int64_t width_ = 3;
  const std::string input_ = dir_ / "u.nc";
};

TEST_F(SessionTest, OpenSegmentLabelDrawGiveWhatTheBatchJobsGive) {
  session::Session session(comm_);
  // open: the variable's exact histogram, and the request as it opened.
  auto reply = session.execute(open_request());
  ASSERT_EQ(reply.error, "");
  EXPECT_EQ(reply.kind, "open");
  if (comm_.rank() == 0) {
    EXPECT_EQ(reply.data.at("dims"), (session::Json{dims_[0], dims_[1], dims_[2]}));
    EXPECT_EQ(reply.data.at("voxels").get<std::uint64_t>(), static_cast<std::uint64_t>(dims_[0] * dims_[1] * dims_[2]));
    ASSERT_TRUE(reply.opened.has_value());
    EXPECT_EQ(reply.opened->selection.variable, "u");
  }

  // segment: the batch job's bytes and its exact count.
  const double lo = 2, hi = 4;
  session::SegmentRequest segment;
  segment.lo = lo;
  segment.hi = hi;
  segment.output = dir_ / "session-mask.nhdr";
  reply = session.execute(segment);
  ASSERT_EQ(reply.error, "");
  segment::SegmentOptions batch;
  batch.input = input_;
  batch.selection.variable = "u";
  batch.output = dir_ / "batch-mask.nhdr";
  batch.lo = lo;
  batch.hi = hi;
  batch.progress = segment::ProgressMode::none;
  const auto batch_result = segment::run_segment(comm_, batch);
  if (comm_.rank() == 0) {
    const auto exact = datasets::shells_in_range(dims_, io::DType::f32, width_, lo, hi);
    EXPECT_EQ(reply.data.at("in_range").get<std::uint64_t>(), exact);
    EXPECT_EQ(batch_result.stats.in_range, exact);
    const auto a = file_bytes(io::data_path_for_header(segment.output));
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, file_bytes(io::data_path_for_header(batch.output)));
  }

  // label: the objects `volseg label MASK --mask-input` finds.
  session::LabelRequest label;
  label.output = dir_ / "session-labels.nc";
  reply = session.execute(label);
  ASSERT_EQ(reply.error, "");
  segment::LabelOptions labelling;
  labelling.input = batch.output;
  labelling.mask_input = true;
  labelling.output = dir_ / "batch-labels.nc";
  labelling.progress = segment::ProgressMode::none;
  const auto labelled = segment::run_label(comm_, labelling);
  if (comm_.rank() == 0) {
    EXPECT_GE(labelled.summary.objects, 1u);
    EXPECT_EQ(reply.data.at("objects").get<std::uint64_t>(), labelled.summary.objects);
    EXPECT_EQ(reply.data.at("table").size(), labelled.summary.objects);
  }

  // draw: a frame of the size asked, with more than the background in it.
  session::DrawRequest draw;
  draw.width = 96;
  draw.height = 64;
  reply = session.execute(draw);
  ASSERT_EQ(reply.error, "");
  if (comm_.rank() == 0) {
    ASSERT_EQ(reply.image.width, 96);
    ASSERT_EQ(reply.image.height, 64);
    std::size_t differ = 0;
    for (std::size_t i = 4; i < reply.image.rgba.size(); i += 4)
      differ += std::memcmp(&reply.image.rgba[i], &reply.image.rgba[0], 3) != 0;
    EXPECT_GT(differ, 100u) << "the frame is all background";
  }

  // slices and one object's surface: rank 0's reads.
  reply = session.execute(session::SlicesRequest{});
  ASSERT_EQ(reply.error, "");
  if (comm_.rank() == 0) {
    ASSERT_TRUE(reply.planes);
    EXPECT_FALSE(reply.planes->mask[0].empty());
  }
  session::SurfaceRequest surface;
  surface.object = 1;
  reply = session.execute(surface);
  ASSERT_EQ(reply.error, "");
  if (comm_.rank() == 0) {
    ASSERT_TRUE(reply.surface);
    EXPECT_GT(reply.surface->triangles.size(), 0u);
    EXPECT_EQ(reply.surface->object, 1);
  }
}

TEST_F(SessionTest, ABadRequestIsOneErrorOnEveryRankAndTheSessionGoesOn) {
  session::Session session(comm_);
  session::SegmentRequest segment;
  segment.output = dir_ / "m.nhdr";
  auto reply = session.execute(segment);
  EXPECT_EQ(reply.error, "no volume is open");
  session::OpenRequest missing = open_request();
  missing.selection.variable = "no_such_variable";
  reply = session.execute(missing);
  EXPECT_NE(reply.error.find("no_such_variable"), std::string::npos) << reply.error;
  reply = session.execute(open_request());
  EXPECT_EQ(reply.error, "");
  session::CheckRequest check;
  check.hints = {"no_such_hint=1"};
  reply = session.execute(check);
  EXPECT_NE(reply.error.find("no_such_hint"), std::string::npos) << reply.error;
  reply = session.execute(session::LabelRequest{dir_ / "l.nc"});
  EXPECT_EQ(reply.error, "segment first: there is no mask to label");
}

TEST(SessionRequests, EveryKindSurvivesJsonFieldForField) {
  session::OpenRequest open;
  open.path = "/d/v.nc";
  open.selection.expression = "u > 2";
  open.selection.condition = true;
  open.selection.step = 3;
  session::SegmentRequest segment;
  segment.lo = 0.1;
  segment.hi = 1e300;
  segment.operators.seed = std::pair{0.5, 0.75};
  segment.operators.open = 2;
  segment.hints = {"cache=0"};
  session::DrawRequest draw;
  draw.threshold = std::array<double, 2>{1, 2};
  draw.level = 2;
  draw.mesh_ids = {4, 7};
  session::SurfaceRequest surface;
  surface.object = 9;
  session::SplitRequest split;
  split.object = 12;
  split.seeds = {{{1, 2, 3}}, {{4, 5, 6}}};
  split.connectivity = 6;
  split.apply = true;
  split.base = 3;
  session::EditRequest edit;
  edit.op = "paint";
  edit.id = 5;
  edit.center = {1, 2, 3};
  edit.radius = 2.5;
  edit.base = 4;
  edit.connectivity = 18;
  const std::vector<session::Request> requests{open,
                                               session::CheckRequest{"posix", {"cache=0"}},
                                               segment,
                                               draw,
                                               session::SlicesRequest{{0.1, 0.2, 0.3}, 64},
                                               session::LabelRequest{"/d/l.nc", 6, 10, true, "x"},
                                               surface,
                                               split,
                                               edit,
                                               session::CloseRequest{},
                                               session::QuitRequest{}};
  ASSERT_EQ(requests.size(), session::kinds.size());
  for (std::size_t k = 0; k < requests.size(); ++k) {
    EXPECT_EQ(requests[k].index(), k);
    const session::Json json = session::to_json(requests[k]);
    EXPECT_EQ(json.at("kind"), session::kinds[k].name);
    const session::Request back = session::parse_request(json);
    EXPECT_EQ(back.index(), k);
    EXPECT_EQ(session::to_json(back), json);
  }
}

TEST(SessionRequests, ParsingNamesTheFieldAtFault) {
  auto error_of = [](const session::Json& json) -> std::string {
    try {
      session::parse_request(json);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of({{"kind", "launch"}}), "unknown request 'launch'");
  EXPECT_EQ(error_of({{"lo", 1}}), "a request names its \"kind\"");
  EXPECT_EQ(error_of({{"kind", "segment"}, {"lo", "1"}}), "segment: 'lo' has the wrong type (\"1\")");
  EXPECT_EQ(error_of({{"kind", "render"}, {"colour", "red"}}), "render: unknown field 'colour'");
  EXPECT_EQ(error_of({{"kind", "open"}, {"expr", "a"}, {"where", "b"}}),
            "open: an expression or a condition, not both");
}

// What rank 0 sends, every other rank receives, field for field.
TEST(SessionTransport, EveryRankReceivesRankZerosRequest) {
  const Comm comm(MPI_COMM_WORLD);
  session::DrawRequest draw;
  draw.width = 123;
  draw.title = "frame of rank 0";
  draw.threshold = std::array<double, 2>{-1.5, 2.25};
  if (comm.rank() == 0) {
    session::send_request(comm, draw);
  } else {
    const session::Request received = session::receive_request(comm);
    ASSERT_TRUE(std::holds_alternative<session::DrawRequest>(received));
    EXPECT_EQ(session::to_json(received), session::to_json(draw));
  }
}

}  // namespace
