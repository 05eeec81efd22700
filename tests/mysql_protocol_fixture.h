// MysqlProtocolTest: MsgqTest with msgqd's MySQL-protocol port on, a user
// and password file, and helpers: the port msgqd printed, the real
// `mariadb` client as a child process, and RawClient, a hand-driven socket
// for malformed input.
#ifndef MSGQ_TESTS_MYSQL_PROTOCOL_FIXTURE_H_
#define MSGQ_TESTS_MYSQL_PROTOCOL_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/mysql_protocol/packet.h"
#include "tests/fixture.h"
#include "tools/launch/child_process.h"

namespace msgq::testing {

inline constexpr char kUser[] = "reader";
inline constexpr char kPassword[] = "s3cret";

// A client socket speaking raw packets. Not thread-safe.
class RawClient {
 public:
  static absl::StatusOr<std::unique_ptr<RawClient>> Connect(int port);
  ~RawClient();

  // One packet; UNAVAILABLE when the server closed, DEADLINE_EXCEEDED.
  absl::StatusOr<mysql_protocol::Packet> Read(
      absl::Duration timeout = absl::Seconds(10));
  bool SendBytes(const std::string& bytes);
  bool Send(uint8_t seq, const std::string& payload);
  // Reads the handshake and answers as `user`/`password`
  // (mysql_native_password); returns the server's answer.
  absl::StatusOr<mysql_protocol::Packet> Login(const std::string& user,
                                               const std::string& password);
  // True when the server closes the connection within `timeout`.
  bool WaitClosed(absl::Duration timeout);

 private:
  explicit RawClient(int fd) : fd_(fd) {}
  int fd_;
  std::string in_;
};

// The error code of an ERR packet payload (0 when it is not one).
int ErrCode(const mysql_protocol::Packet& p);

class MysqlProtocolTest : public MsgqTest {
 protected:
  // Starts msgqd with the port on `host`:0, kUser/kPassword (unless
  // !with_user: any user, empty password) and `args`.
  void StartWithMysqlProtocol(std::vector<std::string> args = {},
                              bool with_user = true,
                              const std::string& host = "127.0.0.1");

  // `mariadb --no-defaults -q -h 127.0.0.1 -P port -u user -pPASSWORD -e sql`
  // under stdbuf -oL (a line out as each row arrives), stdout and stderr
  // to a log file.
  std::unique_ptr<launch::ChildProcess> StartMariadb(
      const std::string& sql, const std::string& password = kPassword,
      const std::vector<std::string>& extra = {});
  // The client's log lines so far.
  std::vector<std::string> ClientLines(const launch::ChildProcess& child);
  // Waits until the client's log has `n` lines.
  bool WaitForLines(const launch::ChildProcess& child, size_t n,
                    absl::Duration timeout = absl::Seconds(20));

  int port_ = 0;
  std::string password_file_;
  int clients_ = 0;
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_MYSQL_PROTOCOL_FIXTURE_H_
