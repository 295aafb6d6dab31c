#include "ktune/bench/outcome.hpp"

#include <utility>

namespace ktune::bench {
namespace {

constexpr std::pair<Status, const char*> kNames[] = {
    {Status::ok, "ok"},
    {Status::compile_failed, "compile_failed"},
    {Status::launch_failed, "launch_failed"},
    {Status::resources_exceeded, "resources_exceeded"},
    {Status::wrong_result, "wrong_result"},
    {Status::slower, "slower"},
    {Status::timeout, "timeout"},
};

}  // namespace

const char* to_string(Status s) {
  for (const auto& [status, name] : kNames)
    if (status == s) return name;
  return "?";
}

std::optional<Status> status_from_string(std::string_view s) {
  for (const auto& [status, name] : kNames)
    if (s == name) return status;
  return std::nullopt;
}

}  // namespace ktune::bench
