# syntax=docker/dockerfile:1
#
# mcpkeep's image (docs/kubernetes.md). Multi-stage: the static binary is
# built once and copied into a minimal, non-root runtime. mcpkeep is the
# entrypoint in exec form, so it is PID 1 and reaps what its servers'
# wrappers leave orphaned (docs/kubernetes.md, "PID 1, orphans").
#
#   docker build -t mcpkeep .                      # static: servers that are binaries, or remote (url)
#   docker build --target node   -t mcpkeep:node .   # plus Node.js 22 (npx servers)
#   docker build --target python -t mcpkeep:python . # plus Python 3.12 and uv (uvx servers)
#
# To add a server of your own, start FROM one of these and copy or install
# it (see docs/kubernetes.md, "The image").

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary, nothing to load at run time.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/mcpkeep ./cmd/mcpkeep

# With Node.js, for servers started by npx. The node image's user "node"
# (uid 1000) runs it; npm's cache goes to its home.
FROM node:22-bookworm-slim AS node
COPY --from=build /out/mcpkeep /usr/local/bin/mcpkeep
USER node
WORKDIR /home/node
EXPOSE 8731
ENTRYPOINT ["/usr/local/bin/mcpkeep"]
CMD ["proxy", "--config", "/etc/mcpkeep/mcp.json", "--listen", "0.0.0.0:8731", "--auth-token-env", "MCPKEEP_TOKEN"]

# With Python and uv, for servers started by uvx.
FROM python:3.12-slim-bookworm AS python
COPY --from=ghcr.io/astral-sh/uv:0.8 /uv /uvx /usr/local/bin/
COPY --from=build /out/mcpkeep /usr/local/bin/mcpkeep
RUN useradd --uid 10001 --create-home mcpkeep
USER 10001:10001
WORKDIR /home/mcpkeep
EXPOSE 8731
ENTRYPOINT ["/usr/local/bin/mcpkeep"]
CMD ["proxy", "--config", "/etc/mcpkeep/mcp.json", "--listen", "0.0.0.0:8731", "--auth-token-env", "MCPKEEP_TOKEN"]

# The default (last) stage: the binary alone, no shell, user 65532.
FROM gcr.io/distroless/static-debian12:nonroot AS static
COPY --from=build /out/mcpkeep /usr/local/bin/mcpkeep
USER 65532:65532
EXPOSE 8731
ENTRYPOINT ["/usr/local/bin/mcpkeep"]
CMD ["proxy", "--config", "/etc/mcpkeep/mcp.json", "--listen", "0.0.0.0:8731", "--auth-token-env", "MCPKEEP_TOKEN"]
