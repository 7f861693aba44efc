// SPDX-License-Identifier: MIT
// --analysis-ranks K: the last K ranks of the hook's communicator analyse
// what the first N-K publish.
//
// The analysis ranks cut the grid into K slabs along z (the first ones
// ceil(Z/K) planes thick, so a chunked mask has one writer per chunk), each
// with the published ghost layers. Every step, simulation rank 0 sends each
// analysis rank a header (the step, the grid, every simulation rank's
// block), and every simulation rank sends each analysis rank the part of its
// block that the slab holds (owned points only: a slab's ghost layers are
// other blocks' owned points, sent by their owners), one message per array,
// described by MPI subarray types at both ends (no packing). The sends come
// from a slot of the queue that holds a copy of the block (--queue slots),
// or from the caller's array itself (--borrow); a slot is free again when
// its sends complete. The analysis ranks run Pipeline on their slabs; their
// first error goes to every simulation rank at once (a message each, seen at
// the next publish), and their end (with the error of finalize, if any) at
// finalize.
#include <algorithm>
#include <deque>

#include <nlohmann/json.hpp>

#include "offload.hpp"
#include "volseg/io/error.hpp"
#include "volseg/io/watchdog.hpp"

namespace volseg::insitu::detail {
namespace {

enum Tag : int { header_tag = 1, error_tag = 2, end_tag = 3, data_tag = 10 };

// Analysis rank j's slab of the grid, of K.
io::Extent slab(const io::Index3& dims, int j, int k) {
  const std::int64_t thick = (dims[0] + k - 1) / k;
  const std::int64_t z0 = std::min<std::int64_t>(dims[0], thick * j);
  const std::int64_t z1 = std::min<std::int64_t>(dims[0], thick * (j + 1));
  return {{z0, 0, 0}, {z1 - z0, dims[1], dims[2]}};
}

io::Extent slab_stored(const io::Index3& dims, int j, int k, int ghost) {
  const io::Extent s = slab(dims, j, k);
  return s.empty() ? s : io::with_ghost(s, dims, ghost);
}

// `part` of a block stored over `whole`, as an MPI type of `size`-byte
// elements (committed; the caller frees it).
MPI_Datatype subarray(const io::Extent& whole, const io::Extent& part, std::size_t size) {
  MPI_Datatype element = MPI_DATATYPE_NULL, type = MPI_DATATYPE_NULL;
  check_mpi(MPI_Type_contiguous(static_cast<int>(size), MPI_BYTE, &element), "MPI_Type_contiguous");
  int sizes[3], subsizes[3], starts[3];
  for (int a = 0; a < 3; ++a) {
    sizes[a] = static_cast<int>(whole.count[a]);
    subsizes[a] = static_cast<int>(part.count[a]);
    starts[a] = static_cast<int>(part.offset[a] - whole.offset[a]);
  }
  check_mpi(MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, element, &type),
            "MPI_Type_create_subarray");
  check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
  check_mpi(MPI_Type_free(&element), "MPI_Type_free");
  return type;
}

void send_text(const std::string& text, int to, int tag, MPI_Comm comm) {
  check_mpi(MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, tag, comm), "MPI_Send");
}

std::string receive_text(int from, int tag, MPI_Comm comm) {
  MPI_Status status;
  check_mpi(MPI_Probe(from, tag, comm, &status), "MPI_Probe");
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_CHAR, &count), "MPI_Get_count");
  std::string text(static_cast<std::size_t>(count), '\0');
  check_mpi(MPI_Recv(text.data(), count, MPI_CHAR, from, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  return text;
}

nlohmann::json extent_json(const io::Extent& e) {
  return {e.offset[0], e.offset[1], e.offset[2], e.count[0], e.count[1], e.count[2]};
}
io::Extent extent_from(const nlohmann::json& j) {
  return {{j[0].get<std::int64_t>(), j[1].get<std::int64_t>(), j[2].get<std::int64_t>()},
          {j[3].get<std::int64_t>(), j[4].get<std::int64_t>(), j[5].get<std::int64_t>()}};
}

// A step's header: what the analysis ranks need to receive and analyse it.
nlohmann::json header(const Field& field, bool arrays, const std::vector<io::Extent>& boxes, double simulation,
                      double share) {
  nlohmann::json h{{"kind", "step"},
                   {"step", field.step},
                   {"time", field.time},
                   {"dims", {field.global_dims[0], field.global_dims[1], field.global_dims[2]}},
                   {"dtype", static_cast<int>(field.dtype)},
                   {"ghost", field.ghost},
                   {"spacing", field.spacing},
                   {"origin", field.origin},
                   {"source", field.source},
                   {"simulation", simulation},
                   {"share", share}};
  h["arrays"] = nlohmann::json::array();
  if (arrays)
    for (const auto& a : field.arrays) h["arrays"].push_back({a.name, static_cast<int>(a.dtype)});
  h["boxes"] = nlohmann::json::array();
  for (const auto& b : boxes) h["boxes"].push_back(extent_json(b));
  return h;
}

// The simulation ranks' side.
class RankFront : public Front {
 public:
  // all: the hook's communicator, the one the analysis ranks serve on.
  RankFront(MPI_Comm simulation, Comm all, const Options& options, int analysis)
      : Front(simulation, options),
        all_(std::move(all)),
        analysis_(analysis),
        first_analysis_(all_.size() - analysis) {}
  ~RankFront() override { finish_quietly(); }

 protected:
  bool full() override {
    take_back();
    return static_cast<int>(in_flight_.size()) >= queue_steps();
  }
  void wait_for_room() override {
    while (static_cast<int>(in_flight_.size()) >= queue_steps()) wait_oldest();
  }
  bool failed() override {
    int flag = 0;
    check_mpi(MPI_Iprobe(first_analysis_, error_tag, all_.get(), &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
    return flag != 0;
  }
  void hand_off(const Field& field, const std::vector<io::Extent>& boxes, double simulation, double share) override {
    const bool arrays = needs_arrays(options_);
    if (comm().rank() == 0) {
      const std::string text = header(field, arrays, boxes, simulation, share).dump();
      for (int j = 0; j < analysis_; ++j) send_text(text, first_analysis_ + j, header_tag, all_.get());
    }
    Slot slot;
    if (!spare_.empty()) slot = std::move(spare_.back()), spare_.pop_back();
    slot.requests.clear();
    // What is sent, stored over `from`: the caller's block, or the copy
    // of its owned points.
    const io::Extent from = options_.borrow ? stored_extent(field) : field.box;
    std::vector<const void*> arrays_of{field.values};
    std::vector<io::DType> types{field.dtype};
    if (arrays)
      for (const auto& a : field.arrays) arrays_of.push_back(a.values), types.push_back(a.dtype);
    if (!options_.borrow) {
      const auto t = std::chrono::steady_clock::now();
      stage(field, field.box, arrays, slot.staged);
      hand_off_.copy += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
      for (std::size_t i = 0; i < arrays_of.size(); ++i) arrays_of[i] = slot.staged.buffers[i].data();
    }
    for (int j = 0; j < analysis_; ++j) {
      const io::Extent part = io::intersect(field.box, slab_stored(field.global_dims, j, analysis_, field.ghost));
      if (part.empty()) continue;
      for (std::size_t i = 0; i < arrays_of.size(); ++i) {
        MPI_Datatype type = subarray(from, part, io::dtype_size(types[i]));
        MPI_Request request = MPI_REQUEST_NULL;
        check_mpi(
            MPI_Isend(arrays_of[i], 1, type, first_analysis_ + j, data_tag + static_cast<int>(i), all_.get(), &request),
            "MPI_Isend");
        check_mpi(MPI_Type_free(&type), "MPI_Type_free");
        slot.requests.push_back(request);
      }
    }
    std::uint64_t bytes = 0;
    for (const auto& b : slot.staged.buffers) bytes += b.size();
    if (options_.borrow) bytes = 0;
    hand_off_.step_bytes = std::max(hand_off_.step_bytes, bytes);
    hand_off_.bound_bytes = hand_off_.step_bytes * static_cast<std::uint64_t>(queue_steps());
    in_flight_.push_back(std::move(slot));
    std::uint64_t held_now = 0;
    for (const auto& s : in_flight_)
      if (!options_.borrow)
        for (const auto& b : s.staged.buffers) held_now += b.size();
    held(held_now);
  }
  void skip(const StepRecord& record) override {
    if (comm().rank() != 0) return;
    const std::string text =
        nlohmann::json{{"kind", "skip"}, {"step", record.step}, {"time", record.time}, {"action", record.action}}
            .dump();
    for (int j = 0; j < analysis_; ++j) send_text(text, first_analysis_ + j, header_tag, all_.get());
  }
  void release_borrowed(int keep) override {
    while (static_cast<int>(in_flight_.size()) > keep) wait_oldest();
  }
  std::string drain() override {
    while (!in_flight_.empty()) wait_oldest();
    if (comm().rank() == 0)
      for (int j = 0; j < analysis_; ++j)
        send_text(nlohmann::json{{"kind", "stop"}}.dump(), first_analysis_ + j, header_tag, all_.get());
    const std::string error = [&] {
      const io::watchdog::Phase phase("in situ: finalize, waiting for the analysis ranks");
      const io::watchdog::Waiting waiting;
      return receive_text(first_analysis_, end_tag, all_.get());
    }();
    // The first error, if the analysis sent one, arrived before its end.
    int flag = 0;
    check_mpi(MPI_Iprobe(first_analysis_, error_tag, all_.get(), &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
    if (flag) receive_text(first_analysis_, error_tag, all_.get());
    return error;
  }

 private:
  struct Slot {
    Staged staged;
    std::vector<MPI_Request> requests;
  };
  int queue_steps() const { return options_.borrow ? 2 : options_.queue > 0 ? options_.queue : 2; }
  // Frees the slots whose sends have completed, oldest first.
  void take_back() {
    while (!in_flight_.empty()) {
      auto& r = in_flight_.front().requests;
      int done = 0;
      check_mpi(MPI_Testall(static_cast<int>(r.size()), r.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (!done) return;
      recycle();
    }
  }
  void wait_oldest() {
    const io::watchdog::Phase phase("in situ: a step's hand-off to the analysis ranks");
    const io::watchdog::Waiting waiting;
    auto& r = in_flight_.front().requests;
    check_mpi(MPI_Waitall(static_cast<int>(r.size()), r.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    recycle();
  }
  void recycle() {
    if (spare_.size() < 2) spare_.push_back(std::move(in_flight_.front()));
    in_flight_.pop_front();
  }

  Comm all_;
  int analysis_, first_analysis_;
  std::deque<Slot> in_flight_;
  std::vector<Slot> spare_;
};

// The analysis ranks' loop: headers from simulation rank 0, blocks from
// every simulation rank, until "stop".
void serve(const Comm& all, Pipeline& pipeline, int analysis) {
  const int first = all.size() - analysis, j = all.rank() - first;
  std::vector<StepBuffer> buffers;
  std::string error;
  for (;;) {
    const auto h = [&] {
      // Idle while the simulation steps: waiting, not stuck.
      const io::watchdog::Phase phase("in situ: an analysis rank waiting for the next step");
      const io::watchdog::Waiting waiting;
      return nlohmann::json::parse(receive_text(0, header_tag, all.get()));
    }();
    io::watchdog::beat();
    const std::string kind = h.at("kind");
    if (kind == "stop") break;
    if (kind == "skip") {
      StepRecord record;
      record.step = h.at("step").get<std::int64_t>();
      record.time = h.at("time");
      record.action = h.at("action").get<std::string>();
      if (error.empty()) try {
          pipeline.record(record);
        } catch (const std::exception& e) {
          error = e.what();
        }
      continue;
    }
    Field field;
    field.step = h.at("step").get<std::int64_t>();
    field.time = h.at("time");
    for (int a = 0; a < 3; ++a) field.global_dims[a] = h.at("dims")[a];
    field.dtype = static_cast<io::DType>(h.at("dtype").get<int>());
    field.ghost = h.at("ghost").get<int>();
    field.spacing = h.at("spacing");
    field.origin = h.at("origin");
    field.source = h.at("source").get<std::string>();
    field.box = slab(field.global_dims, j, analysis);
    const io::Extent stored = slab_stored(field.global_dims, j, analysis, field.ghost);
    std::vector<io::DType> types{field.dtype};
    for (const auto& a : h.at("arrays")) {
      field.arrays.push_back({a[0].get<std::string>(), static_cast<io::DType>(a[1].get<int>()), nullptr});
      types.push_back(field.arrays.back().dtype);
    }
    buffers.resize(types.size());
    std::vector<MPI_Request> requests;
    const auto& boxes = h.at("boxes");
    for (std::size_t i = 0; i < types.size(); ++i) {
      buffers[i].resize(static_cast<std::size_t>(stored.voxels()) * io::dtype_size(types[i]));
      (i == 0 ? field.values : field.arrays[i - 1].values) = buffers[i].data();
      for (std::size_t s = 0; s < boxes.size(); ++s) {
        const io::Extent part = io::intersect(extent_from(boxes[s]), stored);
        if (part.empty()) continue;
        MPI_Datatype type = subarray(stored, part, io::dtype_size(types[i]));
        requests.emplace_back(MPI_REQUEST_NULL);
        check_mpi(MPI_Irecv(buffers[i].data(), 1, type, static_cast<int>(s), data_tag + static_cast<int>(i), all.get(),
                            &requests.back()),
                  "MPI_Irecv");
        check_mpi(MPI_Type_free(&type), "MPI_Type_free");
      }
    }
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    if (!error.empty()) continue;  // after an error, steps are taken in and dropped
    try {
      pipeline.analyse(field, h.at("simulation"), h.at("share"));
    } catch (const std::exception& e) {  // agreed by the analysis ranks
      error = e.what();
      if (j == 0)
        for (int s = 0; s < first; ++s) send_text(error, s, error_tag, all.get());
    }
  }
  try {
    pipeline.finalize();
  } catch (const std::exception& e) {
    if (error.empty()) error = e.what();
  }
  if (j == 0)
    for (int s = 0; s < first; ++s) send_text(error, s, end_tag, all.get());
}

}  // namespace

std::unique_ptr<Front> start_analysis_ranks(MPI_Comm comm, const Options& options, std::vector<StepRecord>& served,
                                            double& create_seconds) {
  Comm all(comm);
  const int k = options.analysis_ranks;
  collectively(all, [&] {
    if (k >= all.size())
      throw Error("in-situ option --analysis-ranks: " + std::to_string(k) + " of " + std::to_string(all.size()) +
                  " ranks leaves none to simulate (give K < N)");
  });
  const bool analysis = all.rank() >= all.size() - k;
  MPI_Comm part = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(all.get(), analysis ? 1 : 0, all.rank(), &part), "MPI_Comm_split");
  Comm own(part);
  check_mpi(MPI_Comm_free(&part), "MPI_Comm_free");
  std::unique_ptr<Pipeline> pipeline;
  collectively(all, [&] {
    if (analysis) pipeline = std::make_unique<Pipeline>(own.get(), options);
  });
  if (!analysis) return std::make_unique<RankFront>(own.get(), std::move(all), options, k);
  create_seconds = pipeline->create_seconds();
  serve(all, *pipeline, k);
  served = pipeline->records();
  return nullptr;
}

}  // namespace volseg::insitu::detail
