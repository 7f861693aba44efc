/* SPDX-License-Identifier: MIT
 * A tiny MPI simulation with volseg's in-situ hook: a hot ball cools in a
 * cold box (explicit 7-point heat equation, faces held at 0). The grid is cut
 * into slabs along z; each rank keeps one ghost plane towards each
 * neighbour and none beyond the grid's faces, as volseg_insitu_publish
 * expects. Every other step the hook writes the mask of the hot region
 * (0.5 <= u <= 1) and a row of statistics.
 *
 *   mpirun -n 2 insitu-heat OUTDIR [STEPS]
 *
 * Exits non-zero if the last in-situ step's mask was not written.
 */
#define _POSIX_C_SOURCE 200809L /* mkdir, stat */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "volseg/insitu/volseg_insitu.h"

enum { NX = 32, NY = 32, NZ = 32, EVERY = 2 };
static const double ALPHA = 0.1; /* below 1/6: the explicit scheme is stable */

static void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", rc);
  fprintf(stderr, "insitu-heat: %s: %s\n", what, text);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static size_t at(int k, int j, int i) { return ((size_t)k * NY + (size_t)j) * NX + (size_t)i; }

/* Sends the first and last owned planes to the neighbours, receives their
 * planes into the ghost planes (MPI_PROC_NULL at the grid's faces). */
static void exchange_ghosts(double* u, int lower, int count, int below, int above) {
  const int plane = NX * NY;
  check_mpi(MPI_Sendrecv(u + at(lower, 0, 0), plane, MPI_DOUBLE, below, 0, u + at(lower + count, 0, 0), plane,
                         MPI_DOUBLE, above, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "ghost exchange downwards");
  check_mpi(MPI_Sendrecv(u + at(lower + count - 1, 0, 0), plane, MPI_DOUBLE, above, 1, u, plane, MPI_DOUBLE, below, 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "ghost exchange upwards");
}

/* One explicit step on the owned planes; points on the grid's faces stay. */
static void advance(const double* u, double* next, int lower, int count, int z0) {
  for (int k = lower; k < lower + count; ++k) {
    const int z = z0 + k - lower;
    for (int j = 0; j < NY; ++j)
      for (int i = 0; i < NX; ++i) {
        const size_t p = at(k, j, i);
        if (z == 0 || z == NZ - 1 || j == 0 || j == NY - 1 || i == 0 || i == NX - 1) {
          next[p] = u[p];
          continue;
        }
        const double sum = u[at(k - 1, j, i)] + u[at(k + 1, j, i)] + u[at(k, j - 1, i)] + u[at(k, j + 1, i)] +
                           u[at(k, j, i - 1)] + u[at(k, j, i + 1)];
        next[p] = u[p] + ALPHA * (sum - 6.0 * u[p]);
      }
  }
}

static int written_since(const char* path, time_t started) {
  struct stat info;
  if (stat(path, &info) != 0) {
    fprintf(stderr, "insitu-heat: %s: %s\n", path, strerror(errno));
    return 0;
  }
  return info.st_size > 0 && info.st_mtime >= started;
}

int main(int argc, char** argv) {
  check_mpi(MPI_Init(&argc, &argv), "MPI_Init");
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  char* end = NULL;
  const long steps = argc > 2 ? strtol(argv[2], &end, 10) : 6;
  if (argc < 2 || argc > 3 || (end != NULL && *end != '\0') || steps < 0 || steps > 1000000 || size > NZ) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -n N insitu-heat OUTDIR [STEPS]   (N <= %d)\n", NZ);
    check_mpi(MPI_Finalize(), "MPI_Finalize");
    return 2;
  }
  const char* outdir = argv[1];
  const time_t started = time(NULL);
  if (rank == 0 && mkdir(outdir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "insitu-heat: mkdir %s: %s\n", outdir, strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");

  /* This rank's slab [z0, z0 + count) and its ghost planes. */
  const int z0 = (int)((long)rank * NZ / size), count = (int)((long)(rank + 1) * NZ / size) - z0;
  const int below = rank > 0 ? rank - 1 : MPI_PROC_NULL, above = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  const int lower = rank > 0, planes = lower + count + (rank < size - 1);
  double* u = calloc((size_t)planes * NX * NY, sizeof *u);
  double* next = calloc((size_t)planes * NX * NY, sizeof *next);
  if (u == NULL || next == NULL) {
    fprintf(stderr, "insitu-heat: rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int k = 0; k < planes; ++k)
    for (int j = 0; j < NY; ++j)
      for (int i = 0; i < NX; ++i) {
        const int dz = z0 + k - lower - NZ / 2, dy = j - NY / 2, dx = i - NX / 2;
        u[at(k, j, i)] = dx * dx + dy * dy + dz * dz <= (NZ / 4) * (NZ / 4) ? 1.0 : 0.0;
      }

  char options[4096];
  int n = snprintf(options, sizeof options,
                   "--lo 0.5 --hi 1 --every %d --out \"%s/mask_%%06d.nhdr\" --stats \"%s/stats.csv\" --force", EVERY,
                   outdir, outdir);
  if (n < 0 || (size_t)n >= sizeof options) {
    if (rank == 0) fprintf(stderr, "insitu-heat: output folder name too long\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  volseg_insitu* hook = NULL;
  int hook_on = volseg_insitu_create(MPI_COMM_WORLD, options, &hook) == VOLSEG_INSITU_OK;
  if (!hook_on && rank == 0) fprintf(stderr, "insitu-heat: in-situ hook off: %s\n", volseg_insitu_last_error(hook));

  const int64_t global_dims[3] = {NZ, NY, NX}, offset[3] = {z0, 0, 0}, extent[3] = {count, NY, NX};
  for (long step = 0; step <= steps; ++step) {
    if (step > 0) {
      advance(u, next, lower, count, z0);
      double* swap = u;
      u = next;
      next = swap;
    }
    exchange_ghosts(u, lower, count, below, above); /* for the next step, and the hook reads them */
    if (hook_on &&
        volseg_insitu_publish(hook, step, (double)step, global_dims, offset, extent, 1, "f64", u) != VOLSEG_INSITU_OK) {
      if (rank == 0)
        fprintf(stderr, "insitu-heat: step %ld: in-situ hook off: %s\n", step, volseg_insitu_last_error(hook));
      hook_on = 0; /* the simulation goes on without it */
    }
  }
  const int finished = volseg_insitu_finalize(hook) == VOLSEG_INSITU_OK;
  if (!finished && rank == 0) fprintf(stderr, "insitu-heat: finishing the in-situ outputs failed\n");
  free(u);
  free(next);

  /* The last in-situ step's mask and the statistics must be this run's. */
  int ok = finished;
  if (rank == 0) {
    char mask[4200], stats[4200];
    snprintf(mask, sizeof mask, "%s/mask_%06ld.nhdr", outdir, steps - steps % EVERY);
    snprintf(stats, sizeof stats, "%s/stats.csv", outdir);
    ok = ok && written_since(mask, started) && written_since(stats, started);
    printf("insitu-heat: %ld steps on %d ranks; %s and %s %s\n", steps, size, mask, stats, ok ? "written" : "missing");
  }
  check_mpi(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  check_mpi(MPI_Finalize(), "MPI_Finalize");
  return ok ? 0 : 1;
}
