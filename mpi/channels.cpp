#include "mpi/channels.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>

#include "kernels/core/error.hpp"
#include "mpi/deadline.hpp"
#include "mpi/topology.hpp"

namespace gmi::mpi {

namespace {

/// Leads every channel message.
struct Header {
  std::uint64_t batch = 0;    // the producer's batch number, from 0
  std::uint32_t steps = 0;    // steps in this message
  std::uint32_t channel = 0;  // channel index (also the tag)
};

}  // namespace

struct ExperienceChannels::Buffer {
  std::vector<std::byte> data;
  MPI_Request req = MPI_REQUEST_NULL;
};

struct ExperienceChannels::Lane {
  std::vector<Buffer> bufs;
  std::size_t head = 0;        // producer: the buffer being filled; consumer: the current message's
  // consumer only
  int peer = -1;               // producer's rank in comm_
  bool open = false;           // the head message has arrived and been checked
  bool release = false;        // the head message is used up: re-post it at the next call
  std::uint32_t step = 0, steps = 0;
  std::uint64_t expected = 0;  // next batch number
};

void send_bytes(MPI_Comm comm, int to, int tag, const std::vector<std::byte>& data, const std::string& what) {
  if (data.size() > std::size_t(INT_MAX)) throw Error(what + ": " + std::to_string(data.size()) + " bytes (at most 2 GiB)");
  const std::uint64_t n = data.size();
  const auto peer = [comm, to] { return std::vector<int>{world_ranks(comm)[std::size_t(to)]}; };
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Issend(&n, 1, MPI_UINT64_T, to, tag, comm, &req));
  wait(req, peer, [&] { return "the size of " + what; });
  if (n == 0) return;
  GMI_MPI_CHECK(MPI_Issend(data.data(), int(n), MPI_BYTE, to, tag, comm, &req));
  wait(req, peer, [&] { return what; });
}

std::vector<std::byte> receive_bytes(MPI_Comm comm, int from, int tag, const std::string& what) {
  const auto peer = [comm, from] { return std::vector<int>{world_ranks(comm)[std::size_t(from)]}; };
  std::uint64_t n = 0;
  MPI_Request req;
  GMI_MPI_CHECK(MPI_Irecv(&n, 1, MPI_UINT64_T, from, tag, comm, &req));
  wait(req, peer, [&] { return "the size of " + what; });
  std::vector<std::byte> data(n);
  if (n == 0) return data;
  GMI_MPI_CHECK(MPI_Irecv(data.data(), int(n), MPI_BYTE, from, tag, comm, &req));
  wait(req, peer, [&] { return what; });
  return data;
}

std::map<int, std::vector<int>> producers_by_consumer(const std::vector<Route>& routes) {
  std::map<int, std::vector<int>> by;
  for (const Route& r : routes) by[r.consumer].push_back(r.producer);
  return by;
}

std::vector<std::vector<Route>> reverse_routes(const std::vector<Route>& routes) {
  std::vector<std::vector<Route>> back;
  for (const auto& [consumer, producers] : producers_by_consumer(routes)) {
    if (back.size() < producers.size()) back.resize(producers.size());
    for (std::size_t k = 0; k < producers.size(); ++k) back[k].push_back({consumer, producers[k]});
  }
  return back;
}

std::vector<Route> routes_to_first(int size, int consumers) {
  std::vector<Route> r;
  for (int p = consumers; p < size; ++p) r.push_back({p, (p - consumers) % consumers});
  return r;
}

TransferCost measure_transfer_cost(MPI_Comm comm, const std::vector<Route>& routes, int reps) {
  MPI_Comm c = duplicate(comm, "the channels' cost measurement (MPI_Ibarrier)");
  const int me = comm_rank(c);
  const std::vector<int> world = world_ranks(c);
  const std::size_t sizes[2] = {64, std::size_t(1) << 20};
  std::vector<std::byte> buf(sizes[1]);
  double t[2] = {0, 0};  // one-way seconds at each size, the slowest of my pairs
  const auto transfer = [&](bool send, int peer, std::size_t n) {
    MPI_Request r = MPI_REQUEST_NULL;
    if (send) GMI_MPI_CHECK(MPI_Isend(buf.data(), int(n), MPI_BYTE, peer, 7, c, &r));
    else GMI_MPI_CHECK(MPI_Irecv(buf.data(), int(n), MPI_BYTE, peer, 7, c, &r));
    const int w = world[std::size_t(peer)];
    wait(r, [w] { return std::vector{w}; }, [w] { return fmt::format("a channel cost probe with rank {}", w); });
  };
  for (const Route& r : routes) {
    if (r.producer != me && r.consumer != me) continue;
    const bool producer = r.producer == me;
    const int peer = producer ? r.consumer : r.producer;
    for (int s = 0; s < 2; ++s) {
      double best = 1e30;
      for (int i = 0; i < reps + 2; ++i) {  // two warm-ups
        const double t0 = MPI_Wtime();
        transfer(producer, peer, sizes[s]);
        transfer(!producer, peer, sizes[s]);
        if (i >= 2) best = std::min(best, (MPI_Wtime() - t0) / 2);
      }
      t[s] = std::max(t[s], best);
    }
  }
  double cost[2] = {t[0], t[1] > t[0] ? (t[1] - t[0]) / double(sizes[1] - sizes[0]) : 0.0};
  MPI_Request req = MPI_REQUEST_NULL;
  GMI_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, cost, 2, MPI_DOUBLE, MPI_MAX, c, &req));
  wait(req, c, "MPI_Iallreduce (the channels' cost)");
  MPI_Comm_free(&c);
  TransferCost out;
  out.latency_s = cost[0];
  out.seconds_per_byte = cost[1];
  return out;
}

ExperienceChannels::ExperienceChannels(MPI_Comm comm, std::vector<Route> routes, std::vector<PackageType> types,
                                       ChannelPlan plan, ChannelOptions options)
    : types_(std::move(types)), plan_(std::move(plan)), options_(options) {
  const int size = comm_size(comm), me = comm_rank(comm);
  if (options_.max_in_flight < 1)
    throw InputError(fmt::format("channels.max_in_flight: {} (expected at least 1)", options_.max_in_flight));
  if (plan_.steps < 1) throw Error(fmt::format("channels: a plan of {} steps per transfer", plan_.steps));
  std::vector<int> routes_of(std::size_t(size), 0);
  for (const Route& r : routes) {
    if (r.producer < 0 || r.producer >= size || r.consumer < 0 || r.consumer >= size || r.producer == r.consumer)
      throw InputError(fmt::format("channels: the route {} -> {} does not join two of the {} GMIs", r.producer,
                                   r.consumer, size));
    if (routes_of[std::size_t(r.producer)]++)
      throw InputError(fmt::format("channels: GMI {} produces for more than one consumer", r.producer));
    if (r.producer == me) consumer_ = r.consumer;
    if (r.consumer == me) producers_.push_back(r.producer);
  }
  channel_of_.assign(types_.size(), 0);
  offset_in_channel_.assign(types_.size(), 0);
  for (std::size_t c = 0; c < plan_.groups.size(); ++c) {
    std::size_t off = 0;
    for (int t : plan_.groups[c]) {
      channel_of_[std::size_t(t)] = c;
      offset_in_channel_[std::size_t(t)] = off;
      off += types_[std::size_t(t)].block_bytes();
    }
  }
  comm_ = duplicate(comm, "the set-up of the experience channels (MPI_Ibarrier)");
  world_ = world_ranks(comm_);
  const auto lane = [&](std::size_t c) {
    Lane l;
    l.bufs.resize(std::size_t(options_.max_in_flight));
    for (Buffer& b : l.bufs) b.data.resize(message_bytes(c));
    return l;
  };
  if (is_producer())
    for (std::size_t c = 0; c < plan_.groups.size(); ++c) out_.push_back(lane(c));
  for (int p : producers_) {
    in_.emplace_back();
    for (std::size_t c = 0; c < plan_.groups.size(); ++c) {
      Lane l = lane(c);
      l.peer = p;
      for (Buffer& b : l.bufs)
        GMI_MPI_CHECK(MPI_Irecv(b.data.data(), int(b.data.size()), MPI_BYTE, p, int(c), comm_, &b.req));
      in_.back().push_back(std::move(l));
    }
  }
}

ExperienceChannels::~ExperienceChannels() {
  // Unwinding from another error: no wait (it would delay that error, or replace it with a census
  // line).  Sends still in flight keep their buffers: they are handed to a list never freed.
  bool sent = std::uncaught_exceptions() == 0;
  if (sent && is_producer()) {
    try {
      drain();
    } catch (const std::exception& e) {
      spdlog::error("channels: {}", e.what());
      sent = false;
    }
  }
  bool done = sent;
  if (!sent) {
    try {
      done = sends_done();
    } catch (const std::exception&) {  // a destructor does not throw: treat them as in flight
    }
  }
  if (!done) {
    static auto* in_flight = new std::vector<std::vector<Lane>>;
    in_flight->push_back(std::move(out_));
  }
  for (auto& lanes : in_)
    for (Lane& l : lanes)
      for (Buffer& b : l.bufs)
        if (b.req != MPI_REQUEST_NULL) {
          MPI_Cancel(&b.req);
          MPI_Wait(&b.req, MPI_STATUS_IGNORE);  // a cancelled receive completes locally
        }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::size_t ExperienceChannels::message_bytes(std::size_t channel) const {
  return sizeof(Header) + std::size_t(plan_.steps) * plan_.step_bytes(types_, channel);
}

ExperienceChannels::Buffer& ExperienceChannels::take_free(Lane& lane, std::size_t channel) {
  Buffer& b = lane.bufs[lane.head];
  int done = 0;
  GMI_MPI_CHECK(MPI_Test(&b.req, &done, MPI_STATUS_IGNORE));
  if (!done) {
    const Deadline waited;
    const int peer = world_[std::size_t(consumer_)];
    wait(b.req, [peer] { return std::vector{peer}; }, [&] {
      return fmt::format("rank {} to take batch {} of channel '{}' ({} batches in flight: channels.max_in_flight)",
                         peer, batches_sent_ - lane.bufs.size(), plan_.channel_text(types_, channel),
                         lane.bufs.size());
    });
    stats_.wait_s += waited.elapsed();
  }
  return b;
}

void ExperienceChannels::push(const std::vector<const void*>& packages) {
  if (!is_producer()) throw Error("channels: push() on a GMI that produces for no consumer");
  if (packages.size() != types_.size())
    throw Error(fmt::format("channels: push() of {} packages, expected {}", packages.size(), types_.size()));
  for (std::size_t c = 0; c < out_.size(); ++c) {
    Buffer& b = filled_ == 0 ? take_free(out_[c], c) : out_[c].bufs[out_[c].head];
    std::byte* step = b.data.data() + sizeof(Header) + std::size_t(filled_) * plan_.step_bytes(types_, c);
    for (int t : plan_.groups[c])
      std::memcpy(step + offset_in_channel_[std::size_t(t)], packages[std::size_t(t)], types_[std::size_t(t)].bytes());
  }
  ++filled_;
  ++stats_.steps;
  if (filled_ == plan_.steps) send_batch();
}

void ExperienceChannels::send_batch() {
  for (std::size_t c = 0; c < out_.size(); ++c) {
    Lane& l = out_[c];
    int in_flight = 1;
    for (Buffer& b : l.bufs) {
      int done = 1;
      if (b.req != MPI_REQUEST_NULL) GMI_MPI_CHECK(MPI_Test(&b.req, &done, MPI_STATUS_IGNORE));
      in_flight += done ? 0 : 1;
    }
    stats_.max_in_flight = std::max(stats_.max_in_flight, in_flight);
    Buffer& b = l.bufs[l.head];
    const Header h{batches_sent_, std::uint32_t(filled_), std::uint32_t(c)};
    std::memcpy(b.data.data(), &h, sizeof h);
    const std::size_t n = sizeof(Header) + std::size_t(filled_) * plan_.step_bytes(types_, c);
    GMI_MPI_CHECK(MPI_Issend(b.data.data(), int(n), MPI_BYTE, consumer_, int(c), comm_, &b.req));
    l.head = (l.head + 1) % l.bufs.size();
    ++stats_.messages;
    stats_.bytes += n - sizeof(Header);
  }
  ++batches_sent_;
  filled_ = 0;
}

void ExperienceChannels::flush() {
  if (is_producer() && filled_ > 0) send_batch();
}

void ExperienceChannels::drain() {
  flush();
  for (std::size_t c = 0; c < out_.size(); ++c)
    for (Buffer& b : out_[c].bufs) {
      if (b.req == MPI_REQUEST_NULL) continue;
      const int peer = world_[std::size_t(consumer_)];
      wait(b.req, [peer] { return std::vector{peer}; }, [&] {
        return fmt::format("rank {} to take the last batches of channel '{}'", peer,
                           plan_.channel_text(types_, c));
      });
    }
}

bool ExperienceChannels::room() {
  if (!is_producer()) throw Error("channels: room() on a GMI that produces for no consumer");
  if (filled_ > 0) return true;
  for (Lane& l : out_) {
    Buffer& b = l.bufs[l.head];
    int done = 1;
    if (b.req != MPI_REQUEST_NULL) GMI_MPI_CHECK(MPI_Test(&b.req, &done, MPI_STATUS_IGNORE));
    if (!done) return false;
  }
  return true;
}

bool ExperienceChannels::drained() {
  flush();
  return sends_done();
}

bool ExperienceChannels::sends_done() {
  for (Lane& l : out_)
    for (Buffer& b : l.bufs) {
      int done = 1;
      if (b.req != MPI_REQUEST_NULL) GMI_MPI_CHECK(MPI_Test(&b.req, &done, MPI_STATUS_IGNORE));
      if (!done) return false;
    }
  return true;
}

void ExperienceChannels::repost(Lane& l, std::size_t c) {
  if (!l.release) return;
  Buffer& done = l.bufs[l.head];
  GMI_MPI_CHECK(MPI_Irecv(done.data.data(), int(done.data.size()), MPI_BYTE, l.peer, int(c), comm_, &done.req));
  l.head = (l.head + 1) % l.bufs.size();
  l.release = l.open = false;
}

std::vector<const std::byte*> ExperienceChannels::next(std::size_t k) {
  if (k >= in_.size()) throw Error(fmt::format("channels: next({}) on a consumer of {} producers", k, in_.size()));
  std::vector<Lane>& lanes = in_[k];
  for (std::size_t c = 0; c < lanes.size(); ++c) {
    Lane& l = lanes[c];
    repost(l, c);  // the caller is done with the previous message
    if (l.open) continue;
    Buffer& b = l.bufs[l.head];
    const int peer = world_[std::size_t(l.peer)];
    const Deadline waited;
    wait(b.req, [peer] { return std::vector{peer}; }, [&] {
      return fmt::format("batch {} of channel '{}' from rank {}", l.expected, plan_.channel_text(types_, c),
                         peer);
    });
    stats_.wait_s += waited.elapsed();
    Header h;
    std::memcpy(&h, b.data.data(), sizeof h);
    if (h.batch != l.expected || h.channel != c || h.steps < 1 || h.steps > std::uint32_t(plan_.steps))
      throw Error(fmt::format("channels: rank {} sent batch {} ({} steps) on channel {} where batch {} of channel {} "
                              "was due",
                              peer, h.batch, h.steps, h.channel, l.expected, c));
    l.open = true;
    l.step = 0;
    l.steps = h.steps;
    ++l.expected;
    ++stats_.messages;
    stats_.bytes += std::uint64_t(h.steps) * plan_.step_bytes(types_, c);
  }
  std::vector<const std::byte*> out(types_.size());
  for (std::size_t t = 0; t < types_.size(); ++t) {
    const std::size_t c = channel_of_[t];
    const Lane& l = lanes[c];
    out[t] = l.bufs[l.head].data.data() + sizeof(Header) + std::size_t(l.step) * plan_.step_bytes(types_, c) +
             offset_in_channel_[t];
  }
  for (Lane& l : lanes)
    if (++l.step == l.steps) l.release = true;
  ++stats_.steps;
  return out;
}

bool ExperienceChannels::ready(std::size_t k) {
  if (k >= in_.size()) return false;
  for (std::size_t c = 0; c < in_[k].size(); ++c) {
    Lane& l = in_[k][c];
    repost(l, c);
    if (l.open) continue;
    const Buffer& b = l.bufs[l.head];
    int flag = 0;
    GMI_MPI_CHECK(MPI_Request_get_status(b.req, &flag, MPI_STATUS_IGNORE));
    if (!flag) return false;
  }
  return true;
}

}  // namespace gmi::mpi
