// Helper process of the concurrency test: store_writer URL ID COUNT. Writes COUNT entries of its
// own and offers COUNT ever-faster results for one key that every writer contends for.
#include <cstdio>
#include <exception>
#include <string>

#include "ktune/store/store.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: store_writer URL ID COUNT\n");
    return 2;
  }
  try {
    const int id = std::stoi(argv[2]), count = std::stoi(argv[3]);
    auto store = ktune::store::Store::open(argv[1]);
    ktune::store::CacheEntry e;
    e.key = {"contended", "f32", "", "sm_90", "NVIDIA H100 80GB HBM3", "13.0", 0};
    e.config = nlohmann::json::object();
    e.samples = 10;
    e.noise_ns = 0;
    for (int j = 0; j < count; ++j) {
      e.shape = {1'000'000 + id * 1000 + j};
      e.median_ns = 100;
      e.config["writer"] = id;
      if (!store->put_entry(e).winner) return 3;  // a fresh key must always win
      e.shape = {7};
      e.median_ns = 100000 - id * 100 - j;  // every writer's last offer is its fastest
      store->put_entry(e);
    }
    return 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "store_writer: %s\n", ex.what());
    return 1;
  }
}
