#include "ktune/bench/compile_pool.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "ktune/bench/pipeline.hpp"
#include "ktune/bench/runner.hpp"

namespace ktune::bench {

Compiled compile_now(const KernelLaunch& launch, const std::string& arch) {
  Compiled c;
  const auto t0 = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  try {
    c.program = compile_launch(launch, arch);
    if (!c.program->from_cache) c.compile_s = seconds();
  } catch (const cuda::CompileError& e) {
    const std::string& log = e.log();
    std::size_t pos = 0;
    for (int i = 0; i < 5 && pos != std::string::npos; ++i) pos = log.find('\n', pos + 1);
    c.error = fmt::format("{}: {}", e.what(), log.substr(0, pos));
    c.resource = log_shows_resource_limit(log);
    c.compile_s = seconds();
  } catch (const std::exception& e) {
    c.error = e.what();
  }
  return c;
}

CompilePool::CompilePool(std::string arch, unsigned threads) : arch_(std::move(arch)) {
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

std::string CompilePool::key_of(const KernelLaunch& l) const {
  return cuda::compile_cache_key(l.source, compile_options(l, arch_));
}

void CompilePool::enqueue(const KernelLaunch& launch) {
  const std::string key = key_of(launch);
  {
    std::lock_guard lock(mu_);
    if (!jobs_.emplace(key, Job{launch, std::nullopt, 1}).second) {
      ++jobs_.at(key).wanted;  // the same code again: compile once, hand it out twice
      return;
    }
    queue_.push_back(key);
  }
  cv_.notify_one();
}

Compiled CompilePool::take(const KernelLaunch& launch) {
  const std::string key = key_of(launch);
  std::unique_lock lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) {
    lock.unlock();
    return compile_now(launch, arch_);
  }
  if (auto q = std::find(queue_.begin(), queue_.end(), key); q != queue_.end()) {
    queue_.erase(q);  // not started: compile it here rather than wait behind the others
    lock.unlock();
    Compiled c = compile_now(launch, arch_);
    lock.lock();
    it = jobs_.find(key);
    it->second.result = c;
    done_.notify_all();
  }
  done_.wait(lock, [&] { return it->second.result.has_value(); });
  Compiled c = *it->second.result;
  if (--it->second.wanted == 0) jobs_.erase(it);
  return c;
}

std::size_t CompilePool::first_done(const std::vector<KernelLaunch>& launches) {
  if (launches.empty() || workers_.empty()) return 0;
  std::vector<std::string> keys;
  keys.reserve(launches.size());
  for (const auto& l : launches) keys.push_back(key_of(l));
  std::unique_lock lock(mu_);
  std::size_t found = 0;
  done_.wait(lock, [&] {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto it = jobs_.find(keys[i]);
      if (it == jobs_.end() || it->second.result) {
        found = i;
        return true;
      }
    }
    return false;
  });
  return found;
}

void CompilePool::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const std::string key = queue_.front();
    queue_.pop_front();
    const KernelLaunch launch = jobs_.at(key).launch;
    lock.unlock();
    Compiled c = compile_now(launch, arch_);
    lock.lock();
    if (auto it = jobs_.find(key); it != jobs_.end()) it->second.result = std::move(c);
    done_.notify_all();
  }
}

}  // namespace ktune::bench
