#include "mpi/mailbox.hpp"

#include <mpi.h>
#include <spdlog/spdlog.h>

#include <climits>
#include <exception>
#include <vector>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"

namespace gmi::mpi {

struct Mailbox::Sending {
  std::string text;
  MPI_Request request = MPI_REQUEST_NULL;
};

std::vector<std::unique_ptr<Mailbox::Sending>>& Mailbox::leaked() {
  static auto* v = new std::vector<std::unique_ptr<Sending>>;
  return *v;
}

Mailbox::Mailbox(bool synchronous) : synchronous_(synchronous) {}

Mailbox::~Mailbox() {
  // Unwinding from another error: no wait (a receiver that hangs would replace that error with a
  // census line); what is in flight is left to MPI.
  if (std::uncaught_exceptions() > 0) {
    for (auto& s : sending_) leaked().push_back(std::move(s));
    return;
  }
  try {
    flush();
  } catch (const std::exception& e) {
    spdlog::error("mailbox: {}", e.what());
  }
}

void Mailbox::post(int to, int tag, std::string text) {
  reap();
  auto s = std::make_unique<Sending>();
  s->text = std::move(text);
  if (s->text.size() > std::size_t(INT_MAX))
    throw Error("mailbox: a message of " + std::to_string(s->text.size()) + " bytes (at most 2 GiB)");
  const int n = int(s->text.size());
  if (synchronous_) GMI_MPI_CHECK(MPI_Issend(s->text.data(), n, MPI_CHAR, to, tag, MPI_COMM_WORLD, &s->request));
  else GMI_MPI_CHECK(MPI_Isend(s->text.data(), n, MPI_CHAR, to, tag, MPI_COMM_WORLD, &s->request));
  sending_.push_back(std::move(s));
}

void Mailbox::reap() {
  while (!sending_.empty()) {
    int done = 0;
    GMI_MPI_CHECK(MPI_Test(&sending_.front()->request, &done, MPI_STATUS_IGNORE));
    if (!done) return;
    sending_.pop_front();
  }
}

std::optional<Letter> Mailbox::poll() { return probe(MPI_ANY_SOURCE, MPI_ANY_TAG); }

std::optional<Letter> Mailbox::poll(int from, int tag) { return probe(from, tag); }

std::size_t Mailbox::in_flight() {
  // Sends complete in any order (another receiver may be faster): test each.
  std::size_t n = 0;
  for (auto& s : sending_) {
    int done = s->request == MPI_REQUEST_NULL;
    if (!done) GMI_MPI_CHECK(MPI_Test(&s->request, &done, MPI_STATUS_IGNORE));
    n += done ? 0 : 1;
  }
  reap();
  return n;
}

std::optional<Letter> Mailbox::probe(int from, int tag) {
  reap();
  int flag = 0;
  MPI_Status st;
  GMI_MPI_CHECK(MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &st));
  if (!flag) return std::nullopt;
  int n = 0;
  GMI_MPI_CHECK(MPI_Get_count(&st, MPI_CHAR, &n));
  Letter l{st.MPI_SOURCE, st.MPI_TAG, std::string(std::size_t(n), '\0')};
  // A bounded wait, not MPI_Recv: a large message's data may need its sender to progress (a
  // rendezvous), and a sender that hangs right after posting must not hang this GMI too.
  MPI_Request req = MPI_REQUEST_NULL;
  GMI_MPI_CHECK(MPI_Irecv(l.text.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &req));
  const int source = st.MPI_SOURCE;
  wait(req, [source] { return std::vector<int>{source}; },
       [source, n] { return "the " + std::to_string(n) + " bytes of a mailbox message from rank " + std::to_string(source); });
  return l;
}

void Mailbox::flush() {
  while (!sending_.empty()) {
    wait(sending_.front()->request, MPI_COMM_WORLD, "MPI_Isend (a mailbox message)");
    sending_.pop_front();
  }
}

}  // namespace gmi::mpi
