// SoakFiles: the files a hostile soak's msgqd starts with, made in a
// directory: a CA and a server certificate for IP 127.0.0.1 and localhost
// (with the openssl CLI), a token file (--auth_tokens_file: the SHA-256 of
// each token and its principal) and a policy file (--auth_policy_file).
//
// Principals: `worker` (stream,ack on the soak's tables: the normal
// clients), `idler` (stream on the decoy table: logged-in idle MySQL
// connections), `ops` (admin on */*: the redrive form), `mallory` and `hog`
// (a valid token and no grant at all: mallory KILLs and sends huge
// statements, hog hoards connections, so that a per-principal limit on one
// does not keep the other from being tried). Tokens are random for each
// soak.
#ifndef MSGQ_TOOLS_CHAOS_SOAK_FILES_H_
#define MSGQ_TOOLS_CHAOS_SOAK_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace msgq::chaos {

struct SoakFiles {
  std::string ca_file, cert_file, key_file, tokens_file, policy_file;
  std::string worker_token, idler_token, ops_token, mallory_token, hog_token;
};

// Makes the files in `dir` (which exists). `keyspace`/`tables`: worker's
// tables; `decoy`: the table the hostile clients stream, ack and redrive
// (one of `tables`). INTERNAL when openssl fails (its output is in
// dir/openssl.log) or a file cannot be written.
absl::StatusOr<SoakFiles> MakeSoakFiles(const std::string& dir,
                                        const std::string& keyspace,
                                        const std::vector<std::string>& tables,
                                        const std::string& decoy);

}  // namespace msgq::chaos

#endif  // MSGQ_TOOLS_CHAOS_SOAK_FILES_H_
