#pragma once
// Reading JSON that a user wrote (cache entries, tuning packs, trace metadata) strictly: a wrong
// type, a fraction where a count belongs or a number out of range is one sentence naming the
// field, never nlohmann's internal message, and never silently truncated (4096.7 is not 4096).
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ktune {

// Deeper documents are refused before they are parsed: ktune's own files nest a few levels, and
// nlohmann's recursive copy and dump would overflow the stack on a hostile 100,000-deep one.
constexpr int kMaxJsonDepth = 64;

// Parses `text`; ktune::Error naming `source` when it is not JSON or nests deeper than
// kMaxJsonDepth. `expected` completes the sentence: "give one cache entry object".
nlohmann::json parse_json(std::string_view text, std::string_view source,
                          std::string_view expected);

// `field` names the value in messages, e.g. "the field \"driver_major\"". Each throws
// ktune::Error: "<field> must be a whole number from 0 to 2147483647, not 3.7".
std::int64_t json_integer(const nlohmann::json& value, std::string_view field,
                          std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                          std::int64_t max = std::numeric_limits<std::int64_t>::max());
double json_number(const nlohmann::json& value, std::string_view field);
std::string json_string(const nlohmann::json& value, std::string_view field);
bool json_boolean(const nlohmann::json& value, std::string_view field);
std::vector<std::string> json_strings(const nlohmann::json& value, std::string_view field);

// The member `name` of object `j` as a string; `fallback` when it is absent or null.
std::string json_optional_string(const nlohmann::json& j, const char* name,
                                 std::string_view fallback = {});

}  // namespace ktune
