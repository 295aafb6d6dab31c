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
#include <utility>

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

// In the child, before exec or the function: the Spawn's group, parent-death signal, signal
// state and stdio.
void setup_child(const Spawn& spawn, pid_t parent) {
  if (spawn.own_group) ::setpgid(0, 0);
  if (spawn.die_with_ktune) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
  }
  if (spawn.fresh_signals) {
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_DFL);
  }
  if (spawn.prepare) spawn.prepare();
}

// run()'s stdio: stdin from /dev/null, stdout and stderr to the pipes.
std::function<void()> to_pipes(const Pipe& out, const Pipe& err) {
  return [&out, &err] {
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(out.write.get(), 1);
    ::dup2(err.write.get(), 2);
  };
}

// Reads the child's pipes until both close, and reaps it, within the options' bounds.
class Watch {
 public:
  Watch(Child& child, Fd out, Fd err, const Options& o)
      : child_(child), out_(std::move(out)), err_(std::move(err)), o_(o), start_(Clock::now()) {}

  Result wait() {
    Result r;
    std::optional<Exit::How> stopped;
    std::optional<Clock::time_point> exited_at;
    while (out_.get() >= 0 || err_.get() >= 0) {
      if ((stopped = should_stop(r))) break;
      if (!exited_at && child_.poll()) exited_at = Clock::now();
      // A child that ended while something it started still holds the pipes: what is there now
      // is its output, and the rest belongs to no one waiting for it.
      if (exited_at && Clock::now() - *exited_at > std::chrono::milliseconds(200)) break;
      pollfd p[2] = {{out_.get(), POLLIN, 0}, {err_.get(), POLLIN, 0}};
      const int n = ::poll(p, 2, 50);
      if (n < 0 && errno != EINTR) break;
      if (n <= 0) continue;
      if (p[0].revents) drain(out_, r.out, false, r);
      if (p[1].revents) drain(err_, r.err_tail, true, r);
    }
    std::optional<int> status = child_.poll();
    while (!stopped && !status) {  // pipes closed; the child may still run (it closed them)
      if ((stopped = should_stop(r))) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      status = child_.poll();
    }
    if (stopped) status = child_.stop(o_.kill_grace_s);
    ::kill(-child_.pid(), SIGKILL);  // whatever the child left running in its group
    if (stopped) {
      r.exit.how = *stopped;
      r.exit.timeout_s = o_.timeout_s;
      return r;
    }
    if (WIFSIGNALED(*status)) {
      r.exit.how = Exit::How::signaled;
      r.exit.code = WTERMSIG(*status);
    } else {
      r.exit.how = Exit::How::exited;
      r.exit.code = WEXITSTATUS(*status);
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

  Child& child_;
  Fd out_, err_;
  const Options& o_;
  Clock::time_point start_;
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

Child Child::exec(const std::vector<std::string>& argv, const Spawn& spawn) {
  if (argv.empty() || argv.front().empty()) throw Error("no program was given to run.");
  Pipe exec_status = make_pipe();
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw StartError(
        fmt::format("cannot start {} (fork failed: {})", argv.front(), std::strerror(errno)),
        errno);
  if (pid == 0) {
    setup_child(spawn, parent);
    for (const auto& [name, value] : spawn.env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execvp(args[0], args.data());
    const int e = errno;  // exec_status's write end closes on a successful exec (O_CLOEXEC)
    [[maybe_unused]] auto n = ::write(exec_status.write.get(), &e, sizeof e);
    ::_exit(127);
  }
  Child c;
  c.pid_ = pid;
  c.group_ = spawn.own_group;
  if (spawn.own_group) ::setpgid(pid, pid);  // also here: the group exists before any kill(-pid)
  exec_status.write.reset();
  int e = 0;
  ssize_t n;
  while ((n = ::read(exec_status.read.get(), &e, sizeof e)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof e)) {
    c.wait();
    throw StartError(fmt::format("cannot run '{}': {}", argv.front(), std::strerror(e)), e);
  }
  return c;
}

Child Child::fork(const std::function<int()>& body, const Spawn& spawn) {
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw StartError(fmt::format("cannot fork a process ({})", std::strerror(errno)), errno);
  if (pid == 0) {
    setup_child(spawn, parent);
    int rc = 1;
    try {
      rc = body();
    } catch (...) {
    }
    std::fflush(nullptr);
    ::_exit(rc);  // skip the parent's static destructors and atexit handlers
  }
  Child c;
  c.pid_ = pid;
  c.group_ = spawn.own_group;
  if (spawn.own_group) ::setpgid(pid, pid);
  return c;
}

Child::Child(Child&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), group_(o.group_), status_(o.status_) {}

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0 && !status_) stop(0);
    pid_ = std::exchange(o.pid_, -1);
    group_ = o.group_;
    status_ = o.status_;
  }
  return *this;
}

Child::~Child() {
  if (pid_ > 0 && !status_) stop(0);
}

std::optional<int> Child::poll() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (got == pid_) status_ = status;
  return status_;
}

int Child::wait() {
  if (status_ || pid_ <= 0) return status_.value_or(0);
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  status_ = got == pid_ ? status : 0;
  return *status_;
}

int Child::stop(double grace_s) {
  if (poll() || pid_ <= 0) return status_.value_or(0);
  const pid_t target = group_ ? -pid_ : pid_;
  if (grace_s > 0) {
    ::kill(target, SIGTERM);
    const auto until = Clock::now() + std::chrono::duration<double>(grace_s);
    while (!poll() && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!status_) {
    ::kill(target, SIGKILL);
    wait();
  }
  return *status_;
}

Result run(const std::vector<std::string>& argv, const Options& o) {
  Pipe out = make_pipe(), err = make_pipe();
  Spawn spawn;
  spawn.env = o.env;
  spawn.prepare = to_pipes(out, err);
  Result r;
  try {
    Child child = Child::exec(argv, spawn);
    out.write.reset();
    err.write.reset();
    r = Watch(child, std::move(out.read), std::move(err.read), o).wait();
  } catch (const StartError& e) {
    r.exit.how = Exit::How::not_started;
    r.exit.code = e.error;
  }
  return finish(std::move(r), o);
}

Result run_forked(const std::function<int()>& body, const Options& o) {
  Pipe out = make_pipe(), err = make_pipe();
  Spawn spawn;
  spawn.prepare = to_pipes(out, err);
  Child child = Child::fork(body, spawn);
  out.write.reset();
  err.write.reset();
  return finish(Watch(child, std::move(out.read), std::move(err.read), o).wait(), o);
}

}  // namespace ktune::subprocess
