#!/bin/sh
# Regenerates the Python protobuf/gRPC stubs of proto/graphmill/v1/*.proto
# into python/graphmill/v1/ (checked in; the package imports them as
# graphmill.v1.sampler_pb2). Needs Debian's protobuf-compiler (protoc 3.21,
# matching python3-protobuf 4.21) and protobuf-compiler-grpc
# (grpc_python_plugin, matching python3-grpcio 1.51).
# `python/scripts/gen_proto.sh --check` regenerates into a temporary
# directory and fails if the checked-in stubs differ (CI runs it).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
command -v protoc >/dev/null || { echo "gen_proto.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
plugin=$(command -v grpc_python_plugin || true)
[ -n "$plugin" ] || { echo "gen_proto.sh: grpc_python_plugin not found (apt-get install protobuf-compiler-grpc)" >&2; exit 1; }
out=$root/python
if [ "${1:-}" = "--check" ]; then
  out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
fi
protos=$(cd proto && find graphmill -name '*.proto' | sort)
(cd proto && protoc -I . --python_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-grpc_python="$plugin" $protos)
if [ "$out" != "$root/python" ]; then
  status=0
  for g in $(cd "$out" && find . -name '*_pb2*.py' | sort); do
    if ! cmp -s "$out/$g" "python/$g"; then
      echo "gen_proto.sh: python/$g is stale; run python/scripts/gen_proto.sh and commit the result" >&2
      status=1
    fi
  done
  for g in $(cd python && find graphmill -name '*_pb2*.py' | sort); do
    [ -f "$out/$g" ] || { echo "gen_proto.sh: python/$g has no .proto source" >&2; status=1; }
  done
  exit $status
fi
