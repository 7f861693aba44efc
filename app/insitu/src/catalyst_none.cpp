// SPDX-License-Identifier: MIT
// The hook's Catalyst side in a build without ParaView (Conduit/Ascent's
// empty runtime): volseg's own step runs directly, and Catalyst Python
// scripts are refused with one line when the hook is created.
#include "catalyst.hpp"

#include "volseg/io/error.hpp"

namespace volseg::insitu::detail {

struct Catalyst::Impl {};

Catalyst::Catalyst(const Comm&, const std::vector<std::string>& scripts, std::string) {
  if (!scripts.empty())
    throw Error(
        "in-situ option --catalyst-script: this volseg_insitu was built without ParaView "
        "(VOLSEG_WITH_PARAVIEW=OFF)");
}

Catalyst::~Catalyst() = default;

ScriptsOutcome Catalyst::coprocess(const CatalystStep& step) {
  if (step.run_volseg) step.volseg();
  return {};
}

void Catalyst::finalize() {}

bool Catalyst::has_scripts() const { return false; }

}  // namespace volseg::insitu::detail
