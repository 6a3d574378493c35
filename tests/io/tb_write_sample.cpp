// Writes the known sequence that check_tensorboard.py reads back with TensorBoard's own reader:
//   episode_return_mean  steps 0..9, value 1.5 * step; step 10 NaN; step 11 +inf
//   loss/policy 0.25, loss/value -3.75, lr 3e-4   one event at step 20
//   big_step 1.0                                  at step 2^40
// Wall time of an event at step s (s < 2^40): 1700000000 + 0.25 * s; big_step: 1800000000.5.
// Usage: tb_write_sample DIR   (prints the event file's path)
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>

#include "src/io/tensorboard.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    gmi::io::TensorBoardWriter w(argv[1]);
    const auto wall = [](std::int64_t step) { return 1700000000.0 + 0.25 * double(step); };
    for (std::int64_t s = 0; s < 10; ++s) w.scalar("episode_return_mean", s, 1.5 * double(s), wall(s));
    w.scalar("episode_return_mean", 10, std::numeric_limits<double>::quiet_NaN(), wall(10));
    w.scalar("episode_return_mean", 11, std::numeric_limits<double>::infinity(), wall(11));
    w.scalars(20, wall(20), {{"loss/policy", 0.25}, {"loss/value", -3.75}, {"lr", 3e-4}});
    w.scalar("big_step", std::int64_t(1) << 40, 1.0, 1800000000.5);
    std::printf("%s\n", w.path().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tb_write_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
