#include "tests/mysql_protocol_fixture.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/mysql_protocol/handshake.h"

namespace msgq::testing {

namespace mp = ::msgq::mysql_protocol;

absl::StatusOr<std::unique_ptr<RawClient>> RawClient::Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (fd >= 0) close(fd);
    return absl::UnavailableError("connect failed");
  }
  return std::unique_ptr<RawClient>(new RawClient(fd));
}

RawClient::~RawClient() { close(fd_); }

absl::StatusOr<mp::Packet> RawClient::Read(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    size_t consumed = 0;
    auto p = mp::ParsePacket(in_, 1 << 30, &consumed);
    if (!p.ok()) return p.status();
    if (p->has_value()) {
      in_.erase(0, consumed);
      return **std::move(p);
    }
    pollfd pfd{fd_, POLLIN, 0};
    const int ms = static_cast<int>(std::max<int64_t>(
        0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    if (poll(&pfd, 1, ms) <= 0) return absl::DeadlineExceededError("read");
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return absl::UnavailableError("closed");
    in_.append(buf, static_cast<size_t>(n));
  }
}

bool RawClient::SendBytes(const std::string& bytes) {
  return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(bytes.size());
}

bool RawClient::Send(uint8_t seq, const std::string& payload) {
  return SendBytes(mp::Frame(seq, payload));
}

absl::StatusOr<mp::Packet> RawClient::Login(const std::string& user,
                                            const std::string& password) {
  absl::StatusOr<mp::Packet> hello = Read();
  if (!hello.ok()) return hello.status();
  mp::PayloadReader r(hello->payload);
  uint8_t protocol = 0;
  absl::string_view version, part1, part2;
  if (!r.ReadInt1(protocol) || protocol != 10 || !r.ReadNulString(version) ||
      !r.Skip(4) || !r.ReadBytes(8, part1) ||
      !r.Skip(1 + 2 + 1 + 2 + 2 + 1 + 10) || !r.ReadBytes(12, part2)) {
    return absl::InternalError("not a HandshakeV10");
  }
  const std::string scramble = absl::StrCat(part1, part2);
  std::string out;
  mp::AppendInt4(out, mp::kClientProtocol41 | mp::kClientSecureConnection |
                          mp::kClientPluginAuth);
  mp::AppendInt4(out, 1 << 24);
  mp::AppendInt1(out, 45);
  out.append(23, '\0');
  mp::AppendNulString(out, user);
  const std::string auth = mp::NativePasswordResponse(scramble, password);
  mp::AppendInt1(out, static_cast<uint8_t>(auth.size()));
  out += auth;
  mp::AppendNulString(out, mp::kNativePassword);
  if (!Send(uint8_t(hello->seq + 1), out)) {
    return absl::UnavailableError("send");
  }
  return Read();
}

bool RawClient::WaitClosed(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    pollfd pfd{fd_, POLLIN, 0};
    const int ms =
        static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (poll(&pfd, 1, std::max(ms, 0)) <= 0) return false;
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return true;
  }
  return false;
}

int ErrCode(const mp::Packet& p) {
  if (p.payload.size() < 3 || static_cast<uint8_t>(p.payload[0]) != 0xFF) {
    return 0;
  }
  return static_cast<uint8_t>(p.payload[1]) | static_cast<uint8_t>(p.payload[2])
                                                  << 8;
}

void MysqlProtocolTest::StartWithMysqlProtocol(std::vector<std::string> args,
                                               bool with_user,
                                               const std::string& host) {
  password_file_ = db_->dir() + "/mysql_protocol_password";
  {
    std::ofstream out(password_file_);
    out << kPassword << "\n";
  }
  args.push_back("--mysql_protocol_listen=" + host + ":0");
  if (with_user) {
    args.push_back(absl::StrCat("--mysql_protocol_user=", kUser));
    args.push_back("--mysql_protocol_password_file=" + password_file_);
  }
  ASSERT_NO_FATAL_FAILURE(StartServer(args));
  const std::string kLine = "msgqd mysql protocol on " + host + ":";
  const std::string log = server_->Log();
  const size_t at = log.find(kLine);
  ASSERT_NE(at, std::string::npos) << log;
  const std::string rest = log.substr(at + kLine.size());
  ASSERT_TRUE(absl::SimpleAtoi(rest.substr(0, rest.find('\n')), &port_)) << log;
}

std::unique_ptr<launch::ChildProcess> MysqlProtocolTest::StartMariadb(
    const std::string& sql, const std::string& password,
    const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {
      "stdbuf", "-oL",       "mariadb", "--no-defaults",       "-q",
      "-h",     "127.0.0.1", "-P",      std::to_string(port_), "-u",
      kUser};
  if (!password.empty()) argv.push_back("-p" + password);
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("-e");
  argv.push_back(sql);
  auto child = launch::ChildProcess::Start(
      argv, absl::StrCat(db_->dir(), "/mariadb-", clients_++, ".log"));
  EXPECT_TRUE(child.ok()) << child.status();
  return child.ok() ? *std::move(child) : nullptr;
}

std::vector<std::string> MysqlProtocolTest::ClientLines(
    const launch::ChildProcess& child) {
  return absl::StrSplit(child.Log(), '\n', absl::SkipEmpty());
}

bool MysqlProtocolTest::WaitForLines(const launch::ChildProcess& child,
                                     size_t n, absl::Duration timeout) {
  return Eventually([&] { return ClientLines(child).size() >= n; }, timeout);
}

}  // namespace msgq::testing
