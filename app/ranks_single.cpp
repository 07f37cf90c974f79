// The build without MPI: one process, every point its own.
#include "app/ranks.hpp"

namespace allocsim {
namespace {

class SingleProcess final : public Ranks {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_size() const override { return 1; }
  std::pair<std::string, std::vector<SweepRow>> gather(std::string error, std::vector<SweepRow> rows) override {
    return {std::move(error), std::move(rows)};
  }
  std::pair<std::string, std::vector<std::size_t>> broadcast(std::pair<std::string, std::vector<std::size_t>> value) override {
    return value;
  }
};

}  // namespace

std::unique_ptr<Ranks> make_single_process() { return std::make_unique<SingleProcess>(); }

#ifndef ALLOCSIM_MPI
std::unique_ptr<Ranks> make_ranks() { return make_single_process(); }
bool mpi_built() { return false; }
#endif

}  // namespace allocsim
