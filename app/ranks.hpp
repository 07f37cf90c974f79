// The processes a sweep is shared across: this one alone, or the ranks of an MPI job
// (`mpirun -np N allocsim sweep ...`, built with Boost.MPI when CMake finds it). Rank r
// takes the points whose index is r modulo N; rank 0 gathers every row and writes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "studies/sweep_run.hpp"

namespace allocsim {

class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Processes of this job on this machine, which share its cores.
  virtual int local_size() const = 0;
  // Rank 0 receives every rank's rows and the first error any rank met ("" if none);
  // the other ranks receive nothing.
  virtual std::pair<std::string, std::vector<SweepRow>> gather(std::string error, std::vector<SweepRow> rows) = 0;
  // Rank 0's value reaches every rank.
  virtual std::pair<std::string, std::vector<std::size_t>> broadcast(std::pair<std::string, std::vector<std::size_t>> value) = 0;
};

// MPI ranks when this process was started by an MPI launcher and MPI support was built,
// else the single process. MPI is initialised once and finalised at exit.
std::unique_ptr<Ranks> make_ranks();

// Whether this build can run under mpirun (for --help and messages).
bool mpi_built();

}  // namespace allocsim
