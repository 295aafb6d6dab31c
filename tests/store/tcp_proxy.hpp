#pragma once
// Test helper: a TCP proxy in front of the test PostgreSQL server, so a test can make the server
// look frozen (a dead host, a dropped network: nothing answers, nothing is refused) or restarted
// (every connection dropped, new ones refused, then accepted again) without touching the server
// that other tests share.
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ktune::test {

class TcpProxy {
 public:
  // Forwards 127.0.0.1:port() to target_host:target_port.
  TcpProxy(std::string target_host, int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // `url` (postgresql://user@host:port/db?...) with its host and port replaced by this proxy's.
  std::string url_through(const std::string& url) const;

  void freeze();  // bytes stop moving either way; connections stay open, new ones queue
  void down();    // every connection closed, new ones refused (the server stopped)
  void up();      // back to forwarding, accepting on the same port

 private:
  void loop();
  void listen_now();

  std::string host_;
  int target_port_;
  int port_ = 0;
  int listener_ = -1;
  std::atomic<bool> frozen_{false}, stopping_{false};
  std::mutex m_;
  std::vector<std::pair<int, int>> pairs_;  // (client, server) sockets
  std::thread thread_;
};

// Host and port of a postgresql:// URL ("127.0.0.1", 54329).
std::pair<std::string, int> pg_host_port(const std::string& url);

}  // namespace ktune::test
