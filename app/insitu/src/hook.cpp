// SPDX-License-Identifier: MIT
// The hook a simulation holds: the synchronous Pipeline on its ranks, or a
// Front that hands steps off to a helper thread (--async) or to analysis
// ranks (--analysis-ranks K), chosen by the options.
#include <chrono>

#include "offload.hpp"
#include "pipeline.hpp"
#include "volseg/insitu/insitu.hpp"
#include "volseg/io/error.hpp"

namespace volseg::insitu {

struct Hook::Impl {
  std::unique_ptr<detail::Pipeline> pipeline;  // synchronous
  std::unique_ptr<detail::Front> front;        // --async, or a simulation rank of --analysis-ranks
  std::vector<StepRecord> served;              // an analysis rank: what it analysed
  HandOff none;
  double create_seconds = 0;
};

Hook::Hook(MPI_Comm comm, Options options) : impl_(std::make_unique<Impl>()) {
  const auto start = std::chrono::steady_clock::now();
  auto& m = *impl_;
  if (options.analysis_ranks > 0)
    m.front = detail::start_analysis_ranks(comm, options, m.served, m.create_seconds);
  else if (options.async)
    m.front = detail::make_thread_front(comm, options);
  else
    m.pipeline = std::make_unique<detail::Pipeline>(comm, options);
  if (m.front || m.pipeline)
    m.create_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Hook::~Hook() = default;

const StepRecord& Hook::publish(const Field& field) {
  auto& m = *impl_;
  if (m.front) return m.front->publish(field);
  if (m.pipeline) return m.pipeline->publish(field);
  throw Error("in-situ publish on an analysis rank (it serves the simulation's ranks; skip the simulation there)");
}

void Hook::finalize() {
  auto& m = *impl_;
  if (m.front) m.front->finalize();
  if (m.pipeline) m.pipeline->finalize();
}

const std::vector<StepRecord>& Hook::records() const {
  const auto& m = *impl_;
  return m.front ? m.front->records() : m.pipeline ? m.pipeline->records() : m.served;
}

double Hook::create_seconds() const { return impl_->create_seconds; }

MPI_Comm Hook::simulation_comm() const {
  const auto& m = *impl_;
  return m.front ? m.front->comm().get() : m.pipeline ? m.pipeline->comm().get() : MPI_COMM_NULL;
}

bool Hook::analysis_rank() const { return !impl_->front && !impl_->pipeline; }

const HandOff& Hook::hand_off() const { return impl_->front ? impl_->front->hand_off() : impl_->none; }

}  // namespace volseg::insitu
