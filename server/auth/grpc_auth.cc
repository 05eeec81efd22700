#include "server/auth/grpc_auth.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace msgq::auth {

absl::StatusOr<std::string> AuthenticateCall(
    const Authorizer& authorizer, const PeerDirectory* peers,
    const grpc::ServerContextBase& context) {
  absl::StatusOr<Authorizer::Credential> credential =
      AuthenticateCallCredential(authorizer, peers, context);
  if (!credential.ok()) return credential.status();
  return std::move(credential->principal);
}

absl::StatusOr<Authorizer::Credential> AuthenticateCallCredential(
    const Authorizer& authorizer, const PeerDirectory* peers,
    const grpc::ServerContextBase& context) {
  if (!authorizer.required()) return Authorizer::Credential{};
  std::optional<absl::string_view> header;
  const auto& metadata = context.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    header = absl::string_view(it->second.data(), it->second.size());
  }
  std::vector<std::string> identities;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    for (const grpc::string_ref& id : auth->GetPeerIdentity()) {
      // A certificate without a subjectAltName or common name has the
      // identity "" in gRPC: no principal (grpc_auth.h).
      if (id.empty()) continue;
      identities.emplace_back(id.data(), id.size());
    }
  } else if (peers != nullptr) {
    if (std::optional<Peer> peer = peers->Find(context.peer())) {
      for (std::string& id : peer->identities) {
        if (!id.empty()) identities.push_back(std::move(id));
      }
    }
  }
  return authorizer.AuthenticateCredential(header, identities);
}

}  // namespace msgq::auth
