package msgq

// The msgq.v1 gRPC code in internal/msgqv1 is generated from
// proto/msgq/v1/messaging.proto by protoc with protoc-gen-go and
// protoc-gen-go-grpc (Debian's protobuf-compiler, protoc-gen-go and
// protoc-gen-go-grpc) and committed; run `go generate` after changing the
// proto. run_tests.sh fails when the committed code is not what they make.

//go:generate protoc -I../../proto --go_out=. --go_opt=module=msgq.dev/client/go --go_opt=Mmsgq/v1/messaging.proto=msgq.dev/client/go/internal/msgqv1;msgqv1 --go-grpc_out=. --go-grpc_opt=module=msgq.dev/client/go --go-grpc_opt=Mmsgq/v1/messaging.proto=msgq.dev/client/go/internal/msgqv1;msgqv1 msgq/v1/messaging.proto
