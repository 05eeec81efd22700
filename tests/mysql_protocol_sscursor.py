#!/usr/bin/python3
"""Receives N messages from msgqd's MySQL-protocol port with MySQLdb's
unbuffered cursor (SSCursor) and prints them, one "id<TAB>message" line each
(flushed), then exits without reading further.

usage: mysql_protocol_sscursor.py PORT USER PASSWORD TABLE N
"""
import os
import sys

import MySQLdb
import MySQLdb.cursors


def main():
    port, user, password, table, n = sys.argv[1:6]
    conn = MySQLdb.connect(host="127.0.0.1", port=int(port), user=user,
                           passwd=password, db="msgq",
                           cursorclass=MySQLdb.cursors.SSCursor)
    cur = conn.cursor()
    cur.execute("stream * from " + table)
    print("columns:", ",".join(d[0] for d in cur.description), flush=True)
    for _ in range(int(n)):
        row = cur.fetchone()
        ident, message = row[0], row[1]
        if isinstance(message, bytes):
            message = message.decode()
        print("%s\t%s" % (ident, message), flush=True)
    # The stream never ends: leave without draining it.
    os._exit(0)


if __name__ == "__main__":
    main()
