#include "tcp_proxy.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace ktune::test {

std::pair<std::string, int> pg_host_port(const std::string& url) {
  const auto scheme = url.find("://");
  auto start = scheme == std::string::npos ? 0 : scheme + 3;
  const auto slash = url.find('/', start);
  const auto at = url.rfind('@', slash);
  if (at != std::string::npos && at >= start) start = at + 1;
  const std::string hostport = url.substr(start, slash - start);
  const auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return {hostport, 5432};
  return {hostport.substr(0, colon), std::stoi(hostport.substr(colon + 1))};
}

TcpProxy::TcpProxy(std::string target_host, int target_port)
    : host_(std::move(target_host)), target_port_(target_port) {
  listen_now();
  thread_ = std::thread([this] { loop(); });
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  thread_.join();
  down();
}

std::string TcpProxy::url_through(const std::string& url) const {
  const auto scheme = url.find("://");
  auto start = scheme == std::string::npos ? 0 : scheme + 3;
  const auto slash = url.find('/', start);
  const auto at = url.rfind('@', slash);
  if (at != std::string::npos && at >= start) start = at + 1;
  return url.substr(0, start) + "127.0.0.1:" + std::to_string(port_) + url.substr(slash);
}

void TcpProxy::listen_now() {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port_));
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 64) != 0)
    throw std::runtime_error(std::string("tcp proxy: cannot listen: ") + std::strerror(errno));
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  std::lock_guard lock(m_);
  listener_ = s;
}

void TcpProxy::freeze() {
  frozen_ = true;
}

void TcpProxy::down() {
  std::lock_guard lock(m_);
  for (auto [c, s] : pairs_) {
    ::shutdown(c, SHUT_RDWR);
    ::close(c);
    ::close(s);
  }
  pairs_.clear();
  if (listener_ >= 0) ::close(listener_);
  listener_ = -1;
}

void TcpProxy::up() {
  frozen_ = false;
  bool listening;
  {
    std::lock_guard lock(m_);
    listening = listener_ >= 0;
  }
  if (!listening) listen_now();
}

void TcpProxy::loop() {
  while (!stopping_) {
    std::vector<pollfd> fds;
    {
      std::lock_guard lock(m_);
      if (!frozen_) {
        if (listener_ >= 0) fds.push_back({listener_, POLLIN, 0});
        for (auto [c, s] : pairs_) {
          fds.push_back({c, POLLIN, 0});
          fds.push_back({s, POLLIN, 0});
        }
      }
    }
    if (fds.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
    std::lock_guard lock(m_);
    if (frozen_) continue;
    for (const pollfd& p : fds) {
      if (!p.revents) continue;
      if (p.fd == listener_) {
        const int c = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a = {};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(target_port_));
        ::inet_pton(AF_INET, host_ == "localhost" ? "127.0.0.1" : host_.c_str(), &a.sin_addr);
        if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
          ::close(c);
          ::close(s);
          continue;
        }
        pairs_.push_back({c, s});
        continue;
      }
      for (std::size_t i = 0; i < pairs_.size(); ++i) {
        auto [c, s] = pairs_[i];
        if (p.fd != c && p.fd != s) continue;
        char buf[65536];
        const ssize_t n = ::read(p.fd, buf, sizeof buf);
        const int to = p.fd == c ? s : c;
        if (n <= 0 || ::send(to, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) {
          ::close(c);
          ::close(s);
          pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      }
    }
  }
}

}  // namespace ktune::test
