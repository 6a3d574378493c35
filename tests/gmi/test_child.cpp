// The processes a GMI runtime starts (src/gmi/child.hpp): a child's standard input as a pipe that
// this process writes (how `tune` sends a layout's job its env counts), or /dev/null.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "src/gmi/child.hpp"

namespace gmi::instances {
namespace {

std::string temp_log(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("gmi_test_child_") + std::to_string(::getpid()) + "_" + name + ".log"))
      .string();
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The child's status once it ends (at most 20 s).
int wait_for(Child& c) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!c.poll() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return c.poll().value_or(-100);
}

TEST(Child, ReadsWhatIsWrittenToItsInputLineByLine) {
  ChildSpec s;
  s.argv = {"sh", "-c", "read a; echo \"got $a\"; read b; echo \"got $b\"; cat; echo end"};
  s.log = temp_log("pipe");
  s.stdin_pipe = true;
  Child c(s);
  ASSERT_TRUE(c.write_stdin("128\n"));
  ASSERT_TRUE(c.write_stdin("256\nrest\n"));
  EXPECT_FALSE(c.poll());  // it waits for the end of its input (cat)
  c.close_stdin();
  EXPECT_EQ(wait_for(c), 0);
  EXPECT_EQ(read_all(s.log), "got 128\ngot 256\nrest\nend\n");
}

TEST(Child, WithoutAPipeItsInputIsEmpty) {
  ChildSpec s;
  s.argv = {"sh", "-c", "cat; echo end"};
  s.log = temp_log("null");
  Child c(s);
  EXPECT_FALSE(c.write_stdin("lost\n"));
  EXPECT_EQ(wait_for(c), 0);
  EXPECT_EQ(read_all(s.log), "end\n");
}

TEST(Child, WritingToAChildThatEndedFailsWithoutSigpipe) {
  ChildSpec s;
  s.argv = {"true"};
  s.log = temp_log("ended");
  s.stdin_pipe = true;
  // SIGPIPE as a process starts with it (a test runner may have it ignored, which would hide a
  // write that raises it).
  std::signal(SIGPIPE, SIG_DFL);
  Child c(s);
  EXPECT_EQ(wait_for(c), 0);
  // No reader is left: the write fails (EPIPE), and this process is not ended by SIGPIPE.
  EXPECT_FALSE(c.write_stdin("128\n"));
  EXPECT_FALSE(c.write_stdin("256\n"));
}

}  // namespace
}  // namespace gmi::instances
