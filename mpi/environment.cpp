#include "mpi/environment.hpp"

#include <mpi.h>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"

namespace gmi {
namespace detail {
std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, len);
}
}  // namespace detail

namespace mpi {

Environment::Environment(int* argc, char*** argv) {
  int initialized = 0;
  GMI_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    GMI_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    finalize_ = true;
  }
  // Errors are returned, not fatal, so that every failure reaches GMI_MPI_CHECK and its message.
  GMI_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  GMI_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  GMI_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  GMI_MPI_CHECK(MPI_Get_processor_name(name, &len));
  host_.assign(name, len);
  set_error_context(rank_, host_);
  detail::census_init();
}

Environment::~Environment() {
  if (!finalize_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  detail::census_finalize();
  MPI_Finalize();
}

void allreduce_sum(double* values, int n, MPI_Comm comm) {
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, comm, &req));
  wait(req, comm, "MPI_Iallreduce (sum)");
}

void allreduce_max(double* values, int n, MPI_Comm comm) {
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_MAX, comm, &req));
  wait(req, comm, "MPI_Iallreduce (max)");
}

std::string broadcast_string(const std::string& s, MPI_Comm comm, int root) {
  int n = int(s.size());
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Ibcast(&n, 1, MPI_INT, root, comm, &req));
  wait(req, comm, "MPI_Ibcast");
  std::string out = s;
  out.resize(n);
  GMI_MPI_CHECK(MPI_Ibcast(out.data(), n, MPI_CHAR, root, comm, &req));
  wait(req, comm, "MPI_Ibcast");
  return out;
}

std::string agree_on_error(const std::string& error, MPI_Comm comm) {
  int rank = 0;
  GMI_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  int failed = error.empty() ? -1 : rank;
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm, &req));
  wait(req, comm, "the set-up (MPI_Iallreduce: did any rank fail?)");
  return failed < 0 ? std::string() : broadcast_string(error, comm, failed);
}

void broadcast(int& value, MPI_Comm comm, int root) {
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Ibcast(&value, 1, MPI_INT, root, comm, &req));
  wait(req, comm, "the set-up (MPI_Ibcast)");
}

void broadcast(double* values, int n, MPI_Comm comm, int root) {
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Ibcast(values, n, MPI_DOUBLE, root, comm, &req));
  wait(req, comm, "MPI_Ibcast of doubles");
}

double sum_over(MPI_Comm comm, double value) {
  GMI_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, comm));
  return value;
}

double max_over(MPI_Comm comm, double value) {
  GMI_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, comm));
  return value;
}

std::vector<double> gather(const double* mine, int n, MPI_Comm comm, int root) {
  int size = 0;
  GMI_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<double> all(std::size_t(n) * std::size_t(size));
  GMI_MPI_CHECK(MPI_Gather(mine, n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, root, comm));
  return all;
}

void blocking_barrier(MPI_Comm comm) { GMI_MPI_CHECK(MPI_Barrier(comm)); }

std::string blocking_broadcast_string(const std::string& s, MPI_Comm comm, int root) {
  int n = int(s.size());
  GMI_MPI_CHECK(MPI_Bcast(&n, 1, MPI_INT, root, comm));
  std::string out = s;
  out.resize(std::size_t(n));
  GMI_MPI_CHECK(MPI_Bcast(out.data(), n, MPI_CHAR, root, comm));
  return out;
}

}  // namespace mpi
}  // namespace gmi
