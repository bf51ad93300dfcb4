// The core left to bagua's threads while they have work. Open MPI's waits
// spin in opal_progress; on a machine whose cores the ranks fill, a caller
// spinning in MPI_Wait on a bagua request takes the core from the engine
// thread that would complete it (64 KiB bagua_iallreduce on 2 cores:
// 76-659 us spinning, 25-58 us yielding; doc/benchmarks.md). Open MPI's own
// remedy is its mpi_yield_when_idle parameter, read once at MPI_Init;
// opal_progress_set_yield_when_idle (Open MPI's public OPAL call, found at
// run time, so no MPI depends on it) changes it later. While any holder in
// the process holds it, idle Open MPI waits yield the core; the last one to
// let go restores the value found before. Other MPIs lack the call: nothing
// changes there.
#pragma once

namespace bagua {

class MpiWaitsYield {
 public:
  MpiWaitsYield() = default;
  ~MpiWaitsYield() { hold(false); }
  MpiWaitsYield(const MpiWaitsYield &) = delete;
  MpiWaitsYield &operator=(const MpiWaitsYield &) = delete;

  // Holds (true) or lets go (false); repeating either changes nothing.
  void hold(bool on);

 private:
  bool held_ = false;
};

}  // namespace bagua
