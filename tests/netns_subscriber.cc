// netns_subscriber: a MessageStream reader for the network fault tests,
// run inside a test's namespace (tests/netns_fixture.h) so its link can be
// dropped under it. It never acks: what it received stays in flight until
// its ack wait ends.
//
//   netns_subscriber ADDRESS KEYSPACE TABLE
//
// Prints "fields" at the first response, then one line per row with its id
// (column 0), flushed at once, and "end CODE" when the stream ends. No
// keepalive of its own: only msgqd's can notice the link is gone.
#include <cstdio>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "msgq/v1/messaging.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ADDRESS KEYSPACE TABLE\n", argv[0]);
    return 2;
  }
  std::unique_ptr<msgq::v1::Messaging::Stub> stub =
      msgq::v1::Messaging::NewStub(
          grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  msgq::v1::MessageStreamRequest request;
  request.set_keyspace(argv[2]);
  request.set_name(argv[3]);
  std::unique_ptr<grpc::ClientReader<msgq::v1::MessageStreamResponse>> reader =
      stub->MessageStream(&context, request);
  msgq::v1::MessageStreamResponse response;
  bool first = true;
  while (reader->Read(&response)) {
    if (first) std::printf("fields\n");
    first = false;
    for (const msgq::v1::Row& row : response.rows()) {
      const int64_t length = row.lengths_size() > 0 ? row.lengths(0) : -1;
      std::printf("%s\n", length < 0 ? "<NULL>"
                                     : row.values().substr(0, length).c_str());
    }
    std::fflush(stdout);
  }
  const grpc::Status status = reader->Finish();
  std::printf("end %d\n", static_cast<int>(status.error_code()));
  return 0;
}
