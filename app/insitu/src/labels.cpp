// SPDX-License-Identifier: MIT
// --label: the in-situ step's connected components (docs/label.md).
#include <algorithm>
#include <exception>

#include "labels.hpp"
#include "volseg/io/error.hpp"
#include "volseg/segment/label.hpp"

namespace volseg::insitu::detail {

// The mask's objects across the ranks' blocks, by segment's labeling with a
// brick per rank (blocks need not form a grid: neighbours by contact).
void count_objects(const Comm& comm, const Field& field, const std::vector<std::uint8_t>& mask, int connectivity,
                   const std::array<bool, 3>& periodic, StepRecord& record, std::vector<std::uint64_t>* ids) {
  std::int64_t mine[6];
  for (int a = 0; a < 3; ++a) mine[a] = field.box.offset[a], mine[3 + a] = field.box.count[a];
  std::vector<std::int64_t> all(static_cast<std::size_t>(6 * comm.size()));
  check_mpi(MPI_Allgather(mine, 6, MPI_INT64_T, all.data(), 6, MPI_INT64_T, comm.get()), "MPI_Allgather");
  segment::BrickMap map;
  map.dims = field.global_dims;
  map.periodic = periodic;
  for (int r = 0; r < comm.size(); ++r) {
    io::Extent box;
    for (int a = 0; a < 3; ++a)
      box.offset[a] = all[static_cast<std::size_t>(6 * r + a)],
      box.count[a] = all[static_cast<std::size_t>(6 * r + 3 + a)];
    if (box.empty()) continue;
    map.bricks.push_back(box);
    map.owner.push_back(r);
  }
  std::exception_ptr error;
  std::uint64_t figures[2] = {0, 0};
  try {
    segment::Labeling labeling(comm, std::move(map), connectivity, false);
    if (!labeling.mine().empty()) labeling.add(labeling.mine().front(), mask.data());
    const auto summary = labeling.finish(0, false);
    if (ids) {
      ids->assign(static_cast<std::size_t>(field.box.voxels()), 0);
      if (!labeling.mine().empty()) labeling.paint(labeling.mine().front(), mask.data(), ids->data());
    }
    figures[0] = summary.objects;
    figures[1] = summary.largest;
  } catch (...) {
    error = std::current_exception();
  }
  agree(comm, error);
  record.objects = figures[0];
  record.largest = figures[1];
}

}  // namespace volseg::insitu::detail
