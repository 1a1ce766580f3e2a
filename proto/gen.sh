#!/bin/bash
# Regenerates the Go code of the protobuf schemas in proto/ (run from the
# repository root, or anywhere: it finds the root itself). Needs Debian's
# protobuf-compiler (protoc) and the two Go plugins at the versions below
# (installed into $(go env GOPATH)/bin when missing or of another version).
# `proto/gen.sh --check` regenerates into a temporary directory and fails if
# the checked-in code differs (CI runs it).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PROTOC_GEN_GO=v1.36.12      # google.golang.org/protobuf, as in go.mod
PROTOC_GEN_GO_GRPC=v1.6.2   # google.golang.org/grpc/cmd/protoc-gen-go-grpc
bin=$(go env GOPATH)/bin
have() { [ -x "$bin/$1" ] && go version -m "$bin/$1" 2>/dev/null | grep -q "mod.*$2"; }
have protoc-gen-go "$PROTOC_GEN_GO" || go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO"
have protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC" || go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC"
command -v protoc >/dev/null || { echo "proto/gen.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
out=$root
if [ "${1:-}" = "--check" ]; then
  out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
fi
for f in $(find proto -name '*.proto' | sort); do
  PATH="$bin:$PATH" protoc -I proto --go_out="$out" --go_opt=module=github.com/graphmill/graphmill \
    --go-grpc_out="$out" --go-grpc_opt=module=github.com/graphmill/graphmill "$f"
done
if [ "$out" != "$root" ]; then
  status=0
  # The header names the protoc version that generated a file: another
  # Debian release's protoc is not a stale schema, so that line is ignored.
  strip() { grep -v -E '^//.*protoc +v[0-9]' "$1"; }
  for g in $(cd "$out" && find . -name '*.go' | sort); do
    if [ ! -f "$root/$g" ] || ! cmp -s <(strip "$out/$g") <(strip "$root/$g"); then
      echo "proto/gen.sh: $g is stale; run proto/gen.sh and commit the result" >&2
      status=1
    fi
  done
  for g in $(find proto -name '*.pb.go' | sort); do
    [ -f "$out/$g" ] || { echo "proto/gen.sh: $g has no .proto source" >&2; status=1; }
  done
  exit $status
fi
