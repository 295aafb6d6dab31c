#include "ktune/core/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::subprocess {
namespace {

using Clock = std::chrono::steady_clock;

// A file descriptor closed with its owner.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read, write;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(fmt::format("cannot create a pipe to run a program ({}).", std::strerror(errno)));
  return {Fd(fds[0]), Fd(fds[1])};
}

// In the child, before exec or the function: its own process group (so a deadline stops what it
// starts too), killed when ktune dies, stdin from /dev/null, stdout and stderr to the pipes, and
// the signal state of a fresh process.
void child_setup(const Pipe& out, const Pipe& err, pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, 0);
  ::dup2(out.write.get(), 1);
  ::dup2(err.write.get(), 2);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_DFL);
}

// Reads the child's pipes until both close, and reaps it, within the options' bounds.
class Watch {
 public:
  Watch(pid_t pid, Fd out, Fd err, const Options& o)
      : pid_(pid), out_(std::move(out)), err_(std::move(err)), o_(o), start_(Clock::now()) {}

  Result wait() {
    Result r;
    std::optional<Exit::How> stopped;
    while (out_.get() >= 0 || err_.get() >= 0) {
      if ((stopped = should_stop(r))) break;
      if (!status_ && reap(false)) exited_at_ = Clock::now();
      // A child that ended while something it started still holds the pipes: what is there now
      // is its output, and the rest belongs to no one waiting for it.
      if (status_ && Clock::now() - *exited_at_ > std::chrono::milliseconds(200)) break;
      pollfd p[2] = {{out_.get(), POLLIN, 0}, {err_.get(), POLLIN, 0}};
      const int n = ::poll(p, 2, 50);
      if (n < 0 && errno != EINTR) break;
      if (n <= 0) continue;
      if (p[0].revents) drain(out_, r.out, false, r);
      if (p[1].revents) drain(err_, r.err_tail, true, r);
    }
    if (!stopped && !status_) {
      while (!reap(false)) {  // pipes closed; the child may still run (it closed them itself)
        if ((stopped = should_stop(r))) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    if (stopped) stop();
    ::kill(-pid_, SIGKILL);  // whatever the child left running in its group
    if (stopped) {
      r.exit.how = *stopped;
      r.exit.timeout_s = o_.timeout_s;
      return r;
    }
    if (WIFSIGNALED(*status_)) {
      r.exit.how = Exit::How::signaled;
      r.exit.code = WTERMSIG(*status_);
    } else {
      r.exit.how = Exit::How::exited;
      r.exit.code = WEXITSTATUS(*status_);
    }
    return r;
  }

 private:
  std::optional<Exit::How> should_stop(const Result& r) const {
    if (o_.interrupt && o_.interrupt->load()) return Exit::How::interrupted;
    if (o_.timeout_s > 0 && Clock::now() - start_ > std::chrono::duration<double>(o_.timeout_s))
      return Exit::How::timed_out;
    if (r.out.size() > o_.max_stdout_bytes) return Exit::How::output_limit;
    return std::nullopt;
  }

  bool reap(bool block) {
    int status = 0;
    pid_t got;
    while ((got = ::waitpid(pid_, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
    }
    if (got == pid_) status_ = status;
    return got == pid_;
  }

  void drain(Fd& fd, std::string& into, bool tail, Result& r) {
    char buf[65536];
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
      fd.reset();
      return;
    }
    into.append(buf, static_cast<std::size_t>(n));
    if (tail && into.size() > 2 * o_.stderr_tail_bytes) {
      into.erase(0, into.size() - o_.stderr_tail_bytes);
      r.err_truncated = true;
    }
  }

  // SIGTERM to the group, SIGKILL after the grace period, then the child reaped.
  void stop() {
    ::kill(-pid_, SIGTERM);
    const auto until = Clock::now() + std::chrono::duration<double>(o_.kill_grace_s);
    while (!reap(false) && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!status_) {
      ::kill(-pid_, SIGKILL);
      reap(true);
    }
  }

  pid_t pid_;
  Fd out_, err_;
  const Options& o_;
  Clock::time_point start_;
  std::optional<int> status_;
  std::optional<Clock::time_point> exited_at_;
};

Result finish(Result r, const Options& o) {
  if (r.err_tail.size() > o.stderr_tail_bytes) {
    r.err_tail.erase(0, r.err_tail.size() - o.stderr_tail_bytes);
    r.err_truncated = true;
  }
  return r;
}

}  // namespace

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return fmt::format("was killed by signal {} ({})", sig, ::strsignal(sig));
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

std::string Exit::describe() const {
  switch (how) {
    case How::exited:
      return fmt::format("exited with status {}", code);
    case How::signaled:
      return fmt::format("was killed by signal {} ({})", code, ::strsignal(code));
    case How::timed_out:
      return fmt::format("did not finish within {:g} s and was stopped", timeout_s);
    case How::interrupted:
      return "was stopped because ktune was interrupted";
    case How::output_limit:
      return "wrote more output than ktune reads and was stopped";
    case How::not_started:
      return fmt::format("could not be started ({})", std::strerror(code));
  }
  return "ended";
}

Result run(const std::vector<std::string>& argv, const Options& o) {
  if (argv.empty() || argv.front().empty()) throw Error("no program was given to run.");
  Pipe out = make_pipe(), err = make_pipe(), exec_status = make_pipe();
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw Error(
        fmt::format("cannot start {} (fork failed: {}).", argv.front(), std::strerror(errno)));
  if (pid == 0) {
    child_setup(out, err, parent);
    ::execvp(args[0], args.data());
    const int e = errno;  // exec_status's write end closes on a successful exec (O_CLOEXEC)
    [[maybe_unused]] auto n = ::write(exec_status.write.get(), &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: the group exists before any kill(-pid) of ours
  out.write.reset();
  err.write.reset();
  exec_status.write.reset();
  int exec_errno = 0;
  ssize_t n;
  while ((n = ::read(exec_status.read.get(), &exec_errno, sizeof exec_errno)) < 0 &&
         errno == EINTR) {
  }
  Result r = Watch(pid, std::move(out.read), std::move(err.read), o).wait();
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    r.exit.how = Exit::How::not_started;
    r.exit.code = exec_errno;
  }
  return finish(std::move(r), o);
}

Result run_forked(const std::function<int()>& child, const Options& o) {
  Pipe out = make_pipe(), err = make_pipe();
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("cannot fork a process ({}).", std::strerror(errno)));
  if (pid == 0) {
    child_setup(out, err, parent);
    int rc = 1;
    try {
      rc = child();
    } catch (...) {
    }
    std::fflush(nullptr);
    ::_exit(rc);  // skip the parent's static destructors and atexit handlers
  }
  ::setpgid(pid, pid);
  out.write.reset();
  err.write.reset();
  return finish(Watch(pid, std::move(out.read), std::move(err.read), o).wait(), o);
}

}  // namespace ktune::subprocess
