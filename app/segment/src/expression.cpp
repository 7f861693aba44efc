// SPDX-License-Identifier: MIT
#include "volseg/segment/expression.hpp"

#include <muParser.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <span>

#include "volseg/io/error.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/decode.hpp"

namespace volseg::segment {
namespace {

struct Request {
  std::string text;
  bool condition = false;            // where=: 1 where it holds, 0 where not
  std::vector<std::string> others;  // the hints without expr=/where=
};

std::optional<Request> expression_in(const std::vector<std::string>& hints) {
  Request request;
  int found = 0;
  bool variable = false;
  for (const auto& item : hints) {
    if (item.rfind("expr=", 0) == 0) {
      request.text = item.substr(5);
      ++found;
    } else if (item.rfind("where=", 0) == 0) {
      request.text = item.substr(6);
      request.condition = true;
      ++found;
    } else {
      variable = variable || item.rfind("var=", 0) == 0;
      request.others.push_back(item);
    }
  }
  if (found == 0) return std::nullopt;
  if (found > 1) throw Error("--expr and --where: give one (a condition is --where COND alone)");
  if (variable) throw Error("--var and an expression: the expression names the variables it reads");
  if (request.text.find_first_not_of(" \t") == std::string::npos)
    throw Error(std::string(request.condition ? "--where" : "--expr") + ": empty expression");
  return request;
}

std::string option(const Request& r) { return std::string(r.condition ? "--where" : "--expr") + " '" + r.text + "'"; }

// The 1-based column of name as a whole word in text (0 when absent).
std::size_t column_of(const std::string& text, const std::string& name) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1))
    if ((at == 0 || !word(text[at - 1])) && (at + name.size() == text.size() || !word(text[at + name.size()])))
      return at + 1;
  return 0;
}

// Voxels one muparser call evaluates (its bulk size is an int). A
// VOLSEG_EXPR_CHUNK environment variable sets it smaller, so that tests run
// the chunked path on small volumes.
std::int64_t chunk_size() {
  if (const char* text = std::getenv("VOLSEG_EXPR_CHUNK")) {
    const long long value = std::atoll(text);
    if (value > 0) return value;
  }
  return std::int64_t{1} << 24;
}

// The expression, parsed once; evaluate() runs it in bulk over arrays.
class Evaluator {
 public:
  explicit Evaluator(const Request& request) : request_(request) {
    try {
      parser_.SetExpr(request.text);
      for (const auto& [name, unused] : parser_.GetUsedVar()) names_.push_back(name);
    } catch (const mu::Parser::exception_type& e) {
      // "foo(u)": muparser takes foo for a variable and stops at "(".
      const std::string& text = request.text;
      std::size_t end = std::min<std::size_t>(static_cast<std::size_t>(std::max(0, e.GetPos())), text.size());
      while (end > 0 && text[end - 1] == ' ') --end;
      std::size_t begin = end;
      while (begin > 0 && (std::isalnum(static_cast<unsigned char>(text[begin - 1])) || text[begin - 1] == '_')) --begin;
      if (e.GetCode() == mu::ecUNEXPECTED_PARENS && begin < end) {
        const std::string name = text.substr(begin, end - begin);
        if (parser_.GetFunDef().count(name))  // muparser wants the "(" right after the name
          throw Error(option(request) + ": write " + name + "(...) with no space before '(' (column " +
                      std::to_string(end + 1) + ")");
        throw Error(option(request) + ": unknown function '" + name + "' at column " + std::to_string(begin + 1));
      }
      throw Error(option(request) + ": " + e.GetMsg() + " (column " + std::to_string(e.GetPos() + 1) + ")");
    }
    if (names_.empty()) throw Error(option(request) + ": names no variable of the file");
  }

  const std::vector<std::string>& names() const { return names_; }

  // operands[i] holds count values of names()[i] (NaN: missing).
  void evaluate(std::vector<std::vector<double>>& operands, std::int64_t count, float* out) {
    results_.resize(static_cast<std::size_t>(count));
    try {
      // muparser counts in int and indexes each variable's array from where
      // it was defined: each chunk defines them at its own first voxel.
      for (std::int64_t at = 0; at < count; at += chunk_voxels) {
        for (std::size_t i = 0; i < names_.size(); ++i) parser_.DefineVar(names_[i], operands[i].data() + at);
        parser_.Eval(results_.data() + at, static_cast<int>(std::min(chunk_voxels, count - at)));
      }
    } catch (const mu::Parser::exception_type& e) {
      throw Error(option(request_) + ": " + e.GetMsg());
    }
    for (std::int64_t i = 0; i < count; ++i) {
      bool missing = false;
      for (const auto& operand : operands) missing = missing || std::isnan(operand[static_cast<std::size_t>(i)]);
      const double v = results_[static_cast<std::size_t>(i)];
      out[i] = missing ? NAN : request_.condition ? (v != 0 && !std::isnan(v) ? 1.0f : 0.0f) : static_cast<float>(v);
    }
  }

 private:
  Request request_;
  std::int64_t chunk_voxels = chunk_size();
  mu::Parser parser_;
  std::vector<std::string> names_;
  std::vector<double> results_;
};

class ExpressionReader final : public io::VolumeReader {
 public:
  ExpressionReader(const Request& request, std::unique_ptr<Evaluator> evaluator,
                   std::vector<std::unique_ptr<io::VolumeReader>> operands, bool collective)
      : io::VolumeReader(io::Capabilities{.collective = collective}),
        evaluator_(std::move(evaluator)),
        operands_(std::move(operands)) {
    for (const auto& r : operands_) decoders_.emplace_back(r->info());
    const io::VolumeInfo& first = operands_.front()->info();
    info_.dims = first.dims;
    info_.dtype = io::DType::f32;
    info_.byte_order = io::native_byte_order();
    info_.variable = request.condition ? "where" : "expr";
    info_.spacing = first.spacing;
    info_.origin = first.origin;
    info_.coordinates = first.coordinates;
    for (const auto& [key, value] : first.attributes)
      if (key.size() == 4 && key.rfind("dim", 0) == 0) info_.attributes[key] = value;  // dimension names
    info_.attributes[request.condition ? "where" : "expression"] = request.text;
  }

  // Opens the variables the expression names, from the same file.
  static std::unique_ptr<io::VolumeReader> open(const std::string& backend, const std::string& path,
                                                const Comm& comm, const Request& request) {
    auto evaluator = std::make_unique<Evaluator>(request);
    std::vector<std::unique_ptr<io::VolumeReader>> operands;
    for (const auto& name : evaluator->names()) {
      std::vector<std::string> hints = request.others;
      hints.push_back("var=" + name);
      try {
        operands.push_back(io::open_reader(backend, path, comm, io::Hints::parse(hints)));
      } catch (const Error& e) {
        throw Error(option(request) + ": unknown variable '" + name + "' at column " +
                    std::to_string(column_of(request.text, name)) + " (" + e.what() + ")");
      }
    }
    const io::VolumeInfo& first = operands.front()->info();
    for (std::size_t i = 1; i < operands.size(); ++i)
      if (operands[i]->info().dims != first.dims)
        throw Error(option(request) + ": " + evaluator->names()[i] + " has dims " +
                    io::to_string(operands[i]->info().whole()) + " but " + evaluator->names()[0] + " has " +
                    io::to_string(first.whole()) + ": operands must have one shape");
    const bool collective = std::any_of(operands.begin(), operands.end(), [](const auto& r) { return r->collective(); });
    return std::make_unique<ExpressionReader>(request, std::move(evaluator), std::move(operands), collective);
  }

  const io::VolumeInfo& info() const override { return info_; }
  std::string backend_name() const override { return operands_.front()->backend_name(); }
  std::string implementation() const override {
    return "an expression of " + std::to_string(operands_.size()) + " variable(s) read by " +
           operands_.front()->implementation();
  }
  std::uint64_t bytes_read() const override {
    std::uint64_t total = 0;
    for (const auto& r : operands_) total += r->bytes_read();
    return total;
  }
  std::vector<std::string> files() const override { return operands_.front()->files(); }

 protected:
  void do_read(const io::Extent& extent, void* buffer) override {
    std::vector<std::vector<double>> values(operands_.size());
    std::vector<std::byte> raw;
    for (std::size_t i = 0; i < operands_.size(); ++i) {
      raw.resize(static_cast<std::size_t>(extent.voxels()) * io::dtype_size(operands_[i]->info().dtype));
      operands_[i]->read(extent, raw.data());
      values[i].resize(static_cast<std::size_t>(extent.voxels()));
      decoders_[i].to_double(raw.data(), extent.voxels(), values[i].data());
    }
    evaluator_->evaluate(values, extent.voxels(), static_cast<float*>(buffer));
  }

  // Each operand's extents in one collective call, then each extent evaluated.
  void do_read_all(std::span<const io::Extent> extents, std::span<void* const> buffers) override {
    std::vector<std::vector<std::vector<double>>> values(extents.size(),
                                                         std::vector<std::vector<double>>(operands_.size()));
    for (std::size_t i = 0; i < operands_.size(); ++i) {
      const std::size_t size = io::dtype_size(operands_[i]->info().dtype);
      std::vector<std::vector<std::byte>> raw(extents.size());
      std::vector<void*> targets;
      for (std::size_t e = 0; e < extents.size(); ++e) {
        raw[e].resize(static_cast<std::size_t>(extents[e].voxels()) * size);
        targets.push_back(raw[e].data());
      }
      operands_[i]->read_all(extents, targets);
      for (std::size_t e = 0; e < extents.size(); ++e) {
        values[e][i].resize(static_cast<std::size_t>(extents[e].voxels()));
        decoders_[i].to_double(raw[e].data(), extents[e].voxels(), values[e][i].data());
      }
    }
    for (std::size_t e = 0; e < extents.size(); ++e)
      evaluator_->evaluate(values[e], extents[e].voxels(), static_cast<float*>(buffers[e]));
  }

  void do_close() override {
    std::string failure;
    for (auto& r : operands_) try {
        r->close();
      } catch (const Error& e) {
        if (failure.empty()) failure = e.what();
      }
    if (!failure.empty()) throw Error(failure);
  }

 private:
  std::unique_ptr<Evaluator> evaluator_;
  std::vector<std::unique_ptr<io::VolumeReader>> operands_;
  std::vector<Decoder> decoders_;
  io::VolumeInfo info_;
};

}  // namespace

std::unique_ptr<io::VolumeReader> open_input(const std::string& backend, const std::string& path, const Comm& comm,
                                             const std::vector<std::string>& hints) {
  const auto request = expression_in(hints);
  if (!request) return io::open_reader(backend, path, comm, io::Hints::parse(hints));
  return ExpressionReader::open(backend, path, comm, *request);
}

}  // namespace volseg::segment
