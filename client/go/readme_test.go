package msgq

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The consumer example of client/go/README.md#consumer, run as written (its servers,
// its TLS settings and its application function filled in) against a real
// MariaDB and msgqd: a permanent error (an unknown table) is printed and
// exits 1, and a server that is down is retried with a line per retry.

// readmeConsumer is the first go block after "## Consumer" in a main
// package, with its servers set to server and plaintext.
func readmeConsumer(t *testing.T, server string) string {
	t.Helper()
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(text)[strings.Index(string(text), "## Consumer"):]
	start := strings.Index(section, "```go\n") + len("```go\n")
	block := section[start : start+strings.Index(section[start:], "```")]
	code := strings.Replace(block, `[]string{"db1:15999", "db2:15999"}`, `[]string{"`+server+`"}`, 1)
	code = strings.Replace(code, `msgq.Security{CAFile: "/etc/msgq/ca.pem", Token: token}`, `msgq.Security{}`, 1)
	if strings.Count(code, server) != 1 || strings.Contains(code, "ca.pem") {
		t.Fatalf("the example no longer names its servers and TLS settings as expected:\n%s", block)
	}
	return `package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	msgq "msgq.dev/client/go"
)

var _ = time.Second

func process(ctx context.Context, body string) error { return nil }

func main() {
` + code + "}\n"
}

// buildReadmeConsumer compiles code in this module (its vendor directory).
func buildReadmeConsumer(t *testing.T, code string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "consumer.go")
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "consumer")
	if out, err := exec.Command("go", "build", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("go build of the consumer example: %v\n%s\n%s", err, out, code)
	}
	return bin
}

// logLine is a line of Go's standard logger: a date and time, then the text.
var logLine = regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d (.*)$`)

func TestReadmeConsumerUnknownTableExits1(t *testing.T) {
	integration(t)
	sqlExec(t, "CREATE DATABASE IF NOT EXISTS app") // the example's keyspace, without the table
	srv := serve(t, "app")
	bin := buildReadmeConsumer(t, readmeConsumer(t, srv.addr))
	cmd := exec.Command(bin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want exit status 1; stderr:\n%s", err, stderr.String())
	}
	m := logLine.FindStringSubmatch(strings.TrimSuffix(stderr.String(), "\n"))
	want := "msgq: rpc error: code = NotFound desc = message table `app`.`orders` not found"
	if m == nil || m[1] != want {
		t.Fatalf("stderr %q, want one log line %q", stderr.String(), want)
	}
}

func TestReadmeConsumerServerDownLogsEachRetry(t *testing.T) {
	integration(t)
	closed := "127.0.0.1:1"
	bin := buildReadmeConsumer(t, readmeConsumer(t, closed))
	cmd := exec.Command(bin)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	retry := regexp.MustCompile(`^msgq: 127\.0\.0\.1:1: rpc error: code = Unavailable desc = .*; retrying in \d+\.\d s$`)
	var lines []string
	scanner := bufio.NewScanner(pipe)
	for len(lines) < 3 && scanner.Scan() {
		lines = append(lines, scanner.Text())
	}
	cmd.Process.Kill() // still running, or the lines are missing
	cmd.Wait()
	if len(lines) < 3 {
		t.Fatalf("want 3 retry lines while it runs, got %q", lines)
	}
	for _, line := range lines {
		m := logLine.FindStringSubmatch(line)
		if m == nil || !retry.MatchString(m[1]) {
			t.Errorf("line %q is not a retry line", line)
		}
	}
}
