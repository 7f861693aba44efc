// SPDX-License-Identifier: MIT
#include "volseg/io/registry.hpp"

#include "volseg/io/error.hpp"

namespace volseg::io {

void Registry::add(Backend backend) {
  for (const auto& existing : backends_)
    if (existing.name == backend.name) throw Error("backend " + backend.name + " registered twice");
  backends_.push_back(std::move(backend));
}

const Backend& Registry::get(const std::string& name) const {
  for (const auto& backend : backends_)
    if (backend.name == name) return backend;
  std::string known;
  for (const auto& backend : backends_) known += (known.empty() ? "" : ", ") + backend.name;
  throw Error("unknown backend '" + name + "' (known: " + known + ")");
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> result;
  for (const auto& backend : backends_) result.push_back(backend.name);
  return result;
}

const Registry& builtin_registry() {
  static const Registry registry = [] {
    Registry r;
    register_builtin(r);
    return r;
  }();
  return registry;
}

static const Backend& usable(const std::string& name) {
  const Backend& backend = builtin_registry().get(name);
  if (!backend.open) throw Error("backend " + name + " is not available: " + backend.unavailable);
  return backend;
}

std::unique_ptr<VolumeReader> open_reader(const std::string& backend, const std::string& path, const Comm& comm,
                                          const Hints& hints) {
  return usable(backend).open(path, comm, hints);
}

std::unique_ptr<VolumeWriter> create_writer(const std::string& backend, const CreateRequest& request,
                                            const Comm& comm, const Hints& hints) {
  return usable(backend).create(request, comm, hints);
}

}  // namespace volseg::io
