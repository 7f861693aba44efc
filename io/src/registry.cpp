// SPDX-License-Identifier: MIT
#include "volseg/io/registry.hpp"

#include "volseg/io/error.hpp"
#include "volseg/version.hpp"

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

namespace {

// The role a backend lists key for; nullptr when it does not list it.
const HintFor* listed_role(const Backend& backend, const std::string& key) {
  for (const auto& known : backend.hints)
    if (known.key == key) return &known.role;
  return nullptr;
}

bool for_other_role(const Backend& backend, Role role, const std::string& key) {
  const HintFor* listed = listed_role(backend, key);
  return listed && *listed == (role == Role::reader ? HintFor::writers : HintFor::readers);
}

void refuse_other_roles_hints(const Backend& backend, Role role, const Hints& hints) {
  for (const auto& key : hints.keys())
    if (for_other_role(backend, role, key))
      throw Error("hint " + key + "= is for " + (role == Role::reader ? "writers" : "readers") + " (" + backend.name +
                  ")");
}

}  // namespace

std::vector<std::string> hints_for(const std::string& backend, Role role, const std::vector<std::string>& items) {
  const Backend& known = builtin_registry().get(backend);
  std::vector<std::string> result;
  for (const auto& item : items)
    if (!for_other_role(known, role, item.substr(0, item.find('=')))) result.push_back(item);
  return result;
}

std::unique_ptr<VolumeReader> open_reader(const std::string& backend, const OpenRequest& request, const Comm& comm,
                                          const Hints& hints) {
  const Backend& chosen = usable(backend);
  refuse_other_roles_hints(chosen, Role::reader, hints);
  return chosen.open(request, comm, hints);
}

std::unique_ptr<VolumeWriter> create_writer(const std::string& backend, const CreateRequest& request, const Comm& comm,
                                            const Hints& hints) {
  const Backend& chosen = usable(backend);
  refuse_other_roles_hints(chosen, Role::writer, hints);
  // Every output says which volseg made it (an input's older stamp, copied
  // with its attributes, is replaced).
  CreateRequest stamped = request;
  stamped.info.attributes["volseg_version"] = version();
  return chosen.create(stamped, comm, hints);
}

}  // namespace volseg::io
