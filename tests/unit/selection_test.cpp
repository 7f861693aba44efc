// SPDX-License-Identifier: MIT
// io::Selection: what a backend cannot select is refused with the message
// users saw when --var/--time/--glob travelled as hints, and the kind of a
// series opened with no step (StepRequired) survives an agreement.
#include "volseg/io/selection.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <fstream>
#include <string>

#include "support/temp_dir.hpp"
#include "volseg/io/comm.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/nrrd.hpp"
#include "volseg/io/registry.hpp"

using namespace volseg;

namespace {

std::string open_error(const std::string& backend, const io::OpenRequest& request, const io::Hints& hints = {}) {
  Comm self(MPI_COMM_SELF);
  try {
    io::open_reader(backend, request, self, hints);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Selection, RawBackendsRefuseAStepOrAGlobAsTheHintsWere) {
  volseg::testing::SharedTempDir dir(MPI_COMM_SELF);
  io::VolumeInfo info;
  info.dims = {2, 3, 4};
  info.dtype = io::DType::u8;
  const std::string header = dir / "v.nhdr";
  std::ofstream(header) << io::format_nrrd(info, "v.raw");
  io::Selection step;
  step.step = 1;
  const std::string refused =
      "--time names a NetCDF variable or step; backend null reads raw volumes, which have neither";
  EXPECT_EQ(open_error("null", {header, step}), refused);
  // A step is no hint any more: time= among the hints is an unknown hint.
  io::Hints hints;
  hints.set("time", "1");
  EXPECT_NE(open_error("null", {header, {}}, hints).find("time"), std::string::npos);
  // What a pyramid's index records of it reads back the same.
  EXPECT_EQ(io::Selection::from_record(step.record()), step);
  EXPECT_EQ(step.record(), (std::vector<std::string>{"time=1"}));
  io::Selection glob;
  glob.glob = "*.tif";
  EXPECT_EQ(open_error("null", {header, glob}),
            "--glob names the slices of a folder of TIFF files; backend null does not read such folders");
  io::Selection variable;
  variable.variable = "T";
  EXPECT_EQ(open_error("null", {header, variable}),
            "--var names a NetCDF variable or step; backend null reads raw volumes, which have neither");
  EXPECT_EQ(open_error("null", {header, {}}), "");
}

TEST(Selection, AtStepAndOfVariableKeepWhatAnOperandNeeds) {
  io::Selection selection;
  selection.glob = "*.tif";
  selection.expression = "a - b";
  selection.operands = {"b=other.nc:B"};
  const io::Selection at = selection.at_step(3);
  EXPECT_EQ(at.step, 3);
  EXPECT_EQ(at.expression, "a - b");
  const io::Selection operand = at.of_variable("B");
  EXPECT_EQ(operand.variable, "B");
  EXPECT_EQ(operand.step, 3);
  EXPECT_TRUE(operand.glob.empty());
  EXPECT_FALSE(operand.has_expression());
  EXPECT_TRUE(operand.operands.empty());
}

TEST(Selection, StepRequiredSurvivesAnAgreement) {
  Comm self(MPI_COMM_SELF);
  std::exception_ptr error;
  try {
    throw StepRequired("v.nc: variable u has 3 steps along time");
  } catch (...) {
    error = std::current_exception();
  }
  EXPECT_THROW(agree(self, error), StepRequired);
}
