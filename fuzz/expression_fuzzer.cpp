// tune::Expression: any text is parsed, and what parses is evaluated in a small scope holding the
// kinds of names T1 constraints read (ints, a float, a bool, a string, a list). A bad expression
// must end in ktune::Error (ExpressionError); anything else escaping, or a sanitizer report, is a
// finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ktune/core/error.hpp"
#include "ktune/spec/expression.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using ktune::tune::MapScope;
  using ktune::tune::Value;
  static const MapScope scope = [] {
    MapScope s;
    s.set("block_size_x", Value(128));
    s.set("block_size_y", Value(4));
    s.set("tile_size_x", Value(-3));
    s.set("big", Value(std::int64_t{1} << 62));
    s.set("ratio", Value(0.5));
    s.set("use_shared", Value(true));
    s.set("layout", Value("row"));
    s.set("ProblemSize", Value(Value::List{Value(4096), Value(1024), Value(1)}));
    return s;
  }();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto e = ktune::tune::Expression::parse(text);
    // shown(), as messages render values: a legitimate 8 M-element result is 33 MB of repr, which
    // nothing in ktune prints and which takes longer than the fuzzer's 10 s under ASan.
    (void)e.evaluate(scope).shown();
  } catch (const ktune::Error&) {
  }
  return 0;
}
