// SPDX-License-Identifier: MIT
// The explicit backend registry: one register_builtin() adds every backend,
// and a backend that was not compiled in still has an entry that says so.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "volseg/io/comm.hpp"
#include "volseg/io/hints.hpp"
#include "volseg/io/selection.hpp"
#include "volseg/io/volume.hpp"

namespace volseg::io {

struct Backend {
  // A backend that cannot honour a part of request.selection (a variable,
  // a step, a glob) refuses it (Selection::refuse_*).
  using OpenFn =
      std::function<std::unique_ptr<VolumeReader>(const OpenRequest& request, const Comm& comm, const Hints& hints)>;
  using CreateFn =
      std::function<std::unique_ptr<VolumeWriter>(const CreateRequest& request, const Comm& comm, const Hints& hints)>;
  std::string name;
  std::string formats;    // what it reads and writes, for --help and info
  std::string extension;  // of the path that names a volume: ".nhdr", ".nc"
  // Reads and writes raw volumes (a header, data at byte offsets): a raw
  // output keeps such an input's backend (writing_backend).
  bool raw_layout = false;
  std::string description;  // one line
  // Formats with named variables: "name(dim=length, ...) type" for each
  // variable of 3 or more dimensions (collective). Empty for raw backends.
  using ListFn = std::function<std::vector<std::string>(const std::string& path, const Comm& comm)>;
  ListFn list_variables;
  // The keys open and create read, each with its role (keys passed through
  // to a library, like cb_* to MPI_Info, need not be listed). A listed key
  // given to the other role is refused: "hint append= is for writers (pnetcdf)".
  std::vector<KnownHint> hints;
  OpenFn open;  // empty when not compiled in
  CreateFn create;
  std::string unavailable;  // why open/create are empty ("built without liburing")
};

class Registry {
 public:
  void add(Backend backend);
  // Throws volseg::Error listing the known names when name is unknown.
  const Backend& get(const std::string& name) const;
  const std::vector<Backend>& all() const { return backends_; }
  std::vector<std::string> names() const;

 private:
  std::vector<Backend> backends_;
};

// Throws volseg::Error if the serial netCDF library, not the parallel one,
// answers netCDF calls in this process (docs/dependencies.md, "Two netCDF libraries").
void check_parallel_netcdf();

// Every backend volseg has, in one place.
void register_builtin(Registry& registry);
// The process-wide registry with the built-in backends.
const Registry& builtin_registry();

// The hints among `items` ("key=value") that `role` of the named backend
// may take: those its other role alone knows are dropped. For hints given to
// both roles at once (segment --hint); unknown keys stay, to be refused.
std::vector<std::string> hints_for(const std::string& backend, Role role, const std::vector<std::string>& items);

// Collective over comm. Opens request.path with the named backend, reading
// request.selection; every hint must be known to the backend's readers.
std::unique_ptr<VolumeReader> open_reader(const std::string& backend, const OpenRequest& request, const Comm& comm,
                                          const Hints& hints = {});
std::unique_ptr<VolumeWriter> create_writer(const std::string& backend, const CreateRequest& request, const Comm& comm,
                                            const Hints& hints = {});

}  // namespace volseg::io
