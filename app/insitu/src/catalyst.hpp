// SPDX-License-Identifier: MIT
// The hook's Catalyst side, kept behind plain types so hook.cpp needs no VTK:
// one vtkCPProcessor per process, volseg's own vtkCPPipeline first, then a
// vtkCPPythonScriptV2Pipeline per script. The published block reaches them as
// a vtkImageData channel named "input" over the simulation's own memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "volseg/insitu/insitu.hpp"
#include "volseg/io/comm.hpp"

namespace volseg::insitu::detail {

struct CatalystStep {
  const Field* field = nullptr;
  io::Extent stored;  // the memory extent of field->values
  // volseg's pipeline: runs inside vtkCPProcessor::CoProcess and returns
  // the mask over `stored` for the scripts (or null, then no mask array).
  // It may throw; the exception comes back from coprocess().
  std::function<const std::uint8_t*()> volseg;
  bool run_volseg = false;
  bool run_scripts = false;
};

struct ScriptsOutcome {
  int errors = 0;           // scripts that failed on this rank this step
  std::string first_error;  // its last Python error line
};

class Catalyst {
 public:
  // Collective over comm. Initialises Catalyst on a duplicate of comm and
  // loads the scripts; throws volseg::Error when one cannot be loaded.
  Catalyst(const Comm& comm, const std::vector<std::string>& scripts, std::string variable);
  ~Catalyst();
  Catalyst(const Catalyst&) = delete;
  Catalyst& operator=(const Catalyst&) = delete;

  // Collective. Runs this step through vtkCPProcessor.
  ScriptsOutcome coprocess(const CatalystStep& step);
  // Collective. Finalizes the scripts and the processor.
  void finalize();
  bool has_scripts() const;

 private:
  void load_scripts(const Comm& comm, const std::vector<std::string>& scripts);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace volseg::insitu::detail
