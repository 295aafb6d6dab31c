#include "ktune/core/json.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune {
namespace {

// A short rendering of the offending value for messages; long strings and containers are cut.
std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() <= 40) return s;
  if (v.is_object() || v.is_array()) return std::string("an ") + v.type_name();
  return s.substr(0, 37) + "...";
}

}  // namespace

nlohmann::json parse_json(std::string_view text, std::string_view source,
                          std::string_view expected) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw Error(fmt::format("{} nests JSON deeper than {} levels; {}.", source, kMaxJsonDepth,
                                expected));
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(fmt::format("{} is not valid JSON; {}.", source, expected));
  return j;
}

std::int64_t json_integer(const nlohmann::json& value, std::string_view field, std::int64_t min,
                          std::int64_t max) {
  // A float (even 4096.0: no ktune writer puts a count that way), a string, or an unsigned
  // value past int64 is refused rather than converted.
  bool whole = false;
  std::int64_t v = 0;
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    whole = u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    v = static_cast<std::int64_t>(u);
  } else if (value.is_number_integer()) {
    whole = true;
    v = value.get<std::int64_t>();
  }
  if (!whole || v < min || v > max) {
    constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    const std::string range = min == kMin && max == kMax ? ""
                              : max == kMax              ? fmt::format(" of at least {}", min)
                                                         : fmt::format(" from {} to {}", min, max);
    throw Error(fmt::format("{} must be a whole number{}, not {}.", field, range, shown(value)));
  }
  return v;
}

double json_number(const nlohmann::json& value, std::string_view field) {
  if (!value.is_number())
    throw Error(fmt::format("{} must be a number, not {}.", field, shown(value)));
  return value.get<double>();
}

std::string json_string(const nlohmann::json& value, std::string_view field) {
  if (!value.is_string())
    throw Error(fmt::format("{} must be a string, not {}.", field, shown(value)));
  return value.get<std::string>();
}

bool json_boolean(const nlohmann::json& value, std::string_view field) {
  if (!value.is_boolean())
    throw Error(fmt::format("{} must be true or false, not {}.", field, shown(value)));
  return value.get<bool>();
}

std::vector<std::string> json_strings(const nlohmann::json& value, std::string_view field) {
  if (!value.is_array() ||
      !std::all_of(value.begin(), value.end(), [](const auto& e) { return e.is_string(); }))
    throw Error(fmt::format("{} must be a list of strings, not {}.", field, shown(value)));
  return value.get<std::vector<std::string>>();
}

std::string json_optional_string(const nlohmann::json& j, const char* name,
                                 std::string_view fallback) {
  if (!j.is_object() || !j.contains(name) || j[name].is_null()) return std::string(fallback);
  return json_string(j[name], fmt::format("the field \"{}\"", name));
}

}  // namespace ktune
