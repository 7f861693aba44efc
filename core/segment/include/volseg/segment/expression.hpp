// SPDX-License-Identifier: MIT
// Derived fields: a volume computed voxel by voxel from the input's
// variables (--expr 'sqrt(u*u + v*v + w*w)', --where 'T > 10 && S < 34.5'),
// evaluated by muparser in bulk, compiled once a reader. Jobs open their
// input through open_input, so every command that takes --var takes an
// expression too, and thresholds, labels, renders or converts it as it
// would a stored variable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/volume.hpp"
#include "volseg/segment/decode.hpp"
#include "volseg/segment/expression_program.hpp"

namespace volseg::segment {

// One expression (--expr TEXT) or condition (--where TEXT) over named
// variables: checked by muparser, whose messages name the column of a bad
// token, and compiled once into a block program (expression_program.hpp).
// The file reader below and the in-situ hook evaluate it.
class Expression {
 public:
  // Throws volseg::Error with one line: the column of a bad token or
  // unknown function, an empty text, a text that names no variable.
  Expression(std::string text, bool condition);
  ~Expression();
  Expression(const Expression&) = delete;
  Expression& operator=(const Expression&) = delete;

  // The variables it reads, in the order evaluate takes them.
  const std::vector<std::string>& names() const { return names_; }
  bool condition() const { return condition_; }
  // "--expr 'TEXT'" or "--where 'TEXT'", for messages.
  std::string option() const;
  // The 1-based column of a variable's name in the text (0 when absent).
  std::size_t column_of(const std::string& name) const;

  // raw[i] holds count values of names()[i], sizes[i] bytes each, decoded
  // by decoders[i] a block at a time; out gets the expression's values
  // (float32, NaN where any operand is missing; a condition's 1 or 0),
  // computed in float where single is set, else in double.
  void evaluate(const std::vector<const std::byte*>& raw, const std::vector<Decoder>& decoders,
                const std::vector<std::size_t>& sizes, bool single, std::int64_t count, float* out);

 private:
  template <class T>
  void evaluate_in(std::vector<std::vector<T>>& blocks, const std::vector<const std::byte*>& raw,
                   const std::vector<Decoder>& decoders, const std::vector<std::size_t>& sizes, std::int64_t count,
                   float* out);

  std::string text_;
  bool condition_;
  std::vector<std::string> names_;
  std::optional<expression::Program> program_;
  std::vector<std::vector<float>> float_inputs_;
  std::vector<std::vector<double>> double_inputs_;
};

// Whether a variable's values are float32 values exactly (stored as float32
// or integers of 16 bits or fewer, not packed): an expression of such
// operands is computed in float, as numpy computes float32 arrays.
bool in_single(const io::VolumeInfo& info);

// Collective. The input as io::open_reader opens it; or, when the
// selection holds an expression (the CLI's --expr and --where), a reader of
// the expression's values over the variables it names, each read from the
// same file at the selection's step (operands from other files: their own
// variable, the same step): float32, NaN where any operand is missing (fill,
// missing_value, outside valid_range, NaN); a condition's values are 1 where
// it holds and 0 where it does not. hints are the backend's tuning hints.
// Throws volseg::Error with one line (the column of a bad name or token,
// operands of different shapes, --var beside an expression).
std::unique_ptr<io::VolumeReader> open_input(const std::string& backend, const io::OpenRequest& input, const Comm& comm,
                                             const std::vector<std::string>& hints);

}  // namespace volseg::segment
