// The one subprocess helper: both pipes read together, deadlines that stop what the child started,
// bounded output, interrupts, and one description of every way a child ends.
#include "ktune/core/subprocess.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"

namespace ktune::subprocess {
namespace {

using Clock = std::chrono::steady_clock;

// Whether `pid` is a running process (a zombie that no one reaped yet is not).
bool alive(pid_t pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char state = 'Z';
  [[maybe_unused]] const int n = std::fscanf(f, "%*d (%*[^)]) %c", &state);
  std::fclose(f);
  return state != 'Z' && state != 'X';
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST(Subprocess, CapturesStdoutAndTheTailOfStderr) {
  Options o;
  o.stderr_tail_bytes = 8;
  const Result r = run({"/bin/sh", "-c", "echo out; echo 0123456789abcdef >&2; exit 3"}, o);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err_tail, "9abcdef\n");
  EXPECT_TRUE(r.err_truncated);
  EXPECT_EQ(r.exit.how, Exit::How::exited);
  EXPECT_EQ(r.exit.describe(), "exited with status 3");
  EXPECT_FALSE(r.exit.ok());
}

// Both pipes filled at once, far past a pipe's 64 KiB: reading one to its end before the other
// deadlocks (the gate's benchmark program with 200 KB of stderr before its JSON).
TEST(Subprocess, BothPipesFullTogetherDoNotDeadlock) {
  Options o;
  o.timeout_s = 30;
  const Result r = run({"/bin/sh", "-c",
                        "head -c 300000 /dev/zero | tr '\\0' e >&2; "
                        "head -c 300000 /dev/zero | tr '\\0' o; "
                        "head -c 300000 /dev/zero | tr '\\0' e >&2; echo done"},
                       o);
  EXPECT_TRUE(r.exit.ok()) << r.exit.describe();
  EXPECT_EQ(r.out.size(), 300005u);
  EXPECT_TRUE(r.err_truncated);
}

// The deadline stops the child and what it started (its process group), and is described.
TEST(Subprocess, ADeadlineStopsTheChildAndItsChildren) {
  Options o;
  o.timeout_s = 0.3;
  o.kill_grace_s = 0.2;
  const auto start = Clock::now();
  // The shell ignores SIGTERM, so only SIGKILL after the grace period ends it.
  const Result r = run({"/bin/sh", "-c", "trap '' TERM; sleep 100 & echo $!; sleep 100; wait"}, o);
  EXPECT_LT(seconds_since(start), 5);
  EXPECT_EQ(r.exit.how, Exit::How::timed_out);
  EXPECT_EQ(r.exit.describe(), "did not finish within 0.3 s and was stopped");
  const pid_t grandchild = static_cast<pid_t>(std::stol(r.out));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(alive(grandchild)) << "the background sleep outlived the deadline";
}

// A child that exits while something it started keeps its pipes open is done: its output is
// returned promptly, not when the background process ends.
TEST(Subprocess, AChildThatLeftABackgroundProcessIsDone) {
  const auto start = Clock::now();
  const Result r = run({"/bin/sh", "-c", "sleep 100 & echo '{}'"});
  EXPECT_LT(seconds_since(start), 5);
  EXPECT_TRUE(r.exit.ok()) << r.exit.describe();
  EXPECT_EQ(r.out, "{}\n");
}

TEST(Subprocess, OutputPastTheLimitStopsTheChild) {
  Options o;
  o.max_stdout_bytes = 1 << 20;
  const Result r = run({"/bin/cat", "/dev/zero"}, o);
  EXPECT_EQ(r.exit.how, Exit::How::output_limit);
  EXPECT_LT(r.out.size(), 2u << 20);
}

TEST(Subprocess, AnInterruptStopsTheChild) {
  std::atomic<bool> stop{false};
  Options o;
  o.interrupt = &stop;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  const auto start = Clock::now();
  const Result r = run({"/bin/sleep", "100"}, o);
  t.join();
  EXPECT_LT(seconds_since(start), 5);
  EXPECT_EQ(r.exit.how, Exit::How::interrupted);
}

TEST(Subprocess, EveryWayOfEndingIsDescribed) {
  const Result missing = run({"/no/such/program"});
  EXPECT_EQ(missing.exit.how, Exit::How::not_started);
  EXPECT_EQ(missing.exit.describe(), "could not be started (No such file or directory)");
  const Result killed = run({"/bin/sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed.exit.how, Exit::How::signaled);
  EXPECT_EQ(killed.exit.describe(), "was killed by signal 9 (Killed)");
  EXPECT_EQ(describe_wait_status(3 << 8), "exited with status 3");
  EXPECT_THROW(run({}), Error);
  // stdin is /dev/null: a program that reads it ends instead of waiting for a terminal.
  EXPECT_TRUE(run({"/bin/cat"}).exit.ok());
}

TEST(Subprocess, AForkedFunctionAnswersOnStdout) {
  const Result r = run_forked([] {
    std::fputs("{\"count\": 2}", stdout);
    return 0;
  });
  EXPECT_TRUE(r.exit.ok());
  EXPECT_EQ(r.out, "{\"count\": 2}");
  Options o;
  o.timeout_s = 0.2;
  const Result hung = run_forked(
      [] {
        for (;;) ::pause();
        return 0;
      },
      o);
  EXPECT_EQ(hung.exit.how, Exit::How::timed_out);
}

// Child: a program or function ktune starts and watches itself (ktune profile's program, the
// measuring process, the per-GPU workers).
TEST(SubprocessChild, RunsAProgramWithItsEnvironmentAndReportsItsStatus) {
  Spawn spawn;
  spawn.env = {{"KTUNE_CHILD_TEST", "7"}};
  Child c = Child::exec({"sh", "-c", "exit $KTUNE_CHILD_TEST"}, spawn);
  const int status = c.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(c.poll(), status);  // reaped once, remembered
}

TEST(SubprocessChild, AProgramThatCannotStartIsAStartErrorWithItsReason) {
  try {
    Child::exec({"/no/such/program"});
    FAIL() << "started";
  } catch (const StartError& e) {
    EXPECT_EQ(e.error, ENOENT);
    EXPECT_NE(std::string(e.what()).find("cannot run '/no/such/program'"), std::string::npos);
  }
  EXPECT_THROW(Child::exec({}), Error);
}

TEST(SubprocessChild, PollsWithoutWaitingAndStopsWhatItsGroupStarted) {
  Child c = Child::exec({"sh", "-c", "sleep 30 & sleep 30"});
  EXPECT_FALSE(c.poll());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = Clock::now();
  const int status = c.stop(5);
  EXPECT_LT(seconds_since(t0), 2.0);  // SIGTERM was enough
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(alive(c.pid()));
}

TEST(SubprocessChild, AForkedFunctionsReturnIsItsStatusAndAChildIsStoppedWithItsOwner) {
  Child done = Child::fork([] { return 3; });
  EXPECT_EQ(WEXITSTATUS(done.wait()), 3);
  Child threw = Child::fork([]() -> int { throw Error("no"); });
  EXPECT_EQ(WEXITSTATUS(threw.wait()), 1);
  pid_t pid = -1;
  {
    Child hung = Child::fork([] {
      for (;;) ::pause();
      return 0;
    });
    pid = hung.pid();
    EXPECT_TRUE(alive(pid));
  }  // destroyed while running: killed and reaped
  EXPECT_FALSE(alive(pid));
}

}  // namespace
}  // namespace ktune::subprocess
