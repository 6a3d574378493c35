#pragma once
/// \file
/// \brief Small text messages between ranks of MPI_COMM_WORLD that nobody waits for: a sweep's
/// rank 0 holds the queue of runs and its GMIs ask it for work and report results whenever their
/// runs end, which may be seconds or days apart.  Sends are non-blocking (the text is kept until
/// MPI is done with it) and receiving is a poll, so a rank whose peers are busy never blocks.
#include <deque>
#include <memory>
#include <optional>
#include <string>

namespace gmi::mpi {

/// One received message.
struct Letter {
  int from = 0;  ///< MPI_COMM_WORLD rank of the sender
  int tag = 0;
  std::string text;
};

class Mailbox {
 public:
  Mailbox();
  /// Waits (bounded by mpi::timeout()) for the sends still in flight; logs, never throws.
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  /// Sends `text` to MPI_COMM_WORLD rank `to` with `tag` (>= 0); returns at once.
  void post(int to, int tag, std::string text);
  /// A message that has arrived (any sender and tag), or nothing.  Never blocks.
  std::optional<Letter> poll();
  /// Completes the sends in flight (bounded by mpi::timeout(), then mpi::give_up).
  void flush();

 private:
  struct Sending;
  void reap();
  std::deque<std::unique_ptr<Sending>> sending_;  // in posting order
};

}  // namespace gmi::mpi
