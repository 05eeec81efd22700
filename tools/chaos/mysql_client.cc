#include "tools/chaos/mysql_client.h"

#include <mysql.h>

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"

namespace msgq::chaos {
namespace {

absl::Status ErrorOf(MYSQL* m) {
  std::string text = mysql_error(m);
  std::string normalized;
  for (size_t i = 0; i < text.size() && normalized.size() < 70; ++i) {
    if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (normalized.empty() || normalized.back() != 'N') normalized += 'N';
    } else {
      normalized += text[i];
    }
  }
  return absl::UnavailableError(
      absl::StrCat("ERR ", mysql_errno(m), ": ", normalized));
}

}  // namespace

void MysqlLibraryInit() { mysql_library_init(0, nullptr, nullptr); }

std::string MysqlOutcome(const absl::Status& status) {
  return status.ok() ? "ok" : std::string(status.message());
}

absl::StatusOr<std::unique_ptr<MysqlClient>> MysqlClient::Connect(
    const Login& login, SocketRegistry* registry) {
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return absl::InternalError("mysql_init failed");
  std::unique_ptr<MysqlClient> c(new MysqlClient(m, registry));
  const unsigned int seconds = static_cast<unsigned int>(
      std::max<int64_t>(1, absl::ToInt64Seconds(login.timeout)));
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &seconds);
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &seconds);
  mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &seconds);
  if (!login.ca_file.empty()) {
    mysql_options(m, MYSQL_OPT_SSL_CA, login.ca_file.c_str());
    const my_bool verify = 1;
    mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
  }
  if (mysql_real_connect(
          m, "127.0.0.1", login.user.c_str(), login.password.c_str(),
          login.database.empty() ? nullptr : login.database.c_str(),
          static_cast<unsigned int>(login.port), nullptr, 0) == nullptr) {
    return ErrorOf(m);
  }
  if (registry != nullptr) {
    c->registered_fd_ = static_cast<int>(mysql_get_socket(m));
    registry->Add(c->registered_fd_);
  }
  return c;
}

MysqlClient::~MysqlClient() {
  if (registry_ != nullptr && registered_fd_ >= 0) {
    registry_->Remove(registered_fd_);
  }
  mysql_close(mysql_);
}

absl::StatusOr<int64_t> MysqlClient::Query(absl::string_view sql) {
  if (mysql_real_query(mysql_, sql.data(),
                       static_cast<unsigned long>(sql.size())) != 0) {
    return ErrorOf(mysql_);
  }
  MYSQL_RES* res = mysql_store_result(mysql_);
  if (res == nullptr) {
    if (mysql_field_count(mysql_) != 0) return ErrorOf(mysql_);
    return 0;  // OK packet
  }
  const int64_t rows = static_cast<int64_t>(mysql_num_rows(res));
  mysql_free_result(res);
  return rows;
}

uint32_t MysqlClient::id() const {
  return static_cast<uint32_t>(mysql_thread_id(mysql_));
}

int MysqlClient::fd() const {
  return static_cast<int>(mysql_get_socket(mysql_));
}

absl::Status MysqlClient::LastError() const { return ErrorOf(mysql_); }

}  // namespace msgq::chaos
