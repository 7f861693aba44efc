// SPDX-License-Identifier: MIT
// The C API over Hook: exceptions become error codes that every rank shares
// (Hook's calls agree on errors), and a failed hook stays disabled.
#include "volseg/insitu/volseg_insitu.h"

#include <memory>
#include <string>

#include "volseg/insitu/insitu.hpp"
#include "volseg/io/error.hpp"

struct volseg_insitu {
  std::unique_ptr<volseg::insitu::Hook> hook;
  std::string error;
};

namespace {

template <class Fn>
int guarded(volseg_insitu* handle, Fn&& fn) {
  if (!handle->hook) return VOLSEG_INSITU_DISABLED;
  try {
    fn(*handle->hook);
    handle->error.clear();
    return VOLSEG_INSITU_OK;
  } catch (const std::exception& e) {
    handle->error = e.what();
  } catch (...) {
    handle->error = "unknown error";
  }
  // The hook's collective calls have agreed: every rank is here. Release
  // its MPI and VTK objects now, quietly (the error is already said).
  try {
    handle->hook->finalize();
  } catch (...) {
  }
  handle->hook.reset();
  return VOLSEG_INSITU_ERROR;
}

}  // namespace

extern "C" {

int volseg_insitu_create(MPI_Comm comm, const char* options, volseg_insitu** hook) {
  if (!hook) return VOLSEG_INSITU_ERROR;
  auto* handle = new volseg_insitu;
  *hook = handle;
  try {
    handle->hook = std::make_unique<volseg::insitu::Hook>(comm, volseg::insitu::parse_options(options ? options : ""));
    return VOLSEG_INSITU_OK;
  } catch (const std::exception& e) {
    handle->error = e.what();
  }
  return VOLSEG_INSITU_ERROR;
}

int volseg_insitu_create_split(MPI_Comm comm, const char* options, volseg_insitu** hook, MPI_Comm* simulation) {
  if (!simulation) return VOLSEG_INSITU_ERROR;
  const int status = volseg_insitu_create(comm, options, hook);
  const MPI_Comm own = status == VOLSEG_INSITU_OK ? (*hook)->hook->simulation_comm() : comm;
  *simulation = MPI_COMM_NULL;
  // Collective over the simulation's ranks (or all of comm after a failure).
  if (own != MPI_COMM_NULL && MPI_Comm_dup(own, simulation) != MPI_SUCCESS) {
    (*hook)->error = "volseg_insitu_create_split: MPI_Comm_dup failed";
    return VOLSEG_INSITU_ERROR;
  }
  return status;
}

int volseg_insitu_create_split_f(MPI_Fint comm, const char* options, volseg_insitu** hook, MPI_Fint* simulation) {
  if (!simulation) return VOLSEG_INSITU_ERROR;
  MPI_Comm own = MPI_COMM_NULL;
  const int status = volseg_insitu_create_split(MPI_Comm_f2c(comm), options, hook, &own);
  *simulation = MPI_Comm_c2f(own);
  return status;
}

int volseg_insitu_create_f(MPI_Fint comm, const char* options, volseg_insitu** hook) {
  return volseg_insitu_create(MPI_Comm_f2c(comm), options, hook);
}

int volseg_insitu_publish(volseg_insitu* hook, int64_t step, double time, const int64_t global_dims[3],
                          const int64_t offset[3], const int64_t count[3], int ghost, const char* dtype,
                          const void* values) {
  return volseg_insitu_publish_arrays(hook, step, time, global_dims, offset, count, ghost, dtype, values, 0, nullptr,
                                      nullptr, nullptr);
}

int volseg_insitu_publish_arrays(volseg_insitu* hook, int64_t step, double time, const int64_t global_dims[3],
                                 const int64_t offset[3], const int64_t count[3], int ghost, const char* dtype,
                                 const void* values, int n, const char* const names[], const char* const dtypes[],
                                 const void* const arrays[]) {
  if (!hook) return VOLSEG_INSITU_DISABLED;
  return guarded(hook, [&](volseg::insitu::Hook& h) {
    if (!global_dims || !offset || !count || !dtype) throw volseg::Error("in-situ publish: a null argument");
    if (n < 0 || (n > 0 && (!names || !dtypes || !arrays)))
      throw volseg::Error("in-situ publish: " + std::to_string(n) + " more arrays and a null list of them");
    auto parse = [](const char* text) {
      auto type = text ? volseg::io::parse_dtype(text) : std::nullopt;
      if (!type) throw volseg::Error(std::string("in-situ publish: unknown data type '") + (text ? text : "") + "'");
      return *type;
    };
    volseg::insitu::Field field;
    field.step = step;
    field.time = time;
    for (int a = 0; a < 3; ++a) {
      field.global_dims[a] = global_dims[a];
      field.box.offset[a] = offset[a];
      field.box.count[a] = count[a];
    }
    field.ghost = ghost;
    field.dtype = parse(dtype);
    field.values = values;
    for (int i = 0; i < n; ++i) {
      if (!names[i] || !*names[i]) throw volseg::Error("in-situ publish: array " + std::to_string(i) + " has no name");
      field.arrays.push_back({names[i], parse(dtypes[i]), arrays[i]});
    }
    h.publish(field);
  });
}

int volseg_insitu_finalize(volseg_insitu* hook) {
  if (!hook) return VOLSEG_INSITU_OK;
  const int status = hook->hook ? guarded(hook, [](volseg::insitu::Hook& h) { h.finalize(); }) : VOLSEG_INSITU_OK;
  delete hook;
  return status;
}

const char* volseg_insitu_last_error(const volseg_insitu* hook) { return hook ? hook->error.c_str() : ""; }

}  // extern "C"
