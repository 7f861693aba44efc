/* SPDX-License-Identifier: MIT
 * volseg's in-situ hook for C and Fortran codes (the C++ API is
 * volseg/insitu/insitu.hpp). Every function is collective over the
 * communicator given at create, returns VOLSEG_INSITU_OK (0) or an error
 * code that is the same on every rank, and never aborts the process: a
 * simulation that gets an error can carry on without the hook (call
 * volseg_insitu_finalize, or keep publishing: a failed hook answers
 * VOLSEG_INSITU_DISABLED and does nothing) or stop, as it chooses.
 *
 *   volseg_insitu* hook = NULL;
 *   if (volseg_insitu_create(MPI_COMM_WORLD, "--lo 0.2 --hi 1 --every 5 --out mask_%06d.nhdr", &hook) != 0)
 *     fprintf(stderr, "%s\n", volseg_insitu_last_error(hook));
 *   for (step...) { ...; volseg_insitu_publish(hook, step, t, dims, offset, count, ghost, "f32", field); }
 *   volseg_insitu_finalize(hook);
 */
#ifndef VOLSEG_INSITU_H
#define VOLSEG_INSITU_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  VOLSEG_INSITU_OK = 0,
  VOLSEG_INSITU_ERROR = 1,   /* this call failed; the message says why; the hook is now disabled */
  VOLSEG_INSITU_DISABLED = 2 /* the hook failed earlier and does nothing */
};

typedef struct volseg_insitu volseg_insitu;

/* Collective over comm (a duplicate is used). options: the hook's
 * command-line options in one string ("--lo 0 --hi 1 --config FILE ...";
 * `volseg-sim --insitu-help` lists them). On failure *hook is still set,
 * to a disabled hook whose last_error says why; finalize frees it. */
int volseg_insitu_create(MPI_Comm comm, const char* options, volseg_insitu** hook);
/* The same for Fortran, with the communicator as MPI_Fint. */
int volseg_insitu_create_f(MPI_Fint comm, const char* options, volseg_insitu** hook);

/* Collective over comm. As volseg_insitu_create, and where the options give
 * --analysis-ranks K (the last K ranks of comm analyse what the others
 * publish): on a simulation rank *simulation is a new communicator of the
 * simulation's N-K ranks, to run the simulation on (free it with
 * MPI_Comm_free); on an analysis rank the call serves the steps until the
 * simulation's ranks finalize, then returns with *simulation set to
 * MPI_COMM_NULL: skip the simulation there, and finalize the hook (as
 * damaris_start does for Damaris's dedicated cores). Without
 * --analysis-ranks, *simulation is a duplicate of comm. On failure
 * *simulation is a duplicate of comm on every rank, so the simulation can
 * go on without the hook. */
int volseg_insitu_create_split(MPI_Comm comm, const char* options, volseg_insitu** hook, MPI_Comm* simulation);
/* The same for Fortran: the communicators as MPI_Fint (MPI_COMM_NULL's
 * handle on an analysis rank). */
int volseg_insitu_create_split_f(MPI_Fint comm, const char* options, volseg_insitu** hook, MPI_Fint* simulation);

/* Collective. One step of the simulation's field. Dimensions are in the
 * order z, y, x (x fastest, C order; a Fortran array u(x,y,z) is the same
 * memory). global_dims: the whole grid; offset/count: the points this rank
 * owns (the ranks' boxes must tile the grid). values: count + 2*ghost points
 * per axis, except that no ghost layer exists beyond the grid's faces
 * (VTK's convention for ghost levels), x fastest. The array is wrapped, not
 * copied, and read only during the call (--async and --analysis-ranks copy
 * it into their queue; with --borrow they read it until the next publish
 * returns instead). dtype: "u8", "i16", "u16", "i32",
 * "f32" or "f64". */
int volseg_insitu_publish(volseg_insitu* hook, int64_t step, double time, const int64_t global_dims[3],
                          const int64_t offset[3], const int64_t count[3], int ghost, const char* dtype,
                          const void* values);

/* Collective. As volseg_insitu_publish, with n more arrays over the same
 * points in the same layout (names[i], dtypes[i], arrays[i]), which the
 * options --expr and --where may name beside the field (named by --var). */
int volseg_insitu_publish_arrays(volseg_insitu* hook, int64_t step, double time, const int64_t global_dims[3],
                                 const int64_t offset[3], const int64_t count[3], int ghost, const char* dtype,
                                 const void* values, int n, const char* const names[], const char* const dtypes[],
                                 const void* const arrays[]);

/* Collective. Finishes outputs (series index, time series), frees the hook.
 * Call it before MPI_Finalize. NULL is accepted. */
int volseg_insitu_finalize(volseg_insitu* hook);

/* The last error's one-line message ("" when none); valid until the next call. */
const char* volseg_insitu_last_error(const volseg_insitu* hook);

#ifdef __cplusplus
}
#endif

#endif /* VOLSEG_INSITU_H */
