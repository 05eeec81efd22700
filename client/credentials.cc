#include "msgq/credentials.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/client_interceptor.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "msgq/client.h"

namespace msgq {
namespace {

absl::StatusOr<std::string> ReadFile(absl::string_view what,
                                     const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", what, " ", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Adds `authorization: Bearer <token>` to every call's initial metadata.
class BearerInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* header) : header_(header) {}
  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", *header_);
    }
    methods->Proceed();
  }

 private:
  const std::string* const header_;  // owned by the factory
};

class BearerInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerInterceptorFactory(absl::string_view token)
      : header_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* /*info*/) override {
    // gRPC owns and deletes the interceptor; the channel owns the factory.
    return new BearerInterceptor(&header_);
  }

 private:
  const std::string header_;
};

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile("token file", path);
  if (!text.ok()) return text.status();
  std::string token(absl::StripAsciiWhitespace(
      absl::string_view(*text).substr(0, text->find('\n'))));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file ", path, " is empty"));
  }
  return token;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> NewSecureChannel(
    absl::string_view target, const ChannelSecurity& security) {
  if (security.tls_cert_file.empty() != security.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs its key: give --tls_cert and --tls_key "
        "together");
  }
  if (!security.tls_cert_file.empty() && security.tls_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs TLS: give --tls_ca too");
  }
  if (!security.tls_server_name.empty() && security.tls_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "a TLS server name needs TLS: give --tls_ca too");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (!security.tls_ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    absl::StatusOr<std::string> ca = ReadFile("CA file", security.tls_ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
    if (!security.tls_cert_file.empty()) {
      absl::StatusOr<std::string> cert =
          ReadFile("certificate", security.tls_cert_file);
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadFile("key", security.tls_key_file);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    credentials = grpc::SslCredentials(ssl);
  }
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  if (!security.token.empty()) {
    interceptors.push_back(
        std::make_unique<BearerInterceptorFactory>(security.token));
  }
  grpc::ChannelArguments arguments = MsgqChannelArguments();
  if (!security.tls_server_name.empty()) {
    arguments.SetSslTargetNameOverride(security.tls_server_name);
  }
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      std::string(target), credentials, arguments, std::move(interceptors));
}

absl::StatusOr<std::vector<ServerChannel>> SecureChannelsTo(
    const std::vector<std::string>& targets, const ChannelSecurity& security) {
  std::vector<ServerChannel> servers;
  for (const std::string& target : targets) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        NewSecureChannel(target, security);
    if (!channel.ok()) return channel.status();
    servers.push_back({target, *std::move(channel)});
  }
  return servers;
}

}  // namespace msgq
