#include "ktune/tune/isolated_evaluator.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/subprocess.hpp"

namespace ktune::tune {
namespace {

using nlohmann::json;

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads one line from `fd` into `line`, keeping what follows it in `buffer`. Returns false on
// end of file or when `timeout_s` (< 0: none) passes first; `timed_out` says which.
bool read_line(int fd, std::string& buffer, std::string& line, double timeout_s, bool& timed_out) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s);
  timed_out = false;
  for (;;) {
    if (const auto nl = buffer.find('\n'); nl != std::string::npos) {
      line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return true;
    }
    int wait_ms = -1;
    if (timeout_s >= 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        return false;
      }
      wait_ms = static_cast<int>(std::min<long long>(left.count(), 1 << 30));
    }
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;  // the deadline check above decides
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

json config_json(const ConfigMap& c) {
  json j = json::object();
  for (const auto& [k, v] : c) j[k] = v;
  return j;
}

ConfigMap config_from(const json& j) {
  ConfigMap c;
  for (const auto& [k, v] : j.items()) c[k] = v.get<Value>();
  return c;
}

// The child's side: build the evaluator, then answer requests until the parent closes the pipe.
// A fatal result is the last thing it sends.
[[noreturn]] void serve(const IsolatedEvaluator::Factory& factory, int in, int out) {
  // Ctrl-C and SIGTERM are the parent's to handle: it stops after this candidate (a worker gives
  // its claim back), and ends this process by closing its input. A service manager's SIGTERM to
  // the whole group would otherwise kill this one mid-measurement and record a healthy
  // configuration as failed.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);  // the parent's stdout carries its own output only
  int code = 0;
  try {
    std::unique_ptr<Evaluator> ev = factory();
    write_all(out, json{{"ready", true}}.dump() + "\n");
    std::string buffer, line;
    bool timed_out = false;
    while (read_line(in, buffer, line, -1, timed_out)) {
      const json req = json::parse(line);
      if (req.contains("describe")) {
        write_all(out, json{{"describe", ev->describe()}}.dump() + "\n");
        continue;
      }
      if (req.contains("prepare") || req.contains("next_ready")) {
        const bool prepare = req.contains("prepare");
        std::vector<ConfigMap> configs;
        for (const auto& c : req[prepare ? "prepare" : "next_ready"])
          configs.push_back(config_from(c));
        if (prepare)
          ev->prepare(configs);
        else
          write_all(out, json{{"next_ready", ev->next_ready(configs)}}.dump() + "\n");
        continue;
      }
      std::optional<double> best;
      if (!req["best_ns"].is_null()) best = req["best_ns"].get<double>();
      SessionRecord r;
      r.config = config_from(req["evaluate"]);
      r.result = ev->evaluate(r.config, best);
      write_all(out, record_json(r).dump() + "\n");
      // This process's GPU context is gone, and tearing its objects down only fails: leave now.
      if (r.result.context_lost) ::_exit(0);
    }
  } catch (const std::exception& e) {
    write_all(out, json{{"error", e.what()}}.dump() + "\n");
    code = 1;
  }
  ::_exit(code);  // skip the parent's static destructors and atexit handlers
}

std::string describe_exit(int status) {
  return subprocess::describe_wait_status(status);
}

}  // namespace

struct IsolatedEvaluator::Child {
  subprocess::Child process;
  int to = -1, from = -1;
  std::string buffer;

  // Closes the pipes and reaps the process, killing it first when `kill` is set; the exit status.
  int end(bool kill) {
    if (to >= 0) ::close(to);
    const int status = kill ? process.stop(0) : process.wait();
    if (from >= 0) ::close(from);
    to = from = -1;
    return status;
  }
};

IsolatedEvaluator::IsolatedEvaluator(Factory factory, IsolationSettings settings)
    : child_kind_(std::move(factory)), settings_(settings) {}

IsolatedEvaluator::IsolatedEvaluator(ChildProgram program, IsolationSettings settings)
    : child_kind_(std::move(program)), settings_(settings) {
  if (std::get<ChildProgram>(child_kind_).argv.empty())
    throw Error("internal: a measuring program needs a command line.");
}

// EOF on its input: it returns from serve() and exits. When it was asked to compile ahead what was
// never evaluated (a session stopped by its time limit or by Ctrl-C), it is stopped instead: its
// exit would wait for those compiles, seconds each for a large kernel, for nobody.
IsolatedEvaluator::~IsolatedEvaluator() {
  if (child_) child_->end(!prepared_.empty());
}

void IsolatedEvaluator::start() {
  ::signal(SIGPIPE, SIG_IGN);  // a child that died is seen as a failed write, not our death
  int down[2], up[2];
  if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0)
    throw Error(
        fmt::format("cannot create a pipe to the measuring process ({}).", std::strerror(errno)));
  subprocess::Spawn spawn;
  subprocess::Child process;
  try {
    if (const auto* program = std::get_if<ChildProgram>(&child_kind_)) {
      // A group of its own, stopped as a whole (its compile workers too), out of reach of the
      // terminal's Ctrl-C, which is the session's to handle; it dies with ktune.
      spawn.env = program->env;
      spawn.prepare = [&] {
        ::dup2(down[0], STDIN_FILENO);  // the copies lose O_CLOEXEC: they survive the exec
        ::dup2(up[1], STDOUT_FILENO);
        for (int fd : {STDIN_FILENO, STDOUT_FILENO}) ::fcntl(fd, F_SETFD, 0);
      };
      process = subprocess::Child::exec(program->argv, spawn);
    } else {
      // In ktune's process group and with its signal state (Ctrl-C is the session's to handle,
      // not a candidate's crash); it leaves by itself when ktune goes (EOF on its input).
      spawn.own_group = false;
      spawn.fresh_signals = false;
      spawn.die_with_ktune = false;
      process = subprocess::Child::fork(
          [&, &factory = std::get<Factory>(child_kind_)]() -> int {
            ::close(down[1]);
            ::close(up[0]);
            serve(factory, down[0], up[1]);
          },
          spawn);
    }
  } catch (const subprocess::StartError& e) {
    for (int fd : {down[0], down[1], up[0], up[1]}) ::close(fd);
    throw Error(fmt::format("cannot start the measuring process: {}.", e.what()));
  }
  ::close(down[0]);
  ::close(up[1]);
  child_ = std::make_unique<Child>();
  child_->process = std::move(process);
  child_->to = down[1];
  child_->from = up[0];
  std::string line;
  bool timed_out = false;
  json hello;
  if (read_line(child_->from, child_->buffer, line, settings_.start_timeout_s, timed_out)) {
    try {
      hello = json::parse(line);
    } catch (const json::exception&) {
    }
  }
  if (!hello.is_object()) hello = json::object();  // not the protocol: the program's exit says why
  if (hello.contains("ready") && hello["ready"] == true) {
    if (!prepared_.empty()) {  // what the last child was compiling ahead, this one compiles
      json configs = json::array();
      for (const auto& c : prepared_) configs.push_back(config_json(c));
      write_all(child_->to, json{{"prepare", configs}}.dump() + "\n");
    }
    return;
  }
  const int status = child_->end(timed_out);
  child_.reset();
  if (hello.contains("error") && hello["error"].is_string())
    throw Error(hello["error"].get<std::string>());
  throw Error(fmt::format("the measuring process {} before it was ready{}; nothing was measured.",
                          describe_exit(status), timed_out ? " (it did not start in time)" : ""));
}

void IsolatedEvaluator::stop() {
  if (child_) child_->end(true);
  child_.reset();
}

json IsolatedEvaluator::describe() {
  if (!child_) start();
  std::string line;
  bool timed_out = false;
  if (write_all(child_->to, json{{"describe", true}}.dump() + "\n") &&
      read_line(child_->from, child_->buffer, line, settings_.start_timeout_s, timed_out)) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("describe")) return j["describe"];
    if (j.is_object() && j.contains("error")) {
      stop();
      throw Error(j["error"].get<std::string>());
    }
  }
  const int status = child_->end(true);
  child_.reset();
  throw Error(
      fmt::format("the measuring process {} before it described its problem{}; nothing was "
                  "measured.",
                  describe_exit(status), timed_out ? " (it did not answer in time)" : ""));
}

void IsolatedEvaluator::prepare(const std::vector<ConfigMap>& upcoming) {
  if (!child_) start();
  json configs = json::array();
  for (const auto& c : upcoming) {
    configs.push_back(config_json(c));
    prepared_.push_back(c);
  }
  write_all(child_->to, json{{"prepare", configs}}.dump() + "\n");  // a dead child: seen next
}

std::size_t IsolatedEvaluator::next_ready(const std::vector<ConfigMap>& candidates) {
  if (candidates.size() < 2) return 0;
  if (!child_) start();
  json configs = json::array();
  for (const auto& c : candidates) configs.push_back(config_json(c));
  std::string line;
  bool timed_out = false;
  if (write_all(child_->to, json{{"next_ready", configs}}.dump() + "\n") &&
      read_line(child_->from, child_->buffer, line, settings_.candidate_timeout_s, timed_out)) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("next_ready") && j["next_ready"].is_number_unsigned() &&
        j["next_ready"].get<std::size_t>() < candidates.size())
      return j["next_ready"].get<std::size_t>();
  }
  // No answer, or not one of ours: this child cannot be trusted to answer the next request in
  // turn. A fresh one compiles what was prepared again.
  stop();
  ++restarts_;
  return 0;
}

CandidateOutcome IsolatedEvaluator::evaluate(const ConfigMap& config,
                                             std::optional<double> best_ns) {
  if (!child_) start();
  std::erase(prepared_, config);
  const json req = {{"evaluate", config_json(config)},
                    {"best_ns", best_ns ? json(*best_ns) : json(nullptr)}};
  std::string line;
  bool timed_out = false;
  const bool sent = write_all(child_->to, req.dump() + "\n");
  if (sent &&
      read_line(child_->from, child_->buffer, line, settings_.candidate_timeout_s, timed_out)) {
    SessionRecord r;
    try {
      r = record_from_json(json::parse(line));
    } catch (const std::exception& e) {
      stop();
      throw Error(
          fmt::format("the measuring process answered something unreadable ({}).", e.what()));
    }
    if (r.result.context_lost) {  // it exits after this answer: replace it
      child_->end(false);
      child_.reset();
      ++restarts_;
      r.result.context_lost = false;
      r.result.detail += "; the GPU context was lost, so the measuring process was restarted";
    }
    return r.result;
  }
  CandidateOutcome r;
  const int status = child_->end(true);
  child_.reset();
  ++restarts_;
  if (timed_out) {
    r.status = Status::timeout;
    r.detail = fmt::format(
        "did not finish within {:.0f} s (compile and measurement); the measuring process was "
        "stopped and restarted",
        settings_.candidate_timeout_s);
  } else {
    r.status = Status::launch_failed;
    r.detail = fmt::format(
        "the measuring process {} while running this configuration; it was "
        "restarted",
        describe_exit(status));
  }
  return r;
}

}  // namespace ktune::tune
