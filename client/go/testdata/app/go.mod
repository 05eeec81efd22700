module example.com/app

go 1.19

require msgq.dev/client/go v0.0.0

// What msgq.dev/client/go requires, listed as go mod tidy lists it.
require (
	github.com/go-sql-driver/mysql v1.5.0 // indirect
	github.com/golang/protobuf v1.5.2 // indirect
	go.opentelemetry.io/otel v1.1.0 // indirect
	go.opentelemetry.io/otel/sdk v1.1.0 // indirect
	go.opentelemetry.io/otel/trace v1.1.0 // indirect
	golang.org/x/net v0.7.0 // indirect
	golang.org/x/sys v0.3.0 // indirect
	golang.org/x/text v0.7.0 // indirect
	google.golang.org/genproto v0.0.0-20200413115906-b5235f65be36 // indirect
	google.golang.org/grpc v1.33.3 // indirect
	google.golang.org/protobuf v1.28.1 // indirect
)

replace msgq.dev/client/go => ../..
