#pragma once
/// \file
/// \brief Experience channels between GMIs (paper 003 §3.2.2): producers (simulator or agent GMIs)
/// send every step's packages to one consumer (a trainer GMI) through the channels of a
/// ChannelPlan (mpi/channel_plan.hpp).
///
///  - Packer:   push() copies a step's packages into each channel's batch, the channel's types one
///              block after another; a batch of plan.steps steps is one message per channel.
///  - Migrator: the routes: every producer has exactly one consumer; a consumer may have several
///              producers.
///  - Batcher:  next(k) hands the consumer producer k's next step, one pointer per package type,
///              straight out of the received batch (no copy).
///
/// A batch is sent synchronously (MPI_Issend completes only once the consumer has posted the
/// matching receive) and the consumer posts at most `max_in_flight` receives per channel and
/// producer, while a producer has at most `max_in_flight` sends of a channel in flight: a producer
/// is at most 2 x max_in_flight batches ahead of what its consumer has taken, so a slow consumer
/// slows its producers instead of filling memory.  Messages of one
/// producer and channel arrive in order (MPI's non-overtaking rule; each batch carries its number,
/// checked).  Every wait is bounded (mpi/deadline.hpp): a producer or consumer that hangs or dies
/// ends the job with a line that names it.
///
/// Transport: MPI on host memory (packages are host buffers).  The async rollouts' device transport
/// sends only their reports through here and the rollouts through mpi/shared_slots.hpp; device
/// paths for the per-step channels (CUDA IPC within a GPU, NCCL across GPUs) are not built yet.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mpi/channel_plan.hpp"

namespace gmi::mpi {

/// One producer feeding one consumer (ranks of the channels' communicator).
struct Route {
  int producer = 0;
  int consumer = 0;
};

struct ChannelOptions {
  int max_in_flight = 4;  ///< sends in flight and receives posted per channel and producer (>= 1)
};

/// What went through this GMI's end of the channels.
struct ChannelStats {
  std::uint64_t steps = 0;     ///< steps pushed (producer) or taken (consumer)
  std::uint64_t messages = 0;  ///< channel messages sent or received
  std::uint64_t bytes = 0;     ///< payload bytes sent or received
  double wait_s = 0;           ///< time blocked: a full queue (producer), nothing arrived yet (consumer)
  int max_in_flight = 0;       ///< producer: most batches of one channel in flight at once
};

/// Each consumer's producers, in route order (next(k) takes from the k-th).
std::map<int, std::vector<int>> producers_by_consumer(const std::vector<Route>& routes);
/// The way back, by producer position: set k routes every consumer to its k-th producer (a
/// consumer with k producers or fewer has none there), so that each set is routes channels take
/// (every producer, here a consumer of `routes`, feeds one GMI).
std::vector<std::vector<Route>> reverse_routes(const std::vector<Route>& routes);

/// Ranks [0, consumers) consume, and producer p (every other rank of `size`) feeds consumer
/// (p - consumers) % consumers.
std::vector<Route> routes_to_first(int size, int consumers);

/// Measure the transport's cost between every producer and its consumer (ping-pong at two sizes,
/// `reps` each); every member gets the slowest pair's (latency and per-byte cost, each the max).
/// Collective over `comm`.
TransferCost measure_transfer_cost(MPI_Comm comm, const std::vector<Route>& routes, int reps = 20);

/// Variable-size messages beside the channels (an environment's state at a checkpoint): `data`
/// to rank `to` of `comm` with `tag`, returning once it has been received; `what` names it in the
/// line a wait that runs out (reduce.timeout_s) ends the job with.
void send_bytes(MPI_Comm comm, int to, int tag, const std::vector<std::byte>& data, const std::string& what);
/// What send_bytes sent from rank `from` of `comm` with `tag` (bounded likewise).
std::vector<std::byte> receive_bytes(MPI_Comm comm, int from, int tag, const std::string& what);

class ExperienceChannels {
 public:
  /// Collective over `comm`, which it duplicates; every member passes the same routes, types and
  /// plan.  A member that is in no route takes no part afterwards.  Throws gmi::InputError when a
  /// GMI produces for several consumers, or a route names a rank outside `comm` or joins a rank
  /// with itself.
  ExperienceChannels(MPI_Comm comm, std::vector<Route> routes, std::vector<PackageType> types, ChannelPlan plan,
                     ChannelOptions options = {});
  /// A producer drains (bounded; logs instead of throwing), a consumer withdraws its receives.
  ~ExperienceChannels();
  ExperienceChannels(const ExperienceChannels&) = delete;
  ExperienceChannels& operator=(const ExperienceChannels&) = delete;

  bool is_producer() const { return consumer_ >= 0; }
  bool is_consumer() const { return !producers_.empty(); }
  /// The consumer of this producer (rank of the channels' communicator), or -1.
  int consumer() const { return consumer_; }
  /// The producers feeding this consumer, in route order (next(k) takes from producers()[k]).
  const std::vector<int>& producers() const { return producers_; }
  const std::vector<PackageType>& types() const { return types_; }
  const ChannelPlan& plan() const { return plan_; }

  /// Producer: one step's packages, one host buffer of types()[i].bytes() bytes per type, in type
  /// order.  Returns once they are copied; sends every channel's batch when it holds plan().steps
  /// steps.  Waits only while a channel already has max_in_flight batches in flight.
  void push(const std::vector<const void*>& packages);
  /// Producer: send the steps batched so far now (a shorter batch), e.g. at the end of an iteration.
  void flush();
  /// Producer: whether the next push() returns without waiting (a batch buffer is free in every
  /// channel, or the batch being filled has room); never waits.
  bool room();
  /// Producer: flush(), then wait until the consumer has taken every batch.
  void drain();
  /// Producer: flush(), then whether the consumer has taken every batch; never waits.
  bool drained();

  /// Consumer: producer k's next step, one pointer per package type (valid until the next call
  /// of next(k) or ready(k)).  Waits, bounded, until it has arrived.
  std::vector<const std::byte*> next(std::size_t k);
  /// Consumer: whether next(k) would return without waiting (ends the validity of the pointers
  /// the last next(k) returned).
  bool ready(std::size_t k);

  const ChannelStats& stats() const { return stats_; }

 private:
  struct Buffer;
  struct Lane;  // one channel of one producer at the consumer, or of this producer
  void send_batch();
  Buffer& take_free(Lane& lane, std::size_t channel);
  void repost(Lane& lane, std::size_t channel);
  bool sends_done();  // every send completed (tests, never waits, sends nothing)
  std::size_t message_bytes(std::size_t channel) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::vector<int> world_;  // MPI_COMM_WORLD rank of every member, for messages
  std::vector<PackageType> types_;
  ChannelPlan plan_;
  ChannelOptions options_;
  std::vector<std::size_t> offset_in_channel_;  // per type: byte offset within its channel's step
  std::vector<std::size_t> channel_of_;         // per type
  int consumer_ = -1;
  std::vector<int> producers_;
  std::vector<Lane> out_;                       // producer: per channel
  std::vector<std::vector<Lane>> in_;           // consumer: per producer, per channel
  int filled_ = 0;                              // producer: steps in the batch being filled
  std::uint64_t batches_sent_ = 0;
  ChannelStats stats_;
};

}  // namespace gmi::mpi
