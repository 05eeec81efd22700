"""Builds the msgq package with its generated gRPC stubs (see pyproject.toml).

build_py runs grpc_tools.protoc on msgq/v1/messaging.proto and writes
messaging_pb2.py and messaging_pb2_grpc.py into the built msgq/v1. The
.proto is found in $MSGQ_PROTO_DIR, else ../../proto (a source checkout);
the stubs are regenerated on every build (never stale after a proto change).
"""

import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join("msgq", "v1", "messaging.proto")


def _proto_dir():
    for d in (os.environ.get("MSGQ_PROTO_DIR"),
              os.path.join(HERE, os.pardir, os.pardir, "proto")):
        if d and os.path.isfile(os.path.join(d, PROTO)):
            return os.path.abspath(d)
    return None


class BuildPyWithStubs(build_py):
    """build_py, plus the stubs generated into build_lib/msgq/v1."""

    def run(self):
        super().run()
        build_lib = os.path.abspath(self.build_lib)
        out = os.path.join(build_lib, "msgq", "v1")
        os.makedirs(out, exist_ok=True)
        init = os.path.join(out, "__init__.py")
        if not os.path.exists(init):
            with open(init, "w") as f:
                f.write('"""Generated protobuf and gRPC stubs of msgq.v1."""\n')
        proto_dir = _proto_dir()
        if proto_dir is None:
            raise SystemExit("msgq: %s not found: set MSGQ_PROTO_DIR to the "
                             "checkout's proto/ directory" % PROTO)
        # As the CMake build does (Debian: python3-grpc-tools); its __main__
        # adds the well-known protos (google/protobuf/wrappers.proto).
        code = subprocess.call([sys.executable, "-m", "grpc_tools.protoc",
                                "-I" + proto_dir,
                                "--python_out=" + build_lib,
                                "--grpc_python_out=" + build_lib,
                                PROTO], cwd=proto_dir)
        if code != 0:
            raise SystemExit("msgq: grpc_tools.protoc failed (%d)" % code)


setup(packages=["msgq"], package_data={"msgq": ["py.typed"]},
      cmdclass={"build_py": BuildPyWithStubs})
