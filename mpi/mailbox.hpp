#pragma once
/// \file
/// \brief Messages between ranks of MPI_COMM_WORLD that nobody waits for: a sweep's rank 0 holds
/// the queue of runs and its GMIs ask it for work and report results whenever their runs end,
/// which may be seconds or days apart; an async trainer publishes weights to serving GMIs that
/// pick them up between rollouts.  Sends are non-blocking (the text is kept until MPI is done with
/// it) and receiving is a poll, so a rank whose peers are busy never blocks.
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gmi::mpi {

/// One received message.
struct Letter {
  int from = 0;  ///< MPI_COMM_WORLD rank of the sender
  int tag = 0;
  std::string text;
};

class Mailbox {
 public:
  /// `synchronous`: a send is in flight until its receiver has taken it (MPI_Issend), so
  /// in_flight() counts what the receiver has not picked up yet; otherwise small messages may
  /// complete at once (buffered by MPI at the receiver).
  explicit Mailbox(bool synchronous = false);
  /// Waits (bounded by mpi::timeout()) for the sends still in flight; logs, never throws.  While
  /// unwinding from an exception it does not wait.
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  /// Sends `text` to MPI_COMM_WORLD rank `to` with `tag` (>= 0); returns at once.
  void post(int to, int tag, std::string text);
  /// A message that has arrived (any sender and tag), or nothing.  Never waits for one that has
  /// not; the data of one whose envelope has arrived is waited for, bounded (mpi/deadline.hpp).
  std::optional<Letter> poll();
  /// A message from rank `from` with `tag` that has arrived, or nothing (waits like poll()).
  std::optional<Letter> poll(int from, int tag);
  /// Sends not completed yet.
  std::size_t in_flight();
  /// Completes the sends in flight (bounded by mpi::timeout(), then mpi::give_up).
  void flush();

 private:
  struct Sending;
  /// Sends still in flight when their mailbox went away while unwinding (their buffers live on).
  static std::vector<std::unique_ptr<Sending>>& leaked();
  void reap();
  std::optional<Letter> probe(int from, int tag);
  bool synchronous_ = false;
  std::deque<std::unique_ptr<Sending>> sending_;  // in posting order
};

}  // namespace gmi::mpi
