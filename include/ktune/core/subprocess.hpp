#pragma once
// The one way ktune starts another process. Child starts one (a program, or a function in a forked
// copy of ktune) and watches it: polled, waited for, stopped (SIGTERM to it or its group, SIGKILL
// after a grace period). run() and run_forked() are the common case on top of it: both output
// pipes read together (a child that fills one pipe while ktune waits on the other never
// deadlocks), output bounded, a deadline after which the child and everything it started are
// stopped, and one description of how it ended. Every place that starts a process uses it: gate
// benchmarks and the GPU probe (run), `ktune profile`'s program, a tuning session's measuring
// process and `worker --all-devices`'s workers (Child).
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
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
  std::vector<std::pair<std::string, std::string>> env;  // set in the child (run() only)
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

// How Child starts a process. Its stdin, stdout and stderr are ktune's own unless `prepare`
// replaces them (run() sends them to pipes); descriptors ktune opened with O_CLOEXEC stay behind.
struct Spawn {
  std::vector<std::pair<std::string, std::string>> env;  // set in the child before exec
  bool own_group = true;       // a process group of its own, which stop() signals as a whole
  bool die_with_ktune = true;  // SIGKILL when ktune dies (PR_SET_PDEATHSIG)
  bool fresh_signals = true;   // default dispositions and an empty mask, as a new program has
  // Run in the child after the setup above, before exec or the function: stdio redirections, or an
  // environment that names the child's own pid.
  std::function<void()> prepare;
};

// Why a child could not be started: the program's name and the system's reason.
class StartError : public std::runtime_error {
 public:
  StartError(const std::string& what, int error) : std::runtime_error(what), error(error) {}
  int error;  // errno
};

// A started child, stopped (and reaped) when the Child is destroyed while it still runs.
class Child {
 public:
  // execvp(argv). Throws StartError when it cannot be started, exec failure included.
  static Child exec(const std::vector<std::string>& argv, const Spawn& spawn = {});
  // `body` in a forked child; its return value is the exit status (an exception: 1). The child
  // leaves with _exit, skipping ktune's static destructors and atexit handlers.
  static Child fork(const std::function<int()>& body, const Spawn& spawn = {});

  Child() = default;
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  std::optional<int> poll();  // its wait status once it has ended, without waiting
  int wait();                 // waits for it to end; its wait status
  // SIGTERM (to its group when it has one), SIGKILL after `grace_s`; its wait status.
  int stop(double grace_s = 2);

 private:
  pid_t pid_ = -1;
  bool group_ = false;
  std::optional<int> status_;
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
