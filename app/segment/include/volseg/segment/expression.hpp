// SPDX-License-Identifier: MIT
// Derived fields: a volume computed voxel by voxel from the input's
// variables (--expr 'sqrt(u*u + v*v + w*w)', --where 'T > 10 && S < 34.5'),
// evaluated by muparser in bulk, compiled once a reader. Jobs open their
// input through open_input, so every command that takes --var takes an
// expression too, and thresholds, labels, renders or converts it as it
// would a stored variable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/volume.hpp"

namespace volseg::segment {

// Collective. The input as io::open_reader opens it; or, when the hints
// hold expr=TEXT or where=TEXT (the CLI's --expr and --where), a reader of
// the expression's values over the variables it names, each read from the
// same file with the other hints (time=, the backend's): float32, NaN where
// any operand is missing (fill, missing_value, outside valid_range, NaN); a
// condition's values are 1 where it holds and 0 where it does not.
// Throws volseg::Error with one line (the column of a bad name or token,
// operands of different shapes, --var beside an expression).
std::unique_ptr<io::VolumeReader> open_input(const std::string& backend, const std::string& path, const Comm& comm,
                                             const std::vector<std::string>& hints);

}  // namespace volseg::segment
