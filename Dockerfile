# Gatehouse in a container: a static binary (CGO_ENABLED=0, SQLite in pure
# Go) on an empty base image, run as an unprivileged user (65532), with its
# database and secret key in the /data volume.
#
#   docker build -t gatehouse \
#     --build-arg REVISION=$(git rev-parse HEAD) --build-arg VCS_TIME=$(git show -s --format=%cI HEAD) .
#   docker run -d --name gatehouse -p 127.0.0.1:8080:8080 -v gatehouse-data:/data gatehouse
#   docker logs gatehouse              (the first start prints the management key once)
#
# (podman: podman build --format docker ...). The README's "Running in a
# container" says more. GO_IMAGE names the Go toolchain image that builds
# the binary; the image that runs it holds the binary, the CA certificates
# (for https providers and destinations), an empty /tmp and /data, and
# nothing else.
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm

FROM ${GO_IMAGE} AS build
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
WORKDIR /src
# OFFLINE=1 builds from vendor/ (go mod vendor first, where the modules are
# at hand): nothing is downloaded. Otherwise the modules are downloaded
# here, in a layer kept while go.mod and go.sum do not change.
ARG OFFLINE=
COPY go.mod go.sum ./
RUN [ -n "$OFFLINE" ] || go mod download
COPY . .
# The build context has no .git (see .dockerignore), so the toolchain
# cannot stamp the commit: VERSION, REVISION, VCS_TIME and MODIFIED say
# what the image is built from (gatehouse --version, GET /healthz and
# gatehouse_build_info show it; a revision and its time make Go's
# pseudo-version v0.0.0-<time>-<revision>). Without them it says (devel).
ARG VERSION=
ARG REVISION=
ARG VCS_TIME=
ARG MODIFIED=
RUN if [ -n "$OFFLINE" ] && [ ! -f vendor/modules.txt ]; then \
      echo "OFFLINE is set but there is no vendor/: run go mod vendor before the build" >&2; exit 1; fi \
 && go build -ldflags="-s -w -X gatehouse.stampVersion=${VERSION} -X gatehouse.stampRevision=${REVISION} \
      -X gatehouse.stampTime=${VCS_TIME} -X gatehouse.stampModified=${MODIFIED}" -o /out/gatehouse ./cmd/gatehouse \
 && /out/gatehouse --version \
 && mkdir -p /out/tmp /out/data

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/gatehouse /usr/local/bin/gatehouse
COPY --from=build --chown=65532:65532 /out/tmp /tmp
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV GATEHOUSE_ADDR=0.0.0.0:8080 \
    GATEHOUSE_DATABASE_URL=/data/gatehouse.db \
    GATEHOUSE_LOG_FORMAT=json \
    TMPDIR=/tmp
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/usr/local/bin/gatehouse", "healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/gatehouse"]
CMD ["serve"]
