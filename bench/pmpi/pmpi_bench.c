/* An unmodified MPI program that times MPI_Allreduce (float32, MPI_SUM, in
 * place) for bench/pmpi/run.sh: it includes only <mpi.h>, so whether bagua
 * serves the calls depends on libbagua-pmpi being preloaded.
 *
 *   pmpi_bench [-c COUNT[,COUNT...]] [-i ITERS] [-w WARMUP]
 *
 * Prints one line per count: mean and best time per call (the slowest rank's,
 * each call started after a barrier) and the largest error against the
 * closed-form sum of the inputs (small integers, so MPI's result is exact).
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double input_value(int rank, long i) { return (double)((i * 7 + rank * 13) % 31) - 15.0; }

static void fill(float *x, long count, int rank) {
  for (long i = 0; i < count; ++i) x[i] = (float)input_value(rank, i);
}

static double max_error(const float *x, long count, int size) {
  double worst = 0;
  for (long i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < size; ++r) want += input_value(r, i);
    const double err = fabs(x[i] - want);
    if (!(err <= worst)) worst = err;
  }
  return worst;
}

/* Mean and best seconds per call over `iters` timed calls (after `warmup`). */
static void time_allreduce(float *x, long count, int iters, int warmup, double *mean,
                           double *best) {
  double total = 0;
  *best = INFINITY;
  for (int it = 0; it < warmup + iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, x, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double dt = MPI_Wtime() - t0;
    if (it < warmup) continue;
    total += dt;
    if (dt < *best) *best = dt;
  }
  *mean = total / iters;
}

static void run_count(long count, int iters, int warmup, int rank, int size) {
  float *x = malloc((size_t)count * sizeof(float));
  double mean = 0, best = 0, worst_mean = 0, worst_best = 0, err = 0, worst_err = 0;
  fill(x, count, rank);
  MPI_Allreduce(MPI_IN_PLACE, x, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  err = max_error(x, count, size);
  time_allreduce(x, count, iters, warmup, &mean, &best);
  MPI_Reduce(&mean, &worst_mean, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&best, &worst_best, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&err, &worst_err, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("pmpi-bench: ranks %d count %ld bytes %ld mean_ms %.4f best_ms %.4f max_error %.4g\n",
           size, count, count * 4, worst_mean * 1e3, worst_best * 1e3, worst_err);
  fflush(stdout);
  free(x);
}

int main(int argc, char **argv) {
  const char *counts = "4194304";
  int iters = 10, warmup = 2, opt;
  while ((opt = getopt(argc, argv, "c:i:w:")) != -1) {
    if (opt == 'c')
      counts = optarg;
    else if (opt == 'i')
      iters = atoi(optarg);
    else if (opt == 'w')
      warmup = atoi(optarg);
    else {
      fprintf(stderr, "usage: pmpi_bench [-c COUNT[,COUNT...]] [-i ITERS] [-w WARMUP]\n");
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char *list = strdup(counts);
  for (char *item = strtok(list, ","); item; item = strtok(NULL, ","))
    run_count(atol(item), iters < 1 ? 1 : iters, warmup, rank, size);
  free(list);
  MPI_Finalize();
  return 0;
}
