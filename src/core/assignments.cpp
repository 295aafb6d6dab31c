#include "ktune/core/assignments.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune {

std::vector<Assignment> parse_assignments(std::string_view text, std::string_view flag,
                                          std::string_view example) {
  std::vector<Assignment> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
      throw Error(fmt::format("{} item '{}' is not NAME=VALUE; write e.g. {} {}.", flag, item, flag,
                              example));
    Assignment a{std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))};
    if (std::any_of(out.begin(), out.end(), [&](const Assignment& b) { return b.name == a.name; }))
      throw Error(fmt::format("{} names '{}' twice; give each name once, e.g. {} {}.", flag, a.name,
                              flag, example));
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<NamedSize> parse_named_sizes(std::string_view text, std::string_view flag,
                                         std::string_view example, std::int64_t least) {
  const bool old_form = !text.empty() && text.find('=') == std::string_view::npos &&
                        text.find_first_not_of("0123456789x") == std::string_view::npos;
  if (old_form)
    throw Error(fmt::format(
        "{} {} is the old form, sizes joined by 'x'; name each size instead, e.g. {} {}.", flag,
        text, flag, example));
  std::vector<NamedSize> out;
  for (const Assignment& a : parse_assignments(text, flag, example)) {
    std::int64_t v = 0;
    const char* last = a.value.data() + a.value.size();
    const auto [ptr, ec] = std::from_chars(a.value.data(), last, v);
    if (ec != std::errc() || ptr != last || v < least)
      throw Error(fmt::format("{} {}={} needs {} integer size; write e.g. {} {}.", flag, a.name,
                              a.value, least > 0 ? "a positive" : "a non-negative", flag, example));
    out.push_back({a.name, v});
  }
  return out;
}

}  // namespace ktune
