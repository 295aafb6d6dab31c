#pragma once
// The one way ktune runs another program: spawned without a shell, both output pipes read
// together (a child that fills one pipe while ktune waits on the other never deadlocks), its
// output bounded, a deadline after which it and everything it started are stopped, and one
// description of how it ended. Every command that runs a program uses it (gate benchmarks, the
// GPU probe); callers that talk to a long-lived child over pipes share describe_wait_status.
#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace ktune::subprocess {

struct Options {
  double timeout_s = 0;  // wall-clock deadline; 0: none
  // stdout kept in full up to this; a child that writes more is stopped (output_limit).
  std::size_t max_stdout_bytes = 64u << 20;
  std::size_t stderr_tail_bytes = 4096;  // only the end of stderr is kept
  // Set (by a signal handler, another thread): the child is stopped and run() returns.
  const std::atomic<bool>* interrupt = nullptr;
  double kill_grace_s = 2;  // SIGTERM to the child's process group, then SIGKILL after this
};

// How a child ended.
struct Exit {
  enum class How { exited, signaled, timed_out, interrupted, output_limit, not_started };
  How how = How::not_started;
  int code = 0;  // exit status (exited), signal number (signaled), errno (not_started)
  double timeout_s = 0;

  bool ok() const { return how == How::exited && code == 0; }
  // "exited with status 3", "was killed by signal 9 (Killed)", "did not finish within 60 s and
  // was stopped", "could not be started (No such file or directory)": follows the program's name.
  std::string describe() const;
};

struct Result {
  Exit exit;
  std::string out;       // all of stdout (up to max_stdout_bytes)
  std::string err_tail;  // the last stderr_tail_bytes of stderr
  bool err_truncated = false;
};

// Runs argv[0] (looked up in PATH) with argv, stdin from /dev/null, in a process group of its own
// that is stopped with it on a deadline, an interrupt, too much output, or ktune's own death
// (PR_SET_PDEATHSIG). Never throws for what the child does; ktune::Error when argv is empty or
// no pipe or process can be made.
Result run(const std::vector<std::string>& argv, const Options& options = {});

// The same for a function run in a forked child (no exec), which writes its answer to stdout
// (fd 1) and returns the exit status. For work that must not touch this process's state, such
// as initialising CUDA before this process forks others.
Result run_forked(const std::function<int()>& child, const Options& options = {});

// "exited with status N" / "was killed by signal N (NAME)" for a waitpid status.
std::string describe_wait_status(int status);

}  // namespace ktune::subprocess
