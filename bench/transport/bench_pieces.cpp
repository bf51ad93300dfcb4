// Plain MPI, no bagua: every rank sends SIZE bytes to its right neighbour
// while receiving as much from its left one, in pieces of PIECE bytes, first
// with every piece posted at once, then with at most WINDOW sends (and as
// many receives) posted per peer, the two alternated round by round. Prints
// the best and the median round (the slowest rank's) of each and the
// windowed rate over the all-at-once rate, measured in the same run. The
// mpi transport's BAGUA_MPI_PIECES_IN_FLIGHT rests on it (doc/transports.md,
// "Pieces in flight").
//
// usage: mpirun -np N bench-pieces [PIECE_BYTES [WINDOW [ROUNDS]]]   (default 61440, 64, 5)
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

struct Exchange {
  std::vector<char> out, in;
  size_t piece;
  int left, right;
};

// Posts pieces of `e` (receives and sends alike) as earlier ones complete,
// at most `window` of each in flight (0: all at once). Returns seconds.
double exchange(Exchange &e, size_t window) {
  const size_t bytes = e.out.size(), pieces = (bytes + e.piece - 1) / e.piece;
  const size_t most = window == 0 ? pieces : window;
  std::vector<MPI_Request> recvs(pieces, MPI_REQUEST_NULL), sends(pieces, MPI_REQUEST_NULL);
  size_t recvs_posted = 0, sends_posted = 0, recvs_done = 0, sends_done = 0;
  const auto length = [&](size_t i) { return int(std::min(e.piece, bytes - i * e.piece)); };
  const auto post = [&] {
    for (; recvs_posted < pieces && recvs_posted - recvs_done < most; ++recvs_posted)
      MPI_Irecv(e.in.data() + recvs_posted * e.piece, length(recvs_posted), MPI_BYTE, e.left, 0,
                MPI_COMM_WORLD, &recvs[recvs_posted]);
    for (; sends_posted < pieces && sends_posted - sends_done < most; ++sends_posted)
      MPI_Isend(e.out.data() + sends_posted * e.piece, length(sends_posted), MPI_BYTE, e.right, 0,
                MPI_COMM_WORLD, &sends[sends_posted]);
  };
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  post();
  // Pieces complete in order on one connection: test the oldest of each.
  while (recvs_done < pieces || sends_done < pieces) {
    int flag = 0;
    if (recvs_done < pieces && (MPI_Test(&recvs[recvs_done], &flag, MPI_STATUS_IGNORE), flag))
      ++recvs_done;
    if (sends_done < pieces && (MPI_Test(&sends[sends_done], &flag, MPI_STATUS_IGNORE), flag))
      ++sends_done;
    post();
  }
  double seconds = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t piece = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 61440;
  const size_t window = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  if (piece == 0 || rounds < 1) {
    if (rank == 0) std::fprintf(stderr, "bench-pieces: PIECE_BYTES and ROUNDS must be positive\n");
    MPI_Finalize();
    return 2;
  }
  if (rank == 0)
    std::printf(
        "# bench-pieces: %d ranks, pieces of %zu bytes, window %zu, %d rounds each "
        "(after one warm-up), MB/s = bytes per rank / the slowest rank's round\n"
        "# %8s %8s %10s %10s %10s %10s %8s\n",
        size, piece, window, rounds, "MiB", "pieces", "all best", "all med", "win best", "win med",
        "win/all");
  for (int mib : {8, 16, 32, 64, 96}) {
    Exchange e{std::vector<char>(size_t(mib) << 20, 1), std::vector<char>(size_t(mib) << 20, 0),
               piece, (rank + size - 1) % size, (rank + 1) % size};
    exchange(e, 0);
    exchange(e, window);
    std::vector<double> all, windowed;
    // The two ways alternate, so a slow stretch of the machine hits both.
    for (int r = 0; r < rounds; ++r) {
      all.push_back(exchange(e, 0));
      windowed.push_back(exchange(e, window));
    }
    const double bytes = double(e.out.size()) / 1e6;
    if (rank == 0)
      std::printf("  %8d %8zu %10.0f %10.0f %10.0f %10.0f %8.2f\n", mib,
                  (e.out.size() + piece - 1) / piece,
                  bytes / *std::min_element(all.begin(), all.end()), bytes / median(all),
                  bytes / *std::min_element(windowed.begin(), windowed.end()),
                  bytes / median(windowed), median(all) / median(windowed));
  }
  MPI_Finalize();
  return 0;
}
