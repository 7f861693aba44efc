// SPDX-License-Identifier: MIT
#include "volseg/segment/expression.hpp"

#include <muParser.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <span>

#include "volseg/io/auto_backend.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/format.hpp"
#include "volseg/io/registry.hpp"
#include "volseg/segment/decode.hpp"
#include "volseg/segment/expression_program.hpp"

namespace volseg::segment {
namespace {

struct Request {
  std::string text;
  bool condition = false;  // --where: 1 where it holds, 0 where not
  // The selection of each variable read from the input's file: its step
  // and glob (its variable is the operand's name).
  io::Selection others;
  // --operand NAME=FILE[:VAR]: NAME read from another file (its VAR, or its only volume).
  struct Operand {
    std::string path, variable;
  };
  std::map<std::string, Operand> operands;
};

// "NAME=FILE[:VAR]": VAR after the last ':' unless FILE exists as written.
std::pair<std::string, Request::Operand> parse_operand(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw Error("--operand " + text + ": write NAME=FILE or NAME=FILE:VAR");
  const std::string name = text.substr(0, eq), target = text.substr(eq + 1);
  Request::Operand operand{target, ""};
  const auto colon = target.rfind(':');
  if (!std::filesystem::exists(target) && colon != std::string::npos && colon > 0 && colon + 1 < target.size() &&
      target.find('/', colon) == std::string::npos)
    operand = {target.substr(0, colon), target.substr(colon + 1)};
  return {name, operand};
}

// An operand's error with the expression's context, of the same kind where
// a caller decides by it (a series opened with no step: info reads step 0).
[[noreturn]] void rethrow_as(const Error& error, const std::string& message) {
  if (dynamic_cast<const StepRequired*>(&error)) throw StepRequired(message);
  throw Error(message);
}

// The expression request of a selection; nullopt when it has none.
std::optional<Request> expression_in(const io::Selection& selection) {
  Request request;
  for (const auto& item : selection.operands) {
    auto [name, operand] = parse_operand(item);
    if (!request.operands.emplace(name, operand).second) throw Error("--operand " + name + ": given twice");
  }
  if (!selection.has_expression()) {
    if (!request.operands.empty()) throw Error("--operand names a variable of --expr or --where: give one");
    return std::nullopt;
  }
  if (!selection.variable.empty()) throw Error("--var and an expression: the expression names the variables it reads");
  request.text = selection.expression;
  request.condition = selection.condition;
  if (request.text.find_first_not_of(" \t") == std::string::npos)
    throw Error(std::string(request.condition ? "--where" : "--expr") + ": empty expression");
  request.others.step = selection.step;
  request.others.glob = selection.glob;
  return request;
}

// The 1-based column of name as a whole word in text (0 when absent).
std::size_t column_of(const std::string& text, const std::string& name) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1))
    if ((at == 0 || !word(text[at - 1])) && (at + name.size() == text.size() || !word(text[at + name.size()])))
      return at + 1;
  return 0;
}

}  // namespace

Expression::Expression(std::string text, bool condition) : text_(std::move(text)), condition_(condition) {
  if (text_.find_first_not_of(" \t") == std::string::npos)
    throw Error(std::string(condition_ ? "--where" : "--expr") + ": empty expression");
  mu::Parser parser;
  try {
    parser.SetExpr(text_);
    for (const auto& [name, unused] : parser.GetUsedVar()) names_.push_back(name);
  } catch (const mu::Parser::exception_type& e) {
    // "foo(u)": muparser takes foo for a variable and stops at "(".
    std::size_t end = std::min<std::size_t>(static_cast<std::size_t>(std::max(0, e.GetPos())), text_.size());
    while (end > 0 && text_[end - 1] == ' ') --end;
    std::size_t begin = end;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(text_[begin - 1])) || text_[begin - 1] == '_'))
      --begin;
    if (e.GetCode() == mu::ecUNEXPECTED_PARENS && begin < end) {
      const std::string name = text_.substr(begin, end - begin);
      if (parser.GetFunDef().count(name))  // muparser wants the "(" right after the name
        throw Error(option() + ": write " + name + "(...) with no space before '(' (column " + std::to_string(end + 1) +
                    ")");
      throw Error(option() + ": unknown function '" + name + "' at column " + std::to_string(begin + 1));
    }
    throw Error(option() + ": " + e.GetMsg() + " (column " + std::to_string(e.GetPos() + 1) + ")");
  }
  if (names_.empty()) throw Error(option() + ": names no variable of the file");
  program_.emplace(text_, names_, parser.GetConst());
}

Expression::~Expression() = default;

std::string Expression::option() const { return std::string(condition_ ? "--where" : "--expr") + " '" + text_ + "'"; }

std::size_t Expression::column_of(const std::string& name) const { return segment::column_of(text_, name); }

void Expression::evaluate(const std::vector<const std::byte*>& raw, const std::vector<Decoder>& decoders,
                          const std::vector<std::size_t>& sizes, bool single, std::int64_t count, float* out) {
  if (single)
    evaluate_in(float_inputs_, raw, decoders, sizes, count, out);
  else
    evaluate_in(double_inputs_, raw, decoders, sizes, count, out);
}

template <class T>
void Expression::evaluate_in(std::vector<std::vector<T>>& blocks, const std::vector<const std::byte*>& raw,
                             const std::vector<Decoder>& decoders, const std::vector<std::size_t>& sizes,
                             std::int64_t count, float* out) {
  // An operand stored as T, unpacked, is used where it was read (its
  // fill values tested at the end, as the decoder would); any other is
  // decoded a block at a time, its missing values NaN.
  const std::size_t operands = names_.size();
  blocks.resize(operands);
  std::vector<const T*> inputs(operands);
  std::vector<expression::Valid<T>> valid(operands);
  std::vector<bool> in_place(operands);
  constexpr T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  for (std::size_t i = 0; i < operands; ++i) {
    const auto test = sizes[i] == sizeof(T) ? decoders[i].in_place() : std::nullopt;
    in_place[i] = test.has_value();
    valid[i] = test ? expression::Valid<T>{static_cast<T>(test->lo), static_cast<T>(test->hi),
                                           static_cast<T>(test->fill), static_cast<T>(test->missing)}
                    : expression::Valid<T>{-inf, inf, nan, nan};
    blocks[i].resize(in_place[i] ? 0 : static_cast<std::size_t>(expression::kBlock));
  }
  for (std::int64_t at = 0; at < count; at += expression::kBlock) {
    const std::int64_t n = std::min(expression::kBlock, count - at);
    for (std::size_t i = 0; i < operands; ++i) {
      const std::byte* values = raw[i] + static_cast<std::size_t>(at) * sizes[i];
      if (in_place[i]) {
        inputs[i] = reinterpret_cast<const T*>(values);  // the reader's buffer: native order, aligned
      } else {
        if constexpr (std::is_same_v<T, float>)
          decoders[i].to_float(values, n, blocks[i].data());
        else
          decoders[i].to_double(values, n, blocks[i].data());
        inputs[i] = blocks[i].data();
      }
    }
    program_->run(inputs.data(), valid.data(), n, condition_, out + at);
  }
}

// Whether an operand's values are float32 values exactly: stored as float32
// or as integers of 16 bits or fewer, not packed. An expression of such
// operands is computed in float, as numpy computes float32 arrays (and twice
// as fast as in double); any other operand (float64, wide integers, CF
// packing) makes it double, as muparser computes.
bool in_single(const io::VolumeInfo& info) {
  if (info.scale_factor || info.add_offset) return false;
  switch (info.dtype) {
    case io::DType::f32:
    case io::DType::i8:
    case io::DType::u8:
    case io::DType::i16:
    case io::DType::u16:
      return true;
    default:
      return false;
  }
}

namespace {

class ExpressionReader final : public io::VolumeReader {
 public:
  ExpressionReader(const Request& request, std::unique_ptr<Expression> evaluator,
                   std::vector<std::unique_ptr<io::VolumeReader>> operands)
      : evaluator_(std::move(evaluator)), operands_(std::move(operands)) {
    // Collective if any operand is; locally and ahead only if every one
    // reads so; the operands' values held besides the one handed out.
    io::Capabilities capabilities{.reads_locally = true, .reads_ahead = true};
    for (const auto& r : operands_) {
      decoders_.emplace_back(r->info());
      sizes_.push_back(io::dtype_size(r->info().dtype));
      single_ = single_ && in_single(r->info());
      capabilities.collective = capabilities.collective || r->capabilities().collective;
      capabilities.reads_locally = capabilities.reads_locally && r->capabilities().reads_locally;
      capabilities.reads_ahead = capabilities.reads_ahead && r->capabilities().reads_ahead;
      capabilities.extra_staged_bytes_per_voxel += sizes_.back();
    }
    set_capabilities(capabilities);
    const io::VolumeInfo& first = operands_.front()->info();
    info_.dims = first.dims;
    info_.dtype = io::DType::f32;
    info_.byte_order = io::native_byte_order();
    info_.variable = request.condition ? "where" : "expr";
    info_.spacing = first.spacing;
    info_.origin = first.origin;
    info_.coordinates = first.coordinates;
    info_.steps = first.steps;
    info_.step = first.step;
    for (const auto& [key, value] : first.attributes)
      if (key.size() == 4 && key.rfind("dim", 0) == 0) info_.attributes[key] = value;  // dimension names
    info_.attributes[request.condition ? "where" : "expression"] = request.text;
  }

  // Opens the variables the expression names: from the same file, or an
  // --operand's from its own file (with the backend its format reads with,
  // and of the selection only the step, and no hints).
  static std::unique_ptr<io::VolumeReader> open(const std::string& backend, const std::string& path, const Comm& comm,
                                                const Request& request, const std::vector<std::string>& hints) {
    auto evaluator = std::make_unique<Expression>(request.text, request.condition);
    const auto& names = evaluator->names();
    for (const auto& [name, operand] : request.operands)
      if (std::find(names.begin(), names.end(), name) == names.end())
        throw Error("--operand " + name + "=" + operand.path + ": " + evaluator->option() + " has no variable " + name);
    std::vector<std::unique_ptr<io::VolumeReader>> operands;
    for (const auto& name : names) {
      const auto other = request.operands.find(name);
      if (other != request.operands.end()) {
        const auto& [file, variable] = other->second;
        try {
          const std::string reading =
              io::choose_backend(comm, io::detect_format(comm, file), file, io::Access::stream).backend;
          operands.push_back(io::open_reader(reading, {file, request.others.of_variable(variable)}, comm));
        } catch (const Error& e) {
          rethrow_as(e, "--operand " + name + "=" + file + (variable.empty() ? "" : ":" + variable) + ": " + e.what());
        }
        continue;
      }
      io::Selection selection = request.others;
      selection.variable = name;
      try {
        operands.push_back(io::open_reader(backend, {path, selection}, comm, io::Hints::parse(hints)));
      } catch (const Error& e) {
        rethrow_as(e, evaluator->option() + ": unknown variable '" + name + "' at column " +
                          std::to_string(column_of(request.text, name)) + " (" + e.what() +
                          "; --operand NAME=FILE reads one from another file)");
      }
    }
    const io::VolumeInfo& first = operands.front()->info();
    for (std::size_t i = 1; i < operands.size(); ++i)
      if (operands[i]->info().dims != first.dims)
        throw Error(evaluator->option() + ": " + evaluator->names()[i] + " has dims " +
                    io::to_string(operands[i]->info().whole()) + " but " + evaluator->names()[0] + " has " +
                    io::to_string(first.whole()) + ": operands must have one shape");
    return std::make_unique<ExpressionReader>(request, std::move(evaluator), std::move(operands));
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
  std::vector<std::string> files() const override {  // every operand's, once
    std::vector<std::string> all;
    for (const auto& r : operands_)
      for (auto& f : r->files())
        if (std::find(all.begin(), all.end(), f) == all.end()) all.push_back(std::move(f));
    return all;
  }

 protected:
  void do_will_need(const io::Extent& extent) override {  // each operand's bytes ahead
    for (const auto& r : operands_) r->will_need(extent);
  }
  void do_read(const io::Extent& extent, void* buffer) override {
    if (capabilities().reads_locally) return read_in_pieces(extent, static_cast<float*>(buffer));
    raw_.resize(operands_.size());
    for (std::size_t i = 0; i < operands_.size(); ++i) {
      raw_[i].resize(static_cast<std::size_t>(extent.voxels()) * sizes_[i]);
      operands_[i]->read(extent, raw_[i].data());
    }
    evaluator_->evaluate(pointers(raw_, 0), decoders_, sizes_, single_, extent.voxels(), static_cast<float*>(buffer));
  }

  // Each operand's extents in one collective call, then each extent evaluated
  // (operands read locally: each extent in pieces, every rank still joining
  // the caller's rounds).
  void do_read_all(std::span<const io::Extent> extents, std::span<void* const> buffers) override {
    if (capabilities().reads_locally) {
      for (std::size_t e = 0; e < extents.size(); ++e) read_in_pieces(extents[e], static_cast<float*>(buffers[e]));
      return;
    }
    std::int64_t voxels = 0;
    for (const auto& extent : extents) voxels += extent.voxels();
    raw_.resize(operands_.size());
    for (std::size_t i = 0; i < operands_.size(); ++i) {
      raw_[i].resize(static_cast<std::size_t>(voxels) * sizes_[i]);
      std::vector<void*> targets;
      std::size_t at = 0;
      for (const auto& extent : extents) {
        targets.push_back(raw_[i].data() + at);
        at += static_cast<std::size_t>(extent.voxels()) * sizes_[i];
      }
      operands_[i]->read_all(extents, targets);
    }
    std::int64_t at = 0;
    for (std::size_t e = 0; e < extents.size(); ++e) {
      evaluator_->evaluate(pointers(raw_, at), decoders_, sizes_, single_, extents[e].voxels(),
                           static_cast<float*>(buffers[e]));
      at += extents[e].voxels();
    }
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
  // Operands that read locally are read a piece of the extent at a time,
  // each piece evaluated while its values are still in cache (a piece of
  // whole planes, or of rows of one plane, about kPieceBytes staged): reading
  // the whole extent first and evaluating it after costs another pass over
  // memory, as much as the read itself for a file in the page cache.
  void read_in_pieces(const io::Extent& extent, float* out) {
    if (extent.empty()) return;
    constexpr std::int64_t kPieceBytes = std::int64_t{1} << 19;
    const auto staged = io::dtype_size(info_.dtype) + capabilities().extra_staged_bytes_per_voxel;
    const std::int64_t target = std::max<std::int64_t>(1, kPieceBytes / static_cast<std::int64_t>(staged));
    const auto& [cz, cy, cx] = extent.count;
    raw_.resize(operands_.size());
    auto piece = [&](const io::Extent& part, std::int64_t at) {
      for (std::size_t i = 0; i < operands_.size(); ++i) {
        raw_[i].resize(static_cast<std::size_t>(part.voxels()) * sizes_[i]);
        operands_[i]->read(part, raw_[i].data());
      }
      evaluator_->evaluate(pointers(raw_, 0), decoders_, sizes_, single_, part.voxels(), out + at);
    };
    const auto& o = extent.offset;
    if (cy * cx <= target) {  // slabs of whole planes
      const std::int64_t planes = std::max<std::int64_t>(1, target / (cy * cx));
      for (std::int64_t z = 0; z < cz; z += planes)
        piece({{o[0] + z, o[1], o[2]}, {std::min(planes, cz - z), cy, cx}}, z * cy * cx);
      return;
    }
    const std::int64_t rows = std::max<std::int64_t>(1, target / cx);  // rows of one plane
    for (std::int64_t z = 0; z < cz; ++z)
      for (std::int64_t y = 0; y < cy; y += rows)
        piece({{o[0] + z, o[1] + y, o[2]}, {1, std::min(rows, cy - y), cx}}, (z * cy + y) * cx);
  }

  // Each operand's values from voxel `at` of raw.
  std::vector<const std::byte*> pointers(const std::vector<std::vector<std::byte>>& raw, std::int64_t at) const {
    std::vector<const std::byte*> result;
    for (std::size_t i = 0; i < raw.size(); ++i)
      result.push_back(raw[i].data() + static_cast<std::size_t>(at) * sizes_[i]);
    return result;
  }

  std::unique_ptr<Expression> evaluator_;
  std::vector<std::unique_ptr<io::VolumeReader>> operands_;
  std::vector<Decoder> decoders_;
  std::vector<std::size_t> sizes_;           // bytes a value of each operand
  bool single_ = true;                       // computed in float: see in_single
  std::vector<std::vector<std::byte>> raw_;  // each operand's values as read, kept between reads
  io::VolumeInfo info_;
};

}  // namespace

std::unique_ptr<io::VolumeReader> open_input(const std::string& backend, const io::OpenRequest& input, const Comm& comm,
                                             const std::vector<std::string>& hints) {
  const auto request = expression_in(input.selection);
  if (!request) return io::open_reader(backend, input, comm, io::Hints::parse(hints));
  return ExpressionReader::open(backend, input.path, comm, *request, hints);
}

}  // namespace volseg::segment
