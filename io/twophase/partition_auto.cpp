// SPDX-License-Identifier: MIT
// Liao & Choudhary §V ("no single method wins"): pick per file system and per
// direction. Server-based locking (Lustre): group-cyclic for writes,
// aligned for reads. Token-based locking (GPFS): aligned for both. A local
// file system has no distributed locks to dodge, so the cheapest split,
// even, for both; it is the default when fs_profile says nothing.
#include "volseg/io/error.hpp"
#include "volseg/io/twophase/partitioner.hpp"

namespace volseg::io::twophase {
namespace {

class Auto final : public Partitioner {
 public:
  std::string name() const override { return "auto"; }
  std::string chosen() const override { return chosen_; }
  FileDomains partition(const Region& region, Direction direction, const PartitionContext& context) override {
    std::string method;
    if (context.fs_profile == "lustre")
      method = direction == Direction::write ? "group-cyclic" : "aligned";
    else if (context.fs_profile == "gpfs")
      method = "aligned";
    else if (context.fs_profile == "local")
      method = "even";
    else
      throw Error("twophase: fs_profile=" + context.fs_profile + " is not lustre, gpfs or local");
    if (method != current_name_) {
      current_ = make_partitioner(method);
      current_name_ = method;
    }
    chosen_ = "auto:" + method;
    return current_->partition(region, direction, context);
  }

 private:
  std::unique_ptr<Partitioner> current_;
  std::string current_name_, chosen_ = "auto";
};

}  // namespace

std::unique_ptr<Partitioner> make_auto_partitioner() { return std::make_unique<Auto>(); }

}  // namespace volseg::io::twophase
