// SPDX-License-Identifier: MIT
// What `volseg label` writes beside the labels: the object table (CSV),
// written by every rank at once, and the JSON report.
#include "label_report.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "job_outputs.hpp"
#include "volseg/io/collective_output.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/files.hpp"
#include "volseg/io/messages.hpp"
#include "volseg/version.hpp"

namespace volseg::segment {
namespace {

// A field's selection as the report names it: variable, step, expression.
nlohmann::json selection_json(const io::Selection& selection) {
  nlohmann::json j = nlohmann::json::object();
  if (!selection.variable.empty()) j["variable"] = selection.variable;
  if (selection.step) j["step"] = *selection.step;
  if (!selection.glob.empty()) j["glob"] = selection.glob;
  if (selection.has_expression()) j[selection.condition ? "where" : "expression"] = selection.expression;
  return j;
}

// The most objects whose rows the JSON report lists (the CSV has them all).
constexpr std::uint64_t kReportTableRows = 100000;

// Where an object sits: its centroid in voxels (z, y, x) and in the file's physical frame.
struct Placement {
  double centroid[3];
  double position[3];
  double volume;
};

bool wraps(const ObjectPart& p, int axis) { return (p.border & (ObjectPart::wraps_z << axis)) != 0; }

// "zx": the axes along which p reaches itself across periodic faces.
std::string wrap_axes(const ObjectPart& p) {
  std::string axes;
  for (int a = 0; a < 3; ++a)
    if (wraps(p, a)) axes += "zyx"[a];
  return axes;
}

Placement place(const ObjectPart& p, const io::VolumeInfo& info) {
  Placement where{};
  const double n = static_cast<double>(p.voxels);
  for (int a = 0; a < 3; ++a) {
    // Along an axis where it reaches itself across periodic faces an
    // object has no centroid.
    where.centroid[a] = wraps(p, a) ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(p.sum[a]) / n;
    where.position[a] = info.origin[2 - a] + info.spacing[2 - a] * where.centroid[a];  // spacing, origin: x,y,z
  }
  where.volume = n * info.spacing[0] * info.spacing[1] * info.spacing[2];
  return where;
}

// Text with numbers in their shortest round-trip form.
class Text {
 public:
  explicit Text(bool json) : json_(json) {}
  Text& operator<<(std::string_view text) {
    text_ += text;
    return *this;
  }
  Text& operator<<(std::uint64_t value) { return put(value); }
  Text& operator<<(std::int32_t value) { return put(value); }
  Text& operator<<(double value) {
    if (json_ && !std::isfinite(value)) return *this << "null";  // JSON has no NaN (a NaN in --values)
    return put(value);
  }
  std::string& str() { return text_; }

 private:
  template <class T>
  Text& put(T value) {
    char digits[32];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    return *this << std::string_view(digits, static_cast<std::size_t>(end - digits));
  }
  bool json_;
  std::string text_;
};

constexpr std::size_t kBlock = 1 << 20;

// The report goes out in blocks of about a MiB.
class BlockedWriter {
 public:
  explicit BlockedWriter(const std::string& path, bool json) : file_(path), text_(json) {
    text_.str().reserve(kBlock + 1024);
  }
  template <class T>
  BlockedWriter& operator<<(const T& value) {
    text_ << value;
    if (text_.str().size() >= kBlock) flush();
    return *this;
  }
  void commit() {
    flush();
    file_.commit();
  }

 private:
  void flush() {
    file_.write(text_.str());
    text_.str().clear();
  }
  io::AtomicFile file_;
  Text text_;
};

constexpr const char* kTableHeader =
    "id,voxels,volume,z_min,y_min,x_min,z_max,y_max,x_max,centroid_z,centroid_y,centroid_x,"
    "position_z,position_y,position_x,touches_boundary";

// The columns of kTableHeader: what an ObjectPart holds of object id.
void part_columns(Text& out, std::uint64_t id, const ObjectPart& p, const io::VolumeInfo& info) {
  const Placement w = place(p, info);
  out << id << "," << p.voxels << "," << w.volume;
  for (int a = 0; a < 3; ++a) out << "," << p.lo[a];
  for (int a = 0; a < 3; ++a) out << "," << p.hi[a];
  for (int a = 0; a < 3; ++a) out << "," << w.centroid[a];
  for (int a = 0; a < 3; ++a) out << "," << w.position[a];
  out << ((p.border & ObjectPart::touches_boundary) != 0 ? ",1" : ",0");
}

// Row i of table (its values record by record: a part's records may
// straddle two of Chunked's blocks).
void table_row(Text& out, const ObjectTable& table, std::size_t i, const TableColumns& columns,
               const io::VolumeInfo& info) {
  const ObjectPart& p = table.part(i);
  part_columns(out, table.first_id + i, p, info);
  for (std::size_t k = 0; k < columns.fields.size(); ++k) {
    const ObjectValues& f = table.values_of(i, k);
    out << "," << f.min << "," << f.sum / static_cast<double>(p.voxels) << "," << f.max << "," << f.sum;
    for (int a = 0; a < 3; ++a)  // NaN when the values sum to 0
      out << "," << (wraps(p, a) ? std::numeric_limits<double>::quiet_NaN() : f.weighted[a] / f.sum);
  }
  if (columns.shape) {
    const ObjectShape shape = object_shape(p, table.values_of(i), info.spacing);
    out << "," << shape.surface_area << "," << shape.equivalent_diameter;
    for (double e : shape.inertia) out << "," << e;
    out << "," << shape.major_axis << "," << shape.minor_axis << "," << shape.sphericity;
  }
  if (columns.periodic) out << "," << wrap_axes(p);
  out << "\n";
}

// This rank's rows as text, about a MiB at a time, to sink(text): a table
// of millions of objects is never held as text.
template <class Sink>
void table_blocks(const LabelSummary& summary, const io::VolumeInfo& info, const TableColumns& columns, Sink&& sink) {
  Text out(false);
  out.str().reserve(kBlock + 1024);
  for (std::size_t i = 0; i < summary.table.size(); ++i) {
    table_row(out, summary.table, i, columns, info);
    if (out.str().size() >= kBlock) {
      sink(out.str());
      out.str().clear();
    }
  }
  if (!out.str().empty()) sink(out.str());
}

void pwrite_all(int fd, const std::string& path, const std::string& text, std::uint64_t offset) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("write", path, n < 0 ? errno : EIO);
    done += static_cast<std::size_t>(n);
  }
}

// A stream (stdout, a pipe) takes the rows in order through rank 0: each
// rank's blocks in turn.
void write_table_to_stream(const Comm& comm, const std::string& path, const std::string& header,
                           const LabelSummary& summary, const io::VolumeInfo& info, TableColumns columns) {
  constexpr int tag = 7301;
  std::unique_ptr<io::AtomicFile> file;
  std::exception_ptr error;
  try {
    if (comm.rank() == 0) {
      file = std::make_unique<io::AtomicFile>(path);
      file->write(header);
      table_blocks(summary, info, columns, [&](const std::string& text) { file->write(text); });
    }
  } catch (...) {
    error = std::current_exception();
  }
  agree(comm, error);
  for (int r = 1; r < comm.size(); ++r) {
    if (comm.rank() == r) {
      table_blocks(summary, info, columns, [&](const std::string& text) {
        check_mpi(MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, tag, comm.get()), "MPI_Send");
      });
      check_mpi(MPI_Send(nullptr, 0, MPI_CHAR, 0, tag, comm.get()), "MPI_Send");
    } else if (comm.rank() == 0) {
      std::string text;
      for (;;) {
        MPI_Status status;
        check_mpi(MPI_Probe(r, tag, comm.get(), &status), "MPI_Probe");
        int size = 0;
        check_mpi(MPI_Get_count(&status, MPI_CHAR, &size), "MPI_Get_count");
        text.resize(static_cast<std::size_t>(size));
        check_mpi(MPI_Recv(text.data(), size, MPI_CHAR, r, tag, comm.get(), MPI_STATUS_IGNORE), "MPI_Recv");
        if (size == 0) break;
        try {
          if (!error) file->write(text);
        } catch (...) {
          error = std::current_exception();  // goes on receiving: rank r is not left waiting
        }
      }
    }
  }
  collectively(comm, [&] {
    if (error) std::rethrow_exception(error);
    if (file) file->commit();
  });
}

}  // namespace

// Every rank writes its own rows at their place in the temporary file: rank
// 0 knows its offset (after the header) and writes as it formats; the others
// count their text first (a prefix sum gives each its offset), then write.
void write_object_table(const Comm& comm, const std::string& path, const LabelSummary& summary,
                        const io::VolumeInfo& info, TableColumns columns) {
  std::string header = kTableHeader;
  for (const auto& name : columns.fields)
    for (const char* column : {"_min", "_mean", "_max", "_sum", "_centroid_z", "_centroid_y", "_centroid_x"})
      header += "," + name + column;
  if (columns.shape)
    header +=
        ",surface_area,equivalent_diameter,inertia_1,inertia_2,inertia_3,major_axis_length,minor_axis_length,"
        "sphericity";
  if (columns.periodic) header += ",wraps";
  header += "\n";
  if (io::is_stream(path)) return write_table_to_stream(comm, path, header, summary, info, columns);
  io::CollectiveOutput output(comm, path, io::CollectiveOutput::Start::empty_file);
  const std::string& temporary = output.temporary();

  std::uint64_t length = 0, offset = 0;
  int fd = -1;
  std::exception_ptr error;
  try {
    fd = ::open(temporary.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw_errno("open", temporary);
    if (comm.rank() == 0) {
      pwrite_all(fd, path, header, 0);
      length = header.size();
      table_blocks(summary, info, columns, [&](const std::string& text) {
        pwrite_all(fd, path, text, length);
        length += text.size();
      });
    } else {
      table_blocks(summary, info, columns, [&](const std::string& text) { length += text.size(); });
    }
  } catch (...) {
    error = std::current_exception();
  }
  check_mpi(MPI_Exscan(&length, &offset, 1, MPI_UINT64_T, MPI_SUM, comm.get()), "MPI_Exscan");
  try {
    if (!error && comm.rank() != 0)
      table_blocks(summary, info, columns, [&](const std::string& text) {
        pwrite_all(fd, path, text, offset);
        offset += text.size();
      });
  } catch (...) {
    error = std::current_exception();
  }
  if (fd >= 0 && ::close(fd) != 0 && !error)
    error = std::make_exception_ptr(Error("close " + path + ": " + std::strerror(errno)));
  agree(comm, error);
  output.commit(comm, false);
}

void write_object_rows(const std::string& path, const std::vector<IdPart>& rows, const io::VolumeInfo& info) {
  BlockedWriter out(path, false);
  out << kTableHeader << "\n";
  Text row(false);
  for (const auto& [id, part] : rows) {
    row.str().clear();
    part_columns(row, id, part, info);
    out << row.str() << "\n";
  }
  out.commit();
}

void gather_report_rows(const Comm& comm, const LabelSummary& summary, std::size_t fields,
                        std::vector<ObjectPart>& rows, std::vector<ObjectValues>& values) {
  // This rank's rows among the first kReportTableRows ids.
  const auto& table = summary.table;
  const std::uint64_t mine = table.first_id > kReportTableRows
                                 ? 0
                                 : std::min<std::uint64_t>(table.size(), kReportTableRows - table.first_id + 1);
  std::vector<ObjectPart> my_rows;
  std::vector<ObjectValues> my_values;
  for (std::uint64_t i = 0; i < mine; ++i) {
    my_rows.push_back(table.part(i));
    for (std::size_t k = 0; k < fields; ++k) my_values.push_back(table.values_of(i, k));
  }
  rows = io::gather(comm.get(), std::span<const ObjectPart>(my_rows));
  if (fields != 0) values = io::gather(comm.get(), std::span<const ObjectValues>(my_values));
}

namespace {

// The report's "split" (label --split): the markers and what the floods made.
nlohmann::json split_json(const LabelOptions& options, const LabelResult::Split& split) {
  const bool h_maxima = options.split.markers.empty();
  const std::string& field = options.split.on_field;
  const std::string flooded = field.empty() ? "-distance" : (options.split.on_negate ? "-" : "") + field;
  return {{"flooded", flooded},
          {"markers", h_maxima ? nlohmann::json("h-maxima") : nlohmann::json(options.split.markers)},
          {"h", h_maxima ? nlohmann::json(options.split.h) : nlohmann::json()},
          {"markers_found", split.markers},
          {"components_flooded", split.flooded},
          {"objects_from_floods", split.regions},
          {"distance_seconds", split.distance_seconds},
          {"flood_seconds", split.flood_seconds}};
}

}  // namespace

void write_label_report(const std::string& path, const LabelOptions& options, const LabelResult& result,
                        const std::vector<ObjectPart>& table, const std::vector<ObjectValues>& table_values) {
  const auto& info = result.input_info;
  const auto& s = result.summary;
  nlohmann::json report;
  report["tool"] = "volseg label";
  report["command"] = options.command_line;
  report["input"] = {{"path", options.source_name.empty() ? options.input : options.source_name},
                     {"dims_zyx", info.dims},
                     {"dtype", std::string(io::dtype_name(info.dtype))},
                     {"mask_input", options.mask_input},
                     {"bytes", info.voxels() * io::dtype_size(info.dtype)},
                     {"bytes_read", result.bytes_read}};
  if (!options.mask_input) {
    report["input"]["threshold"] = {options.lo, options.hi};
    report["input"]["threshold_rules"] = detail::rules_json(options.lo_rule, options.hi_rule);
  }
  if (options.operators.any()) report["operators"] = detail::operators_json(options.operators, options.lo, options.hi);
  if (result.split) report["split"] = split_json(options, *result.split);
  report["output"] = {{"path", options.output},
                      {"format", result.output_format},
                      {"type", result.label_type},
                      {"backend", result.output_backend}};
  if (!options.mask_output.empty())
    report["output"]["mask"] = {{"path", options.mask_output}, {"format", result.mask_format}};
  report["backend"] = result.backend;
  detail::add_backend_choice(report, result.backend, result.backend_reason, result.input_resident);
  if (!options.values.empty()) {
    nlohmann::json fields = nlohmann::json::array();
    const auto columns = field_columns(options.values);
    for (std::size_t k = 0; k < options.values.size(); ++k)
      fields.push_back({{"name", options.values[k].name},
                        {"columns", columns[k]},
                        {"file", options.values[k].file},
                        {"selection", selection_json(options.values[k].selection)}});
    report["fields"] = fields;
  }
  report["connectivity"] = options.connectivity;
  if (options.periodic != std::array<bool, 3>{}) report["periodic"] = periodic_text(options.periodic);
  report["min_voxels"] = options.min_voxels;
  report["bricks"] = {
      {"shape_zyx", result.brick_shape}, {"grid_zyx", result.brick_grid}, {"count", result.brick_count}};
  report["memory"] = {{"bound_bytes_per_rank", result.memory_bound},
                      {"bound_from", result.memory_source},
                      {"run_label_cache_bytes", result.cache_bytes},
                      {"bricks_read_again", result.bricks_read_again}};
  report["objects"] = s.objects;
  report["dropped"] = s.dropped;
  report["foreground_voxels"] = s.foreground;
  report["boundary_parts"] = s.boundary_parts;
  report["joins"] = s.joins;
  report["seconds"] = result.seconds;
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < result.ranks.size(); ++r) {
    const auto& t = result.ranks[r];
    ranks.push_back({{"rank", r},
                     {"label_s", t.label},
                     {"merge_s", t.merge},
                     {"write_s", t.write},
                     {"total_s", t.total},
                     {"max_rss_bytes", t.max_rss}});
  }
  report["ranks"] = ranks;
  report["volseg_version"] = version();
  // The report is a summary that people and scripts open whole: its table
  // stops at the first kReportTableRows objects (26 million made a 5.6 GB
  // JSON); --stats writes every row.
  const std::size_t rows = table.size();
  report["table_rows"] = rows;
  report["table_complete"] = rows == s.objects;
  // The table streams after the rest: rows in the layout of the CSV's.
  std::string head = report.dump(1);
  head.pop_back();  // the closing brace
  BlockedWriter out(path, true);
  out << head << ",\n \"table\": [";
  const auto columns = field_columns(options.values);
  const std::size_t fields = columns.size();
  // One field not named keeps the rows' "values" object; named fields go
  // under "fields", by name.
  const bool one_value = fields == 1 && columns[0] == "value";
  const bool periodic = options.periodic != std::array<bool, 3>{};
  auto triple = [&](const char* key, const auto& v) {
    out << ", \"" << key << "\": [" << v[0] << ", " << v[1] << ", " << v[2] << "]";
  };
  for (std::size_t i = 0; i < rows; ++i) {
    const auto& p = table[i];
    const Placement w = place(p, info);
    out << (i == 0 ? "\n  {\"id\": " : ",\n  {\"id\": ") << std::uint64_t{i + 1} << ", \"voxels\": " << p.voxels
        << ", \"volume\": " << w.volume;
    triple("bbox_min_zyx", p.lo);
    triple("bbox_max_zyx", p.hi);
    triple("centroid_zyx", w.centroid);
    triple("position_zyx", w.position);
    out << ", \"touches_boundary\": " << ((p.border & ObjectPart::touches_boundary) != 0 ? "true" : "false");
    if (periodic) out << ", \"wraps\": \"" << wrap_axes(p) << "\"";
    if (fields != 0) out << (one_value ? ", \"values\": " : ", \"fields\": {");
    for (std::size_t k = 0; k < fields; ++k) {
      const auto& v = table_values[i * fields + k];
      if (!one_value) out << (k == 0 ? "" : ", ") << nlohmann::json(columns[k]).dump() << ": ";
      out << "{\"min\": " << v.min << ", \"mean\": " << v.sum / static_cast<double>(p.voxels) << ", \"max\": " << v.max
          << ", \"sum\": " << v.sum;
      if (v.sum != 0) {  // JSON has no NaN (null along an axis where the object wraps)
        double centroid[3];
        for (int a = 0; a < 3; ++a)
          centroid[a] = wraps(p, a) ? std::numeric_limits<double>::quiet_NaN() : v.weighted[a] / v.sum;
        triple("centroid_zyx", centroid);
      }
      out << "}";
    }
    if (fields != 0 && !one_value) out << "}";
    out << "}";
  }
  out << "\n ]\n}\n";
  out.commit();
}

}  // namespace volseg::segment
