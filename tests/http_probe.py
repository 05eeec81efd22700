#!/usr/bin/python3
"""HTTP probe for msgqd's integration tests (Debian's python3 only).

  http_probe.py get URL      prints the status code, a newline, the body
  http_probe.py post URL FORM [HEADER:VALUE]
                             POSTs FORM (application/x-www-form-urlencoded)
                             with the header if given; prints as get
  http_probe.py metrics URL  fetches URL, parses it with prometheus_client's
                             text parser (a real Prometheus parser) and prints
                             one line per sample, labels sorted:
                             name{k="v",...} value
                             exits 1 when the page does not parse
  http_probe.py time URL N   fetches URL N times; prints the mean and the
                             largest milliseconds per fetch and the bytes
"""
import sys
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def fetch(url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8")


def main():
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "post":
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if len(sys.argv) > 4:
            name, value = sys.argv[4].split(":", 1)
            headers[name] = value
        status, body = fetch(url, sys.argv[3].encode(), headers)
        sys.stdout.write("%d\n%s" % (status, body))
        return 0
    status, body = fetch(url)
    if mode == "time":
        times = []
        for _ in range(int(sys.argv[3])):
            start = time.perf_counter()
            status, body = fetch(url)
            times.append((time.perf_counter() - start) * 1000)
            if status != 200:
                return 1
        print("%.3f %.3f %d" % (sum(times) / len(times), max(times), len(body)))
        return 0
    if mode == "get":
        sys.stdout.write("%d\n%s" % (status, body))
        return 0
    if status != 200:
        print("HTTP %d" % status, file=sys.stderr)
        return 1
    try:
        for family in text_string_to_metric_families(body):
            for s in family.samples:
                labels = ",".join('%s="%s"' % (k, v)
                                  for k, v in sorted(s.labels.items()))
                value = s.value
                text = ("%d" % value if value == int(value) and abs(value) < 1e15
                        else repr(value))
                print("%s{%s} %s" % (s.name, labels, text))
    except Exception as e:  # the parser raises ValueError and others
        print("metrics do not parse: %r" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
