// SPDX-License-Identifier: MIT
// The hook's options: the same flags from a simulation's command line, the C
// API's option string or a config file, so one set of words documents all.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "volseg/insitu/insitu.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/label.hpp"
#include "volseg/segment/operators.hpp"

namespace volseg::insitu {
namespace {

std::string args_number(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

double parse_number(const std::string& option, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || std::isnan(value))
    throw Error("in-situ option " + option + ": '" + text + "' is not a number");
  return value;
}

int parse_count(const std::string& option, const std::string& text, int least) {
  const double value = parse_number(option, text);
  if (value != std::floor(value) || value < least || value > 1e9)
    throw Error("in-situ option " + option + ": '" + text + "' is not a whole number >= " + std::to_string(least));
  return static_cast<int>(value);
}

// "10%" or "0.1": a fraction in (0, 1).
double parse_budget(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  double value = parse_number("--budget", percent ? text.substr(0, text.size() - 1) : text);
  if (percent) value /= 100;
  if (!(value > 0 && value < 1))
    throw Error("in-situ option --budget: '" + text + "' is not a share between 0 and 100% (say 10% or 0.1)");
  return value;
}

void parse_size(const std::string& text, int& width, int& height) {
  const auto x = text.find('x');
  if (x == std::string::npos) throw Error("in-situ option --size: '" + text + "' is not WIDTHxHEIGHT");
  width = parse_count("--size", text.substr(0, x), 16);
  height = parse_count("--size", text.substr(x + 1), 16);
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;  // the quote a word is inside: " or ' (as a shell takes them; the other is a character there)
  for (char c : text) {
    if ((c == '"' || c == '\'') && (quote == 0 || quote == c)) {
      quote = quote == 0 ? c : 0;
      in_word = true;
    } else if (quote == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) throw Error(std::string("in-situ options: unbalanced quote (") + quote + ") in '" + text + "'");
  if (in_word) words.push_back(word);
  return words;
}

// "option value" lines; a line may omit the leading "--".
std::vector<std::string> read_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("in-situ option --config: cannot read " + path);
  std::vector<std::string> args;
  std::string line;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    auto words = split_words(line);
    if (words.empty()) continue;
    if (words[0].rfind("--", 0) != 0) words[0] = "--" + words[0];
    args.insert(args.end(), words.begin(), words.end());
  }
  if (in.bad()) throw Error("in-situ option --config: error reading " + path);
  return args;
}

void parse_into(Options& options, const std::vector<std::string>& args, int depth, bool& have_lo, bool& have_hi) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& option = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error("in-situ option " + option + " needs a value");
      return args[++i];
    };
    if (option == "--lo" || option == "--hi") {
      const std::string& text = value();
      auto& rule = option == "--lo" ? options.lo_rule : options.hi_rule;
      double& number = option == "--lo" ? options.lo : options.hi;
      rule.clear();
      if (segment::is_threshold_rule(text))
        rule = segment::parse_threshold_rule("in-situ option " + option, text).text;
      else
        number = parse_number(option, text);
      (option == "--lo" ? have_lo : have_hi) = true;
    } else if (option == "--seed-lo" || option == "--seed-hi") {
      const double number = parse_number(option, value());
      if (!options.seed) options.seed = std::pair{std::nan(""), std::nan("")};
      (option == "--seed-lo" ? options.seed->first : options.seed->second) = number;
    } else if (option == "--open")
      options.open = segment::parse_radius("in-situ option --open", value());
    else if (option == "--close")
      options.close = segment::parse_radius("in-situ option --close", value());
    else if (option == "--fill-holes")
      options.fill_holes = true;
    else if (option == "--scratch")
      options.scratch = value();
    else if (option == "--every")
      options.every = parse_count(option, value(), 1);
    else if (option == "--out")
      options.out = value();
    else if (option == "--format")
      options.format = value();
    else if (option == "--backend")
      options.backend = value();
    else if (option == "--hint")
      options.hints.push_back(value());
    else if (option == "--series")
      options.series = value();
    else if (option == "--stats")
      options.stats = value();
    else if (option == "--image")
      options.image = value();
    else if (option == "--image-every")
      options.image_every = parse_count(option, value(), 1);
    else if (option == "--size")
      parse_size(value(), options.width, options.height);
    else if (option == "--camera")
      options.camera = value();
    else if (option == "--catalyst-script")
      options.scripts.push_back(value());
    else if (option == "--budget")
      options.budget = parse_budget(value());
    else if (option == "--var")
      options.variable = value();
    else if (option == "--expr" || option == "--where") {
      if (!options.expression.empty()) throw Error("in-situ options: give one --expr or --where");
      options.expression = value();
      options.condition = option == "--where";
    } else if (option == "--label")
      options.label = true;
    else if (option == "--connectivity")
      options.connectivity = parse_count(option, value(), 1);
    else if (option == "--periodic")
      options.periodic = segment::parse_periodic(value());
    else if (option == "--track")
      options.track = value();
    else if (option == "--analysis-ranks")
      options.analysis_ranks = parse_count(option, value(), 1);
    else if (option == "--async")
      options.async = true;
    else if (option == "--queue")
      options.queue = parse_count(option, value(), 1);
    else if (option == "--when-full") {
      const auto& when = value();
      if (when != "block" && when != "skip")
        throw Error("in-situ option --when-full: '" + when + "' is not block or skip");
      options.skip_when_full = when == "skip";
    } else if (option == "--borrow")
      options.borrow = true;
    else if (option == "--force")
      options.force = true;
    else if (option == "--verbose")
      options.verbose = true;
    else if (option == "--config") {
      if (depth > 4) throw Error("in-situ option --config: configs include each other too deeply");
      parse_into(options, read_config(value()), depth + 1, have_lo, have_hi);
    } else {
      throw Error(
          "unknown in-situ option '" + option +
          "' (the options: --lo --hi --every --out --format --backend "
          "--hint --series --stats --image --image-every --size --camera --catalyst-script --budget --var "
          "--expr --where --label --connectivity --periodic --track --analysis-ranks --async --queue --when-full "
          "--borrow --force --verbose --config)");
    }
  }
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options options;
  bool have_lo = false, have_hi = false;
  parse_into(options, args, 0, have_lo, have_hi);
  for (const auto& arg : args) {  // as typed: a word with spaces in quotes
    const bool spaced = arg.find_first_of(" \t") != std::string::npos;
    const char quote = arg.find('\'') == std::string::npos ? '\'' : '"';
    options.text += (options.text.empty() ? "" : " ") + (spaced ? quote + arg + quote : arg);
  }
  // --where COND: the mask is where it holds (its values are 1 and 0).
  if (options.condition && !have_lo && !have_hi) options.lo = options.hi = 1, have_lo = have_hi = true;
  options.have_range = have_lo && have_hi;
  if (have_lo != have_hi) throw Error("in-situ options: give both --lo and --hi, or neither");
  const bool rules = !options.lo_rule.empty() || !options.hi_rule.empty();
  if (options.have_range && !rules && options.lo > options.hi)
    throw Error("in-situ options: --lo " + args_number(options.lo) + " is above --hi " + args_number(options.hi));
  if (options.seed && (std::isnan(options.seed->first) || std::isnan(options.seed->second)))
    throw Error("in-situ options: hysteresis takes both --seed-lo and --seed-hi");
  if (options.seed && options.seed->first > options.seed->second)
    throw Error("in-situ options: --seed-lo " + args_number(options.seed->first) + " is above --seed-hi " +
                args_number(options.seed->second));
  if ((options.seed || options.open > 0 || options.close > 0 || options.fill_holes) && !options.have_range)
    throw Error(
        "in-situ options: the operators (--seed-lo/--seed-hi, --open, --close, --fill-holes) act on the "
        "threshold's mask: give --lo and --hi");
  if (!options.out.empty() && !options.have_range)
    throw Error("in-situ options: --out needs the threshold range (--lo and --hi)");
  if (options.label && !options.have_range)
    throw Error("in-situ options: --label needs the threshold range (--lo and --hi)");
  if (!options.track.empty() && !options.label)
    throw Error("in-situ options: --track links the objects --label finds: give --label too");
  if (options.connectivity != 6 && options.connectivity != 18 && options.connectivity != 26)
    throw Error("in-situ option --connectivity: " + std::to_string(options.connectivity) +
                " is not 6, 18 or 26 (faces; and edges; and corners)");
  if (!options.have_range && options.image.empty() && options.scripts.empty())
    throw Error(
        "in-situ options: nothing to do; give --lo and --hi (with --out or --stats), --image, or --catalyst-script");
  // --out without %d: one NetCDF file, a record appended per step (checked
  // against the format when the hook starts).
  if (!options.image.empty() && options.image.find('%') == std::string::npos)
    throw Error("in-situ option --image: '" + options.image + "' has no %d for the step (say image_%06d.png)");
  if (options.async && options.analysis_ranks > 0)
    throw Error("in-situ options: --async and --analysis-ranks are two ways off the critical path: give one");
  const bool offloaded = options.async || options.analysis_ranks > 0;
  if (offloaded && options.budget)
    throw Error(
        "in-situ options: --budget skips work inside a synchronous hook; with --async or --analysis-ranks use "
        "--when-full skip");
  if (!offloaded && (options.skip_when_full || options.borrow || options.queue != 0))
    throw Error("in-situ options: --queue, --when-full and --borrow are of --async and --analysis-ranks");
  if (options.borrow && options.skip_when_full)
    throw Error("in-situ options: --borrow waits for each step to be taken in; --when-full skip never waits");
  if (options.variable.empty() || options.variable == "mask")
    throw Error("in-situ option --var: the field needs a name other than '" + options.variable + "'");
  return options;
}

Options parse_options(const std::string& text) { return parse_options(split_words(text)); }

std::string options_help() {
  return R"(In-situ options (volseg_insitu; also one "option value" per line in a --config file):
  --lo A --hi B          threshold range: a point is in the mask when A <= v <= B (as volseg segment); A and B
                         may be rules chosen each step from its histogram: otsu, multiotsu:K:I, pN
  --seed-lo A --seed-hi B   hysteresis: keep the mask's components (--connectivity) that hold a voxel in [A, B]
  --open R --close R     open, then close, the mask with a ball of radius R voxels (as volseg segment)
  --fill-holes           fill the mask's holes (background components that touch no face of the grid)
  --scratch DIR          the rules' and the operators' per-step scratch volumes (a folder every analysing rank
                         sees; default: beside --out, else the current folder)
  --every K              run every K-th published step (step % K == 0; default 1)
  --out PATTERN          a mask file per in-situ step, printf pattern of the step: masks/mask_%06d.nc;
                         or one CDF-2/CDF-5 file (no %d: masks.nc), a record appended per step along time
  --format F             raw | cdf2 | cdf5 | netcdf4 | hdf5 | zarr (default: from the extension; .nhdr, .nii, .vti,
                         .tif raw; .nc cdf5; .nc4 netcdf4; .hdf5 hdf5; .zarr zarr)
  --backend NAME --hint KEY=VALUE   the writer and its hints, as volseg segment
  --series FILE          ParaView's index of NetCDF masks, a .series file (default: masks.nc.series beside them)
  --stats FILE.csv       the time series: a CSV line per in-situ step, FILE.json with histograms at the end
  --image PATTERN        a PNG of the field with the mask per rendered step: images/frame_%06d.png
  --image-every K        render every K-th in-situ step (default 1)
  --size WxH --camera AZ,EL[,ZOOM]   the image
  --catalyst-script FILE a ParaView 5.11 Catalyst Python script (repeatable); its input is named 'input'
  --budget P%            keep the hook within P% of the simulation's time (skip or coarsen work)
  --var NAME             the field's name in files and in Catalyst (default field)
  --expr TEXT            threshold (write, label, render) a field computed from the published arrays,
                         named as published (the field by --var): 'sqrt(u*u + v*v)' (muparser, as volseg
                         segment --expr); NaN in an operand makes the point missing
  --where COND           the mask is where COND holds: 'v > 0.2 && u < 0.5' (--lo 1 --hi 1 implied)
  --label                count the mask's connected components across all ranks' blocks each step
                         (--stats gains objects and largest; as volseg label)
  --connectivity N       of --label: 6 (faces) | 18 (and edges) | 26 (and corners; default)
  --periodic AXES        of --label: axes (any of z, y, x) along which the domain wraps around: objects
                         across those faces are one, as volseg label --periodic
  --track FILE.csv       of --label: link the objects of consecutive labelled steps that share voxels
                         (t,id,next_id,overlap_voxels; FILE.steps.csv: births, deaths, merges, splits),
                         as 'volseg label --time A:B --track'; written at finalize
  --analysis-ranks K     the last K ranks of the hook's communicator analyse the steps the others publish
                         (they never enter the simulation's loop; the simulation runs on the first N-K)
  --async                a helper thread on each rank analyses; publish copies the step and returns
                         (MPI must be initialised with MPI_THREAD_MULTIPLE)
  --queue Q              of --async and --analysis-ranks: steps handed off and not yet analysed, per rank
                         (default 2; the copies it holds are the hook's memory on a simulation rank)
  --when-full block|skip when the queue is full: wait for the analysis (default; no step is lost), or leave the
                         step unanalysed (counted in the stats file and at finalize)
  --borrow               publish's arrays are not written until the next publish returns (nor freed before
                         finalize): read in place, no copy
  --force                replace existing outputs
  --verbose              a line per in-situ step on rank 0
  --config FILE          more options from FILE
)";
}

}  // namespace volseg::insitu
