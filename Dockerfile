# syntax=docker/dockerfile:1
#
# hmid as a container image: a static binary on a distroless base, run as a
# non-root user, with SQLite in the /data volume by default.
#
#   docker build --build-arg VERSION=1.0.0 --build-arg REVISION=$(git rev-parse --short HEAD) -t hmid .
#   docker run -p 8080:8080 -v hmid-data:/data hmid
#
# VERSION is what /health, /v1 and `hmid version` report; it must have the
# contract's <major>.<minor>.<patch> form. REVISION (the commit) goes into an
# image label only.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first, so a change to the code does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=1.0.0
# CGO off: the SQLite driver (modernc.org/sqlite) is pure Go, so the binary
# is static and runs on an image without a C library.
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
RUN echo "$VERSION" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$' \
      || { echo "VERSION must be <major>.<minor>.<patch>, got '$VERSION'" >&2; exit 1; } \
 && go build -trimpath -ldflags "-s -w -X hmid/internal/app.Version=${VERSION}" -o /out/hmid ./cmd/hmid \
 && mkdir -p /out/data

# distroless/static: CA certificates, time zones, /etc/passwd with the
# nonroot user (65532), and nothing else: no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=1.0.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="hmid" \
      org.opencontainers.image.description="OAuth 2.0 / OpenID Connect provider, account back end and GPS/logistics data API" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/hmid /usr/local/bin/hmid
# The volume's mount point belongs to the non-root user, so a new named
# volume starts out writable for it.
COPY --from=build --chown=65532:65532 /out/data /data
ENV HMID_ADDR=:8080 \
    HMID_DATABASE_URL=sqlite:/data/hmid.db
VOLUME ["/data"]
EXPOSE 8080
USER 65532:65532
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/hmid", "healthcheck", "--timeout", "4s"]
ENTRYPOINT ["/usr/local/bin/hmid"]
CMD ["serve"]
