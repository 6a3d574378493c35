#include "mpi/mailbox.hpp"

#include <mpi.h>
#include <spdlog/spdlog.h>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"

namespace gmi::mpi {

struct Mailbox::Sending {
  std::string text;
  MPI_Request request = MPI_REQUEST_NULL;
};

Mailbox::Mailbox() = default;

Mailbox::~Mailbox() {
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
  GMI_MPI_CHECK(MPI_Isend(s->text.data(), int(s->text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD, &s->request));
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

std::optional<Letter> Mailbox::poll() {
  reap();
  int flag = 0;
  MPI_Status st;
  GMI_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
  if (!flag) return std::nullopt;
  int n = 0;
  GMI_MPI_CHECK(MPI_Get_count(&st, MPI_CHAR, &n));
  Letter l{st.MPI_SOURCE, st.MPI_TAG, std::string(std::size_t(n), '\0')};
  GMI_MPI_CHECK(MPI_Recv(l.text.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  return l;
}

void Mailbox::flush() {
  while (!sending_.empty()) {
    wait(sending_.front()->request, MPI_COMM_WORLD, "MPI_Isend (a sweep message)");
    sending_.pop_front();
  }
}

}  // namespace gmi::mpi
