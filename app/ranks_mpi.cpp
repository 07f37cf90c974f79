// Ranks of an MPI job through Boost.MPI. Built only when CMake finds Boost.MPI and MPI.
// MPI is started only when a launcher set up this process (mpirun's environment), so the
// same binary and the tests run as one plain process everywhere else.
#include <cstdlib>
#include <optional>

#include <boost/mpi/collectives.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/utility.hpp>
#include <boost/serialization/vector.hpp>

#include "app/ranks.hpp"

namespace boost::serialization {
template <class Archive>
void serialize(Archive& archive, allocsim::SweepRow& row, unsigned /*version*/) {
  archive & row.point & row.cells & row.extras;
}
}  // namespace boost::serialization

namespace allocsim {

std::unique_ptr<Ranks> make_single_process();

namespace {

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::max(1, std::atoi(value)) : fallback;
}

class MpiRanks final : public Ranks {
 public:
  int rank() const override { return world_.rank(); }
  int size() const override { return world_.size(); }
  int local_size() const override { return env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("MPI_LOCALNRANKS", 1)); }

  std::pair<std::string, std::vector<SweepRow>> gather(std::string error, std::vector<SweepRow> rows) override {
    std::vector<std::pair<std::string, std::vector<SweepRow>>> all;
    boost::mpi::gather(world_, std::make_pair(std::move(error), std::move(rows)), all, 0);
    std::pair<std::string, std::vector<SweepRow>> merged;
    for (auto& [rank_error, rank_rows] : all) {
      if (merged.first.empty()) merged.first = std::move(rank_error);
      for (SweepRow& row : rank_rows) merged.second.push_back(std::move(row));
    }
    return merged;
  }

  std::pair<std::string, std::vector<std::size_t>> broadcast(std::pair<std::string, std::vector<std::size_t>> value) override {
    boost::mpi::broadcast(world_, value, 0);
    return value;
  }

 private:
  boost::mpi::communicator world_;
};

}  // namespace

std::unique_ptr<Ranks> make_ranks() {
  if (!launched_by_mpi()) return make_single_process();
  static std::optional<boost::mpi::environment> environment;  // finalised at exit
  if (!environment) environment.emplace();
  return std::make_unique<MpiRanks>();
}

bool mpi_built() { return true; }

}  // namespace allocsim
