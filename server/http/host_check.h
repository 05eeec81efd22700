// HostCheck: which Host headers msgqd's plain-HTTP port answers, against
// DNS rebinding.
//
// A web page the operator visits (evil.example) can make its name resolve
// to 127.0.0.1 and then read http://evil.example:15998/api/... with the
// browser's own requests: the browser sees one origin and sends
// "Host: evil.example:15998". Refusing requests whose Host is not a name
// of this server stops that. Allowed (case-insensitive, with or without
// ":PORT", one trailing dot ignored):
//   - "localhost", any IPv4 address in 127.0.0.0/8 and "[::1]";
//   - the host of the listen address when it is a name or a specific
//     address (e.g. "10.0.0.5" for --http_listen=10.0.0.5:15998);
//   - when the listen host is a wildcard (0.0.0.0, [::] or empty): any IP
//     address literal (a page can only send one as Host when the browser
//     was pointed at that address itself, which is no rebinding);
//   - the names in Options::extra (e.g. a DNS name of the machine; "*"
//     allows any Host, for a reverse proxy that checks it).
// A request without Host is allowed only for HTTP/1.0 (browsers always
// send one; HTTP/1.1 requires it). Over HTTPS the check is not needed (a
// rebound name does not match the certificate) and HttpServer skips it.
//
// Example:
//   HostCheck check("127.0.0.1:15998", {});
//   check.Allowed("localhost:15998");  // true
//   check.Allowed("evil.example");     // false
//
// Thread-safety: immutable after construction.
#ifndef MSGQ_SERVER_HTTP_HOST_CHECK_H_
#define MSGQ_SERVER_HTTP_HOST_CHECK_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace msgq {

class HostCheck {
 public:
  // `listen` is the "HOST:PORT" the port listens on; `extra` more allowed
  // names (no port; "*" = any).
  HostCheck(absl::string_view listen, std::vector<std::string> extra);

  // Whether `host` (a Host header's value) names this server.
  bool Allowed(absl::string_view host) const;

 private:
  // Lowercase, without brackets, port or trailing dot.
  static std::string Normalize(absl::string_view host_and_port);

  bool any_ = false;
  bool any_ip_literal_ = false;
  std::vector<std::string> names_;  // normalized
};

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_HOST_CHECK_H_
