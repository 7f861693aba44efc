// SPDX-License-Identifier: MIT
// The object table's fields (docs/label.md, "Fields"): what --values and
// --values-expr name, as the volumes and expressions run_label reads.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "volseg/io/error.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::segment {
namespace {

struct Source {
  std::string file, variable;
};

// FILE or FILE:VAR: a colon names a variable when the text is not a file
// itself and what comes before it is.
Source split_source(const std::string& text) {
  const auto colon = text.rfind(':');
  std::error_code ec;
  if (!std::filesystem::exists(text, ec) && colon != std::string::npos && colon > 0 &&
      std::filesystem::exists(text.substr(0, colon), ec))
    return {text.substr(0, colon), text.substr(colon + 1)};
  return {text, ""};
}

// NAME=EXPR: a name, then '=' that is not '=='; the name and the
// expression (empty name when the text has none).
std::pair<std::string, std::string> split_expression(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || (eq + 1 < text.size() && text[eq + 1] == '=')) return {"", text};
  std::string name = text.substr(0, eq);
  name.erase(name.find_last_not_of(" \t") + 1);
  name.erase(0, name.find_first_not_of(" \t"));
  const bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                          std::all_of(name.begin(), name.end(),
                                      [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!identifier) return {"", text};  // "a<=b", "x != 1": a comparison, not a name
  return {name, text.substr(eq + 1)};
}

io::Selection at_step(const std::optional<std::int64_t>& time) {
  io::Selection selection;
  selection.step = time;
  return selection;
}

}  // namespace

std::vector<std::string> field_columns(const std::vector<ValueField>& fields) {
  std::vector<std::string> columns;
  for (const ValueField& field : fields) {
    const std::string& name = field.name;
    if (name.empty() || name.find_first_of(",\"' \t\r\n") != std::string::npos)
      throw Error("--values: the field name '" + name + "' cannot name CSV columns: use letters, digits and _");
    columns.push_back(fields.size() == 1 && !field.named ? "value" : name);
    if (std::count(columns.begin(), columns.end(), columns.back()) > 1)
      throw Error("--values: two fields are named " + name + ": name them apart (FILE:VAR, --values-expr NAME=EXPR)");
  }
  return columns;
}

std::vector<ValueField> value_fields(const FieldRequest& request) {
  if ((!request.variable.empty() || request.time) && request.values.empty())
    throw Error("--values-var and --values-time need --values");
  std::vector<Source> sources, plain;
  for (const auto& text : request.values) {
    Source source = split_source(text);
    if (source.variable.empty() && !request.expressions.empty())
      plain.push_back(source);  // where the expressions' variables are
    else
      sources.push_back(source);
  }
  if (!request.variable.empty() && (request.values.size() != 1 || sources.empty() || !sources[0].variable.empty()))
    throw Error("--values-var names the variable of one --values FILE: give FILE:VAR for each of several");
  if (plain.size() > 1)
    throw Error("--values-expr reads the variables of one file: give one --values FILE without :VAR (" + plain[0].file +
                ", " + plain[1].file + ")");
  std::vector<ValueField> out;
  for (const auto& source : sources) {
    ValueField field;
    field.file = source.file;
    field.named = !source.variable.empty();
    const std::string name = std::filesystem::path(source.file).filename().string();
    field.name = field.named ? source.variable : name.substr(0, name.find('.'));
    const std::string& variable = field.named ? source.variable : request.variable;
    field.selection = at_step(request.time);
    field.selection.variable = variable;
    out.push_back(std::move(field));
  }
  for (std::size_t k = 0; k < request.expressions.size(); ++k) {
    ValueField field;
    auto [name, text] = split_expression(request.expressions[k]);
    field.named = !name.empty();
    field.name = field.named ? name : k == 0 ? "expr" : "expr" + std::to_string(k + 1);
    field.file = plain.empty() ? request.input : plain[0].file;
    // On the input: its own step and files, unless a step is named.
    if (plain.empty() && !request.time) {
      field.selection.step = request.input_selection.step;
      field.selection.glob = request.input_selection.glob;
    } else {
      field.selection = at_step(request.time);
    }
    field.selection.expression = text;
    out.push_back(std::move(field));
  }
  return out;
}

std::pair<std::string, std::string> file_and_variable(const std::string& text) {
  const Source source = split_source(text);
  return {source.file, source.variable};
}

}  // namespace volseg::segment
