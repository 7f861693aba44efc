// SPDX-License-Identifier: MIT
#include "volseg/session/command_line.hpp"

#include <cctype>
#include <charconv>
#include <cstring>

namespace volseg::session {
namespace {

// The shortest text that reads back as the same double.
std::string exact(double v) {
  char text[32];
  const auto r = std::to_chars(text, text + sizeof text, v);
  return std::string(text, r.ptr);
}

}  // namespace

std::string shell_quoted(const std::string& word) {
  bool plain = !word.empty();
  for (const char c : word)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("@%_+=:,./-", c) != nullptr);
  if (plain) return word;
  std::string q = "'";
  for (const char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string input_arguments(const OpenRequest& open) {
  const io::Selection& s = open.selection;
  std::string c = shell_quoted(open.path);
  if (s.has_expression())
    c += std::string(s.condition ? " --where " : " --expr ") + shell_quoted(s.expression);
  else if (!s.variable.empty())
    c += " --var " + shell_quoted(s.variable);
  for (const auto& operand : s.operands) c += " --operand " + shell_quoted(operand);
  if (s.step) c += " --time " + std::to_string(*s.step);
  if (!s.glob.empty()) c += " --glob " + shell_quoted(s.glob);
  return c;
}

std::string segment_command_line(const OpenRequest& open, const SegmentRequest& segment) {
  std::string c = "volseg segment " + input_arguments(open);
  c += " --lo " + exact(segment.lo) + " --hi " + exact(segment.hi);
  const segment::MaskOperators& o = segment.operators;
  if (o.seed) c += " --seed-lo " + exact(o.seed->first) + " --seed-hi " + exact(o.seed->second);
  if (o.open > 0) c += " --open " + std::to_string(o.open);
  if (o.close > 0) c += " --close " + std::to_string(o.close);
  if (o.fill_holes) c += " --fill-holes";
  if (o.seed && o.connectivity != 26) c += " --connectivity " + std::to_string(o.connectivity);
  c += " --out " + shell_quoted(segment.output);
  if (!segment.backend.empty() && segment.backend != "auto") c += " --backend " + shell_quoted(segment.backend);
  for (const auto& hint : segment.hints) c += " --hint " + shell_quoted(hint);
  if (!segment.format.empty()) c += " --format " + shell_quoted(segment.format);
  return c;
}

std::string label_command_line(const SegmentRequest& segment, const LabelRequest& label) {
  return "volseg label " + shell_quoted(segment.output) + " --mask-input --connectivity " +
         std::to_string(label.connectivity) + " --out " + shell_quoted(label.output);
}

std::string edit_command_line(const std::string& labels, const std::string& journal, const std::string& output) {
  return "volseg edit " + shell_quoted(labels) + " --edits " + shell_quoted(journal) + " --out " +
         shell_quoted(output) + " --force";
}

}  // namespace volseg::session
