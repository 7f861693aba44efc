// SPDX-License-Identifier: MIT
#include "catalyst.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <utility>

#include <vtkAOSDataArrayTemplate.h>
#include <vtkCPDataDescription.h>
#include <vtkCPInputDataDescription.h>
#include <vtkCPPipeline.h>
#include <vtkCPProcessor.h>
#include <vtkCPPythonScriptV2Pipeline.h>
#include <vtkCallbackCommand.h>
#include <vtkCellData.h>
#include <vtkCommand.h>
#include <vtkDataSetAttributes.h>
#include <vtkImageData.h>

#include <vtkMPI.h>
#include <vtkNew.h>
#include <vtkObjectFactory.h>
#include <vtkPointData.h>
#include <vtkPythonInterpreter.h>
#include <vtkSmartPointer.h>
#include <vtkUnsignedCharArray.h>
#include <csignal>

#include "volseg/io/dtype_dispatch.hpp"
#include "volseg/io/error.hpp"

namespace volseg::insitu::detail {
namespace {

// volseg's own pipeline: the segmentation, statistics, mask write and image
// of the hook, run where Catalyst runs pipelines. Its work comes from the
// hook for each step; an exception is kept and handed back, not thrown
// through VTK.
class VolsegPipeline : public vtkCPPipeline {
 public:
  static VolsegPipeline* New();
  vtkTypeMacro(VolsegPipeline, vtkCPPipeline)

      const CatalystStep* step = nullptr;
  std::exception_ptr error;
  std::string mask_name = "mask";

  int RequestDataDescription(vtkCPDataDescription* description) override {
    if (!step || !step->run_volseg) return 0;
    auto* input = description->GetInputDescriptionByName("input");
    input->AllFieldsOn();
    input->GenerateMeshOn();
    return 1;
  }

  int CoProcess(vtkCPDataDescription* description) override {
    try {
      const std::uint8_t* mask = step->volseg();
      auto* grid = vtkImageData::SafeDownCast(description->GetInputDescriptionByName("input")->GetGrid());
      if (mask && grid) {  // the scripts see the mask beside the field, over the hook's buffer
        vtkNew<vtkUnsignedCharArray> array;
        array->SetName(mask_name.c_str());
        array->SetArray(const_cast<std::uint8_t*>(mask), step->stored.voxels(), 1);
        grid->GetPointData()->AddArray(array);
      }
      return 1;
    } catch (...) {
      error = std::current_exception();
      return 0;
    }
  }

 protected:
  VolsegPipeline() = default;
};
vtkStandardNewMacro(VolsegPipeline);

// A Catalyst Python script behind a gate: the hook's budget can hold it
// back, and a Python exception (which the script pipeline only prints) is
// counted from the interpreter's error stream.
class ScriptPipeline : public vtkCPPipeline {
 public:
  static ScriptPipeline* New();
  vtkTypeMacro(ScriptPipeline, vtkCPPipeline)

      vtkSmartPointer<vtkCPPythonScriptV2Pipeline> script;
  std::string path;
  bool enabled = false;
  bool failed = false;                   // this step
  std::string* python_errors = nullptr;  // what Python wrote to stderr
  std::string last_error;

  int RequestDataDescription(vtkCPDataDescription* description) override {
    if (!enabled) return 0;
    python_errors->clear();
    const int wanted = script->RequestDataDescription(description);
    note_python_errors();
    return wanted;
  }
  int CoProcess(vtkCPDataDescription* description) override {
    python_errors->clear();
    script->CoProcess(description);
    note_python_errors();
    return 1;
  }
  int Finalize() override {
    python_errors->clear();
    script->Finalize();
    note_python_errors();
    return 1;
  }

 protected:
  ScriptPipeline() = default;

 private:
  // A traceback of the script's own is a failure. ParaView 5.11's Python log
  // handler trips over its own debug messages ("--- Logging error ---"
  // blocks, ending at "Arguments: ..."): noise, not the script's fault.
  void note_python_errors() {
    std::string text;
    std::size_t at = 0;
    const std::string& all = *python_errors;
    while (at < all.size()) {
      const auto noise = all.find("--- Logging error ---", at);
      text += all.substr(at, noise == std::string::npos ? std::string::npos : noise - at);
      if (noise == std::string::npos) break;
      const auto arguments = all.find("\nArguments:", noise);
      const auto end = arguments == std::string::npos ? std::string::npos : all.find('\n', arguments + 1);
      at = end == std::string::npos ? all.size() : end + 1;
    }
    if (text.find("Traceback") == std::string::npos) return;
    if (std::getenv("VOLSEG_INSITU_DEBUG")) std::fprintf(stderr, "[python]\n%s\n[end]\n", text.c_str());
    failed = true;
    // The exception's own line is the last non-empty one of the traceback.
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    const auto newline = text.rfind('\n');
    last_error = std::filesystem::path(path).filename().string() + ": " +
                 (newline == std::string::npos ? text : text.substr(newline + 1));
  }
};
vtkStandardNewMacro(ScriptPipeline);

vtkSmartPointer<vtkDataArray> wrap_field(io::DType dtype, const void* values, vtkIdType count) {
  return io::visit_dtype(dtype, [&]<class T>(std::type_identity<T>) -> vtkSmartPointer<vtkDataArray> {
    // std::int64_t is long here; VTK's own 64-bit type is long long (vtkTypeInt64,
    // VTK_LONG_LONG), the array type Catalyst scripts have always been given.
    using Value = std::conditional_t<std::is_same_v<T, std::int64_t>, vtkTypeInt64,
                                     std::conditional_t<std::is_same_v<T, std::uint64_t>, vtkTypeUInt64, T>>;
    auto array = vtkSmartPointer<vtkAOSDataArrayTemplate<Value>>::New();
    // save = 1: the simulation owns the memory; VTK never frees or writes it.
    array->SetArray(static_cast<Value*>(const_cast<void*>(values)), count, 1);
    return array;
  });
}

// Points and cells outside the box this rank owns are marked duplicate, so
// ParaView's filters and writers count each once: a cell belongs to the rank
// that owns its lowest corner.
void mark_ghosts(vtkImageData* grid, const io::Extent& owned, const io::Extent& stored) {
  const auto& o = owned;
  const auto& s = stored;
  auto outside = [&](std::int64_t z, std::int64_t y, std::int64_t x) {
    return z < o.offset[0] || z >= o.offset[0] + o.count[0] || y < o.offset[1] || y >= o.offset[1] + o.count[1] ||
           x < o.offset[2] || x >= o.offset[2] + o.count[2];
  };
  vtkNew<vtkUnsignedCharArray> points;
  points->SetName(vtkDataSetAttributes::GhostArrayName());
  points->SetNumberOfTuples(s.voxels());
  vtkNew<vtkUnsignedCharArray> cells;
  cells->SetName(vtkDataSetAttributes::GhostArrayName());
  const std::int64_t cz = std::max<std::int64_t>(s.count[0] - 1, 1), cy = std::max<std::int64_t>(s.count[1] - 1, 1),
                     cx = std::max<std::int64_t>(s.count[2] - 1, 1);
  cells->SetNumberOfTuples(cz * cy * cx);
  vtkIdType p = 0, c = 0;
  for (std::int64_t z = 0; z < s.count[0]; ++z)
    for (std::int64_t y = 0; y < s.count[1]; ++y)
      for (std::int64_t x = 0; x < s.count[2]; ++x) {
        const bool ghost = outside(s.offset[0] + z, s.offset[1] + y, s.offset[2] + x);
        points->SetValue(p++, ghost ? vtkDataSetAttributes::DUPLICATEPOINT : 0);
        if (z < cz && y < cy && x < cx) cells->SetValue(c++, ghost ? vtkDataSetAttributes::DUPLICATECELL : 0);
      }
  grid->GetPointData()->AddArray(points);
  grid->GetCellData()->AddArray(cells);
}

void on_python_error(vtkObject*, unsigned long, void* client, void* call) {
  if (call) *static_cast<std::string*>(client) += static_cast<const char*>(call);
}

}  // namespace

// The simulation owns its signals (a scheduler's SIGTERM or SIGUSR1).
// Catalyst's start-up installs VTK's logging handlers (and Python may add its
// own), which print "Loguru caught a signal" over a job's last line and
// change what a signal does: the handlers found before are put back after.
class KeepSignalHandlers {
 public:
  KeepSignalHandlers() {
    for (std::size_t i = 0; i < std::size(signals_); ++i) ::sigaction(signals_[i], nullptr, &saved_[i]);
  }
  ~KeepSignalHandlers() {
    for (std::size_t i = 0; i < std::size(signals_); ++i) ::sigaction(signals_[i], &saved_[i], nullptr);
  }
  KeepSignalHandlers(const KeepSignalHandlers&) = delete;
  KeepSignalHandlers& operator=(const KeepSignalHandlers&) = delete;

 private:
  static constexpr int signals_[] = {SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGINT, SIGSEGV, SIGTERM, SIGUSR1, SIGUSR2};
  struct sigaction saved_[std::size(signals_)];
};

// ParaView initialises Catalyst once a process: vtkCPProcessor::Finalize
// ends ParaView's process module, which cannot start again (a second
// Initialize aborts). So the first hook of a process initialises one
// processor on a duplicate of its communicator, and every hook adds its
// pipelines to it and takes them out at its finalize (running the scripts'
// own finalize). The processor lives until the process ends: never
// destroyed, as MPI is finalized by then.
struct CatalystProcess {
  vtkCPProcessor* processor = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
};

CatalystProcess& catalyst_process() {
  static auto* process = new CatalystProcess;  // never destroyed: see above
  return *process;
}

// Collective over comm: the process's processor, initialised by the first
// caller. Every rank has one afterwards, or none (the error on every rank).
vtkCPProcessor* shared_processor(const Comm& comm) {
  CatalystProcess& process = catalyst_process();
  int mine = process.processor ? 1 : 0, all = 0;
  check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm.get()), "MPI_Allreduce");
  if (all) {
    int same = MPI_UNEQUAL;
    check_mpi(MPI_Comm_compare(comm.get(), process.comm, &same), "MPI_Comm_compare");
    if (same != MPI_IDENT && same != MPI_CONGRUENT)
      throw Error(
          "Catalyst runs on one communicator a process (ParaView initialises it once): this hook's "
          "communicator is not the first hook's");
    return process.processor;
  }
  if (process.processor)  // some ranks have one and others not: cannot happen after the agreement below
    throw Error("internal error: Catalyst initialised on some ranks only");
  check_mpi(MPI_Comm_dup(comm.get(), &process.comm), "MPI_Comm_dup");
  auto* processor = vtkCPProcessor::New();
  vtkMPICommunicatorOpaqueComm opaque(&process.comm);
  int ok = processor->Initialize(opaque) ? 1 : 0, everywhere = 0;
  check_mpi(MPI_Allreduce(&ok, &everywhere, 1, MPI_INT, MPI_MIN, comm.get()), "MPI_Allreduce");
  if (!everywhere) {
    // ParaView cannot initialise again in this process; later hooks fail the same way.
    processor->Delete();
    MPI_Comm_free(&process.comm);
    throw Error("Catalyst (vtkCPProcessor) did not initialise");
  }
  process.processor = processor;
  return process.processor;
}

struct Catalyst::Impl {
  std::string variable;
  vtkCPProcessor* processor = nullptr;  // the process's (shared_processor)
  vtkNew<VolsegPipeline> volseg;
  std::vector<vtkSmartPointer<ScriptPipeline>> scripts;
  vtkSmartPointer<vtkPythonInterpreter> interpreter;  // an instance, to hear Python's errors
  vtkNew<vtkCallbackCommand> error_callback;
  std::string python_errors;
  bool finalized = false;
};

Catalyst::Catalyst(const Comm& comm, const std::vector<std::string>& scripts, std::string variable)
    : impl_(std::make_unique<Impl>()) {
  const KeepSignalHandlers keep;
  auto& m = *impl_;
  m.variable = std::move(variable);
  // The processor outlives this hook: a failure here (a script that does
  // not load) takes this hook's pipelines out of it before the error goes up.
  try {
    collectively(comm, [&] {
      m.processor = shared_processor(comm);
      m.processor->AddPipeline(m.volseg);
      if (scripts.empty()) return;
      m.interpreter = vtkSmartPointer<vtkPythonInterpreter>::New();
      m.error_callback->SetCallback(on_python_error);
      m.error_callback->SetClientData(&m.python_errors);
      m.interpreter->AddObserver(vtkCommand::ErrorEvent, m.error_callback);
    });
    load_scripts(comm, scripts);
  } catch (...) {
    if (m.processor) {
      for (auto& script : m.scripts) m.processor->RemovePipeline(script);
      m.processor->RemovePipeline(m.volseg);
    }
    m.scripts.clear();
    m.processor = nullptr;
    m.finalized = true;
    if (m.interpreter) m.interpreter->RemoveAllObservers();
    throw;
  }
}

void Catalyst::load_scripts(const Comm& comm, const std::vector<std::string>& scripts) {
  auto& m = *impl_;
  for (const auto& path : scripts) {
    collectively(comm, [&] {
      if (!std::filesystem::is_regular_file(path)) throw Error("Catalyst script " + path + ": no such file");
      auto gate = vtkSmartPointer<ScriptPipeline>::New();
      gate->path = path;
      gate->python_errors = &m.python_errors;
      gate->script = vtkSmartPointer<vtkCPPythonScriptV2Pipeline>::New();
      m.python_errors.clear();
      if (!gate->script->Initialize(path.c_str()))
        throw Error("Catalyst script " + path + " could not be loaded: " + m.python_errors);
      m.processor->AddPipeline(gate);
      m.scripts.push_back(gate);
    });
  }
}

Catalyst::~Catalyst() {
  try {
    finalize();
  } catch (...) {  // finalize() is called explicitly on the normal path; this is for unwinding
  }
}

bool Catalyst::has_scripts() const { return !impl_->scripts.empty(); }

ScriptsOutcome Catalyst::coprocess(const CatalystStep& step) {
  auto& m = *impl_;
  const Field& field = *step.field;
  vtkNew<vtkCPDataDescription> description;
  description->AddInput("input");
  description->SetTimeData(field.time, static_cast<vtkIdType>(field.step));
  m.volseg->step = &step;
  m.volseg->error = nullptr;
  for (auto& script : m.scripts) {
    script->enabled = step.run_scripts;
    script->failed = false;
    script->last_error.clear();
  }
  ScriptsOutcome outcome;
  if (!m.processor->RequestDataDescription(description)) {
    for (auto& script : m.scripts) script->enabled = false;
    return outcome;
  }

  // The channel "input": this rank's points with their ghost layers, over
  // the simulation's memory. The whole extent is the global grid (else
  // parallel extracts take rank 0's piece for the whole).
  vtkNew<vtkImageData> grid;
  const auto& s = step.stored;
  const auto& d = field.global_dims;
  grid->SetExtent(static_cast<int>(s.offset[2]), static_cast<int>(s.offset[2] + s.count[2] - 1),
                  static_cast<int>(s.offset[1]), static_cast<int>(s.offset[1] + s.count[1] - 1),
                  static_cast<int>(s.offset[0]), static_cast<int>(s.offset[0] + s.count[0] - 1));
  grid->SetSpacing(field.spacing[0], field.spacing[1], field.spacing[2]);
  grid->SetOrigin(field.origin[0], field.origin[1], field.origin[2]);
  auto values = wrap_field(field.dtype, field.values, s.voxels());
  values->SetName(m.variable.c_str());
  grid->GetPointData()->AddArray(values);
  grid->GetPointData()->SetActiveScalars(m.variable.c_str());
  // Only the scripts read the grid: mark its ghosts when they run.
  if (step.run_scripts && !(field.box == s)) mark_ghosts(grid, field.box, s);
  auto* input = description->GetInputDescriptionByName("input");
  input->SetGrid(grid);
  input->SetWholeExtent(0, static_cast<int>(d[2] - 1), 0, static_cast<int>(d[1] - 1), 0, static_cast<int>(d[0] - 1));

  m.processor->CoProcess(description);
  m.volseg->step = nullptr;
  for (auto& script : m.scripts) script->enabled = false;  // another hook of the process coprocesses alone
  if (m.volseg->error) std::rethrow_exception(std::exchange(m.volseg->error, nullptr));
  for (auto& script : m.scripts) {
    outcome.errors += script->failed ? 1 : 0;
    if (outcome.first_error.empty()) outcome.first_error = script->last_error;
  }
  return outcome;
}

void Catalyst::finalize() {
  auto& m = *impl_;
  if (m.finalized) return;
  m.finalized = true;
  if (m.processor) {
    // What vtkCPProcessor::Finalize does for each pipeline, for this hook's
    // alone; the processor stays for the process's next hook.
    for (auto& script : m.scripts) {
      script->enabled = true;
      script->Finalize();
      m.processor->RemovePipeline(script);
    }
    m.processor->RemovePipeline(m.volseg);
  }
  m.processor = nullptr;
  m.scripts.clear();
  if (m.interpreter) m.interpreter->RemoveAllObservers();
}

}  // namespace volseg::insitu::detail
