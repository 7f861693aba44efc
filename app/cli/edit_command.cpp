// SPDX-License-Identifier: MIT
// `volseg edit`: a journal of edits (merge, delete, split, paint, erase)
// replayed on a labels volume, on any rank count (docs/edit.md).
#include <cstdio>

#include "command.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/segment/distance.hpp"
#include "volseg/segment/edit.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::cli {
namespace {

class EditCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* sub = app.add_subcommand(
        "edit",
        "Replay a journal of edits (merge, delete, split, paint, erase) on a labels volume, as the browser page "
        "and the Qt window record them, across bricks and ranks");
    auto& o = options_;
    sub->add_option("input", o.input, "Labels: an integer volume. " + std::string(input_help))->required();
    sub->add_option("--edits", o.journal,
                    "The journal: {\"edits\": [{\"op\": \"merge\", \"ids\": [a, b]}, {\"op\": \"delete\", \"ids\": "
                    "[a]}, {\"op\": \"split\", \"id\": a, \"h\": 1.5}, {\"op\": \"split\", \"id\": a, \"seeds\": "
                    "[[z, y, x], ...]}, {\"op\": \"paint\", \"id\": a, \"center\": [z, y, x], \"radius\": r}, "
                    "{\"op\": \"erase\", \"center\": [z, y, x], \"radius\": r}]} (docs/edit.md)")
        ->required();
    auto* out = sub->add_option("--out", o.output,
                                "Edited labels: NAME.nhdr (raw), NAME.nc, NAME.nc4, NAME.zarr, NAME.ome.zarr, "
                                "NAME.precomputed (default format: the input's)")
                    ->required();
    accept_precomputed_url(*out, o.format);
    sub->add_option("--stats", o.stats,
                    "Object table of the edited labels (CSV: label --stats's columns without --values or the shape; "
                    "'-' for stdout)");
    sub->add_option("--connectivity", o.connectivity,
                    "Of a split's flood and of the pieces no marker reaches: 6 | 18 | 26")
        ->capture_default_str();
    sub->add_option("--spacing", spacing_,
                    "Z,Y,X units of a split's distance (default: the labels' own spacing, else 1,1,1)");
    selection_.add_to(*sub, true);
    sub->add_option("--format", o.format,
                    "raw | cdf5 | netcdf4 | hdf5 | zarr | ome-zarr | precomputed (default: by --out, else the "
                    "input's)");
    sub->add_option("--backend", o.backend, "Backend that reads (auto: as segment)")->capture_default_str();
    sub->add_option("--out-backend", o.output_backend, "Backend that writes (default: by format)");
    sub->add_option("--hint", o.hints, "Backend hint key=value (repeatable)");
    sub->add_option("--in-hint", o.input_hints, "Hint for the reader only (repeatable)");
    sub->add_option("--out-hint", o.output_hints, "Hint for the writer only (repeatable)");
    add_levels_option(*sub, o.output_hints);
    sub->add_option("--memory", memory_,
                    "Memory per rank the job may use (512MiB, 4GiB; default: this node's available memory shared "
                    "by its ranks); a split whose object's box does not fit is refused");
    sub->add_flag("--force", o.force, "Replace an existing output");
    verbosity_.add_to(*sub);
    return sub;
  }

  void run(const Context& context) override {
    auto& o = options_;
    if (!spacing_.empty()) o.spacing = segment::parse_spacing(spacing_);
    if (!memory_.empty()) {
      io::Hints parsed;
      parsed.set("memory", memory_);
      const std::int64_t bytes = parsed.get_size("memory", 0);
      if (bytes <= 0) throw Error("--memory must be positive, not " + memory_);
      o.memory_bytes = static_cast<std::uint64_t>(bytes);
    }
    o.selection = selection_.selection();
    o.progress = verbosity_.mode();
    o.command_line = context.command_line;
    const auto result = segment::run_edit(context.comm, o);
    if (context.comm.rank() == 0 && !verbosity_.quiet) {
      std::printf("edited %s: %zu edit(s) of %s on %d rank(s), %lld bricks\n", o.input.c_str(), result.edits,
                  o.journal.c_str(), context.comm.size(), static_cast<long long>(result.bricks));
      if (!result.new_ids.empty()) {
        std::printf("  splits gave ids");
        for (const auto id : result.new_ids) std::printf(" %llu", static_cast<unsigned long long>(id));
        std::printf("\n");
      }
      std::printf("  largest id %llu\n  time %.3g s\n  labels (%s): %s\n",
                  static_cast<unsigned long long>(result.max_id), result.seconds, result.output_format.c_str(),
                  o.output.c_str());
      if (!o.stats.empty())
        std::printf("  object table (%llu objects): %s\n", static_cast<unsigned long long>(result.objects),
                    o.stats.c_str());
      std::fflush(stdout);
    }
  }

 private:
  segment::EditOptions options_;
  std::string spacing_, memory_;
  SelectionOptions selection_;
  Verbosity verbosity_;
};

}  // namespace

std::unique_ptr<Command> make_edit_command() { return std::make_unique<EditCommand>(); }

}  // namespace volseg::cli
